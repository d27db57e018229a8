#!/usr/bin/env bats
# Real FastCGI applications, unchanged: Debian's php-fpm and fcgiwrap
# (shell CGI scripts) behind zchttpd and behind nginx, on UNIX sockets,
# with generated configurations.  Every answer zchttpd gives must have the
# same status and the same body bytes as nginx's.

load helpers/leftovers

load helpers/server

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	export SITE="$D/site"
	cp -r "$BATS_TEST_DIRNAME/fastcgi/site" "$SITE"
	mkdir -p "$D/sessions" "$D/nginx"
	local root_user="" root_flag=""
	if [ "$(id -u)" -eq 0 ]; then
		root_user="user = root
group = root"
		root_flag=-R	# php-fpm runs as root only when told so
	fi
	cat > "$D/php-fpm.conf" <<EOF
[global]
pid = $D/php-fpm.pid
error_log = $D/php-fpm.log
daemonize = no
[www]
$root_user
listen = $D/php.sock
pm = static
pm.max_children = 3
php_admin_value[session.save_path] = $D/sessions
php_admin_value[upload_tmp_dir] = $D
php_admin_value[post_max_size] = 64M
php_admin_value[upload_max_filesize] = 64M
catch_workers_output = yes
EOF
	# 3>&-: bats waits for whatever holds its descriptor 3.
	php-fpm8.2 $root_flag -F -y "$D/php-fpm.conf" 2>"$D/php-fpm.err" 3>&- &
	echo $! > "$D/php-fpm.run"
	fcgiwrap -c 2 -s "unix:$D/cgi.sock" 2>"$D/fcgiwrap.err" 3>&- &
	echo $! > "$D/fcgiwrap.run"

	NGINX_PORT=$(free_port)
	export NGINX_URL="http://127.0.0.1:$NGINX_PORT"
	local nuser=""
	[ "$(id -u)" -eq 0 ] && nuser="user root;"
	cat > "$D/nginx/nginx.conf" <<EOF
$nuser
daemon off;
worker_processes 1;
pid $D/nginx/nginx.pid;
error_log $D/nginx/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_max_body_size 64m;
    client_body_temp_path $D/nginx/body;
    fastcgi_temp_path $D/nginx/fastcgi;
    proxy_temp_path $D/nginx/proxy;
    uwsgi_temp_path $D/nginx/uwsgi;
    scgi_temp_path $D/nginx/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $SITE;
        location ~ [^/]\.php(/|\$) {
            fastcgi_split_path_info ^(.+?\.php)(/.*)\$;
            fastcgi_pass unix:$D/php.sock;
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
            fastcgi_param PATH_INFO \$fastcgi_path_info;
        }
        location ~ \.sh\$ {
            fastcgi_pass unix:$D/cgi.sock;
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
        }
    }
}
EOF
	nginx -c "$D/nginx/nginx.conf" -p "$D/nginx" 2>"$D/nginx.err" 3>&- &
	echo $! > "$D/nginx.run"
	for _ in $(seq 100); do
		[ -S "$D/php.sock" ] && [ -S "$D/cgi.sock" ] &&
			curl -s -o /dev/null "$NGINX_URL/index.html" && break
		sleep 0.1
	done
	[ -S "$D/php.sock" ] || { cat "$D/php-fpm.err" "$D/php-fpm.log" >&2; return 1; }
	[ -S "$D/cgi.sock" ] || { cat "$D/fcgiwrap.err" >&2; return 1; }
}

teardown_file() {
	for f in nginx php-fpm fcgiwrap; do
		kill "$(cat "$D/$f.run")" 2>/dev/null || true
	done
	# fcgiwrap's children do not follow their parent.
	pkill -f "fcgiwrap -c 2 -s unix:$D/cgi.sock" 2>/dev/null || true
	wait 2>/dev/null || true
	check_leftovers
}

setup() {
	ROOT="$SITE"
	start_server --max-body 64m \
		--fastcgi "*.php=unix:$D/php.sock" --fastcgi "*.sh=unix:$D/cgi.sock"
}

teardown() {
	stop_server
	check_sanitizers
}

# Same status and same body from zchttpd and nginx for this request.
same() { # path [curl options...]
	local path=$1
	shift
	local a b
	a=$(curl -s -o "$BATS_TEST_TMPDIR/z.body" -w '%{http_code}' "$@" "$URL$path")
	b=$(curl -s -o "$BATS_TEST_TMPDIR/n.body" -w '%{http_code}' "$@" "$NGINX_URL$path")
	if [ "$a" != "$b" ] || ! cmp -s "$BATS_TEST_TMPDIR/z.body" "$BATS_TEST_TMPDIR/n.body"; then
		echo "differs for $path: zchttpd $a, nginx $b" >&2
		diff <(head -c 2000 "$BATS_TEST_TMPDIR/z.body") <(head -c 2000 "$BATS_TEST_TMPDIR/n.body") >&2 || true
		return 1
	fi
}

@test "php-fpm: output of every size up to megabytes, byte-exact against nginx" {
	for n in 0 1 4095 16384 65535 65536 65537 1000000 5000000; do
		same "/size.php?n=$n"
		same "/size.php?n=$n&piece=1000"
	done
	[ "$(curl -s "$URL/size.php?n=1000000" | wc -c)" -eq 1000000 ]
}

@test "php-fpm: status codes, header() and redirects" {
	same "/status.php"
	same "/status.php?code=404"
	same "/status.php?code=204"
	run curl -si "$URL/status.php"
	[[ "$output" == "HTTP/1.1 418 "* ]]
	[[ "$output" == *"X-Probe: status"* ]]
	same "/redirect.php"
	run curl -si "$URL/redirect.php?to=/index.html"
	[[ "$output" == "HTTP/1.1 302 Found"* ]]
	[[ "$output" == *"Location: /index.html"* ]]
	same "/missing.php"
}

@test "php-fpm: GET and POST forms, PATH_INFO" {
	same "/form.php?b=2&a=1"
	same "/form.php?x=1" -d 'name=zc&value=stack'
	same "/form.php/extra/info?y=2"
	run curl -s -d 'k=v' "$URL/form.php?q=1"
	[[ "$output" == *"post k=v"* ]]
	[[ "$output" == *"get q=1"* ]]
}

@test "php-fpm: file uploads (multipart) and a raw body" {
	head -c 3000000 /dev/urandom > "$BATS_TEST_TMPDIR/up.bin"
	echo hello > "$BATS_TEST_TMPDIR/up.txt"
	same "/upload.php" -F "file1=@$BATS_TEST_TMPDIR/up.bin" -F "file2=@$BATS_TEST_TMPDIR/up.txt"
	run curl -s -F "file1=@$BATS_TEST_TMPDIR/up.bin" "$URL/upload.php"
	[[ "$output" == *"file1 up.bin 3000000 0 $(sha256sum < "$BATS_TEST_TMPDIR/up.bin" | cut -d' ' -f1)"* ]]
	same "/upload.php" -H 'Content-Type: application/octet-stream' --data-binary "@$BATS_TEST_TMPDIR/up.bin"
	same "/upload.php" -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/octet-stream' --data-binary "@$BATS_TEST_TMPDIR/up.bin"
}

@test "php-fpm: sessions keep state across requests through the cookie" {
	jar="$BATS_TEST_TMPDIR/jar"
	[ "$(curl -s -c "$jar" -b "$jar" "$URL/session.php")" = "visit 1" ]
	[ "$(curl -s -c "$jar" -b "$jar" "$URL/session.php")" = "visit 2" ]
	[ "$(curl -s -c "$jar" -b "$jar" "$URL/session.php")" = "visit 3" ]
	[ "$(curl -s "$URL/session.php")" = "visit 1" ]	# no cookie: new
}

@test "fcgiwrap: shell CGI scripts, query, body and output, against nginx" {
	same "/echo.sh?a=1&n=10"
	same "/echo.sh?n=200000"
	same "/echo.sh?x" -d 'posted body'
	head -c 1000000 /dev/urandom > "$BATS_TEST_TMPDIR/b"
	same "/echo.sh" --data-binary "@$BATS_TEST_TMPDIR/b"
	run curl -si "$URL/echo.sh?q"
	[[ "$output" == *"X-Script: echo.sh"* ]]
	[[ "$output" == *"query q"* ]]
}

@test "static files beside the applications are still zchttpd's own" {
	same "/index.html"
	[ "$(curl -s "$URL/index.html")" = '<h1>apps index</h1>' ]
}
