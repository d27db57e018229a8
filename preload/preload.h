/*
 * preload.h - what the parts of libzc-preload.so share.
 *
 * libzc-preload.so interposes libc calls (dlsym(RTLD_NEXT)) and turns some of
 * them into zero-copy paths (docs/preload.md).  Each conversion lives in its
 * own file and talks to the rest only through this header:
 *
 *   preload.c   constructor, configuration (environment), fork/exec/exit
 *               life cycle (statistics, ZC_NOFOLLOW)
 *   real.c      the real-symbol table (zcp_real), the one way to the real
 *               functions
 *   conv.c      the table of conversions: name, default, life-cycle hooks
 *               (fork, descriptors changing meaning, exit); the life cycle
 *               reaches the conversions only through it
 *   stats.c     counters and their exit-time report (table, JSON line)
 *   hooks.c     the interposed I/O entry points (read, write, writev, send,
 *               sendmsg, pipe, mmap, close, dup2, ...): each one calls the
 *               real function or hands the call to a conversion
 *   fdstate.c   the preload's own descriptors, kept out of the program's
 *               way (close, dup2, close_range on their numbers); tells the
 *               function its caller passes when one moves
 *   pipes.c     ZCP_PIPE:     grow pipe capacity adaptively (F_SETPIPE_SZ)
 *   mapwrite.c  ZCP_MAPWRITE: writes whose source is a read-only file mapping
 *                             become sendfile/splice from that file
 *   xfer.c      write(2)-exact transfers from a file (sendfile/splice) used
 *               by mapwrite
 *   guard.c     the cost guard: mapwrite takes the conversion only where
 *               it was measured cheaper than the plain call (guard.h)
 *   forward.c   ZCP_FORWARD:  read-then-write of unmodified data: counted,
 *                             not converted (forward.c says why)
 *   stdio.c     ZCP_STDIO:    stdio reads of regular files served from a
 *                             mapped window; fmap() and fbufsize()
 *
 * Rule for every conversion: on any doubt, call the real function and
 * record why (zcp_passed).  Return values, errno and side effects must be
 * exactly those of the real call.
 *
 * Who calls whom: hooks.c and the exported functions of preload.c and
 * stdio.c are the entry points.  The conversions call the services
 * (preload.c's configuration, real.c, stats.c, fdstate.c, xfer.c), never
 * each other; no two files call each other.  hooks.c hands each call to
 * the conversions directly (below, "Hand-offs"); life-cycle events reach
 * them only through conv.c's table.
 */
#ifndef ZC_PRELOAD_H
#define ZC_PRELOAD_H

#include "conv_names.h"
#include "guard.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define ZCP_EXPORT __attribute__((visibility("default")))

/* The conversions, in conv.c's table order; one entry each there. */
#define ZCP_CONV_ENUM(e, name) e,
enum zcp_conv {
	ZCP_CONVERSIONS(ZCP_CONV_ENUM)
	ZCP_NCONV
};
#undef ZCP_CONV_ENUM

/*
 * conv.c: the name used in ZC_DISABLE=LIST, zcrun --disable=LIST and the
 * statistics; whether the conversion is on by default (then on unless
 * ZC_DISABLE names it, else only when ZC_ENABLE does).
 */
const char *zcp_conv_name(enum zcp_conv c);
bool zcp_conv_on_by_default(enum zcp_conv c);

/* conv.c: the life cycle, passed on to every conversion that has a hook. */
void zcp_conv_fork_prepare(void);
void zcp_conv_fork_parent(void);
void zcp_conv_fork_child(void);
void zcp_conv_fd_forget(int fd);          /* fd names something new now */
void zcp_conv_fd_moved(int old, int new); /* zcp_fd_moved_fn, below */
void zcp_conv_exit(void);

/* preload.c: one of the preload's descriptors moved (fdstate.c's
 * zcp_fd_moved_fn): its own stderr copy for the statistics, then every
 * conversion's (zcp_conv_fd_moved).  The hooks pass this one. */
void zcp_own_fd_moved(int old, int new);

/*
 * Load-time set-up: configuration and the real-symbol table.  Idempotent
 * and cheap after the first call; every hook calls it first because libc
 * (or another library's constructor) may call a hook before ours ran.
 */
void zcp_init_slow(void);
extern _Atomic int zcp_state;
#define ZCP_STATE_READY 4 /* preload.c: enum init_state */

static inline void zcp_init(void)
{
	if (__builtin_expect(__atomic_load_n(&zcp_state, __ATOMIC_ACQUIRE) !=
			     ZCP_STATE_READY, 0))
		zcp_init_slow();
}

/*
 * Is conversion c switched on (on by default or named in ZC_ENABLE, and
 * not in ZC_DISABLE)?  False until the configuration is read.  Inline: it
 * is asked on every hooked call.
 */
extern bool zcp_on[ZCP_NCONV];

static inline bool zcp_enabled(enum zcp_conv c)
{
	return zcp_on[c];
}

/*
 * Did the user opt in (ZC_ENABLE=name) to the cases of conversion c that
 * are not proven identical to the plain call?  See docs/preload.md.
 */
bool zcp_optin(enum zcp_conv c);

/*
 * Is the process's C library glibc?  The preload also loads into musl
 * programs (ld-musl maps our DT_NEEDED libc.so.6 onto itself); there the
 * glibc-specific conversion (stdio) stays off.  docs/preload.md, "musl".
 */
bool zcp_glibc(void);

/* Are we a vfork() child (sharing the parent's memory)?  Then touch nothing. */
bool zcp_in_vfork_child(void);

/* Statistics, thread-safe, async-signal-safe (relaxed atomics). */
void zcp_seen(enum zcp_conv c);                       /* a call it could apply to */
void zcp_converted(enum zcp_conv c, uint64_t bytes);  /* done without copy */
void zcp_passed(enum zcp_conv c, const char *reason); /* reason: a static string */

/* stats.c: the report.  Async-signal-safe (no malloc, no stdio, no locks). */
void zcp_stats_reset(void);
bool zcp_stats_any(void);
/* Write the table to fd table_fd (-1: none) and/or append JSON to path. */
void zcp_stats_emit(int table_fd, const char *json_path);

/*
 * real.c: the real functions, the only way any part of the preload reaches
 * them.  Filled by zcp_init() (zcp_real_resolve()) before any hook runs its
 * conversion; the hooks call through these, never through the names
 * (which would recurse into ourselves).  NULL where the C library lacks one.
 */
struct zcp_real {
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int,
			  const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*pipe)(int[2]);
	int (*pipe2)(int[2], int);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	int (*mprotect)(void *, size_t, int);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	int (*close)(int);
	int (*close_range)(unsigned, unsigned, int);
	void (*closefrom)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execv)(const char *, char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	void (*_exit)(int);
	void (*_Exit)(int);
	FILE *(*fopen)(const char *, const char *);
	FILE *(*fopen64)(const char *, const char *);
	FILE *(*fdopen)(int, const char *);
	FILE *(*freopen)(const char *, const char *, FILE *);
	FILE *(*freopen64)(const char *, const char *, FILE *);
	int (*fclose)(FILE *);
	int (*fcloseall)(void);
	int (*fflush)(FILE *);
	int (*fflush_unlocked)(FILE *);
	int (*fseek)(FILE *, long, int);
	int (*fseeko)(FILE *, off_t, int);
	int (*fseeko64)(FILE *, off64_t, int);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	sighandler_t (*signal)(int, sighandler_t);
};
extern struct zcp_real zcp_real;
void zcp_real_resolve(void);

/* ------------------------------------------------------------------ */
/* Hand-offs from hooks.c to the conversions.                          */

/*
 * pipes.c; smaller I/O never shows a full pipe and is not looked at.  The
 * per-descriptor state is read inline so that the hooks skip descriptors
 * known not to be pipes without a call.
 */
#define ZCP_PIPE_MIN_IO 4096
#define ZCP_FDMAX 65536
#define ZCP_PIPE_NOTPIPE 1
extern _Atomic uint32_t zcp_pipe_state[ZCP_FDMAX];

#define ZCP_PIPE_GROWN 4u		/* state bit: we enlarged this pipe */

static inline bool zcp_pipe_worth(int fd)
{
	return (unsigned)fd < ZCP_FDMAX &&
	       (__atomic_load_n(&zcp_pipe_state[fd], __ATOMIC_RELAXED) & 3) !=
		       ZCP_PIPE_NOTPIPE;
}

/* Writes of any size to a pipe we enlarged are looked at: they measure
 * the pressure that shrinks it again (pipes.c). */
static inline bool zcp_pipe_write_worth(int fd, size_t n)
{
	return (unsigned)fd < ZCP_FDMAX &&
	       (n >= ZCP_PIPE_MIN_IO ||
		(__atomic_load_n(&zcp_pipe_state[fd], __ATOMIC_RELAXED) &
		 ZCP_PIPE_GROWN)) &&
	       zcp_pipe_worth(fd);
}

void zcp_pipe_after_io(int fd, size_t asked, ssize_t got, bool is_write);

/*
 * forward.c: an observer (see there for why nothing is converted).  As
 * mapwrite's minimum: below it even a free conversion would hardly pay,
 * and counting a 4 KiB read/write loop would cost it measurably.
 */
#define ZCP_FORWARD_MIN_IO 65536
void zcp_forward_read(int fd, const void *buf, ssize_t got);
void zcp_forward_write(const struct iovec *iov, int iovcnt);

/* mapwrite.c: the mapping table, and the write conversion itself. */
void zcp_map_added(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off);
void zcp_map_removed(void *addr, size_t len);
extern _Atomic int zcp_nmaps;

static inline bool zcp_map_any(void)
{
	return __atomic_load_n(&zcp_nmaps, __ATOMIC_RELAXED) != 0;
}
/*
 * true: the call was converted and *ret (and errno) hold its result.
 * false: the caller makes the real call; when the cost guard chose it
 * (g->active), the caller passes the result to zcp_mapwrite_copied
 * (errno kept).  guard.h: the guard.
 */
bool zcp_mapwrite(int fd, const struct iovec *iov, int iovcnt, bool sock,
		  int flags, ssize_t *ret, struct zcp_guard_pick *g);
void zcp_mapwrite_copied(struct zcp_guard_pick *g, ssize_t r);

/*
 * fdstate.c: the preload's own descriptors (close-on-exec, high numbers).
 * When the program takes one's number (dup2/dup3 onto it, close_range
 * over it), moved(old, new) tells their owner, before the old number is
 * closed, that it moved to new, or goes away (new == -1).
 */
typedef void zcp_fd_moved_fn(int old, int new);
int zcp_fd_hide(int fd);
void zcp_fd_release(int fd);
bool zcp_fd_is_ours(int fd);
void zcp_fd_evict(int fd, zcp_fd_moved_fn *moved); /* dup2/dup3 onto ours */
int zcp_fd_transient(int fd);              /* a transfer's own duplicate */
void zcp_fd_transient_done(int fd);
void zcp_fd_range_closing(unsigned lo, unsigned hi, zcp_fd_moved_fn *moved);

/* ------------------------------------------------------------------ */
/* The conversions' life-cycle hooks: named only in conv.c's table.    */

void zcp_pipe_fork_child(void);           /* the pipe budget is per process */
void zcp_pipe_forget(int fd);
void zcp_map_fork_prepare(void);          /* the table lock across fork */
void zcp_map_fork_parent(void);
void zcp_map_fork_child(void);
void zcp_map_fd_moved(int old, int new);  /* one of its descriptors moved */
void zcp_forward_forget(int fd);
void zcp_stdio_fork_prepare(void);        /* unread streams leave mmap mode */
void zcp_stdio_fork_release(void);        /* parent and child */
void zcp_stdio_exit(void);                /* count the streams still open */

#endif
