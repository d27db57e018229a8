/*
 * cs.c - the Container Shipping calls of zc.h: cs_alloc, cs_free, cs_read,
 * cs_write, cs_map, cs_unmap.
 *
 * Each call checks its arguments here, once for both backends, so that a
 * bad call fails the same way whichever backend runs, and then goes
 * through the backend's table (cs_backend.h).  The table is picked at the
 * first call, from what backend.c found: the kernel backend (cs_kernel.c)
 * when the patched kernel publishes a compatible ABI and ZC_BACKEND does
 * not say "portable", else the portable one (cs_portable.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "internal.h"
#include "cs_backend.h"

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
static const struct zc_cs_ops *ops;

static void ops_choose(void)
{
	ops = zc_kabi() ? &zc_cs_kernel_ops : &zc_cs_portable_ops;
}

static const struct zc_cs_ops *cs_ops(void)
{
	pthread_once(&ops_once, ops_choose);
	return ops;
}

/* A list of ids: a count, and the array when there is anything in it. */
static bool ids_ok(int count, const int *cids)
{
	return count >= 0 && (count == 0 || cids);
}

int cs_alloc(int size, void **addr, int options)
{
	if (addr)
		*addr = NULL;
	if (size <= 0 || (options & ~CS_MAPNOW) ||
	    ((options & CS_MAPNOW) && !addr))
		return -EINVAL;
	return cs_ops()->alloc(size, addr, options);
}

int cs_free(int count, const int *cids)
{
	return ids_ok(count, cids) ? cs_ops()->free(count, cids) : -EINVAL;
}

int cs_map(int count, const int *cids, void **addrs, int options)
{
	if (!ids_ok(count, cids) || options || (count > 0 && !addrs))
		return -EINVAL;
	return cs_ops()->map(count, cids, addrs);
}

int cs_unmap(int count, const int *cids)
{
	return ids_ok(count, cids) ? cs_ops()->unmap(count, cids) : -EINVAL;
}

ssize_t cs_write(int fd, int count, const int *cids, const int *offs,
		 const int *lens, int options)
{
	if (fd < 0)
		return -EBADF;
	if (!ids_ok(count, cids) || options)
		return -EINVAL;
	if (count == 0)
		return 0;
	return cs_ops()->write(fd, count, cids, offs, lens);
}

int cs_read(int fd, int size, int maxcon, cs_args *args, int options)
{
	if (fd < 0)
		return -EBADF;
	if (size <= 0 || maxcon <= 0 || !args || !args->cids ||
	    (options & ~CS_MAPALL))
		return -EINVAL;
	return cs_ops()->read(fd, size, maxcon, args, options);
}
