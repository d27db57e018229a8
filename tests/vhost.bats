#!/usr/bin/env bats
# Virtual hosts (server { } blocks), the error log and its levels, and
# configuration errors that name their file and line: the real server.

load helpers/leftovers

# Nothing this file started may outlive it.
teardown_file() {
	check_leftovers
}

load helpers/server

APPS="$BATS_TEST_DIRNAME/../build/cgi/apps"

setup() {
	ROOT="$BATS_TEST_TMPDIR/root"	# the command line's site
	A="$BATS_TEST_TMPDIR/a"
	B="$BATS_TEST_TMPDIR/b"
	mkdir -p "$ROOT" "$A/dir" "$B/dir"
	echo main > "$ROOT/index.html"
	echo site-a > "$A/index.html"
	echo site-b > "$B/index.html"
	# The same path in both sites, of the same size: only the site tells
	# them apart.
	echo 'same path in a' > "$A/dir/same.txt"
	echo 'same path in b' > "$B/dir/same.txt"
	CONF="$BATS_TEST_TMPDIR/sites.conf"
	cat > "$CONF" <<CONF
# two sites besides the command line's
server {
    name a.example www.a.example
    root $A
    fastcgi-spawn /gen=1:$APPS/zcgen
}
server {
    name B.Example.   # written as a client might: case, root dot
    root $B
    access-log $BATS_TEST_TMPDIR/b.log
}
CONF
}

teardown() {
	stop_server
	check_sanitizers
}

host() { # HOST PATH: the body
	curl -s -H "Host: $1" "$URL$2"
}

@test "sites by Host: port, case and a trailing dot do not matter; unknown hosts get the default" {
	start_server --config "$CONF"
	[ "$(host a.example /)" = site-a ]
	[ "$(host WWW.A.Example:8080 /)" = site-a ]
	[ "$(host b.example. /)" = site-b ]
	[ "$(host b.example:1 /)" = site-b ]
	[ "$(host unknown.example /)" = main ]
	[ "$(host 127.0.0.1 /)" = main ]
	# absolute-form: the target's authority is the host (RFC 9112 3.2.2)
	run bash -c "printf 'GET http://b.example/ HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n' | $RAW $PORT"
	[[ "$output" == *site-b* ]]
}

@test "a site marked default takes unknown hosts; without --root the first block is the default" {
	sed -i 's|^    root '"$B"'$|    root '"$B"'\n    default|' "$CONF"
	start_server --config "$CONF"
	[ "$(host unknown.example /)" = site-b ]
	[ "$(host a.example /)" = site-a ]
	stop_server
	# No --root: only the blocks; the first is the default.
	sed -i '/^    default$/d' "$CONF"
	PORT=$(free_port)
	"$ZCHTTPD" --config "$CONF" --listen "127.0.0.1:$PORT" --workers 1 \
		${ZCHTTPD_EVENT:+--event "$ZCHTTPD_EVENT"} 2>"$BATS_TEST_TMPDIR/server.err" 3>&- &
	PID=$!
	URL="http://127.0.0.1:$PORT"
	for _ in $(seq 100); do curl -s -o /dev/null "$URL/" && break; sleep 0.05; done
	[ "$(host unknown.example /)" = site-a ]
	[ "$(host b.example /)" = site-b ]
}

@test "HTTP/1.1 without Host is 400; HTTP/1.0 without Host goes to the default site" {
	start_server --config "$CONF"
	run bash -c "printf 'GET / HTTP/1.1\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 400 "* ]]
	run bash -c "printf 'GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 400 "* ]]
	run bash -c "printf 'GET / HTTP/1.0\r\n\r\n' | $RAW $PORT"
	[[ "$output" == "HTTP/1.1 200 "* ]]; [[ "$output" == *main* ]]
	# A Host too long to be a name: the default site, not an error.
	long=$(head -c 600 /dev/zero | tr '\0' a)
	[ "$(host "$long" /)" = main ]
}

@test "the same path in two sites: the cache keeps them apart" {
	start_server --config "$CONF"
	for _ in 1 2 3; do
		[ "$(host a.example /dir/same.txt)" = 'same path in a' ]
		[ "$(host b.example /dir/same.txt)" = 'same path in b' ]
	done
	hits=$(curl -s "$URL/.zc/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["hits"])')
	[ "$hits" -ge 2 ]	# served from the cache, and still right
}

@test "FastCGI routes are per site: /gen is an application in a, a file path in b" {
	start_server --config "$CONF"
	[ "$(host a.example '/gen?size=1000' | wc -c)" -eq 1000 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: b.example' "$URL/gen?size=10")" = 404 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/gen?size=10")" = 404 ]
}

@test "access logs are per site; a site without one uses --access-log" {
	start_server --config "$CONF"
	host a.example '/?to=a' >/dev/null
	host b.example '/?to=b' >/dev/null
	host other '/?to=main' >/dev/null
	for _ in $(seq 50); do
		[ -s "$BATS_TEST_TMPDIR/b.log" ] && [ "$(grep -c 'to=' "$BATS_TEST_TMPDIR/access.log")" -ge 2 ] && break
		sleep 0.05
	done
	[ "$(grep -c 'to=b' "$BATS_TEST_TMPDIR/b.log")" -eq 1 ]
	[ "$(grep -c 'to=' "$BATS_TEST_TMPDIR/b.log")" -eq 1 ]
	grep -q 'to=a' "$BATS_TEST_TMPDIR/access.log"
	grep -q 'to=main' "$BATS_TEST_TMPDIR/access.log"
	! grep -q 'to=b' "$BATS_TEST_TMPDIR/access.log"
	# SIGUSR1 reopens every site's log.
	mv "$BATS_TEST_TMPDIR/b.log" "$BATS_TEST_TMPDIR/b.log.1"
	kill -USR1 "$PID"
	for _ in $(seq 50); do [ -e "$BATS_TEST_TMPDIR/b.log" ] && break; sleep 0.05; done
	sleep 0.2
	host b.example '/?after=1' >/dev/null
	for _ in $(seq 50); do grep -q after= "$BATS_TEST_TMPDIR/b.log" 2>/dev/null && break; sleep 0.05; done
	grep -q after= "$BATS_TEST_TMPDIR/b.log"
	! grep -q after= "$BATS_TEST_TMPDIR/b.log.1"
}

@test "the status endpoint counts requests per site, across a reload" {
	start_server --config "$CONF"
	for _ in 1 2 3; do host a.example / >/dev/null; done
	host b.example / >/dev/null
	run curl -s -H 'Host: b.example' "$URL/.zc/status"
	# "_": the command line's site (start_server's first request).
	python3 -c 'import json,sys; s=json.loads(sys.argv[1])["sites"]; assert s["a.example"] == 3 and s["b.example"] == 2 and s["_"] >= 1, s' "$output"
	kill -HUP "$PID"
	for _ in $(seq 100); do grep -q reloaded "$BATS_TEST_TMPDIR/server.err" && break; sleep 0.05; done
	sleep 0.5
	host a.example / >/dev/null
	run curl -s "$URL/.zc/status?format=prometheus"
	[[ "$output" == *'zchttpd_site_requests_total{site="a.example"} 4'* ]]
	[[ "$output" == *'zchttpd_site_requests_total{site="b.example"} 2'* ]]
}

@test "SIGHUP reload picks up a new site" {
	start_server --config "$CONF"
	[ "$(host c.example /)" = main ]
	C="$BATS_TEST_TMPDIR/c"
	mkdir -p "$C"
	echo site-c > "$C/index.html"
	printf 'server {\n    name c.example\n    root %s\n}\n' "$C" >> "$CONF"
	kill -HUP "$PID"
	for _ in $(seq 100); do grep -q reloaded "$BATS_TEST_TMPDIR/server.err" && break; sleep 0.05; done
	grep -q reloaded "$BATS_TEST_TMPDIR/server.err"
	for _ in $(seq 50); do [ "$(host c.example /)" = site-c ] && break; sleep 0.05; done
	[ "$(host c.example /)" = site-c ]
	[ "$(host a.example /)" = site-a ]
	# A reload with a bad block is refused, naming the line; the sites
	# stay as they were.
	printf 'server {\n    name d.example\n}\n' >> "$CONF"
	kill -HUP "$PID"
	for _ in $(seq 100); do grep -q 'reload refused' "$BATS_TEST_TMPDIR/server.err" && break; sleep 0.05; done
	grep -q "sites.conf:$(grep -n '^server {$' "$CONF" | tail -1 | cut -d: -f1): server block without a root" "$BATS_TEST_TMPDIR/server.err"
	[ "$(host c.example /)" = site-c ]
}

@test "--error-log and --log-level: lines at and above the level, in the file; SIGUSR1 reopens it" {
	log="$BATS_TEST_TMPDIR/error.log"
	start_server --config "$CONF" --error-log "$log" --log-level info
	grep -q '\[notice\] zchttpd\[[0-9]*\]: serving 3 sites' "$log"
	grep -q '\[info\] zchttpd\[[0-9]*\]: site a.example: root' "$log"
	! grep -q '\[debug\]' "$log"
	[ ! -s "$BATS_TEST_TMPDIR/server.err" ]	# nothing left on stderr
	mv "$log" "$log.1"
	kill -USR1 "$PID"
	for _ in $(seq 50); do [ -e "$log" ] && break; sleep 0.05; done
	kill -HUP "$PID"
	for _ in $(seq 100); do grep -q reloaded "$log" 2>/dev/null && break; sleep 0.05; done
	grep -q '\[notice\] .*reloaded' "$log"
	! grep -q reloaded "$log.1"
	stop_server
	grep -q '\[notice\] .*stopped' "$log"

	# warn: the notices are gone; debug: the workers say they started.
	: > "$log"
	start_server --error-log "$log" --log-level warn
	stop_server
	! grep -q serving "$log"
	start_server --error-log "$log" --log-level debug
	for _ in $(seq 50); do grep -q '\[debug\].*worker 1' "$log" && break; sleep 0.05; done
	grep -q '\[debug\] .*worker 0 (pid [0-9]*) serving 1 site' "$log"
	# The config file's keys, and the default: stderr as before.
	stop_server
	printf 'error-log %s\nlog-level error\n' "$log" > "$BATS_TEST_TMPDIR/el.conf"
	: > "$log"
	start_server --config "$BATS_TEST_TMPDIR/el.conf"
	stop_server
	[ ! -s "$log" ]
	start_server
	grep -q '^zchttpd: serving' "$BATS_TEST_TMPDIR/server.err"
	run "$ZCHTTPD" --root "$ROOT" --log-level loud
	[ "$status" -eq 2 ]; [[ "$output" == *"bad value 'loud' for 'log-level'"* ]]
	run "$ZCHTTPD" -t --root "$ROOT" --error-log /nonexistent-dir/e.log
	[ "$status" -eq 1 ]; [[ "$output" == *"--error-log /nonexistent-dir/e.log: No such file"* ]]
}

# -t on a config file: exit status 2 and FILE:LINE: in the message.
check_error() { # expected-line expected-message; the file is $BATS_TEST_TMPDIR/e.conf
	run "$ZCHTTPD" -t --config "$BATS_TEST_TMPDIR/e.conf"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"zchttpd: $BATS_TEST_TMPDIR/e.conf:$1: $2"* ]]
}

@test "configuration errors name the file and line, and -t reports them" {
	e="$BATS_TEST_TMPDIR/e.conf"
	run "$ZCHTTPD" -t --config "$CONF" --root "$ROOT"
	[ "$status" -eq 0 ]; [[ "$output" == *"sites.conf and the options are ok"* ]]
	printf 'root %s\nserver {\n  name x.example\n  root %s\n' "$ROOT" "$A" > "$e"
	check_error 2 'server block not closed'
	printf '# x\n}\n' > "$e"
	check_error 2 "'}' outside a server block"
	printf 'server {\n  root %s\n  server {\n' "$A" > "$e"
	check_error 3 'server blocks do not nest'
	printf 'server {\n  name x.example\n}\n' > "$e"
	check_error 1 'server block without a root'
	printf 'server {\n  root %s\n  name ok.example *.example\n}\n' "$A" > "$e"
	check_error 3 "'*.example' is not a site name"
	printf 'server {\n  root %s\n  name x.example:80\n}\n' "$A" > "$e"
	check_error 3 "'x.example:80' is not a site name"
	printf 'server {\n  root %s\n  workers 2\n}\n' "$A" > "$e"
	check_error 3 "'workers' is not a per-site option"
	printf 'server {\n  root %s\n  name x.example\n}\n\nserver {\n  root %s\n  name X.example\n}\n' "$A" "$B" > "$e"
	check_error 6 "name x.example is already a name of the site at $e:1"
	printf 'server {\n  root %s\n  default\n}\nserver {\n  root %s\n  default\n}\n' "$A" "$B" > "$e"
	check_error 5 "a second default site (the first: $e:1)"
	printf 'server {\n  root %s/nonexistent\n}\n' "$A" > "$e"
	check_error 1 "root $A/nonexistent: No such file"
	printf 'server {\n  root %s\n  access-log /nonexistent-dir/x.log\n}\n' "$A" > "$e"
	check_error 1 'access-log /nonexistent-dir/x.log: No such file'
	printf 'root %s\n\n\nmax-conns 0\n' "$ROOT" > "$e"
	check_error 4 "bad value '0' for 'max-conns'"
	printf 'root %s\nlisten\n' "$ROOT" > "$e"
	check_error 2 "option 'listen' needs a value"
	printf 'root %s\nfrobnicate 1\n' "$ROOT" > "$e"
	check_error 2 "unknown option 'frobnicate'"
	printf 'fastcgi /x=unix:/tmp/x.sock\nserver {\n  root %s\n}\n' "$A" > "$e"
	run "$ZCHTTPD" -t --config "$e"
	[ "$status" -eq 2 ]; [[ "$output" == *"--fastcgi /x=unix:/tmp/x.sock outside a server block needs --root"* ]]
	run "$ZCHTTPD" -t --workers 2
	[ "$status" -eq 2 ]; [[ "$output" == *"--root DIR is required (or a server block"* ]]
}
