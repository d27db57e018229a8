/*
 * xfer.h - one write-type call carried out as copies and file ranges, with
 * write(2)'s results (xfer.c).
 */
#ifndef ZC_PRELOAD_XFER_H
#define ZC_PRELOAD_XFER_H

#include <stdbool.h>
#include <sys/types.h>

struct zcp_seg {
	const void *buf; /* what the program passed */
	size_t len;
	int src;         /* >= 0: send len bytes of this file from off */
	off_t off;
};

struct zcp_xfer {
	int fd;          /* destination: a pipe or a stream socket */
	bool sock, tcp;
	bool nonblock;   /* O_NONBLOCK on the destination */
	bool nosignal;   /* the program passed MSG_NOSIGNAL */
};

/*
 * Bytes written (maybe short), or -1 with errno.  *fallback: nothing was
 * written and the mechanism failed; the caller must make the real call.
 */
ssize_t zcp_xfer(const struct zcp_xfer *x, const struct zcp_seg *seg, int n,
		 bool *fallback);

#endif
