/*
 * sock_in.h - a socket's input, assembled in order (sock.h).
 *
 * Bytes reach a connection three ways: read from the socket when it asks
 * (recv; SSL_read on HTTPS), delivered without being asked by the io_uring
 * loop's ring receive (event.h), and held already decoded by OpenSSL
 * beyond what the last read took (the rest of a record, which no readiness
 * event announces).  The connection sees one buffer: a window of `cap`
 * bytes it parses in place (request heads, the first bytes of a body),
 * followed by `tail` bytes that are its own (HTTP/1.1's head arena: one
 * allocation for both).  Bytes that arrive while the window is full wait
 * behind it in the overflow, bounded by `over_max`.
 *
 * One rule keeps the stream in order, and it lives in sock_in_next() alone:
 * bytes already held behind the window come first; while a ring receive may
 * still deliver, nothing later may be read (its bytes were received before
 * anything the socket would give now); then what the source holds decoded;
 * then the source itself.  Every way in -- sock_in_arrive, sock_in_fill,
 * sock_in_read and sock.c's read of a request body -- goes by it.
 *
 * No I/O here but through the source's hooks, and no event loop: the fuzz
 * target (fuzz/fuzz_sock_in.c) drives it with a simulated stream.
 */
#ifndef ZC_SOCK_IN_H
#define ZC_SOCK_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

/* Where bytes come from when the owner reads (sock.c: plain recv or
 * OpenSSL). */
struct sock_in_src {
	/* Read up to len bytes: n > 0, 0 at the end, -EAGAIN, or -errno. */
	ssize_t (*recv)(void *ctx, void *buf, size_t len);
	/* Bytes decoded and held (the rest of a TLS record); NULL: never. */
	bool (*decoded)(void *ctx);
	void *ctx;
};

#define SOCK_IN_SPARE 32

/* Buffers of one size, and the spares kept for reuse (one set per worker):
 * a keep-alive request takes its buffer without a malloc, and 10,000 idle
 * connections hold none. */
struct sock_bufs {
	size_t cap;			/* the window */
	size_t tail;			/* the owner's room after it */
	size_t over_max;		/* the most the overflow holds */
	unsigned nspare;
	char *spare[SOCK_IN_SPARE];
};

struct sock_in {
	char *buf;			/* cap + tail bytes; NULL: none held */
	size_t len;			/* bytes in the window */
	char *over;			/* arrived behind a full window */
	size_t over_len, over_cap;
	bool arriving;			/* a ring receive may still deliver */
};

/* What the next byte of the stream is, by the rule above. */
enum sock_in_next {
	SOCK_IN_HELD,			/* in the overflow */
	SOCK_IN_WAIT,			/* still to arrive: read nothing now */
	SOCK_IN_DECODED,		/* held by the source (src->decoded) */
	SOCK_IN_SOURCE,			/* to be read from the source */
};

void sock_bufs_init(struct sock_bufs *b, size_t cap, size_t tail,
		    size_t over_max);
/* Free the spares (every sock_in using b must be freed first). */
void sock_bufs_fini(struct sock_bufs *b);

/* (Inline: every read asks, most often of an empty overflow.) */
static inline enum sock_in_next sock_in_next(const struct sock_in *in,
					     const struct sock_in_src *src)
{
	if (in->over_len)
		return SOCK_IN_HELD;
	/* A ring receive still to report has bytes the kernel received
	 * before anything a read would return now. */
	if (in->arriving)
		return SOCK_IN_WAIT;
	if (src->decoded && src->decoded(src->ctx))
		return SOCK_IN_DECODED;
	return SOCK_IN_SOURCE;
}

/* Make sure a buffer is held; false without memory. */
bool sock_in_hold(struct sock_in *in, struct sock_bufs *b);
/* Give the buffer back if the window is empty (the owner is not using
 * its tail then). */
void sock_in_give_back(struct sock_in *in, struct sock_bufs *b);
static inline void sock_in_release(struct sock_in *in, struct sock_bufs *b)
{
	if (in->buf && !in->len)
		sock_in_give_back(in, b);
}
/* Everything: the buffer (empty or not) and the overflow. */
void sock_in_free(struct sock_in *in, struct sock_bufs *b);

/* Bytes delivered by themselves (a ring receive): after everything held,
 * into the window while it has room, else into the overflow.  0, -ENOMEM,
 * or -ENOBUFS when the overflow would pass over_max. */
int sock_in_arrive(struct sock_in *in, struct sock_bufs *b, const char *p,
		   size_t n);
/* Move into the window what is held ahead of the source -- the overflow,
 * then the source's decoded bytes -- as far as it has room.  No read of
 * the source itself (no system call).  True if anything moved. */
bool sock_in_fill_held(struct sock_in *in, struct sock_bufs *b,
		       const struct sock_in_src *src);
static inline bool sock_in_fill(struct sock_in *in, struct sock_bufs *b,
				const struct sock_in_src *src)
{
	/* Most sockets hold nothing: no overflow, no decoder. */
	if (!in->over_len && !src->decoded)
		return false;
	return sock_in_fill_held(in, b, src);
}
/* Fill; if nothing was held, read the source into the window.  Bytes
 * added, 0 at the end, -EAGAIN (nothing yet, or a ring receive may still
 * deliver), -ENOBUFS (the window is full), or -errno.  A buffer taken for
 * this read and left empty is given back. */
ssize_t sock_in_read(struct sock_in *in, struct sock_bufs *b,
		     const struct sock_in_src *src);
/* Take n bytes from the front of the overflow (a body read straight into
 * an aggregate; sock.c). */
void sock_in_take_over(struct sock_in *in, size_t n);
/* Drop n bytes of the window starting at off (what the owner used). */
static inline void sock_in_consume(struct sock_in *in, size_t off, size_t n)
{
	if (off + n < in->len)
		memmove(in->buf + off, in->buf + off + n, in->len - off - n);
	in->len -= n;
}

#endif
