/*
 * cs_kernel.h - the kernel backend of the Container Shipping calls
 * (cs_kernel.c).
 *
 * Private to libzc: programs call cs_* from zc.h, which dispatch here when
 * backend.c found the patched kernel's ABI.
 */
#ifndef ZC_CS_KERNEL_H
#define ZC_CS_KERNEL_H

#include <stddef.h>
#include <sys/types.h>

#include "zc.h"

/* The calls, in the order of the kernel's syscalls/ directory. */
enum {
	ZC_KNR_ALLOC, ZC_KNR_FREE, ZC_KNR_MAP, ZC_KNR_UNMAP,
	ZC_KNR_READ, ZC_KNR_WRITE, ZC_KNR
};

/* Call numbers read from /sys/kernel/zc/syscalls. */
struct zc_kabi {
	long nr[ZC_KNR];
};

/* The running kernel's Container Shipping ABI, or NULL: portable backend
 * (no such kernel, an ABI version we do not speak, or ZC_BACKEND=portable).
 * Probed once per process. */
const struct zc_kabi *zc_kabi(void);

/* The kernel backend's cs_* (arguments already checked by cs.c the same
 * way for both backends; errors as negative errno values). */
int zc_kcs_alloc(int size, void **addr, int options);
int zc_kcs_free(int count, const int *cids);
int zc_kcs_map(int count, const int *cids, void **addrs);
int zc_kcs_unmap(int count, const int *cids);
ssize_t zc_kcs_write(int fd, int count, const int *cids, const int *offs,
		     const int *lens);
int zc_kcs_read(int fd, int size, int maxcon, cs_args *args, int options);

#endif /* ZC_CS_KERNEL_H */
