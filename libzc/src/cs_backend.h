/*
 * cs_backend.h - what a Container Shipping backend provides: one function
 * per call, in a table (as nginx's ngx_event_actions or Redis's aeApi).
 *
 * cs.c checks every call's arguments, the same way for both backends, and
 * picks the table once per process; the backends never look at each other.
 * So a backend may take for granted:
 *
 *   alloc    size > 0; options is 0 or CS_MAPNOW; with CS_MAPNOW, addr is
 *            non-NULL and *addr already NULL
 *   free,    count >= 0; cids (and map's addrs) non-NULL when count > 0
 *   map,
 *   unmap
 *   write    fd >= 0; count > 0; cids non-NULL (offs, lens may be NULL)
 *   read     fd >= 0; size > 0; maxcon > 0; args and args->cids non-NULL;
 *            options is 0 or CS_MAPALL
 *
 * Which ids name containers, and whether a range fits one, is each
 * backend's to judge (-EBADF, -EINVAL): only it knows its containers.
 */
#ifndef ZC_CS_BACKEND_H
#define ZC_CS_BACKEND_H

#include <sys/types.h>

#include "zc_cs.h"
#include "zc_channel.h"

struct zc_cs_ops {
	int (*alloc)(int size, void **addr, int options);
	int (*free)(int count, const int *cids);
	int (*map)(int count, const int *cids, void **addrs);
	int (*unmap)(int count, const int *cids);
	ssize_t (*write)(int fd, int count, const int *cids, const int *offs,
			 const int *lens);
	int (*read)(int fd, int size, int maxcon, cs_args *args, int options);
};

/* Stock Linux: containers are pool buffers (cs_portable.c). */
extern const struct zc_cs_ops zc_cs_portable_ops;
/* The patched kernel's system calls (cs_kernel.c). */
extern const struct zc_cs_ops zc_cs_kernel_ops;

#endif /* ZC_CS_BACKEND_H */
