# bench/h2-site.sh - sourced by the HTTP/2 measurement scripts
# (bench/h2c-cpu.sh, bench/callgrind/h2c-syscalls.sh): a scratch site of one
# SIZE-byte file, a one-worker zchttpd on it, and the cleanup of both.
#
#   h2_site SIZE            makes $work/root/f (and $work/cert.pem and
#                           $work/key.pem when PROTO=h2); removed at exit
#   h2_start BUILD ARGS     starts BUILD's zchttpd (--workers 1, h2c or, with
#                           PROTO=h2, h2 over TLS) and waits until it answers:
#                           sets $pid (the master), $worker and $url
#   h2_stop                 stops it
command -v h2load >/dev/null || { echo "needs h2load (nghttp2-client)" >&2; exit 2; }
proto=${PROTO:-h2c}
work=
pid=
h2_cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$work" ] && rm -rf "$work"
}
trap h2_cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

h2_site() { # SIZE
	work=$(mktemp -d)
	mkdir -p "$work/root"
	head -c "$1" /dev/urandom > "$work/root/f"
	[ "$proto" = h2 ] || return 0
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$work/key.pem" -out "$work/cert.pem" -days 2 \
		-subj /CN=localhost 2>/dev/null
}

h2_start() { # BUILD ARGS
	local port plain listen i
	port=$(free_port) plain=$(free_port)
	listen=(--listen "127.0.0.1:$port") url=http://127.0.0.1:$port/f
	if [ "$proto" = h2 ]; then
		listen=(--listen "127.0.0.1:$plain" --tls-listen "127.0.0.1:$port"
			--tls-cert "$work/cert.pem" --tls-key "$work/key.pem")
		url=https://127.0.0.1:$port/f
	fi
	# shellcheck disable=SC2086  # ARGS: words
	"$1/server/zchttpd" --root "$work/root" --workers 1 --io-threads 0 \
		--http2 on $2 "${listen[@]}" 2>"$work/log" &
	pid=$!
	for i in $(seq 100); do
		h2load -n 1 -c 1 "$url" 2>/dev/null | grep -q '1 succeeded' && break
		[ "$i" = 100 ] && { echo "zchttpd did not answer" >&2; exit 1; }
		sleep 0.1
	done
	worker=$(pgrep -P "$pid" | head -1)
}

h2_stop() {
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}
