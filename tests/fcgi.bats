#!/usr/bin/env bats
# cgi/: zcstack's libfcgi.so.0 and the demo apps with standard FastCGI
# servers (nginx, Debian's cgi-fcgi) and as CGI.  Each app binary is
# linked against Debian's libfcgi; LD_LIBRARY_PATH=build/cgi runs the same
# binary on ours.  The zero-copy transport is tested by cgi/tests/test_fcgi
# (meson) and here through fcgi-client --zc.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

B="$BATS_TEST_DIRNAME/../build"
OURS="$B/cgi"
DEBLIB=/usr/lib/x86_64-linux-gnu/libfcgi.so.0
CLIENT="$B/cgi/tests/fcgi-client"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

PIDS=()

wait_until() { # command...: true within 200 tries, 20 ms apart
	local i
	for i in $(seq 200); do
		if "$@"; then return 0; fi
		sleep 0.02
	done
	return 1
}

# start_app LIB NAME APP ARGS...: APP on $T/NAME.sock, on Debian's library
# (LIB=deb) or ours (LIB=ours).
start_app() {
	local lib=$1 name=$2 app=$3
	shift 3
	rm -f "$T/$name.sock"
	if [ "$lib" = ours ]; then
		LD_LIBRARY_PATH="$OURS" "$B/cgi/apps/$app" --listen "unix:$T/$name.sock" "$@" \
			2>>"$T/apps.err" &
	else
		env -u LD_LIBRARY_PATH "$B/cgi/apps/$app" --listen "unix:$T/$name.sock" "$@" \
			2>>"$T/apps.err" &
	fi
	PIDS+=($!)
	wait_until test -S "$T/$name.sock"
}

stop_apps() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}

start_nginx() {
	PORT=$(free_port)
	mkdir -p "$T/ngx"
	cat > "$T/nginx.conf" <<EOF
daemon off;
master_process off;
pid $T/nginx.pid;
error_log $T/nginx.err warn;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $T/ngx/body;
	fastcgi_temp_path $T/ngx/fcgi;
	proxy_temp_path $T/ngx/proxy;
	uwsgi_temp_path $T/ngx/uwsgi;
	scgi_temp_path $T/ngx/scgi;
	client_max_body_size 200m;
	upstream gen { server unix:$T/gen.sock; keepalive 2; }
	server {
		listen 127.0.0.1:$PORT;
		location /gen {
			include /etc/nginx/fastcgi_params;
			fastcgi_keep_conn on;
			fastcgi_pass gen;
		}
		location /wrap {
			include /etc/nginx/fastcgi_params;
			fastcgi_pass unix:$T/wrap.sock;
		}
		location /echo {
			include /etc/nginx/fastcgi_params;
			fastcgi_pass unix:$T/echo.sock;
		}
	}
}
EOF
	nginx -c "$T/nginx.conf" -p "$T/ngx" 2>>"$T/nginx.err" &
	NGINX=$!
	wait_until curl -s -o /dev/null "http://127.0.0.1:$PORT/" ||
		{ cat "$T/nginx.err"; return 1; }
}

stop_nginx() {
	[ -n "${NGINX:-}" ] || return 0
	kill -TERM "$NGINX" 2>/dev/null || true
	wait "$NGINX" 2>/dev/null || true
	NGINX=
}

setup() {
	T="$BATS_TEST_TMPDIR"
	NGINX=
	mkdir -p "$T/root"
	head -c 300000 /dev/urandom > "$T/root/page.bin"
	printf '<p>hello</p>\n' > "$T/root/hello.html"
	echo secret > "$T/outside.txt"
	ln -s "$T/outside.txt" "$T/root/escape.txt"
}

teardown() {
	stop_nginx
	stop_apps
	# An app that crashed or a sanitizer report fails the test.
	if grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/apps.err" 2>/dev/null; then
		return 1
	fi
}

# Through nginx, every size the record boundaries make interesting, a
# document twice (cached, then resent), on one library: into $1.
gen_through_nginx() { # lib outfile
	start_app "$1" gen zcgen
	start_nginx
	local s
	for s in 0 1 16383 16384 16385 65534 65535 65536 65537 1048576 1048576; do
		curl -sf "http://127.0.0.1:$PORT/gen?size=$s" >> "$2"
		# the body alone, checked against the pattern
		curl -sf "http://127.0.0.1:$PORT/gen?size=$s" > "$T/one"
		[ "$(stat -c %s "$T/one")" -eq "$s" ]
		python3 -c '
import sys
n = int(sys.argv[2]); p = b"abcdefghijklmnopqrstuvwxyz0123456789\n"
want = (p * (n // len(p) + 1))[:n]
sys.exit(open(sys.argv[1], "rb").read() != want)' "$T/one" "$s"
	done
	stop_nginx
	stop_apps
}

@test "libfcgi.so.0: SONAME libfcgi.so.0, exports Debian's application symbols and only those and zcfcgi_*" {
	[ -f "$DEBLIB" ] || skip "Debian's libfcgi is not installed"
	readelf -d "$OURS/libfcgi.so.0" | grep -q 'Library soname: \[libfcgi.so.0\]'
	nm -D --defined-only "$DEBLIB" | awk '{print $3}' | grep -v '^OS_' | sort > "$T/deb"
	nm -D --defined-only "$OURS/libfcgi.so.0" | awk '{print $3}' | sort > "$T/ours"
	# Debian's (less the OS_* internals) is a subset of ours ...
	[ -z "$(comm -23 "$T/deb" "$T/ours")" ]
	# ... and the rest is the native API.
	[ -z "$(comm -13 "$T/deb" "$T/ours" | grep -v '^zcfcgi_')" ]
	# _fcgi_sF has Debian's size (a program's copy relocation uses it).
	[ "$(nm -DS "$DEBLIB" | awk '$4 == "_fcgi_sF" {print $2}')" = \
	  "$(nm -DS "$OURS/libfcgi.so.0" | awk '$4 == "_fcgi_sF" {print $2}')" ]
}

@test "zcgen under nginx: byte-exact bodies, the same bytes on Debian's libfcgi and ours" {
	gen_through_nginx deb "$T/deb.out"
	gen_through_nginx ours "$T/ours.out"
	cmp "$T/deb.out" "$T/ours.out"
}

@test "zcwrap under nginx: the page around the file, identical on both libraries; no escape from the root" {
	local lib
	for lib in deb ours; do
		start_app $lib wrap zcwrap --root "$T/root"
		start_nginx
		curl -sf "http://127.0.0.1:$PORT/wrap?file=page.bin" > "$T/$lib.page"
		curl -sf "http://127.0.0.1:$PORT/wrap?file=hello.html" >> "$T/$lib.page"
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/wrap?file=escape.txt")" = 404 ]
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/wrap?file=../outside.txt")" = 404 ]
		stop_nginx
		stop_apps
	done
	cmp "$T/deb.page" "$T/ours.page"
	grep -q '<p>hello</p>' "$T/ours.page"
	# the file is in the page, byte for byte
	python3 -c 'import sys; sys.exit(open(sys.argv[2],"rb").read() not in open(sys.argv[1],"rb").read())' \
		"$T/ours.page" "$T/root/page.bin"
}

@test "zcecho under nginx: a 100 MiB upload's length and SHA-256, on both libraries" {
	head -c $((100 << 20)) /dev/urandom > "$T/body"
	local sum lib
	sum=$(sha256sum "$T/body" | cut -d' ' -f1)
	for lib in deb ours; do
		start_app $lib echo zcecho
		start_nginx
		curl -sf -X PUT -H 'Content-Type: application/x-upload' \
			--data-binary "@$T/body" "http://127.0.0.1:$PORT/echo" > "$T/$lib.echo"
		stop_nginx
		stop_apps
	done
	cmp "$T/deb.echo" "$T/ours.echo"
	grep -qx 'length 104857600' "$T/ours.echo"
	grep -qx "sha256 $sum" "$T/ours.echo"
	grep -qx 'content-type application/x-upload' "$T/ours.echo"
	grep -qx 'method PUT' "$T/ours.echo"
}

@test "cgi-fcgi -bind -connect: identical responses from the same binaries on both libraries" {
	command -v cgi-fcgi || skip "cgi-fcgi (libfcgi-bin) is not installed"
	head -c 200000 /dev/urandom > "$T/body"
	local lib s
	for lib in deb ours; do
		start_app $lib gen zcgen
		start_app $lib echo zcecho
		start_app $lib wrap zcwrap --root "$T/root"
		for s in 0 1 65535 65536 300000; do
			REQUEST_METHOD=GET QUERY_STRING="size=$s" \
				cgi-fcgi -bind -connect "$T/gen.sock" >> "$T/$lib.out"
		done
		REQUEST_METHOD=GET QUERY_STRING=file=page.bin \
			cgi-fcgi -bind -connect "$T/wrap.sock" >> "$T/$lib.out"
		REQUEST_METHOD=POST CONTENT_TYPE=a/b CONTENT_LENGTH=200000 \
			cgi-fcgi -bind -connect "$T/echo.sock" < "$T/body" >> "$T/$lib.out"
		stop_apps
	done
	cmp "$T/deb.out" "$T/ours.out"
	grep -q "sha256 $(sha256sum "$T/body" | cut -d' ' -f1)" "$T/ours.out"
}

@test "the zero-copy transport (fcgi-client --zc) gives the bytes of the standard one" {
	head -c 1000000 /dev/urandom > "$T/body"
	start_app ours gen zcgen
	start_app ours echo zcecho
	start_app ours wrap zcwrap --root "$T/root"
	local zc
	for zc in "" --zc; do
		"$CLIENT" $zc --requests 20 "$T/gen.sock" REQUEST_METHOD=GET QUERY_STRING=size=100000 > "$T/gen$zc"
		"$CLIENT" $zc --body "$T/body" "$T/echo.sock" REQUEST_METHOD=POST CONTENT_TYPE=x/y > "$T/echo$zc"
		"$CLIENT" $zc "$T/wrap.sock" REQUEST_METHOD=GET QUERY_STRING=file=page.bin > "$T/wrap$zc"
	done
	cmp "$T/gen" "$T/gen--zc"
	cmp "$T/echo" "$T/echo--zc"
	cmp "$T/wrap" "$T/wrap--zc"
	[ "$(stat -c %s "$T/gen")" -gt 2000000 ]
}

@test "zcecho runs as a plain CGI program (fd 0 is not a socket) on both libraries" {
	head -c 70000 /dev/urandom > "$T/body"
	local lib
	for lib in deb ours; do
		if [ $lib = ours ]; then export LD_LIBRARY_PATH="$OURS"; else unset LD_LIBRARY_PATH; fi
		REQUEST_METHOD=POST CONTENT_TYPE=c/d CONTENT_LENGTH=70000 \
			"$B/cgi/apps/zcecho" < "$T/body" > "$T/$lib.cgi"
	done
	unset LD_LIBRARY_PATH
	cmp "$T/deb.cgi" "$T/ours.cgi"
	grep -qx 'length 70000' "$T/ours.cgi"
	grep -qx 'method POST' "$T/ours.cgi"
}

@test "fcgiwrap, an unmodified libfcgi program, runs CGI scripts on our library" {
	command -v fcgiwrap || skip "fcgiwrap is not installed"
	command -v cgi-fcgi || skip "cgi-fcgi (libfcgi-bin) is not installed"
	printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nhello %%s\\n" "$QUERY_STRING"\n' > "$T/hello.cgi"
	chmod +x "$T/hello.cgi"
	local lib
	for lib in deb ours; do
		rm -f "$T/fw.sock"
		if [ $lib = ours ]; then
			LD_LIBRARY_PATH="$OURS" fcgiwrap -s "unix:$T/fw.sock" 2>>"$T/apps.err" &
		else
			fcgiwrap -s "unix:$T/fw.sock" 2>>"$T/apps.err" &
		fi
		PIDS+=($!)
		wait_until test -S "$T/fw.sock"
		SCRIPT_FILENAME="$T/hello.cgi" REQUEST_METHOD=GET QUERY_STRING=world \
			cgi-fcgi -bind -connect "$T/fw.sock" > "$T/$lib.fw"
		stop_apps
	done
	cmp "$T/deb.fw" "$T/ours.fw"
	grep -q 'hello world' "$T/ours.fw"
}
