/*
 * internal.h - libzc's private structures, shared by its modules.
 *
 * Module map (one job each):
 *   pool.c       pools: memfd, sealing, page allocator, recycling, import
 *   buf.c        buffers: reference counts, publish, generations, release
 *   file.c       files: version capture and checks, exact preads
 *   agg.c        aggregates: slice vector operations
 *   agg_map.c    zc_agg_map / zc_agg_copyout
 *   pipe.c       pipes: bytes on their way between sockets, iol_splice_in
 *   fdkind.c     what kind of descriptor an fd is
 *   io_read.c    iol_read
 *   io_write.c   iol_write: per (slice, destination) transfer mechanism
 *   iol_kernel.c the patched kernel's IO-Lite calls: kernel buffers
 *   snapshot.c   zc_buf_snapshot: a file's bytes, copied once, frozen
 *   channel*.c   channels: socket handshake, descriptor rings, credits
 *                (eight files, one job each: channel_int.h has their map)
 *   cs.c         Container Shipping calls: argument checks, then the
 *                backend's table (cs_backend.h)
 *   cs_portable.c        the portable backend and its container table
 *   cs_kernel.c          the kernel backend's table: path per descriptor
 *   cs_kernel_bridge.c   channels and other descriptors via mappings
 *   cs_kernel_calls.c    the system calls and the shadow table
 *   cs_common.c          what both backends use (cs_common.h)
 *   backend.c    backend selection and I/O counters
 *   process.c    the page size and the fork generation
 *   sockmsg.c    passing descriptors over UNIX sockets
 */
#ifndef ZC_INTERNAL_H
#define ZC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "zc.h"
#include "zc_channel.h"
#include "zc_cs.h"

/* memfd_create's flag, for C libraries older than their memfd_create. */
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif

#define ZC_UNUSED __attribute__((unused))
#define ZC_LIKELY(x) __builtin_expect(!!(x), 1)
#define ZC_UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline size_t zc_min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---------------------------------------------------------------- process */

/* The kernel's page size (sysconf, read once): the unit of pool
 * allocation, so buffers are page-aligned runs of whole pages. */
size_t zc_page_size(void);

/* x rounded up to whole pages. */
static inline size_t zc_page_round(size_t x)
{
	size_t ps = zc_page_size();

	return (x + ps - 1) & ~(ps - 1);
}

/* The fork generation: 0 in the process that loaded libzc, one more in
 * each forked child.  Something made in an earlier generation than the
 * current one was inherited across fork. */
unsigned zc_fork_gen(void);

/* Run fn in every forked child (after the generation is bumped), to
 * reinitialise locks another thread may have held at fork time.  Call it
 * once per module (room for four). */
typedef void (*zc_fork_hook)(void);
void zc_fork_child_hook(zc_fork_hook fn);

/* ------------------------------------------------------------------ pools */

/* Recently released buffers of one size, so that a steady stream of
 * equal-sized transfers allocates nothing.  A double-ended stack: what
 * only this process touched goes on top and is reused first (its lines
 * are in our caches); what a peer process read goes to the bottom and is
 * reused last (its lines are in the peer's caches; pool.c says why that
 * matters).  Sizes are in pages. */
#define ZC_POOL_CACHE_CLASSES 64	/* 1..64 pages */
#define ZC_POOL_CACHE_DEPTH 32		/* a power of two */

struct zc_pool_cache {
	zc_buf *b[ZC_POOL_CACHE_DEPTH];	/* ring: bottom at first */
	unsigned first, n;
};

struct zc_pool {
	atomic_int refs;	/* creator + one per live buffer */
	int fd;			/* memfd (read-write for the owner) */
	int ro_fd;		/* owner: read-only reopening sent to peers,
				 * opened on first zc_pool_send; else -1 */
	bool owner;		/* created here (RW) or imported (RO) */
	unsigned fork_gen;	/* fork generation it was created in */
	size_t size;
	uint64_t id;		/* st_ino of the memfd */
	unsigned char *base;	/* owner: RW mapping; import: RO, lazily */
	pthread_mutex_t lock;	/* guards everything below */
	/* Owner only: one bit per page, set = allocated. */
	uint64_t *bitmap;
	size_t npages;
	size_t hint;		/* next-fit start page */
	uint64_t gen;		/* last generation handed out */
	struct zc_pool_cache cache[ZC_POOL_CACHE_CLASSES];
	struct zc_pool_stats st;
};

/* Created here, in this process (not imported, not inherited by fork):
 * only then may buffers be allocated from it and recycled into it. */
bool zc_pool_usable(const zc_pool *pool);
/* Map an imported pool read-only if not yet mapped.  NULL on failure. */
unsigned char *zc_pool_base(zc_pool *pool);
void zc_pool_get(zc_pool *pool);
void zc_pool_put(zc_pool *pool);
/* Give a released owner buffer's memory back (called by buf.c). */
void zc_pool_recycle(zc_pool *pool, zc_buf *buf);
/* Import a pool from a received memfd (channel.c, zc_pool_recv). */
int zc_pool_import_fd(int fd, zc_pool **out);
/* The bytes of one zc_pool_send message and the descriptor that came with
 * it (taken: closed on failure), already read by the caller (channel_ctl.c
 * reads the channel's control socket itself); -EPROTO if they disagree. */
#define ZC_POOL_MSG_SIZE 24u
int zc_pool_msg_import(const void *msg, size_t len, int fd, zc_pool **out);

/* ---------------------------------------------------------------- buffers */

enum {
	ZC_BUF_WRITABLE = 1u << 0,	/* allocated, not yet published */
	ZC_BUF_KREF = 1u << 1,		/* handed to the kernel by reference:
					 * pages may still be referenced by a
					 * pipe or socket after release */
	ZC_BUF_FOREIGN = 1u << 2,	/* lives in a peer's pool */
	ZC_BUF_KERNEL = 1u << 3,	/* an IO-Lite buffer of the patched
					 * kernel: no pool (iol_kernel.c) */
	ZC_BUF_COPIED = 1u << 4,	/* sent once by copy through a sink
					 * that copies a first trip (io_write.c):
					 * the next trip lends it */
	ZC_BUF_READ = 1u << 5,		/* foreign: zc_buf_data gave out its
					 * address, so we may have read it */
	ZC_BUF_PEER_READ = 1u << 6,	/* owner: a peer returned it READ;
					 * recycled at the cache's cold end */
};

/* objcache.c: per-thread caches of aggregates and buffer headers.
 * zc_obj_get gives a cached object (not zeroed) or NULL; zc_obj_put keeps
 * one (true) or says the caller must free() it (false). */
enum zc_obj_kind { ZC_OBJ_AGG, ZC_OBJ_BUF, ZC_OBJ_KINDS };
void *zc_obj_get(enum zc_obj_kind kind);
bool zc_obj_put(enum zc_obj_kind kind, void *obj);

struct zc_buf;

/* A zeroed zc_buf header (cached or calloc'ed), and its disposal. */
static inline struct zc_buf *zc_buf_header_new(void);
static inline void zc_buf_header_free(struct zc_buf *b);

struct zc_buf {
	atomic_int refs;
	atomic_uint flags;
	zc_pool *pool;
	uint64_t off;		/* byte offset in the pool (page aligned) */
	size_t cap;		/* capacity (page multiple) */
	size_t len;		/* published length */
	uint64_t gen;
	/* Foreign buffers: called on the last release instead of recycling,
	 * to return the buffer to the peer that owns it. */
	void (*on_release)(zc_buf *buf);
	void *release_ctx;
	uint64_t release_token;
	uint32_t copy_trip;	/* the iol_write_sink call that set
				 * ZC_BUF_COPIED (io_write.c) */
	/* Kernel buffers (ZC_BUF_KERNEL): the kernel's id and generation,
	 * where it mapped the buffer (read-only), and the fork generation
	 * that owns the id (a forked child inherits neither). */
	int kid;
	unsigned kfork;
	uint64_t kgen;
	const unsigned char *kaddr;
};

static inline bool zc_buf_is_kernel(const zc_buf *buf)
{
	return atomic_load_explicit(&buf->flags, memory_order_relaxed) &
	       ZC_BUF_KERNEL;
}

static inline struct zc_buf *zc_buf_header_new(void)
{
	struct zc_buf *b = zc_obj_get(ZC_OBJ_BUF);

	if (b)
		memset(b, 0, sizeof(*b));
	else
		b = calloc(1, sizeof(*b));
	return b;
}

static inline void zc_buf_header_free(struct zc_buf *b)
{
	if (b && !zc_obj_put(ZC_OBJ_BUF, b))
		free(b);
}

/* Mark that the kernel may keep references to the buffer's pages. */
static inline void zc_buf_mark_kref(zc_buf *buf)
{
	atomic_fetch_or_explicit(&buf->flags, ZC_BUF_KREF, memory_order_relaxed);
}

/* A buffer object describing a peer's memory (used by channel.c). */
int zc_buf_foreign(zc_pool *pool, uint64_t off, size_t len, uint64_t gen,
		   zc_buf **out);

/* ------------------------------------------------------------------ files */

struct zc_file {
	atomic_int refs;
	int fd;
	char *path;		/* NULL for zc_file_from_fd */
	bool trusted;		/* zc_file_trust: never checked */
	struct zc_file_version v;
	/* zc_file_map: v.size bytes, read-only; only the kernel reads it
	 * (sendmsg's copy), see file.c.  Set once, never moved. */
	const unsigned char *_Atomic map;
};

/* Read exactly len bytes of fd at off (pread: the offset does not move):
 * 0, -ESTALE if the file ends first, or -errno.  Counted as copied. */
int zc_pread_exact(int fd, uint64_t off, void *dst, size_t len);
/* The same into n places, the file's bytes from off on in order (iov is
 * used up as it goes). */
struct iovec;
int zc_preadv_exact(int fd, uint64_t off, struct iovec *iov, int n);

/* ------------------------------------------------------------------ pipes */

/*
 * A kernel pipe and the stream positions of its bytes (pipe.c).  The
 * stream [rpos, wpos) is what the pipe holds; a pipe slice names a part
 * of it by position.  Bytes that went to a bounce buffer (io_write.c's
 * path to odd descriptors) and were not all written wait in `spill`:
 * [rpos, kpos) are there, [kpos, wpos) still in the kernel pipe.  One
 * thread at a time (as aggregates), so the counts are plain.
 */
struct zc_pipe {
	int refs;		/* the owner's and one per slice */
	int named;		/* of which slices: 0 = no slice names a byte */
	int rfd, wfd;		/* both O_NONBLOCK */
	size_t cap;		/* F_GETPIPE_SZ */
	uint64_t wpos;		/* bytes ever spliced in */
	uint64_t rpos;		/* bytes ever written out or discarded */
	uint64_t kpos;		/* bytes ever taken out of the kernel pipe */
	unsigned char *spill;	/* [rpos, kpos) at spill + spill_at */
	size_t spill_at;
};

/* A slice of the pipe was made or dropped (agg.c). */
void zc_pipe_slice_get(zc_pipe *p);
void zc_pipe_slice_put(zc_pipe *p);
/* Take the bytes before stream position `pos` out of p unsent (dropped by
 * the aggregates that named them): 0, or -errno with rpos showing how far
 * it got.  pos must lie in [rpos, wpos]. */
int zc_pipe_discard_to(zc_pipe *p, uint64_t pos);
/* Move up to `len` bytes from the front of the kernel pipe into the spill
 * (allocated here, at most ZC_PIPE_SPILL): bytes moved, or -errno. */
#define ZC_PIPE_SPILL ((size_t)64 << 10)
ssize_t zc_pipe_fill_spill(zc_pipe *p, size_t len);
/* The spill's first n bytes were written out. */
void zc_pipe_spill_done(zc_pipe *p, size_t n);

/* ------------------------------------------------------------- aggregates */

struct zc_slice_int {
	uint8_t kind;		/* enum zc_slice_kind */
	union {
		zc_buf *buf;
		zc_file *file;
		const unsigned char *mem;	/* ZC_SLICE_MEM: borrowed */
		zc_pipe *pipe;			/* ZC_SLICE_PIPE */
	};
	uint64_t off;		/* ZC_SLICE_PIPE: stream position */
	size_t len;
};

/* Does the aggregate hold bytes a peer cannot be lent: borrowed memory
 * (ZC_SLICE_MEM), kernel buffers (which live in no pool) or pipe slices
 * (whose bytes are in no memory at all)?  And a copy of it whose memory
 * bytes are in pool buffers, for paths that lend what they send (a
 * channel); -EINVAL if it has a pipe slice, which cannot be copied
 * without consuming the pipe. */
bool zc_agg_has_borrowed(const zc_agg *agg);
int zc_agg_owned_copy(const zc_agg *src, zc_agg **out);
/* Append a pipe slice (pipe.c's iol_splice_in). */
int zc_agg_append_pipe(zc_agg *agg, zc_pipe *p, uint64_t pos, size_t len);

struct zc_agg {
	struct zc_slice_int *s;	/* live slices are s[head .. head+n) */
	size_t head, n, cap;
	size_t len;		/* total bytes */
	struct zc_slice_int inline_s[4];
};

/* ----------------------------------------------------------- descriptors */

enum zc_fdkind {
	ZC_FD_BAD = 0,
	ZC_FD_FILE,		/* regular file */
	ZC_FD_PIPE,		/* pipe or FIFO */
	ZC_FD_TCP,		/* TCP stream socket (v4 or v6) */
	ZC_FD_UNIX,		/* AF_UNIX stream socket */
	ZC_FD_CHANNEL,		/* a registered libzc channel */
	ZC_FD_OTHER,		/* char device, other sockets, ... */
};

enum zc_fdkind zc_fdkind_of(int fd);

/* ------------------------------------------------------- socket messages */

struct msghdr;
/* Send one message, with descriptor fd attached unless fd < 0.  0, or
 * -EPIPE (peer gone), -EPROTO (short), other negative errno. */
int zc_sock_send(int sock, const void *msg, size_t len, int fd, int flags);
/* Descriptors a received message carried: the first goes to *fd if fd is
 * non-NULL and *fd < 0, every other one is closed. */
void zc_sock_take_fds(struct msghdr *mh, int *fd);
/* The same into fds[0..cap), in the order they came, the rest closed:
 * how many came (more than cap: some were closed). */
size_t zc_sock_take_fd_array(struct msghdr *mh, int *fds, size_t cap);

/* --------------------------------------------------------------- backend */

/* The patched kernel's Container Shipping calls, in the order of its
 * /sys/kernel/zc/syscalls directory. */
enum {
	ZC_KNR_ALLOC, ZC_KNR_FREE, ZC_KNR_MAP, ZC_KNR_UNMAP,
	ZC_KNR_READ, ZC_KNR_WRITE, ZC_KNR
};

/* Call numbers read from /sys/kernel/zc/syscalls.  The IO-Lite calls
 * are optional (a kernel of the series before its IO-Lite patch): -1. */
struct zc_kabi {
	long nr[ZC_KNR];
	long iol_read, iol_write;
};

/* The running kernel's Container Shipping ABI, or NULL: portable backend
 * (no such kernel, an ABI version we do not speak, or ZC_BACKEND=portable).
 * Probed once per process (backend.c). */
const struct zc_kabi *zc_kabi(void);

/* ------------------------------------------------------- kernel IO-Lite */

/* The running kernel has iol_read and iol_write (and libzc uses them). */
bool zc_kiol(void);
/* iol_read from a pipe or stream socket into kernel buffers appended to
 * agg: bytes read, 0 at EOF, or -errno (-EOPNOTSUPP: not served here). */
ssize_t zc_kiol_read(int fd, zc_agg *agg, size_t want);
/* iol_write of the kernel-buffer slices s[0..n) (at most max bytes of
 * them) to fd; *want gets the bytes asked for.  Bytes written or -errno. */
ssize_t zc_kiol_write(int fd, const struct zc_slice_int *s, size_t n,
		      size_t max, size_t *want);
/* A kernel buffer over the pages of a sealed memfd: data [0, len). */
int zc_kiol_from_sealed(int memfd, size_t len, zc_buf **out);
/* The last reference to a kernel buffer is gone: free it in the kernel. */
void zc_kiol_free(zc_buf *buf);

/* ------------------------------------------------------------ statistics */

void zc_stat_ref(uint64_t bytes);
void zc_stat_copy(uint64_t bytes);
void zc_stat_call(void);

#endif /* ZC_INTERNAL_H */
