/*
 * guard.h - the cost guard of a conversion (guard.c): is the zero-copy way
 * of the program's calls cheaper than the plain calls, in this process,
 * on this machine, now?  mapwrite asks it before every call it could
 * convert, and tells it how each call went.
 */
#ifndef ZC_PRELOAD_GUARD_H
#define ZC_PRELOAD_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The two ways of doing a call. */
enum zcp_way {
	ZCP_WAY_REF,  /* the conversion: file pages by reference */
	ZCP_WAY_COPY, /* the plain call: the kernel copies */
};

/* The measured cost of both ways: the process's CPU nanoseconds per byte
 * written in each of the last ZCP_GUARD_KEEP epochs of that way (a ring),
 * and how many epochs there were. */
#define ZCP_GUARD_KEEP 5
struct zcp_guard_costs {
	double ns_per_byte[2][ZCP_GUARD_KEEP];
	uint32_t n[2];
};

/*
 * The rules (guard.c says why).  Time is cut into epochs of at least
 * ZCP_GUARD_EPOCH_CALLS calls and ZCP_GUARD_EPOCH_NS of the process's CPU
 * time; every call of an epoch takes the epoch's way, and at its end the
 * process's CPU time over the epoch per byte those calls wrote becomes a
 * sample of that way's cost:
 *   - the first 2 x ZCP_GUARD_WARM epochs alternate, the conversion first;
 *   - then each epoch takes the cheaper way -- by the median of its last
 *     ZCP_GUARD_KEEP epochs; the conversion when within ZCP_GUARD_TIE of
 *     the copy -- but every ZCP_GUARD_PROBE-th takes the other, to see
 *     whether that changed.
 */
#define ZCP_GUARD_EPOCH_CALLS 32
#define ZCP_GUARD_EPOCH_NS 5000000
#define ZCP_GUARD_WARM 2
#define ZCP_GUARD_PROBE 32
#define ZCP_GUARD_TIE 0.02

/* Pure, tested on their own (test_guard.c): a way's cost (the median of
 * its kept epochs; 0 before any), the cheaper way, the way of epoch
 * number k (1, 2, ...) given the costs so far (*probe: it is a warm-up or
 * probe epoch, not the cheaper way's), and the costs after one more epoch
 * of `way` that cost ns for `bytes` bytes. */
double zcp_guard_cost(const struct zcp_guard_costs *c, enum zcp_way way);
enum zcp_way zcp_guard_cheaper(const struct zcp_guard_costs *c);
enum zcp_way zcp_guard_epoch_way(const struct zcp_guard_costs *c, uint32_t k, bool *probe);
void zcp_guard_add(struct zcp_guard_costs *c, enum zcp_way way, uint64_t ns, uint64_t bytes);

/* What the guard said for one call: pass it back with the result. */
struct zcp_guard_pick {
	bool active;      /* the guard is on and counts this call */
	bool probe;       /* the way is a warm-up's or probe's */
	enum zcp_way way;
};

/*
 * The process's guard.  pick: the way for the next call.  done: that
 * call, made that way, returned r (bytes written, or -1).  Thread-safe;
 * safe in a signal handler (an epoch is ended by whichever call gets the
 * flag first; the others go on).  ZC_MAPWRITE_GUARD=0 in the environment
 * turns the guard off: every call takes the conversion.
 */
void zcp_guard_pick(struct zcp_guard_pick *p);
void zcp_guard_done(const struct zcp_guard_pick *p, ssize_t r);

/* fork: the child measures its own CPU time from scratch (its clock
 * starts at 0) and keeps its parent's costs.  mapwrite's fork hook. */
void zcp_guard_fork_child(void);

#endif
