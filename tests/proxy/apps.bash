# tests/proxy/apps.bash - start and stop the upstream applications of
# tests/proxy/ (README.md), each in its own process group.  Sourced by
# check_apps.sh; a bats file may `load proxy/apps`.
#
#   start_app KIND DIR   KIND: wsgi node go ws bad.  DIR: a scratch directory
#                        (the app's stdout/stderr go to DIR/KIND.out, .err;
#                        the Go binary is built there once; bad writes
#                        DIR/bad_upstream.log).  Sets APP_PORT, APP_PID
#                        (= the group's id), APP_URL; returns when the app
#                        answers, or fails after 20 s showing its stderr.
#   stop_app PID         SIGTERM to the whole group, SIGKILL after 10 s;
#                        fails if the group needed SIGKILL.

PROXY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROXY_REPO=$(cd "$PROXY_DIR/../.." && pwd)
PROXY_PY=$PROXY_REPO/.venv/bin/python
PROXY_GO=$(command -v go || echo /usr/local/go/bin/go)

app_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# go run would compile on every start: build once per DIR (about 0.4 s with
# Go's build cache warm, 15 s cold).
build_go_app() { # dir
	[ -x "$1/go_app" ] || "$PROXY_GO" build -o "$1/go_app" "$PROXY_DIR/go_app.go"
}

start_app() { # kind dir
	local kind=$1 dir=$2 port url
	port=$(app_free_port)
	url=http://127.0.0.1:$port
	case $kind in
	wsgi) set -- "$PROXY_REPO/.venv/bin/gunicorn" --chdir "$PROXY_DIR" \
		--bind "127.0.0.1:$port" --workers 2 --worker-class gthread \
		--threads 8 wsgi_app:app ;;
	node) set -- node "$PROXY_DIR/node_app.js" "$port" ;;
	go) build_go_app "$dir" || return 1
		set -- "$dir/go_app" "$port" ;;
	ws) set -- "$PROXY_PY" "$PROXY_DIR/ws_echo.py" "$port" ;;
	bad) set -- "$PROXY_PY" "$PROXY_DIR/bad_upstream.py" "$port" --log "$dir/bad_upstream.log" ;;
	*) echo "start_app: unknown kind $kind" >&2; return 1 ;;
	esac
	# setsid: a group of its own (gunicorn's workers, go's children) that
	# stop_app signals at once.  3>&-: bats waits for whoever holds fd 3.
	setsid "$@" >"$dir/$kind.out" 2>"$dir/$kind.err" 3>&- &
	APP_PID=$! APP_PORT=$port APP_URL=$url
	for _ in $(seq 400); do
		# any HTTP answer will do (ws_echo answers plain GETs with 404)
		if curl -s --noproxy '*' -o /dev/null "$url/status/200"; then
			[ "$(ps -o pgid= -p "$APP_PID" | tr -d ' ')" = "$APP_PID" ] && return 0
			echo "start_app: $kind is not the leader of its process group" >&2
			break
		fi
		kill -0 "$APP_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "$kind did not answer on port $port:" >&2
	cat "$dir/$kind.err" >&2
	stop_app "$APP_PID"
	return 1
}

# Live (not zombie) processes of a process group.
group_members() { # pgid
	ps -e -o pgid=,pid=,stat=,args= | awk -v g="$1" '$1 == g && $3 !~ /^Z/'
}

stop_app() { # pgid
	local pgid=$1
	kill -TERM -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 100); do
		[ -z "$(group_members "$pgid")" ] && { wait "$pgid" 2>/dev/null || true; return 0; }
		sleep 0.1
	done
	echo "process group $pgid still running 10 s after SIGTERM, killed:" >&2
	group_members "$pgid" >&2
	kill -KILL -- "-$pgid" 2>/dev/null || true
	wait "$pgid" 2>/dev/null || true
	return 1
}
