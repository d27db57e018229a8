/* sim.h - gdssim's internals: the loaded trace and the policies it replays.
 *
 * The trace is read once (through the one parser, gds_trace.h) into two
 * flat arrays, with object ids renumbered densely 0..nobj-1.  Every policy
 * then replays the arrays and keeps its per-object state in arrays indexed
 * by that number: no hashing and no allocation per request, which is what
 * keeps a million requests per policy well under a second.
 */
#ifndef GDSSIM_SIM_H
#define GDSSIM_SIM_H

#include <stddef.h>
#include <stdint.h>

struct sim_trace {
	uint32_t *obj;		/* request i: dense object number */
	uint64_t *size;		/* request i: bytes */
	size_t n;		/* requests */
	uint32_t nobj;		/* distinct objects */
	uint64_t unique_bytes;	/* sum over objects of their largest size */
	uint64_t requested_bytes;
};

struct sim_result {
	uint64_t hits, bytes_hit;
	uint64_t evictions;
	double seconds;
};

/*
 * Every policy follows the same rules, so that only the replacement
 * decision differs:
 *   - a request hits iff the object is cached with the same size; a cached
 *     object requested with another size changed: it is dropped, and the
 *     request is a miss that caches the new version;
 *   - every miss is admitted, except objects bigger than the whole cache,
 *     which bypass it;
 *   - room is made before the new object goes in.
 * Returns 0, or -ENOMEM.
 */
typedef int (*sim_fn)(const struct sim_trace *t, uint64_t cache_bytes,
		      struct sim_result *r);

struct gds_policy;
/* A libgds policy (gds.h's gds_policies: gds1 gdsp gdsf gdsf-all lru),
 * run through libgds itself. */
int sim_gds(const struct sim_trace *t, uint64_t cap,
	    const struct gds_policy *p, struct sim_result *r);
int sim_sieve(const struct sim_trace *t, uint64_t cap, struct sim_result *r);
int sim_s3fifo(const struct sim_trace *t, uint64_t cap, struct sim_result *r);
/* The ceiling: an infinite cache (cap ignored). */
int sim_infinite(const struct sim_trace *t, uint64_t cap, struct sim_result *r);

#endif
