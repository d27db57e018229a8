/*
 * cs_kernel_calls.c - the patched kernel's Container Shipping system
 * calls, and the shadow table libzc keeps beside them.
 *
 * backend.c reads the call numbers from /sys/kernel/zc; they are never
 * compiled in.
 *
 * The shadow table.  cs_write with offs/lens NULL means "each container's
 * data".  The kernel knows that region for the containers it filled, but a
 * container the bridge made from a channel message is a cs_alloc'ed one
 * whose bytes start inside the page (at the sender's offset): the kernel
 * takes the whole of it for the data.  So libzc keeps (size, data offset,
 * data length) per id, learned when the container was made, and always
 * gives the kernel explicit ranges.  The kernel stays the judge of which ids
 * exist: the shadow only describes them.  An entry carries a generation, so
 * that a thread that gave ids away does not forget the entry of a container
 * another thread made meanwhile under a reused id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cs_kernel.h"
#include "cs_common.h"

long zc_kcs_call(int which, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(zc_kabi()->nr[which], a, b, c, d, e, f);

	return r < 0 ? -errno : r;
}

/* ------------------------------------------------------------- shadow */

struct kshadow {
	uint32_t size;		/* bytes (whole pages) */
	uint32_t off, len;	/* the data region */
	uint32_t gen;		/* bumped whenever the id names a new container */
	bool known;
};

static struct {
	pthread_mutex_t lock;
	struct kshadow *v;
	int cap;
} sh = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

void zc_kcs_shadow_set(int cid, size_t size, size_t off, size_t len)
{
	pthread_mutex_lock(&sh.lock);
	if (cid >= sh.cap) {
		int cap = sh.cap ? sh.cap : 64;
		struct kshadow *v;

		while (cap <= cid)
			cap *= 2;
		v = realloc(sh.v, (size_t)cap * sizeof(*v));
		if (!v) {
			/* Unknown: cs_write then needs explicit ranges. */
			pthread_mutex_unlock(&sh.lock);
			return;
		}
		memset(v + sh.cap, 0, (size_t)(cap - sh.cap) * sizeof(*v));
		sh.v = v;
		sh.cap = cap;
	}
	sh.v[cid] = (struct kshadow){ (uint32_t)zc_page_round((size_t)size),
				      (uint32_t)off, (uint32_t)len,
				      sh.v[cid].gen + 1, true };
	pthread_mutex_unlock(&sh.lock);
}

static bool shadow_get(int cid, struct kshadow *out)
{
	bool ok = false;

	pthread_mutex_lock(&sh.lock);
	if (cid >= 0 && cid < sh.cap && sh.v[cid].known) {
		*out = sh.v[cid];
		ok = true;
	}
	pthread_mutex_unlock(&sh.lock);
	return ok;
}

void zc_kcs_shadow_gens(int count, const int *cids, uint32_t *gens)
{
	pthread_mutex_lock(&sh.lock);
	for (int i = 0; i < count; i++)
		gens[i] = cids[i] >= 0 && cids[i] < sh.cap ? sh.v[cids[i]].gen : 0;
	pthread_mutex_unlock(&sh.lock);
}

/* The containers are gone: forget them, unless an id already names a new
 * container (another thread's cs_alloc or cs_read got it meanwhile). */
void zc_kcs_shadow_drop(int count, const int *cids, const uint32_t *gens)
{
	pthread_mutex_lock(&sh.lock);
	for (int i = 0; i < count; i++)
		if (cids[i] >= 0 && cids[i] < sh.cap &&
		    sh.v[cids[i]].gen == gens[i])
			sh.v[cids[i]].known = false;
	pthread_mutex_unlock(&sh.lock);
}

int zc_kcs_resolve(int count, const int *cids, const int *offs,
		   const int *lens, struct zc_krange *v)
{
	for (int i = 0; i < count; i++) {
		struct kshadow s;
		long long off, len;

		if (!shadow_get(cids[i], &s))
			return -EBADF;
		off = offs ? offs[i] : (long long)s.off;
		len = lens ? lens[i] : (long long)s.off + s.len - off;
		if (off < 0 || len < 0 || off > s.size || len > s.size - off)
			return -EINVAL;
		v[i].off = (int)off;
		v[i].len = (int)len;
	}
	return 0;
}

/* ------------------------------------------------ alloc, free, map, unmap */

int zc_kcs_alloc(int size, void **addr, int options)
{
	long cid = zc_kcs_call(ZC_KNR_ALLOC, size, (long)addr, options, 0, 0, 0);

	if (cid >= 0)
		zc_kcs_shadow_set((int)cid, (size_t)size, 0, (size_t)size);
	return (int)cid;
}

int zc_kcs_free(int count, const int *cids)
{
	uint32_t stackg[ZC_CS_STACK], *gens;
	long r;

	/* The kernel's limit per call, not an argument check of the API. */
	if (count > KCS_MAX_COUNT)
		return -EINVAL;
	if (!(gens = zc_cs_scratch((size_t)count, sizeof(*gens), stackg)))
		return -ENOMEM;
	zc_kcs_shadow_gens(count, cids, gens);
	r = zc_kcs_call(ZC_KNR_FREE, count, (long)cids, 0, 0, 0, 0);
	if (r == 0)
		zc_kcs_shadow_drop(count, cids, gens);
	zc_cs_scratch_free(gens, stackg);
	return (int)r;
}

int zc_kcs_map(int count, const int *cids, void **addrs)
{
	return (int)zc_kcs_call(ZC_KNR_MAP, count, (long)cids, (long)addrs, 0,
				0, 0);
}

int zc_kcs_unmap(int count, const int *cids)
{
	return (int)zc_kcs_call(ZC_KNR_UNMAP, count, (long)cids, 0, 0, 0, 0);
}
