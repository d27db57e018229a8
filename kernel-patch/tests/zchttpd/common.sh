# common.sh - sourced by the guest's zchttpd tests (ktls.sh, criu.sh).
ZH=/zchttpd
TLSGET=$ZH/bin/tlsget
pass=0
fail=0

ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { # NAME WHY COMMAND...: PASS NAME if COMMAND succeeds, else FAIL NAME: WHY
	_check_name=$1 _check_why=$2
	shift 2
	if "$@"; then ok "$_check_name"; else bad "$_check_name: $_check_why"; fi
}

# mkfiles DIR: the staged file set (name size per line), random bodies.
mkfiles() {
	mkdir -p "$1"
	while read -r name size; do
		head -c "$size" /dev/urandom > "$1/$name"
	done < $ZH/files
}

# paths: "/f1.bin /f2.bin ..." for tlsget.
paths() { awk '{ printf "/%s ", $1 }' $ZH/files; }

# same DIR1 DIR2: every file of the set byte-identical in both.
same() {
	while read -r name size; do
		cmp -s "$1/$name" "$2/$name" || { echo "differs: $name"; return 1; }
	done < $ZH/files
}

# status PORT: the status endpoint's JSON (plain HTTP) on stdout.
status() {
	d=$(mktemp -d)
	$TLSGET -n 127.0.0.1 "$1" "$d" /.zc/status >/dev/null &&
		cat "$d/status"
	r=$?
	rm -rf "$d"
	return $r
}

# field JSON NAME: the first number after "NAME": in JSON.
field() { echo "$1" | grep -o "\"$2\":[0-9]*" | head -1 | cut -d: -f2; }

# wait_up PORT: until the status endpoint answers (30 s).
wait_up() {
	i=0
	while [ $i -lt 300 ]; do
		status "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# alive PID: the process exists and is not a zombie (one nobody reaped
# yet: a restored tree's parent is init, which reaps when it gets to it).
alive() {
	[ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'
}

# stop PID: SIGTERM, then wait until the process is gone (30 s).
stop() {
	kill -TERM "$1" 2>/dev/null
	i=0
	while alive "$1" && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! alive "$1"
}

# now_ms: monotonic enough for durations of a second or more.
now_ms() {
	t=$(date +%s%N 2>/dev/null)
	case $t in
	*N|"") awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime ;;
	*) echo $((t / 1000000)) ;;
	esac
}
