/*
 * cs_kernel.h - the parts of the kernel backend of Container Shipping, one
 * layer per file, each calling only the ones below it:
 *
 *   cs_kernel.c         the backend's table (cs_backend.h): the path each
 *                       kind of descriptor takes; pipes, regular files,
 *                       TCP and AF_UNIX streams are the system calls
 *   cs_kernel_bridge.c  channels and other descriptors, which the kernel
 *                       does not serve: bridged through the mappings
 *   cs_kernel_calls.c   the system calls, and the shadow table of each
 *                       container's data region
 *
 * Private to libzc, and within it to these three files.
 */
#ifndef ZC_CS_KERNEL_H
#define ZC_CS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

#define KCS_MAX_COUNT 1024	/* ids in one kernel call (CS_MAX_COUNT) */

/* A byte range of a container: what cs_write sends of it. */
struct zc_krange {
	int off, len;
};

/* ------------------------------------------------- cs_kernel_calls.c */

/* System call `which` (ZC_KNR_*): its result, or a negative errno. */
long zc_kcs_call(int which, long a, long b, long c, long d, long e, long f);

/* cs_alloc, cs_free, cs_map, cs_unmap as system calls, keeping the shadow
 * table in step (arguments checked by cs.c). */
int zc_kcs_alloc(int size, void **addr, int options);
int zc_kcs_free(int count, const int *cids);
int zc_kcs_map(int count, const int *cids, void **addrs);
int zc_kcs_unmap(int count, const int *cids);

/* Remember the data region [off, off + len) of a container of size bytes. */
void zc_kcs_shadow_set(int cid, size_t size, size_t off, size_t len);
/* The generations of the ids, taken before a call that may free them... */
void zc_kcs_shadow_gens(int count, const int *cids, uint32_t *gens);
/* ...and, once it did, forget those that still have them. */
void zc_kcs_shadow_drop(int count, const int *cids, const uint32_t *gens);

/* The byte range of each container cs_write sends: offs/lens as given, or
 * the data region the shadow remembers.  -EBADF for an id the shadow does
 * not know, -EINVAL for a range outside the container. */
int zc_kcs_resolve(int count, const int *cids, const int *offs,
		   const int *lens, struct zc_krange *v);

/* ------------------------------------------------ cs_kernel_bridge.c */

/* cs_write to a channel or an fd of another kind the kernel does not
 * serve; v has room for count ranges. */
ssize_t zc_kcs_bridge_write(int fd, enum zc_fdkind kind, int count,
			    const int *cids, const int *offs, const int *lens,
			    struct zc_krange *v);
/* cs_read from channel ch (descriptor fd). */
int zc_kcs_bridge_read_channel(int fd, zc_channel *ch, int size, int maxcon,
			       cs_args *args, bool mapall);
/* cs_read from an fd of another kind the kernel does not serve. */
int zc_kcs_bridge_read_stream(int fd, int size, cs_args *args, bool mapall);

#endif /* ZC_CS_KERNEL_H */
