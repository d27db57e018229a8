/*
 * gds.h - libgds: Greedy-Dual-Size cache replacement (Cao and Irani, 1997).
 *
 * The policy.  Every cached object p carries a value H(p).  The cache keeps
 * an inflation value L, initially 0.
 *
 *     on insert or hit:   H(p) = L + cost(p) / size(p)           (GDS)
 *                         H(p) = L + freq(p) * cost(p) / size(p) (GDSF)
 *     to make room:       evict the p with minimum H, then L = H(p)
 *                         (L = max(L, H(p)): see pinning below)
 *
 * L only grows, so an object that is not touched "ages" relative to the
 * objects that are: GDS is LRU when all cost/size are equal, and prefers to
 * keep small and expensive objects otherwise.  Costs:
 *
 *     GDS_COST_ONE       cost 1: maximises the object hit ratio
 *     GDS_COST_PACKETS   2 + size/536: TCP packets, the network traffic
 *     GDS_COST_CALLER    the cost passed to gds_insert/gds_access (for
 *                        example a measured miss latency)
 *     GDS_COST_SIZE      cost = size: every H is L + 1, so (H, seq) is the
 *                        order of last touch and GDS is exactly LRU
 *
 * Admission.  By default every miss that fits is admitted: room is made
 * first, then H(p) is computed with the raised L (Cao and Irani).  With
 * `compete` the newcomer takes part in the eviction it causes instead --
 * the order libCacheSim's GDSF uses: H(p) = L + ... with L from *before*
 * the evictions, p goes into the heap, then minimum-(H, seq) entries leave
 * until the cache fits.  If p itself becomes the minimum it leaves at once
 * (not admitted: -ENOSPC) and L rises to its H, so a newcomer worth less
 * than what it would displace does not displace it.  The entries that were
 * worth even less than p and left before it stay evicted.
 *
 * Ties.  Entries with equal H leave in the order of their last touch
 * (insert or hit): the least recently touched goes first.  Every touch takes
 * a fresh sequence number from the cache, so eviction order is a total,
 * deterministic order on (H, seq).
 *
 * Memory.  Entries are embedded in the caller's objects (struct gds_entry,
 * like the kernel's list_head).  The cache owns only an index heap of
 * max_entries pointers, allocated once by gds_init.  Nothing allocates after
 * that: insert, hit, remove and evict are O(log n) pointer work.
 *
 * Pinning.  An entry in use (an in-flight response is sending its pages)
 * is pinned and is never evicted: pinned entries leave the heap, so the
 * victim is always the least valuable *unpinned* entry (IO-Lite's
 * "currently referenced" ordering).  When pinned bytes alone exceed the
 * budget the cache cannot honour it; it says so (GDS_OVER_BUDGET, -ENOSPC,
 * stats.over_budget) instead of pretending.  A pin protects, it does not
 * refresh: the entry keeps its H, and may return below L; evicting it then
 * leaves L where it is (L never decreases).
 *
 * Threads and processes.  libgds takes no locks: callers sharing one cache
 * between threads or processes serialise every call.  zchttpd keeps one
 * cache for all its worker processes in a shared mapping, under a
 * process-shared lock: gds_init_in puts the heap in memory the caller
 * provides, and the pointers it holds (entries, heap, callback argument)
 * mean the same in every process that inherited the mapping by fork.
 *
 * Errors are negative errno values; nothing aborts on bad input.
 */
#ifndef GDS_H
#define GDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gds_cost {
	GDS_COST_ONE = 0,	/* GDS(1) */
	GDS_COST_PACKETS = 1,	/* GDS(packets): 2 + size / 536 */
	GDS_COST_CALLER = 2,	/* the cost argument of insert/access */
	GDS_COST_SIZE = 3,	/* cost = size: LRU */
};

/* Position of an entry that is not in the heap. */
#define GDS_IDX_NONE UINT32_MAX		/* not cached */
#define GDS_IDX_PINNED (UINT32_MAX - 1)	/* cached and pinned */

/* Embed one in each cacheable object; zero it (or gds_entry_init) before
 * first use.  Read the fields, never write them. */
struct gds_entry {
	double h;		/* H(p) */
	double cost;		/* cost(p), fixed at insert */
	uint64_t size;		/* bytes charged to the budget */
	uint64_t seq;		/* last touch: the tie-break */
	uint32_t freq;		/* touches since insert (GDSF) */
	uint32_t pins;		/* gds_pin minus gds_unpin */
	uint32_t idx;		/* heap slot or GDS_IDX_* */
};

static inline void gds_entry_init(struct gds_entry *e)
{
	*e = (struct gds_entry){ .idx = GDS_IDX_NONE };
}

static inline bool gds_cached(const struct gds_entry *e)
{
	return e->idx != GDS_IDX_NONE;
}

/* Called once per eviction, after the entry has left the cache: the
 * callback may free the object that embeds it.  It must not call into the
 * same cache. */
typedef void (*gds_evict_fn)(struct gds_entry *e, void *arg);

struct gds_config {
	uint64_t budget;	/* bytes; must be > 0 */
	uint32_t max_entries;	/* heap slots; a second, hard budget */
	enum gds_cost cost;
	bool freq;		/* GDSF instead of GDS */
	bool compete;		/* the newcomer competes (see Admission) */
	gds_evict_fn evict;	/* may be NULL */
	void *evict_arg;
};

struct gds_stats {
	uint64_t hits, misses;		/* gds_access (and gds_hit) */
	uint64_t bytes_hit, bytes_missed;
	uint64_t evictions, bytes_evicted;
	uint64_t not_admitted;		/* inserts refused with -ENOSPC */
	uint64_t over_budget;		/* calls that returned GDS_OVER_BUDGET */
	uint64_t bytes, entries;	/* cached now (pinned included) */
	uint64_t pinned_bytes, pinned_entries;
};

struct gds {			/* opaque in spirit: use the functions */
	struct gds_entry **heap;
	uint32_t n;		/* entries in the heap (unpinned) */
	uint32_t max_entries;
	uint64_t budget;
	double L;
	uint64_t seq;
	enum gds_cost cost;
	bool freq;
	bool compete;
	gds_evict_fn evict;
	void *evict_arg;
	bool heap_owned;	/* gds_init allocated it; gds_init_in: no */
	struct gds_stats st;
};

/*
 * The named policies: the one list of names that gdssim's --policy and
 * zchttpd's --cache-policy accept, and the configuration each stands for.
 */
struct gds_policy {
	const char *name;	/* "gdsf" */
	const char *label;	/* "GDSF" */
	enum gds_cost cost;
	bool freq, compete;
};

extern const struct gds_policy gds_policies[];
extern const unsigned gds_npolicies;

/* The policy called `name`, or NULL. */
const struct gds_policy *gds_policy_find(const char *name);

/* The names, separated by `sep`, into buf (cut to len); returns buf. */
char *gds_policy_names(char *buf, size_t len, const char *sep);

/* Copy a policy's cost, freq and compete into a configuration. */
static inline void gds_policy_apply(const struct gds_policy *p,
				    struct gds_config *cfg)
{
	cfg->cost = p->cost;
	cfg->freq = p->freq;
	cfg->compete = p->compete;
}

/* Results: >= 0 success, < 0 -errno. */
#define GDS_OK 0
#define GDS_HIT 1		/* gds_access: the entry was cached */
#define GDS_OVER_BUDGET 2	/* done, but pinned entries keep the cache
				 * over its byte budget */

/* Flags of gds_insert / gds_access. */
#define GDS_PIN 1u	/* pin the entry as it goes in (or on the hit) */
#define GDS_FORCE 2u	/* admit even if pinned bytes push the cache over
			 * budget (returns GDS_OVER_BUDGET then) */

/* Allocates the heap (the only allocation).  -EINVAL on a zero budget or
 * max_entries, or a bad cost; -ENOMEM. */
int gds_init(struct gds *c, const struct gds_config *cfg);

/* The same with the heap in the caller's memory: `heap` holds
 * gds_heap_bytes(cfg->max_entries) bytes, pointer-aligned, and outlives
 * the cache (gds_destroy leaves it alone).  Nothing is allocated. */
size_t gds_heap_bytes(uint32_t max_entries);
int gds_init_in(struct gds *c, const struct gds_config *cfg, void *heap);

/* Frees the heap.  Entries are forgotten, not evicted: no callbacks. */
void gds_destroy(struct gds *c);

/*
 * Insert an uncached entry of `size` bytes (> 0).  `cost` is used with
 * GDS_COST_CALLER (must be finite and >= 0) and ignored otherwise.
 * Evicts minimum-H unpinned entries until the new one fits, then computes
 * its H with the raised L.
 *   GDS_OK           inserted
 *   GDS_OVER_BUDGET  inserted with GDS_FORCE; pinned bytes exceed budget
 *   -ENOSPC          not inserted: size > budget, or the pinned bytes leave
 *                    no room, or all max_entries slots are pinned (nothing
 *                    was evicted); or, with `compete`, the newcomer was the
 *                    least valuable entry (entries worth less than it may
 *                    have been evicted first, and L rose to its H).  A
 *                    newcomer inserted with GDS_PIN cannot be evicted, and
 *                    GDS_FORCE asks for admission whatever it costs: with
 *                    either flag it does not compete.
 *   -EINVAL          already cached, size 0, bad cost
 */
int gds_insert(struct gds *c, struct gds_entry *e, uint64_t size,
	       double cost, unsigned flags);

/* A hit on a cached entry: freq++, H = L + freq*cost/size, fresh seq.
 * Counts a hit of e->size bytes.  O(log n). */
void gds_hit(struct gds *c, struct gds_entry *e);

/*
 * The request path in one call: a hit if `e` is cached with this size
 * (GDS_HIT), otherwise a miss that inserts it (gds_insert's results).  An
 * entry cached with a different size is stale (the object changed): it is
 * removed and the request is a miss.  Flags as gds_insert; GDS_PIN also
 * pins on a hit.  -EBUSY (nothing counted) if the stale entry is pinned: the
 * caller serves the new version uncached, or embeds a fresh entry.
 */
int gds_access(struct gds *c, struct gds_entry *e, uint64_t size,
	       double cost, unsigned flags);

/* Take a cached entry out (invalidation), pinned or not.  No callback.
 * -EINVAL if it is not cached. */
int gds_remove(struct gds *c, struct gds_entry *e);

/* Pin a cached entry (nests).  -EINVAL if it is not cached. */
int gds_pin(struct gds *c, struct gds_entry *e);

/* Drop one pin.  The last unpin makes the entry evictable again with its H
 * unchanged, and evicts down to the budget if the cache was over it.
 * GDS_OK, GDS_OVER_BUDGET (still over: other pins), -EINVAL (not pinned). */
int gds_unpin(struct gds *c, struct gds_entry *e);

/* Change the byte budget; evicts down to it.  GDS_OK, GDS_OVER_BUDGET,
 * -EINVAL for 0. */
int gds_set_budget(struct gds *c, uint64_t budget);

/* Evict the minimum-H unpinned entry now.  GDS_OK, or -ENOENT if there is
 * none. */
int gds_evict_one(struct gds *c);

/* The entry that would be evicted next (NULL if none). */
static inline struct gds_entry *gds_peek_victim(const struct gds *c)
{
	return c->n ? c->heap[0] : NULL;
}

static inline double gds_inflation(const struct gds *c)
{
	return c->L;
}

static inline const struct gds_stats *gds_stats(const struct gds *c)
{
	return &c->st;
}

/* Bytes over the budget now (0 if within it). */
static inline uint64_t gds_over_budget(const struct gds *c)
{
	return c->st.bytes > c->budget ? c->st.bytes - c->budget : 0;
}

/* cost(p) for a size under the configured cost function. */
double gds_cost_of(enum gds_cost kind, uint64_t size, double caller_cost);

#ifdef __cplusplus
}
#endif

#endif /* GDS_H */
