# tests/helpers/server.bash - start and stop zchttpd for a bats file.
#
# ZCHTTPD may name another build (ci/test.sh runs the server's bats files
# again with the ASan+UBSan binary).  start_server takes extra options;
# ROOT must be set.  Sets PORT, PID, URL.  WAIT_CURL: curl options for the
# first request (--http2-prior-knowledge for a port that speaks h2c only).  SERVER_WRAPPER, when set, is a
# command the server runs under (e.g. tests/helpers/no_openat2.c's).
# ZCHTTPD_EVENT=io_uring runs every server on the io_uring loop (ci/test.sh
# runs the server's bats files once more so).

ZCHTTPD="${ZCHTTPD:-$BATS_TEST_DIRNAME/../build/server/zchttpd}"
RAW="python3 $BATS_TEST_DIRNAME/helpers/rawhttp.py"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_server() { # extra options...
	PORT=$(free_port)
	${SERVER_WRAPPER:-} "$ZCHTTPD" --root "$ROOT" --listen "127.0.0.1:$PORT" --workers 2 \
		${ZCHTTPD_EVENT:+--event "$ZCHTTPD_EVENT"} --access-log "$BATS_TEST_TMPDIR/access.log" "$@" \
		2>"$BATS_TEST_TMPDIR/server.err" 3>&- &
	PID=$!
	URL="http://127.0.0.1:$PORT"
	wait_answer "$URL/" ${WAIT_CURL:-}
}

# Wait up to 5 s until URL answers (curl options may follow); on failure
# show the server's stderr.
wait_answer() { # URL [curl options...]
	for _ in $(seq 100); do
		curl -s -o /dev/null "$@" && return 0
		sleep 0.05
	done
	cat "$BATS_TEST_TMPDIR/server.err"
	return 1
}

# SIGTERM, then wait at most 15 s for the graceful stop before SIGKILL: a
# server that cannot stop fails the test instead of hanging the suite.
stop_server() {
	kill -TERM "$PID" 2>/dev/null || return 0
	for _ in $(seq 150); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$PID" 2>/dev/null; then
		kill -KILL "$PID"
		echo "zchttpd did not stop within 15 s" >&2
		return 1
	fi
	wait "$PID" 2>/dev/null || true
}

# A sanitizer report from any server process fails the test.
check_sanitizers() {
	if grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' \
		"$BATS_TEST_TMPDIR/server.err"; then
		return 1
	fi
}

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
