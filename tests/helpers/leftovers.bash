# tests/helpers/leftovers.bash - a bats file leaves no server behind.
#
# Loading this file marks every process the file's tests start: they
# inherit ZC_TEST_RUN (this bats run's temporary directory) in their
# environment, which survives reparenting (a worker whose master died)
# and execve (spawned FastCGI applications).  nginx and php-fpm rewrite
# the memory /proc shows as their environment for their process titles,
# so a process also counts as this run's when its command line names the
# run's directory (their masters' configuration files live there) or its
# parent is this run's (their workers).
#
# check_leftovers, called by each file's teardown_file, looks among the
# programs a test may start (SERVER_NAMES, matched against the process
# name) for this run's processes, gives the ones stopping a few seconds,
# and then reports what is left with its command line, kills it and fails.
# Zombies are dead already and hold nothing; they do not count.

export ZC_TEST_RUN="$BATS_RUN_TMPDIR"

SERVER_NAMES='zchttpd|zcfloor|zcgen|zcwrap|zcecho|fcgi_probe|php-fpm.*|nginx|h2o|fcgiwrap|cgi-fcgi|wrk|gunicorn|node|go_app|python3?|haproxy|zcrelay'

# "STATE PPID" of a process, from /proc/PID/stat (its name, in
# parentheses, may hold spaces: everything up to the last ") " is skipped).
proc_state() { # pid
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	echo "${stat%% *} $(echo "$stat" | cut -d' ' -f2)"
}

# Did this run start the process?  Its parent's mark counts (one level).
of_this_run() { # pid [depth]
	local pid=$1 depth=${2:-0} ppid
	if { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null |
		grep -qxF "ZC_TEST_RUN=$ZC_TEST_RUN"; then
		return 0
	fi
	if { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null |
		grep -qF "$ZC_TEST_RUN/"; then
		return 0
	fi
	[ "$depth" -eq 0 ] || return 1
	ppid=$(proc_state "$pid" | cut -d' ' -f2)
	[ -n "$ppid" ] && [ "$ppid" -gt 1 ] && of_this_run "$ppid" 1
}

# This run's server processes still running (pids, one a line).
leftover_pids() {
	local dir pid comm
	for dir in /proc/[0-9]*; do
		pid=${dir#/proc/}
		comm=$(cat "$dir/comm" 2>/dev/null) || continue
		[[ "$comm" =~ ^($SERVER_NAMES)$ ]] || continue
		[ "$(proc_state "$pid" | cut -d' ' -f1)" != Z ] || continue
		of_this_run "$pid" && echo "$pid"
	done
}

check_leftovers() {
	local left
	[ -n "$ZC_TEST_RUN" ] || return 0
	for _ in $(seq 50); do
		left=$(leftover_pids)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "processes left running by $(basename "$BATS_TEST_FILENAME"):" >&2
	# shellcheck disable=SC2086
	ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ',')" >&2
	# shellcheck disable=SC2086
	kill -KILL $left 2>/dev/null || true
	return 1
}
