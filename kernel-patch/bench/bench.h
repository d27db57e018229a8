/*
 * bench.h - what the guest benchmarks (make -C kernel-patch bench) share:
 * a byte sink on a TCP port (in a network namespace of its choice), CPU
 * and wall clocks read around a run, and one JSON line per run on stdout
 * (BENCH-JSON ...), which scripts/bench-report.py turns into the tables
 * and out/bench.json.  The tests' helpers (tests/cs.h, iol.h, netns.h)
 * provide the calls and PASS/FAIL reporting.
 */
#ifndef ZC_GUEST_BENCH_H
#define ZC_GUEST_BENCH_H

#include "cs.h"
#include "iol.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

/* What a run cost: wall time, this process's CPU, every CPU's busy time. */
struct bench_clock {
	double wall, proc, all;
};

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Busy time of all CPUs (user nice system irq softirq steal), seconds. */
static inline double bench_all_cpu(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	double hz = (double)sysconf(_SC_CLK_TCK);

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		v[0] = v[1] = v[2] = v[5] = v[6] = v[7] = 0;
	fclose(f);
	/* v[3] idle and v[4] iowait are not busy. */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
}

static inline void bench_clock_read(struct bench_clock *c)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	c->wall = bench_now();
	c->proc = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		  (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	c->all = bench_all_cpu();
}

/* end - start, in place in end. */
static inline void bench_clock_diff(struct bench_clock *end,
				    const struct bench_clock *start)
{
	end->wall -= start->wall;
	end->proc -= start->proc;
	end->all -= start->all;
}

/*
 * The sink: in network namespace ns (a bind-mounted namespace file, or
 * NULL for the current one), listen on addr:port, then accept connections
 * one after another, read each to its end and answer with the byte count
 * (8 bytes).  A connection that brings no byte ends it.  Returns the
 * child's pid after the listener is up, or -1.
 */
static inline pid_t bench_sink(const char *ns, const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, ready[2], l;
	char c = 0;
	pid_t pid;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid) {
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1 || c != 'y') {
			close(ready[0]);
			waitpid(pid, NULL, 0);
			return -1;
		}
		close(ready[0]);
		return pid;
	}
	close(ready[0]);
	if (ns) {
		int fd = open(ns, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		close(fd);
	}
	inet_pton(AF_INET, addr, &a.sin_addr);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 4))
		_exit(3);
	if (write(ready[1], "y", 1) != 1)
		_exit(4);
	close(ready[1]);
	for (;;) {
		static char rb[256 * 1024];
		struct pollfd p = { .fd = l, .events = POLLIN };
		uint64_t total = 0;
		ssize_t r;
		int s;

		if (poll(&p, 1, 600000) != 1)
			_exit(5);
		s = accept(l, NULL, NULL);
		if (s < 0)
			_exit(6);
		while ((r = read(s, rb, sizeof(rb))) > 0)
			total += (uint64_t)r;
		if (write(s, &total, sizeof(total)) != sizeof(total))
			_exit(7);
		close(s);
		if (!total)
			_exit(r < 0 ? 8 : 0);
	}
}

/* Connect to the sink from the current namespace. */
static inline int bench_connect(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	inet_pton(AF_INET, addr, &a.sin_addr);
	if (connect(s, (void *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	return s;
}

/* End a connection to the sink: its count of what arrived, or -1. */
static inline long long bench_finish(int s)
{
	uint64_t got = 0;
	size_t n = 0;

	shutdown(s, SHUT_WR);
	while (n < sizeof(got)) {
		ssize_t r = read(s, (char *)&got + n, sizeof(got) - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(s);
	return n == sizeof(got) ? (long long)got : -1;
}

/* Stop the sink (an empty connection) and reap it; 1 if it exited 0. */
static inline int bench_sink_stop(pid_t pid, const char *addr, int port)
{
	int st = 0, s = bench_connect(addr, port);

	if (s >= 0)
		bench_finish(s);
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

#define MAXS	64	/* slices per iol_read */

/* iol_write all of n slices, however the socket splits them; 0 or -1. */
static inline int iol_write_all(int s, const struct iol_slice *in, int n)
{
	struct iol_slice sl[MAXS];
	int i = 0;

	memcpy(sl, in, (size_t)n * sizeof(*sl));
	while (i < n) {
		long w = iol_write(s, sl + i, (unsigned)(n - i), 0);

		if (w <= 0)
			return -1;
		while (w > 0 && i < n) {
			if ((unsigned long long)w >= sl[i].len) {
				w -= (long)sl[i].len;
				i++;
			} else {
				sl[i].off += (unsigned long long)w;
				sl[i].len -= (unsigned long long)w;
				w = 0;
			}
		}
	}
	return 0;
}

/* PASS/FAIL for case name of program prefix: all its runs delivered. */
static inline void bench_report_case(const char *prefix, const char *name,
				     int ok)
{
	char full[96];

	snprintf(full, sizeof(full), "%s-%s", prefix, name);
	report(ok, full, "bytes lost (see INFO)");
}

/* "--name value" options: a number (val) or a string (str). */
struct bench_opt {
	const char *name;
	long long *val;
	const char **str;
};

/* Parse argv into the options o (ended by a NULL name); 0 when all known. */

static inline int bench_args(int argc, char **argv, const struct bench_opt *o)
{
	for (int i = 1; i < argc; i += 2) {
		const struct bench_opt *p;

		for (p = o; p->name; p++)
			if (!strcmp(argv[i], p->name))
				break;
		if (!p->name || i + 1 >= argc) {
			fprintf(stderr, "unknown or incomplete option %s\n",
				argv[i]);
			return -1;
		}
		if (p->val)
			*p->val = atoll(argv[i + 1]);
		else
			*p->str = argv[i + 1];
	}
	return 0;
}

#endif
