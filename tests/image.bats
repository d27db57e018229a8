#!/usr/bin/env bats
# The container image (make image, docs/deploy.md): built with buildah from
# build-static/, zchttpd run from the image's own files as its user, the demo
# site and the status endpoint byte-exact, --probe, SIGTERM as a graceful stop.

load helpers/leftovers

B=(buildah --storage-driver vfs)

setup_file() {
	cd "$BATS_TEST_DIRNAME/.."
	export TAG="localhost/zctest-image-$$:latest"
	ci/static.sh >/dev/null
	ci/image.sh "$TAG" >/dev/null
	export CTR
	CTR=$("${B[@]}" from --quiet --name "zctest-image-$$" "$TAG")
}

teardown_file() {
	"${B[@]}" rm "zctest-image-$$" >/dev/null 2>&1 || true
	"${B[@]}" rmi "$TAG" >/dev/null 2>&1 || true
	check_leftovers
}

# The zchttpd master started in the container for this test: the oldest
# zchttpd process of the image's user listening on $PORT.
master_pid() {
	pgrep -o -u 10001 -f "^/zchttpd .*--listen 127.0.0.1:$PORT" || true
}

setup() {
	cd "$BATS_TEST_DIRNAME/.."
	PORT=$((20000 + RANDOM % 20000))
	URL=http://127.0.0.1:$PORT
	LOG=$BATS_TEST_TMPDIR/run.log
	# chroot isolation shares the host network: the server is on 127.0.0.1.
	# Arguments override the image's CMD only in the address.
	# ZC_TEST_RUN marks the server as this run's (check_leftovers).
	"${B[@]}" run --isolation chroot --env "ZC_TEST_RUN=$ZC_TEST_RUN" \
		"$CTR" -- /zchttpd --root /site \
		--listen "127.0.0.1:$PORT" --access-log - >"$LOG" 2>&1 &
	RUN_PID=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null "$URL/" && break
		sleep 0.1
	done
}

teardown() {
	local p
	p=$(master_pid)
	[ -z "$p" ] || kill -KILL "$p"
	wait "$RUN_PID" 2>/dev/null || true
}

probe() { # url: the image's HEALTHCHECK command, run from the image
	"${B[@]}" run --isolation chroot "$CTR" -- /zchttpd --probe "$1"
}

@test "image: config is the documented one (user, port, healthcheck, cmd)" {
	run "${B[@]}" inspect --format '{{.Docker.Config.User}}|{{.Docker.Config.ExposedPorts}}|{{.Docker.Config.Healthcheck.Test}}|{{.Docker.Config.Entrypoint}} {{.Docker.Config.Cmd}}' "$TAG"
	[ "$status" -eq 0 ]
	[ "$output" = '10001:10001|map[8080/tcp:{}]|[CMD /zchttpd --probe http://127.0.0.1:8080/.zc/status]|[/zchttpd] [--root /site --listen 0.0.0.0:8080 --access-log -]' ]
}

@test "image: serves the demo site byte-exact, as the non-root user" {
	p=$(master_pid)
	[ -n "$p" ]
	[ "$(stat -c %u /proc/$p)" = 10001 ]
	# The files the image holds, compared with what was served.
	mnt=$("${B[@]}" mount "$CTR")
	for f in index.html 1k.txt 10k.txt 100k.txt 1m.txt; do
		curl -sf -o "$BATS_TEST_TMPDIR/$f" "$URL/$f"
		cmp "$BATS_TEST_TMPDIR/$f" "$mnt/site/$f"
		cmp "$BATS_TEST_TMPDIR/$f" build/demo-site/$f
	done
	curl -sf -o "$BATS_TEST_TMPDIR/root.html" "$URL/"
	cmp "$BATS_TEST_TMPDIR/root.html" "$mnt/site/index.html"
	"${B[@]}" umount "$CTR" >/dev/null
	run curl -sf "$URL/.zc/status"
	[ "$status" -eq 0 ]
	[[ "$output" == '{"workers":'* ]]
	grep -q '"GET /1m.txt HTTP/1.1" 200 ' "$LOG"
}

@test "image: --probe exits 0 when healthy, 1 on 404 and with the server down" {
	run probe "$URL/.zc/status"
	[ "$status" -eq 0 ]
	run probe "$URL/no-such-file"
	[ "$status" -eq 1 ]
	p=$(master_pid)
	kill -TERM "$p"
	wait "$RUN_PID"
	run probe "$URL/.zc/status"
	[ "$status" -eq 1 ]
}

@test "image: SIGTERM stops zchttpd gracefully with status 0, mid-download" {
	p=$(master_pid)
	[ -n "$p" ]
	# A response in flight when SIGTERM arrives is completed.
	curl -s --limit-rate 2M -o "$BATS_TEST_TMPDIR/1m.txt" "$URL/1m.txt" &
	cpid=$!
	sleep 0.2
	kill -TERM "$p"
	wait "$cpid"
	cmp "$BATS_TEST_TMPDIR/1m.txt" build/demo-site/1m.txt
	# Not `run wait`: run's subshell is not the parent of buildah run.
	rc=0
	wait "$RUN_PID" || rc=$?
	[ "$rc" -eq 0 ]
	grep -q 'zchttpd: stopped' "$LOG"
	[ -z "$(master_pid)" ]
}
