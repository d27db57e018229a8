/*
 * cs_kernel.c - Container Shipping on the patched kernel: the cs_* calls
 * as system calls, containers as kernel objects.  This is the backend's
 * table; cs.c has checked the arguments.
 *
 * Who does what, by descriptor kind:
 *
 *   pipe, regular file,    the system calls themselves (here): pages move
 *   TCP, AF_UNIX stream    by reference into pipes and sockets and out of
 *                          pipes, the page cache is shared, sockets are
 *                          received straight into container pages
 *   libzc channel,         bridged through the containers' mappings
 *   anything else          (cs_kernel_bridge.c)
 *
 * The calls themselves, and the shadow table that lets offs/lens NULL mean
 * each container's data on every path, are in cs_kernel_calls.c.  The
 * kernel's own split of the bytes (by reference or copied) is in
 * /sys/kernel/zc.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "cs_backend.h"
#include "cs_kernel.h"
#include "cs_common.h"

/* --------------------------------------------------------------- cs_write */

/* The system call, with explicit ranges when the shadow knows every
 * container; otherwise the kernel judges the ids (and its own data regions
 * stand for offs/lens NULL). */
static ssize_t kwrite(int fd, int count, const int *cids, const int *offs,
		      const int *lens, struct zc_krange *v, bool file)
{
	int stacki[2 * ZC_CS_STACK], *ko = NULL, *kl;
	uint32_t stackg[ZC_CS_STACK], *gens;
	ssize_t r;

	if (!(gens = zc_cs_scratch((size_t)count, sizeof(*gens), stackg)))
		return -ENOMEM;
	zc_kcs_shadow_gens(count, cids, gens);
	if (zc_kcs_resolve(count, cids, offs, lens, v) == 0 &&
	    (ko = zc_cs_scratch(2 * (size_t)count, sizeof(int), stacki))) {
		kl = ko + count;
		for (int i = 0; i < count; i++) {
			ko[i] = v[i].off;
			kl[i] = v[i].len;
		}
		offs = ko;
		lens = kl;
	}
	r = zc_kcs_call(ZC_KNR_WRITE, fd, count, (long)cids, (long)offs,
			(long)lens, 0);
	if (ko)
		zc_cs_scratch_free(ko, stacki);
	if (r >= 0) {
		zc_kcs_shadow_drop(count, cids, gens);
		if (file)
			zc_stat_copy((uint64_t)r);
		else
			zc_stat_ref((uint64_t)r);
	}
	zc_cs_scratch_free(gens, stackg);
	return r;
}

static ssize_t kernel_write(int fd, int count, const int *cids,
			    const int *offs, const int *lens)
{
	enum zc_fdkind kind = zc_fdkind_of(fd);
	struct zc_krange stackv[ZC_CS_STACK], *v;
	ssize_t r;

	if (kind == ZC_FD_BAD)
		return -EBADF;
	/* The kernel's limit per call, not an argument check of the API. */
	if (count > KCS_MAX_COUNT)
		return -EINVAL;
	if (!(v = zc_cs_scratch((size_t)count, sizeof(*v), stackv)))
		return -ENOMEM;
	switch (kind) {
	case ZC_FD_PIPE:
	case ZC_FD_FILE:
	case ZC_FD_TCP:
	case ZC_FD_UNIX:
		r = kwrite(fd, count, cids, offs, lens, v, kind == ZC_FD_FILE);
		break;
	default:
		r = zc_kcs_bridge_write(fd, kind, count, cids, offs, lens, v);
		break;
	}
	zc_cs_scratch_free(v, stackv);
	return r;
}

/* ---------------------------------------------------------------- cs_read */

/* The system call, into arrays of our own (the shadow needs every
 * container's region, and the caller's arrays need only hold n entries,
 * as on the portable backend, where the kernel wants room for maxcon). */
static int kread(int fd, enum zc_fdkind kind, int size, int maxcon,
		 cs_args *args, int options)
{
	int stacki[4 * ZC_CS_STACK], *v;
	void *stacka[ZC_CS_STACK], **addrs;
	struct zc_cs_made stackm[ZC_CS_STACK], *m = NULL;
	size_t max = (size_t)(maxcon < KCS_MAX_COUNT ? maxcon : KCS_MAX_COUNT);
	cs_args ka;
	long r;

	v = zc_cs_scratch(4 * max, sizeof(int), stacki);
	addrs = zc_cs_scratch(max, sizeof(*addrs), stacka);
	r = v && addrs ? 0 : -ENOMEM;
	if (!r) {
		ka = (cs_args){ v, v + max, v + 2 * max, v + 3 * max, addrs };
		r = zc_kcs_call(ZC_KNR_READ, fd, size, (long)max, (long)&ka,
				options, 0);
	}
	if (r > 0 && !(m = zc_cs_scratch((size_t)r, sizeof(*m), stackm))) {
		/* The data is consumed; without memory to report it, the
		 * containers can only go. */
		zc_kcs_call(ZC_KNR_FREE, r, (long)ka.cids, 0, 0, 0, 0);
		r = -ENOMEM;
	}
	for (long i = 0; r > 0 && i < r; i++) {
		m[i] = (struct zc_cs_made){ ka.cids[i], ka.offs[i], ka.lens[i],
					    ka.sizes[i], ka.addrs[i] };
		zc_kcs_shadow_set(m[i].cid, (size_t)m[i].size,
				  (size_t)m[i].off, (size_t)m[i].len);
		/* Regular files share the page cache; pipes move pages where
		 * they can (the kernel's counters say how much); sockets are
		 * received with one copy. */
		if (kind == ZC_FD_FILE)
			zc_stat_ref((uint64_t)m[i].len);
		else if (kind != ZC_FD_PIPE)
			zc_stat_copy((uint64_t)m[i].len);
	}
	if (r > 0)
		zc_cs_fill_args(args, m, (size_t)r, options & CS_MAPALL);
	if (m)
		zc_cs_scratch_free(m, stackm);
	if (v)
		zc_cs_scratch_free(v, stacki);
	if (addrs)
		zc_cs_scratch_free(addrs, stacka);
	return (int)r;
}

static int kernel_read(int fd, int size, int maxcon, cs_args *args,
		       int options)
{
	enum zc_fdkind kind = zc_fdkind_of(fd);
	bool mapall = options & CS_MAPALL;

	switch (kind) {
	case ZC_FD_BAD:
		return -EBADF;
	case ZC_FD_CHANNEL:
		return zc_kcs_bridge_read_channel(fd, zc_channel_from_fd(fd),
						  size, maxcon, args, mapall);
	case ZC_FD_PIPE:
	case ZC_FD_FILE:
	case ZC_FD_TCP:
	case ZC_FD_UNIX:
		return kread(fd, kind, size, maxcon, args, options);
	default:
		return zc_kcs_bridge_read_stream(fd, size, args, mapall);
	}
}

const struct zc_cs_ops zc_cs_kernel_ops = {
	.alloc = zc_kcs_alloc, .free = zc_kcs_free,
	.map = zc_kcs_map, .unmap = zc_kcs_unmap,
	.write = kernel_write, .read = kernel_read,
};
