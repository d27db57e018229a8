#!/bin/bash
# tests/proxy/check_apps.sh - the upstream applications of tests/proxy/,
# each checked straight (no proxy in front): every app started in a process
# group of its own on a free port, checked, stopped, and nothing of it may
# be left running.
#   wsgi, node, go: contract_checks.sh (README.md's contract), and the peak
#                   memory of their largest process grows by less than
#                   64 MiB (100 MiB bodies went through: none held whole)
#   ws:             ws_client.py against ws_echo.py
#   bad:            bad_upstream.py answers each path as it promises, and
#                   logs the request heads it received
# Exit status 0 when everything passed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/apps.bash"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
FAILED=()

now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }

# Peak resident memory (VmHWM, MiB) of the largest process of a group.
peak_mib() { # pgid
	local pid kb max=0
	for pid in $(group_members "$1" | awk '{print $2}'); do
		kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
		[ "${kb:-0}" -gt "$max" ] && max=$kb
	done
	echo $((max / 1024))
}

run_app() { # kind description check-function
	local kind=$1 what=$2 t rc=0 peak0 peak
	shift 2
	echo "== $kind: $what"
	mkdir -p "$D/$kind"
	if [ "$kind" = go ]; then	# built apart: its time is not start-up time
		t=$(now)
		build_go_app "$D/$kind" || { FAILED+=("$kind: go build"); return; }
		echo "   go build: $(since "$t") s"
	fi
	t=$(now)
	start_app "$kind" "$D/$kind" || { FAILED+=("$kind: start"); return; }
	echo "   answering on port $APP_PORT after $(since "$t") s"
	peak0=$(peak_mib "$APP_PID")
	"$@" "$kind" || rc=$?
	[ $rc -eq 0 ] || FAILED+=("$kind: $rc check(s)")
	case $kind in wsgi | node | go)
		peak=$(peak_mib "$APP_PID")
		echo "   peak memory of its largest process: $peak0 MiB started, $peak MiB after"
		[ $((peak - peak0)) -lt 64 ] || FAILED+=("$kind: memory grew $peak0 -> $peak MiB")
	esac
	t=$(now)
	if stop_app "$APP_PID"; then
		echo "   stopped (whole process group gone) in $(since "$t") s"
	else
		FAILED+=("$kind: stop")
	fi
	if grep -q Traceback "$D/$kind/$kind.err"; then
		cat "$D/$kind/$kind.err"
		FAILED+=("$kind: traceback")
	fi
}

contract_checks() {
	"$HERE/contract_checks.sh" "$APP_URL" "$D/$1"
}

ws_checks() {
	local c
	c=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "$APP_URL/other")
	[ "$c" = 404 ] && echo "ok   GET /other: 404" || { echo "FAIL GET /other: $c"; return 1; }
	"$PROXY_PY" "$HERE/ws_client.py" "ws://127.0.0.1:$APP_PORT/ws" &&
	"$PROXY_PY" "$HERE/ws_client.py" --deflate "ws://127.0.0.1:$APP_PORT/ws" | tail -1
}

bad_checks() {
	python3 "$HERE/check_bad_upstream.py" "$APP_PORT" "$D/bad/bad_upstream.log"
}

run_app wsgi "wsgi_app.py under gunicorn (2 workers, gthread, 8 threads)" contract_checks
run_app node "node_app.js ($(node --version))" contract_checks
run_app go "go_app.go ($("$PROXY_GO" version | cut -d' ' -f3))" contract_checks
run_app ws "ws_echo.py, checked by ws_client.py" ws_checks
run_app bad "bad_upstream.py" bad_checks

if [ ${#FAILED[@]} -gt 0 ]; then
	printf 'FAILED: %s\n' "${FAILED[@]}"
	exit 1
fi
echo "all passed"
