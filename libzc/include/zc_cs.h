/*
 * zc_cs.h - Container Shipping's calls (the paper's Table 1): pages with
 * move semantics.  cs_write gives containers away, cs_read produces new
 * ones, mapping into the address space only on request.  On the patched
 * kernel they are its system calls; on stock Linux libzc's portable
 * backend provides them (docs/ARCHITECTURE.md, "Container Shipping").
 * They work on files, pipes, sockets and libzc channels (zc_channel.h).
 */
#ifndef ZC_CS_H
#define ZC_CS_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The args structure of cs_read (Container Shipping, Table 1): arrays the
 * caller provides, each with room for maxcon entries; optional ones may be
 * NULL. */
typedef struct cs_args {
	int *cids;	/* container ids (required) */
	int *offs;	/* offset of the data in each container (optional) */
	int *lens;	/* bytes of data in each container (optional) */
	int *sizes;	/* size of each container (optional) */
	void **addrs;	/* mapped addresses, with CS_MAPALL (optional) */
} cs_args;

#define CS_MAPALL 0x1	/* cs_read: map every container it returns */
#define CS_MAPNOW 0x2	/* cs_alloc: map the new container at once */

/* A new container of at least `size` bytes owned by this process.  With
 * CS_MAPNOW, *addr receives its writable address.  Returns the container id
 * (>= 0) or a negative errno. */
int cs_alloc(int size, void **addr, int options);
/* Free containers this process owns. */
int cs_free(int count, const int *cids);
/* Read up to `size` bytes from fd into at most `maxcon` new containers.
 * Returns the number of containers produced, 0 at EOF, negative errno. */
int cs_read(int fd, int size, int maxcon, cs_args *args, int options);
/* Write [offs[i], offs[i]+lens[i]) of each container to fd and give the
 * containers away: on success their ids are no longer valid in this
 * process.  offs/lens may be NULL (whole containers).  Returns the bytes
 * written or a negative errno (on error no container is given away). */
ssize_t cs_write(int fd, int count, const int *cids, const int *offs,
		 const int *lens, int options);
/* Map containers; addrs[i] receives each address.  Containers received from
 * a peer map read-only. */
int cs_map(int count, const int *cids, void **addrs, int options);
/* Remove mappings; the containers stay owned. */
int cs_unmap(int count, const int *cids);

#ifdef __cplusplus
}
#endif
#endif /* ZC_CS_H */
