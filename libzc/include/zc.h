/*
 * zc.h - libzc: one zero-copy buffer model for Linux I/O.  This header is
 * the core: pools, buffers, files, aggregates, and moving them in and out
 * (iol_read, iol_write, sinks).  Channels between processes are in
 * zc_channel.h, Container Shipping's calls in zc_cs.h; both build on this.
 *
 * The model (docs/ARCHITECTURE.md has the long version):
 *
 *   pool       a memfd-backed region that holds I/O data, sealed against
 *              resizing, mapped read-write by its owner and read-only by the
 *              peers it has been shared with.
 *   buffer     a page-aligned part of a pool.  Writable while it is being
 *              filled, immutable once published.  Named system-wide by
 *              (pool id, offset, length, generation); the generation changes
 *              every time the memory is reused.
 *   file       an open regular file plus the version it had when opened
 *              (device, inode, size, mtime, ctime).
 *   aggregate  an ordered list of slices; a slice is a part of a buffer or an
 *              extent of a file that has not been read at all.  Aggregates
 *              are mutable and cheap: every operation is pointer work.
 *   pipe       a kernel pipe where bytes wait on their way from one socket
 *              to another (a proxy's bodies): a pipe slice names them
 *              without their ever entering user memory.
 *   container  Container Shipping's unit of move semantics (zc_cs.h).
 *   channel    two processes joined by a UNIX socket plus shared pools:
 *              transfers carry descriptors, never bytes (zc_channel.h).
 *
 * Names: zc_* for the model; iol_* and cs_* keep the names the IO-Lite and
 * Container Shipping papers gave their calls (iol_read/iol_write, and
 * cs_alloc ... cs_unmap with cs_args, Table 1), so the papers read as
 * documentation of them.
 *
 * Conventions:
 *   - Every function that can fail returns a negative errno value; nothing
 *     aborts on bad input.  Constructors return the object through an out
 *     parameter.  Release functions accept NULL.
 *   - Reference counts (buffers, files) and pools are thread-safe.
 *     Aggregates, channels and the container table belong to one thread at a
 *     time (the caller serialises).
 *   - iol_write may raise SIGPIPE on a broken pipe or connection, as write(2)
 *     does (small socket writes just return -EPIPE): a server ignores SIGPIPE.
 */
#ifndef ZC_H
#define ZC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZC_VERSION "0.1.0"

/* Name of the backend in use: "portable" (stock Linux) or "kernel" (the
 * patched kernel's system calls).  Chosen once, at first use. */
const char *zc_backend_name(void);

/* ------------------------------------------------------------------ pools */

typedef struct zc_pool zc_pool;

#define ZC_POOL_DEFAULT_SIZE ((size_t)64 << 20)
#define ZC_POOL_MAX_SIZE ((size_t)1 << 40)

/* Create a pool of at least `size` bytes (rounded up to pages; 0 means
 * ZC_POOL_DEFAULT_SIZE).  The memfd is sealed against shrinking and growing.
 * Memory is reserved, not touched: untouched pages cost nothing. */
int zc_pool_create(size_t size, zc_pool **out);

/* Drop the creator's reference: the pool goes away with the last buffer
 * allocated from it (and the last peer's import); until then its memory
 * stays mapped.  Accepts NULL. */
void zc_pool_release(zc_pool *pool);

/* The process-wide default pool, created on first use (thread-safe).
 * Never release it.  Returns NULL only if creation failed (errno set). */
zc_pool *zc_default_pool(void);

/* System-wide identity of the pool (the memfd's inode number). */
uint64_t zc_pool_id(const zc_pool *pool);
/* The pool's memfd (owned by the pool; do not close). */
int zc_pool_fd(const zc_pool *pool);
size_t zc_pool_size(const zc_pool *pool);
/* 1 if this process created the pool, 0 if it was imported from a peer. */
int zc_pool_is_owner(const zc_pool *pool);

struct zc_pool_stats {
	size_t size;		/* bytes in the pool */
	size_t bytes_in_use;	/* allocated and not yet released */
	uint64_t allocs;	/* buffer allocations */
	uint64_t reuses;	/* allocations served from recycled memory as is */
	uint64_t detaches;	/* releases whose pages the kernel may still hold:
				 * the pages were dropped (hole punched) and the
				 * next use gets fresh zeroed pages */
	uint64_t failures;	/* allocations refused for lack of space */
};
void zc_pool_stats(const zc_pool *pool, struct zc_pool_stats *st);

/* Share a pool over a connected UNIX socket (SCM_RIGHTS).  The receiver gets
 * a read-only import: it can read and forward the pool's buffers, never
 * allocate from it or change it. */
int zc_pool_send(int sock, const zc_pool *pool);
int zc_pool_recv(int sock, zc_pool **out);

/* ---------------------------------------------------------------- buffers */

typedef struct zc_buf zc_buf;

/* Allocate a writable buffer of `len` bytes (capacity rounded up to pages)
 * from `pool` (NULL = default pool).  -ENOMEM when the pool is full,
 * -EPERM for an imported pool, -EINVAL for len 0 or larger than the pool. */
int zc_buf_alloc(zc_pool *pool, size_t len, zc_buf **out);

/* The writable memory of an unpublished buffer; NULL once published or for a
 * buffer this process does not own. */
void *zc_buf_wptr(zc_buf *buf);

/* Make the buffer immutable with its final length (<= capacity).  After this
 * the content never changes while any reference exists. */
int zc_buf_publish(zc_buf *buf, size_t len);

/* Allocate, copy `len` bytes in and publish: the one copy that puts data
 * into the zero-copy world. */
int zc_buf_from_bytes(zc_pool *pool, const void *data, size_t len, zc_buf **out);

/* A published buffer holding a copy of `len` bytes of descriptor fd from
 * offset `off`, taken now: later changes to the file do not show in it.
 * fd is read with pread (its offset does not move).  -ESTALE if fd has
 * fewer bytes than off + len.  On the portable backend (and as a
 * fallback) a buffer from `pool` (NULL = default).  On the patched kernel
 * with IO-Lite, a kernel buffer over a sealed memfd copy: the kernel knows
 * those pages can never change, sends them by reference and caches their
 * transmit checksums.  For a server's cache of small files. */
int zc_buf_snapshot(zc_pool *pool, int fd, uint64_t off, size_t len,
		    zc_buf **out);

/* Read-only view of the content (maps an imported pool on first use).
 * NULL if mapping failed. */
const void *zc_buf_data(zc_buf *buf);
size_t zc_buf_len(const zc_buf *buf);
size_t zc_buf_capacity(const zc_buf *buf);
/* The buffer's pool; NULL for a kernel IO-Lite buffer (iol_read, below). */
zc_pool *zc_buf_pool(const zc_buf *buf);

struct zc_buf_id {
	uint64_t pool;		/* zc_pool_id(); 0: a kernel IO-Lite buffer */
	uint64_t off;		/* byte offset in the pool (kernel: its id) */
	uint64_t len;		/* published length */
	uint64_t gen;		/* changes whenever the memory is reused */
};
void zc_buf_id(const zc_buf *buf, struct zc_buf_id *id);

zc_buf *zc_buf_ref(zc_buf *buf);
/* Drop a reference; the last one returns the memory to its pool (or, for a
 * buffer received over a channel, to the peer that owns it). */
void zc_buf_release(zc_buf *buf);

/* ------------------------------------------------------------------ files */

typedef struct zc_file zc_file;

struct zc_file_version {
	uint64_t dev, ino;
	int64_t size;
	int64_t mtime_ns, ctime_ns;
};

/* Open a regular file read-only and remember its version and path (the path
 * lets zc_file_check notice a file replaced by rename). */
int zc_file_open(const char *path, zc_file **out);
/* Wrap an open regular file (the descriptor is duplicated). */
int zc_file_from_fd(int fd, zc_file **out);
/* Wrap an open regular file and take over its descriptor (no dup): on
 * success the file owns fd and closes it on its last release; on failure
 * fd stays the caller's.  `st` is the fstat the caller just made of fd
 * (its version is taken from it, no fstat here), or NULL to fstat now. */
struct stat;
int zc_file_adopt(int fd, const struct stat *st, zc_file **out);
/* 0 if the file still has the version it was opened with; -ESTALE if it was
 * truncated, written, or replaced; other negative errno on failure. */
int zc_file_check(zc_file *file);
/* The caller vouches for the file's bytes from now on: it changes only
 * ranges no slice in flight names (a memfd it manages as an arena, such
 * as zchttpd's shared cache), so zc_file_check always succeeds. */
void zc_file_trust(zc_file *file);
void zc_file_version(const zc_file *file, struct zc_file_version *v);
/* The version a stat of a file describes, and whether two versions are
 * the same content (device, inode, size, mtime, ctime: what
 * zc_file_check compares), for callers that revalidate by stat. */
void zc_file_version_of(const struct stat *st, struct zc_file_version *v);
int zc_file_version_same(const struct zc_file_version *a,
			 const struct zc_file_version *b);
int zc_file_fd(const zc_file *file);
int64_t zc_file_size(const zc_file *file);
zc_file *zc_file_ref(zc_file *file);
void zc_file_release(zc_file *file);
/* Map the file (its size at open, read-only) for sinks that copy mapped
 * files (zc_sink_copy_mapped_files); the mapping lasts until the last
 * release.  Nothing else uses it and no pointer to it is handed out: only
 * the kernel reads it, so a file that shrinks fails a copy (-ESTALE)
 * rather than raising SIGBUS.  0 (also when already mapped), -EINVAL for
 * an empty file, or -errno from mmap. */
int zc_file_map(zc_file *file);

/* ------------------------------------------------------------- aggregates */

typedef struct zc_agg zc_agg;

typedef struct zc_pipe zc_pipe;	/* below, "pipes" */

enum zc_slice_kind {
	ZC_SLICE_BUF = 1,
	ZC_SLICE_FILE = 2,
	ZC_SLICE_MEM = 3,
	ZC_SLICE_PIPE = 4,	/* bytes waiting in a zc_pipe (iol_splice_in) */
};

/* One slice as seen by zc_agg_slice(): borrowed pointers, valid while the
 * aggregate is unchanged.  Only the pointer of the slice's kind is set. */
struct zc_slice {
	enum zc_slice_kind kind;
	zc_buf *buf;		/* ZC_SLICE_BUF */
	zc_file *file;		/* ZC_SLICE_FILE */
	const void *mem;	/* ZC_SLICE_MEM: borrowed memory */
	zc_pipe *pipe;		/* ZC_SLICE_PIPE */
	uint64_t off;		/* offset in the buffer, file or memory; for a
				 * pipe, the position in the pipe's stream
				 * (counted from the first byte ever spliced
				 * in) */
	size_t len;
};

int zc_agg_create(zc_agg **out);
/* Release the aggregate and every reference its slices hold. */
void zc_agg_release(zc_agg *agg);
/* A new aggregate with the same slices (buffers and files shared). */
int zc_agg_dup(const zc_agg *agg, zc_agg **out);

/* Append or prepend part of a buffer (takes its own reference; the buffer
 * must be published) or an extent of a file (no data is read). */
int zc_agg_append_buf(zc_agg *agg, zc_buf *buf, size_t off, size_t len);
int zc_agg_prepend_buf(zc_agg *agg, zc_buf *buf, size_t off, size_t len);
int zc_agg_append_file(zc_agg *agg, zc_file *file, uint64_t off, size_t len);
int zc_agg_prepend_file(zc_agg *agg, zc_file *file, uint64_t off, size_t len);
/* Copy `len` bytes into a new buffer from `pool` (NULL = default) and append. */
int zc_agg_append_bytes(zc_agg *agg, zc_pool *pool, const void *data, size_t len);
/* Append `len` bytes of the caller's own memory by reference: no copy, no
 * buffer, no reference count (a borrowed slice).  The caller keeps the
 * bytes valid and unchanged for as long as any aggregate holds them (until
 * iol_write has written them, or they are truncated, trimmed or released;
 * zc_agg_dup and zc_agg_concat share them too).  Borrowed bytes leave the
 * process only by copy -- write/sendmsg, or a pool buffer when sent on a
 * channel -- never lent to the kernel or a peer.  For small memory reused
 * per message, such as a server's response head; adjacent borrowed bytes
 * merge into one slice. */
int zc_agg_append_mem(zc_agg *agg, const void *data, size_t len);

/* Append all of src's slices to dst (src unchanged). */
int zc_agg_concat(zc_agg *dst, const zc_agg *src);
/* Keep [0, at) in agg; move [at, len) into a new aggregate *tail. */
int zc_agg_split(zc_agg *agg, size_t at, zc_agg **tail);
/* Move [0, at) into a new aggregate *front; agg keeps [at, len).  The
 * work is the front's slices only: for taking records or messages one by
 * one off a long aggregate (zc_agg_split would copy the rest each time).
 * On failure agg is unchanged. */
int zc_agg_split_front(zc_agg *agg, size_t at, zc_agg **front);
/* Keep the first `len` bytes. */
int zc_agg_truncate(zc_agg *agg, size_t len);
/* Drop the first `n` bytes. */
int zc_agg_trim_front(zc_agg *agg, size_t n);

size_t zc_agg_len(const zc_agg *agg);
size_t zc_agg_nslices(const zc_agg *agg);
/* Slice i (0-based) or -ERANGE. */
int zc_agg_slice(const zc_agg *agg, size_t i, struct zc_slice *out);

/* Copy bytes [off, off+len) out (files are read with pread).  Returns the
 * number copied (short only at the end of the aggregate), -ESTALE if a file
 * slice no longer has its data, -EINVAL (nothing copied) if the range
 * touches a pipe slice: reading a pipe's bytes consumes them, and they
 * would then be gone for iol_write. */
ssize_t zc_agg_copyout(const zc_agg *agg, size_t off, void *dst, size_t len);

/* A contiguous read-only view of the whole aggregate, built only when asked:
 * one buffer slice is returned in place; anything else is gathered into one
 * new buffer from `pool` (NULL = default) that then replaces the slices, so
 * a second call costs nothing.  The view lives until the aggregate changes
 * or is released.  An empty aggregate gives a non-NULL pointer and *len 0.
 * -EINVAL for an aggregate with a pipe slice (as zc_agg_copyout). */
int zc_agg_map(zc_agg *agg, zc_pool *pool, const void **data, size_t *len);

/* ------------------------------------------------------------------ pipes */

/*
 * A pipe slice names stream positions [off, off+len) of its zc_pipe.  The
 * pipe counts two positions: wpos, the bytes ever spliced in, and rpos,
 * the bytes ever taken out (written or discarded).  Bytes leave a kernel
 * pipe only from its front, so a pipe slice is written once, in order:
 *
 *   - aggregate operations stay pointer work: append, concat, split,
 *     split_front, truncate, trim_front, dup and release work on pipe
 *     slices as on any other (each holds a reference on its pipe;
 *     neighbouring slices of one pipe with contiguous positions merge).
 *   - bytes the aggregate's owner dropped (truncated, trimmed, released)
 *     stay in the kernel pipe until iol_write reaches a later slice of the
 *     pipe, which discards them first (they are never sent), or until
 *     iol_splice_in finds no slice naming any of the pipe's bytes, or the
 *     pipe's last release.  Writing a later slice before an earlier one
 *     (the halves of a split, out of order) discards the earlier one's
 *     bytes the same way.
 *   - a slice whose bytes are gone already (a dup'd aggregate written a
 *     second time) makes iol_write fail with -EINVAL, nothing written.
 *   - zc_agg_copyout, zc_agg_map, a channel (zc_channel_send, iol_write to
 *     a channel) and Container Shipping refuse pipe slices with -EINVAL:
 *     they cannot take the bytes without consuming the pipe.
 *
 * iol_write sends a pipe slice with splice(2) to a TCP or UNIX stream
 * socket, a pipe or a regular file (not O_APPEND) -- bytes_by_reference in
 * zc_io_stats -- and to anything else through a bounce buffer
 * (bytes_copied).  Like aggregates, a pipe and every slice naming it
 * belong to one thread at a time.
 */

/* A non-blocking kernel pipe (O_NONBLOCK|O_CLOEXEC both ends) where bytes
 * wait on their way from one socket to another.  capacity: F_SETPIPE_SZ
 * wish in bytes (0: the kernel's default); best effort -- a refusal (EPERM
 * above /proc/sys/fs/pipe-max-size for an unprivileged process) keeps what
 * it got; zc_pipe_capacity says.  -EMFILE, -ENFILE, -ENOMEM. */
int zc_pipe_create(size_t capacity, zc_pipe **out);
/* Take a reference (every slice naming the pipe holds one too). */
zc_pipe *zc_pipe_ref(zc_pipe *p);
/* Drop a reference: the last one closes both ends, and the bytes still
 * inside go with the pipe.  Accepts NULL. */
void zc_pipe_release(zc_pipe *p);
/* Bytes spliced in and not yet written out or discarded (wpos - rpos). */
size_t zc_pipe_held(const zc_pipe *p);
/* The pipe's capacity in bytes (F_GETPIPE_SZ at creation).  The kernel
 * counts a pipe's room in slots (capacity / page size), one per piece a
 * splice brings, so a full pipe may hold fewer bytes than this (small
 * pieces) or more (a UNIX socket's pieces can be larger than a page). */
size_t zc_pipe_capacity(const zc_pipe *p);

/* Splice up to `size` bytes from fd (a socket or a pipe) into p and append
 * them to *agg (NULL: a new aggregate) as one pipe slice: the bytes never
 * enter user memory.  Returns bytes moved, 0 at EOF (or for size 0),
 * -EAGAIN when fd has nothing now OR the pipe is full (when the pipe held
 * nothing before the call it was fd; a pipe that holds bytes may be full:
 * write them out and wait for both), -EINTR, or -errno.  The pipe never
 * waits; a blocking fd waits for data as read(2) does, so from a blocking
 * fd -EAGAIN means the pipe is full.  The *agg contract is iol_read's (on
 * error it is left as passed).  Should the append fail (-ENOMEM), the
 * bytes spliced in are counted as dropped: the next slice of p that is
 * written discards them. */
ssize_t iol_splice_in(int fd, zc_pipe *p, zc_agg **agg, size_t size);

/* --------------------------------------------------------------- IO-Lite */

/* Read up to `size` bytes from fd into an aggregate.  If *agg is NULL a new
 * aggregate is created, otherwise data is appended.  Regular files give file
 * slices (the page cache is referenced, not read); pipes and sockets are
 * read once into pool buffers -- or, on the patched kernel with IO-Lite,
 * into kernel buffers: read-only, mapped by the kernel, sent by reference
 * by iol_write, never given to a forked child (release them only, there).
 * Channels deliver the peer's buffers.  Returns bytes read, 0 at EOF, or
 * a negative errno (-EAGAIN on an empty non-blocking descriptor, -EINTR if
 * a signal arrived before any data). */
ssize_t iol_read(int fd, zc_agg **agg, size_t size);

/* An origin probed once: what kind of descriptor it is (file, pipe,
 * socket, channel, other).  iol_read probes on every call (three system
 * calls); a server that reads one socket many times initialises a source
 * when it connects and calls iol_read_source.  The fields are private. */
typedef struct zc_source {
	int fd;
	int kind;
} zc_source;

/* 0, or -EBADF for a closed descriptor. */
int zc_source_init(zc_source *src, int fd);
/* iol_read from a probed origin (same contract as iol_read). */
ssize_t iol_read_source(const zc_source *src, zc_agg **agg, size_t size);

/* Write the aggregate to fd with the cheapest mechanism for each (slice,
 * destination) pair: sendfile, splice, vmsplice, copy_file_range, or
 * descriptors on a channel.  The bytes written are trimmed from the front of
 * agg, so after a partial write (non-blocking socket, signal) calling
 * iol_write again with the same aggregate resumes exactly where it stopped.
 * Returns bytes written (> 0), 0 for an empty aggregate, or a negative errno
 * when nothing was written (-EAGAIN, -EPIPE, -ESTALE for a file slice whose
 * file changed, -EINVAL for a pipe slice whose bytes are gone or on a
 * channel (see "pipes"), ...). */
ssize_t iol_write(int fd, zc_agg *agg);

/* A destination probed once: what kind of descriptor it is (file, pipe,
 * TCP or UNIX socket, channel, other) and its O_NONBLOCK/O_APPEND flags.
 * iol_write probes on every call (up to five system calls); a server that
 * writes to one socket many times initialises a sink when it accepts the
 * connection and calls iol_write_sink.  Initialise again after changing
 * the descriptor's flags.  The fields are private. */
typedef struct zc_sink {
	int fd;
	int kind;
	unsigned flags;
} zc_sink;

/* 0, or -EBADF for a closed or read-only descriptor. */
int zc_sink_init(zc_sink *sink, int fd);
/* zc_sink_init for a descriptor the caller knows to be a connected TCP
 * socket (one it just accepted from its own listener), without probing:
 * an accept loop saves five system calls per connection.  The caller
 * answers for the claim; a wrong one makes iol_write_sink misbehave. */
int zc_sink_init_tcp(zc_sink *sink, int fd, int nonblock);
/* For a caller that revalidates its files itself (a cache with a
 * freshness window, like zchttpd's): iol_write_sink then skips the version
 * check (one fstat) before each file slice.  A file that shrank is still
 * caught (the transfer comes up short: -ESTALE); one rewritten in place is
 * sent as it is now, within the caller's own window. */
void zc_sink_trust_extents(zc_sink *sink, int on);
/* For a caller whose buffers mostly pass through once (a proxy relaying
 * what it read from one socket to another): a buffer of this process's
 * pools goes by copy the first time it leaves through this sink, and by
 * reference from its second trip on.  Lending a buffer costs its pool a
 * detach when it is released (its pages punched out of the memfd, fresh
 * zeroed ones faulted in by the next user), which on stock Linux costs
 * more than copying it once: a 100 KiB FastCGI response relayed from a
 * socket cost zchttpd and the application 202 us of CPU lent against 75 us
 * copied (docs/bench-fastcgi.md).  A buffer sent again (a cached body, one
 * fanned out to several sockets) pays the detach once and is lent from
 * then on.  Buffers of a peer's pool (channels) and kernel IO-Lite buffers
 * are lent as before: their owner or the kernel decides their reuse. */
void zc_sink_copy_first_trip(zc_sink *sink, int on);
/* For a caller that cuts file extents into many small pieces with bytes
 * of its own between them (HTTP/2 DATA frames: a 9-byte header before
 * every 16 KiB): a stream socket then gets the extents of mapped files
 * (zc_file_map) by copy, gathered with their neighbours into one sendmsg,
 * instead of a sendmsg and a sendfile per piece.  On Linux 6.18, 100 KB as
 * seven 16 KiB frames cost 54.3 us of sender CPU by reference against
 * 23.7 us by copy and 17.4 us for one sendfile of the whole
 * (bench/floor/zcframes.c).  Extents of unmapped files are lent as before;
 * the version check (zc_sink_trust_extents) applies either way. */
void zc_sink_copy_mapped_files(zc_sink *sink, int on);
/* iol_write to a probed destination (same contract as iol_write). */
ssize_t iol_write_sink(const zc_sink *sink, zc_agg *agg);

struct zc_io_stats {
	uint64_t bytes_by_reference;	/* sendfile/splice/vmsplice/descriptors */
	uint64_t bytes_copied;		/* read/write/pread/pwrite */
	uint64_t calls;			/* system calls issued by iol_* */
};
/* Process-wide counters (atomic). */
void zc_io_stats(struct zc_io_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* ZC_H */
