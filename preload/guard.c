/*
 * guard.c - the cost guard: a conversion is taken only while it measures
 * cheaper than the plain calls, in this process, now.
 *
 * Why measure instead of deciding once: whether sending file pages by
 * reference (sendfile/splice) costs the sender less CPU than the copy a
 * plain write makes is not a property of the call alone.  Apache under
 * mapwrite on the same kind of 2-vCPU virtual machine, same kernel
 * series, same 1 MiB file, loopback, server-bound: 1.5x *more* CPU per
 * request in one session (333 -> 506 us; zchttpd's sendfile against the
 * floor's copy said the same there), 2.2x *less* in another (570 -> 259
 * us; sendfile 150 against copy 214 us there) -- docs/bench-preload.md.
 * The conversion's own checks also cost a fixed ~20 system calls per
 * call, which a small call's copy may not repay.  A rule fixed in advance
 * would be wrong somewhere; the program's CPU time says which way is
 * cheaper where it runs.
 *
 * Why per epoch and per process, not per call: timing each call on the
 * thread's clock was tried first and chose the copy for up to 39 % of the
 * calls of an Apache run in which the conversion was 1.3x cheaper over
 * all.  Much of a send's cost is not in its own call: the loopback
 * receive processing, the ACKs that free earlier sends' buffers (page
 * references or copies) and other connections' packets run in softirq
 * inside whatever call happens to be running, and a single 64 KiB call
 * is short against that noise.  So the guard compares the ways over
 * epochs -- at least ZCP_GUARD_EPOCH_CALLS calls and ZCP_GUARD_EPOCH_NS of
 * CPU -- in which every call takes the same way, on the process's CPU
 * clock (CLOCK_PROCESS_CPUTIME_ID: every thread, and whatever the kernel
 * did in their name, exactly what a cgroup or getrusage charges the
 * program) per byte the epoch's calls wrote.  The program's other work
 * counts in both ways' epochs alike.
 *
 * The rules (guard.h): 2 epochs of each way to start, alternating; then
 * the cheaper way by the median of its last 5 epochs, ties within 2 % to
 * the conversion, and one epoch in 32 the other way.  A median, not a
 * mean: an epoch that met a burst of someone else's packets (softirq
 * work lands in whatever process is running) must not swing the choice;
 * an average moved by a quarter of each epoch's difference still took
 * the copy for 21 % of the calls of Apache runs that the conversion made
 * 2x cheaper, on a machine at load 10.  What that costs when the choice is right: the probes (with
 * a way 1.5x dearer, 1/32 of its extra: +1.6 %) and the 2 warm-up epochs
 * of the dearer way; what it saves when the conversion loses: all but that.
 *
 * Locking: one flag, only tried, held by the call that ends an epoch; a
 * call that finds it held goes on (a signal handler interrupting the
 * holder must not wait for it).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guard.h"

/* -- the rules (pure) ------------------------------------------------ */

double zcp_guard_cost(const struct zcp_guard_costs *c, enum zcp_way way)
{
	double v[ZCP_GUARD_KEEP];
	int k = c->n[way] < ZCP_GUARD_KEEP ? (int)c->n[way] : ZCP_GUARD_KEEP;

	if (!k)
		return 0;
	for (int i = 0; i < k; i++) { /* insertion sort of at most 5 */
		double x = c->ns_per_byte[way][i];
		int j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

enum zcp_way zcp_guard_cheaper(const struct zcp_guard_costs *c)
{
	if (!c->n[ZCP_WAY_REF] || !c->n[ZCP_WAY_COPY])
		return ZCP_WAY_REF;
	return zcp_guard_cost(c, ZCP_WAY_REF) <= zcp_guard_cost(c, ZCP_WAY_COPY) * (1.0 + ZCP_GUARD_TIE)
		       ? ZCP_WAY_REF : ZCP_WAY_COPY;
}

enum zcp_way zcp_guard_epoch_way(const struct zcp_guard_costs *c, uint32_t k, bool *probe)
{
	enum zcp_way best;

	if (c->n[ZCP_WAY_REF] < ZCP_GUARD_WARM || c->n[ZCP_WAY_COPY] < ZCP_GUARD_WARM) {
		*probe = true;
		return (k & 1) ? ZCP_WAY_REF : ZCP_WAY_COPY;
	}
	best = zcp_guard_cheaper(c);
	*probe = k % ZCP_GUARD_PROBE == 0;
	if (*probe)
		return best == ZCP_WAY_REF ? ZCP_WAY_COPY : ZCP_WAY_REF;
	return best;
}

void zcp_guard_add(struct zcp_guard_costs *c, enum zcp_way way, uint64_t ns, uint64_t bytes)
{
	double x;

	if (!bytes)
		return;
	x = (double)ns / (double)bytes;
	c->ns_per_byte[way][c->n[way] % ZCP_GUARD_KEEP] = x;
	if (c->n[way] < UINT32_MAX)
		c->n[way]++;
}

/* -- the process's guard --------------------------------------------- */

static struct {
	atomic_flag busy;          /* held by the call ending an epoch */
	atomic_int way;            /* this epoch's way */
	atomic_bool probe;         /* ... and whether it is a warm-up or probe */
	atomic_ullong calls, bytes; /* this epoch's, so far */
	atomic_ullong t0;          /* process CPU ns at the epoch's start; 0: none yet */
	uint32_t epoch;            /* epochs ended (under busy) */
	struct zcp_guard_costs costs; /* under busy */
} g;

static bool guard_on(void)
{
	static atomic_int on = -1;
	int v = atomic_load_explicit(&on, memory_order_relaxed);

	if (v < 0) {
		const char *e = getenv("ZC_MAPWRITE_GUARD");

		v = !(e && e[0] == '0' && !e[1]);
		atomic_store_explicit(&on, v, memory_order_relaxed);
	}
	return v;
}

static uint64_t cpu_ns(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * For the tests only: ZC_MAPWRITE_GUARD_TEST=ref:NS (or copy:NS) makes
 * every call of that way burn NS more nanoseconds of CPU, so that a test
 * can make one way dearer by a known margin and check that the guard,
 * through the real hooks, stops taking it.  *way = -1: none.
 */
static uint64_t test_penalty(int *way)
{
	static atomic_llong ns = -1;
	static atomic_int which = -1;
	long long v = atomic_load_explicit(&ns, memory_order_relaxed);

	if (v < 0) {
		const char *e = getenv("ZC_MAPWRITE_GUARD_TEST");
		int w = -1;

		v = 0;
		if (e && !strncmp(e, "ref:", 4))
			w = ZCP_WAY_REF;
		else if (e && !strncmp(e, "copy:", 5))
			w = ZCP_WAY_COPY;
		if (w >= 0)
			v = strtoll(strchr(e, ':') + 1, NULL, 10);
		atomic_store_explicit(&which, w, memory_order_relaxed);
		atomic_store_explicit(&ns, v > 0 ? v : 0, memory_order_relaxed);
	}
	*way = atomic_load_explicit(&which, memory_order_relaxed);
	return (uint64_t)v;
}

/* Start an epoch now (the flag held): its way, from the costs so far. */
static void begin_epoch(uint64_t now)
{
	bool probe = false;
	enum zcp_way way = zcp_guard_epoch_way(&g.costs, g.epoch + 1, &probe);

	atomic_store_explicit(&g.calls, 0, memory_order_relaxed);
	atomic_store_explicit(&g.bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&g.way, way, memory_order_relaxed);
	atomic_store_explicit(&g.probe, probe, memory_order_relaxed);
	atomic_store_explicit(&g.t0, now, memory_order_release);
}

void zcp_guard_pick(struct zcp_guard_pick *p)
{
	p->active = false;
	p->probe = false;
	p->way = ZCP_WAY_REF;
	if (!guard_on())
		return;
	if (!atomic_load_explicit(&g.t0, memory_order_acquire)) {
		/* The first call (or the first in a forked child). */
		if (atomic_flag_test_and_set_explicit(&g.busy, memory_order_acquire))
			return;
		if (!atomic_load_explicit(&g.t0, memory_order_relaxed))
			begin_epoch(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) | 1);
		atomic_flag_clear_explicit(&g.busy, memory_order_release);
	}
	p->active = true;
	p->way = atomic_load_explicit(&g.way, memory_order_relaxed);
	p->probe = atomic_load_explicit(&g.probe, memory_order_relaxed);
}

void zcp_guard_done(const struct zcp_guard_pick *p, ssize_t r)
{
	uint64_t now, t0, burn, calls;
	int burn_way;

	if (!p->active)
		return;
	burn = test_penalty(&burn_way);
	if (burn && burn_way == (int)p->way)
		for (uint64_t t = cpu_ns(CLOCK_THREAD_CPUTIME_ID); t && cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t < burn;)
			;
	/* A call made the other way (the epoch changed under it) is not this
	 * epoch's sample; its CPU time still falls into it, a small blur. */
	if ((int)p->way != atomic_load_explicit(&g.way, memory_order_relaxed))
		return;
	if (r > 0)
		atomic_fetch_add_explicit(&g.bytes, (uint64_t)r, memory_order_relaxed);
	calls = atomic_fetch_add_explicit(&g.calls, 1, memory_order_relaxed) + 1;
	/* The end is looked for every EPOCH_CALLS calls (a clock read costs
	 * a system call that sums the CPU time of every thread). */
	if (calls % ZCP_GUARD_EPOCH_CALLS)
		return;
	if (atomic_flag_test_and_set_explicit(&g.busy, memory_order_acquire))
		return;
	now = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = atomic_load_explicit(&g.t0, memory_order_relaxed);
	if (now && t0 && now >= t0 + ZCP_GUARD_EPOCH_NS &&
	    atomic_load_explicit(&g.calls, memory_order_relaxed) >= ZCP_GUARD_EPOCH_CALLS) {
		zcp_guard_add(&g.costs, (enum zcp_way)atomic_load_explicit(&g.way, memory_order_relaxed),
			      now - t0, atomic_load_explicit(&g.bytes, memory_order_relaxed));
		g.epoch++;
		begin_epoch(now | 1);
	}
	atomic_flag_clear_explicit(&g.busy, memory_order_release);
}

void zcp_guard_fork_child(void)
{
	atomic_flag_clear_explicit(&g.busy, memory_order_relaxed);
	atomic_store_explicit(&g.t0, 0, memory_order_relaxed);
}
