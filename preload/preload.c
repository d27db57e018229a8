/*
 * preload.c - libzc-preload.so's life cycle: configuration, fork, exec and
 * exit.  It fills real.c's real-symbol table and reaches the conversions
 * only through conv.c's table.
 *
 * Configuration comes from the environment, read once (docs/preload.md):
 *
 *   ZC_DISABLE=a,b    conversions switched off (names: pipe, mapwrite,
 *                     forward, stdio - conv.c; "all")
 *   ZC_ENABLE=a,b     opt in to a conversion's cases that are not proven
 *                     identical to the plain call (mapwrite); a conversion
 *                     off by default is on only when named here
 *   ZC_STATS=1        per-conversion table on stderr when the process ends
 *   ZC_STATS_FILE=F   one JSON object per process appended to F
 *   ZC_NOFOLLOW=1     programs this one executes run without the preload
 *
 * Following exec is the loader's doing: LD_PRELOAD is inherited with the
 * environment, so a child gets the preload whenever the environment it is
 * given still names it.  A program that hands its child an environment of
 * its own making (env -i, sudo) decides for itself; we do not put the
 * preload back.  ZC_NOFOLLOW=1 takes the preload out of LD_PRELOAD in our
 * own environment at load time, so every exec - by execve with environ, by
 * a shell's exported variables, by posix_spawn - starts without it; the
 * exec wrappers below also strip it from explicit environments.
 *
 * Statistics are per process image: reported at exit(), _exit() and before
 * a successful-looking exec (counters are reset there, so a failed exec
 * reports the rest at exit; an exec'd image reports under the same pid).
 * A fork child starts at zero.  A vfork child shares the parent's memory
 * and must neither report nor reset (zcp_in_vfork_child()).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

/* enum init_state; zcp_init() in preload.h reads it on every hook call. */
atomic_int zcp_state;

/* zcp_enabled() in preload.h: set once, before zcp_state becomes ready. */
bool zcp_on[ZCP_NCONV];

static struct {
	bool disabled[ZCP_NCONV];
	bool optin[ZCP_NCONV];
	bool stats;
	bool nofollow;
	char stats_file[PATH_MAX];
	/*
	 * With ZC_STATS=1, a duplicate of stderr as it was at load: the
	 * table goes there.  Programs close fd 2 before exiting (coreutils'
	 * close_stdout does) or reuse the number for their own files.  The
	 * price: a program that closes stderr early keeps it open (a reader
	 * of that pipe sees EOF only at exit) - this is a diagnostic mode.
	 */
	int err_fd;
	pid_t pid;		/* updated in fork children; see vfork */
	atomic_int reported;	/* this image already reported (exit paths) */
} cfg;

/* Mark the conversions named in a comma list ("all" for every one). */
static void parse_list(const char *s, bool out[ZCP_NCONV])
{
	while (s && *s) {
		size_t n = strcspn(s, ", ");
		int c;

		for (c = 0; c < ZCP_NCONV; c++)
			if ((n == strlen(zcp_conv_name(c)) &&
			     !strncmp(s, zcp_conv_name(c), n)) ||
			    (n == 3 && !strncmp(s, "all", 3)))
				out[c] = true;
		s += n;
		s += strspn(s, ", ");
	}
}

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

static bool is_our_lib(const char *entry, size_t n)
{
	static const char base[] = "libzc-preload.so";
	size_t b = sizeof(base) - 1;

	return n >= b && !memcmp(entry + n - b, base, b) &&
	       (n == b || entry[n - b - 1] == '/');
}

/*
 * Copy LD_PRELOAD's value to out without our own entries.  Entries are
 * separated by spaces or colons (ld.so accepts both).  Returns false when
 * the value would not fit.
 */
static bool strip_value(const char *v, char *out, size_t cap)
{
	size_t o = 0;

	while (*v) {
		size_t n = strcspn(v, ": ");

		if (n && !is_our_lib(v, n)) {
			if (o + n + 2 > cap)
				return false;
			if (o)
				out[o++] = ':';
			memcpy(out + o, v, n);
			o += n;
		}
		v += n;
		v += strspn(v, ": ");
	}
	out[o] = '\0';
	return true;
}

/*
 * ZC_NOFOLLOW: take ourselves out of LD_PRELOAD in environ, in place, before
 * main() (main's envp is the same array, so it sees the change too).
 */
static void unfollow_environ(void)
{
	static char value[4096] = "LD_PRELOAD=";
	extern char **environ;
	char **e;

	for (e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		if (!strip_value(*e + 11, value + 11, sizeof(value) - 11))
			return;
		if (value[11]) {
			*e = value;
		} else {
			do
				e[0] = e[1];
			while (*++e);
		}
		return;
	}
}

/*
 * The program took the number of our stderr copy (dup2 onto it) or closed
 * it (close_range): follow the move, or report nowhere -- never into
 * whatever the program has put at the old number.
 */
void zcp_own_fd_moved(int old, int new)
{
	if (old == cfg.err_fd)
		cfg.err_fd = new;
	zcp_conv_fd_moved(old, new);
}

static void load_config(void)
{
	const char *f = getenv("ZC_STATS_FILE");

	parse_list(getenv("ZC_DISABLE"), cfg.disabled);
	parse_list(getenv("ZC_ENABLE"), cfg.optin);
	cfg.stats = env_true("ZC_STATS");
	cfg.nofollow = env_true("ZC_NOFOLLOW");
	if (f && *f && strlen(f) < sizeof(cfg.stats_file))
		strcpy(cfg.stats_file, f);
	cfg.err_fd = cfg.stats ? zcp_fd_hide(STDERR_FILENO) : -1;
	cfg.pid = getpid();
}

/*
 * glibc's pthread_atfork lives in libc_nonshared.a and calls the
 * glibc-only __register_atfork; musl exports pthread_atfork itself.  Weak
 * references keep the library loadable under both (musl resolves every
 * symbol at load time and refuses missing strong ones).
 */
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void),
			     void *) __attribute__((weak));
extern const char *gnu_get_libc_version(void) __attribute__((weak));
extern void *__dso_handle __attribute__((weak));

bool zcp_glibc(void)
{
	return gnu_get_libc_version != NULL;
}

/* pthread_atfork() that links against glibc and musl alike. */
static int zcp_atfork(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void))
{
	int (*atfork)(void (*)(void), void (*)(void), void (*)(void));

	if (__register_atfork)
		return __register_atfork(prepare, parent, child,
					 &__dso_handle ? __dso_handle : NULL);
	atfork = dlsym(RTLD_DEFAULT, "pthread_atfork");
	return atfork ? atfork(prepare, parent, child) : -1;
}

/* fork: the conversions' hooks (conv.c), after our own child work. */
static void atfork_child(void)
{
	cfg.pid = getpid();
	atomic_store(&cfg.reported, 0);
	zcp_stats_reset();
	zcp_conv_fork_child();
}

/*
 * Two steps: the real-symbol table (needed by every hook, from the first
 * call on) and the configuration (needs the environment).  A hook can run
 * before libc has set environ - a sanitizer runtime initialising in
 * .preinit_array calls write or mmap - so the configuration waits for
 * environ, and until it is read every conversion counts as off.
 */
enum init_state { S_NONE, S_RESOLVING, S_SYMBOLS, S_CONFIGURING, S_READY };
_Static_assert(S_READY == ZCP_STATE_READY, "preload.h's fast path");

static void wait_past(int s)
{
	while (atomic_load(&zcp_state) == s)
		sched_yield(); /* another thread is at it (start-up only) */
}

void zcp_init_slow(void)
{
	extern char **environ;
	int s = atomic_load_explicit(&zcp_state, memory_order_acquire);

	if (s == S_READY)
		return;
	if (s == S_NONE) {
		if (atomic_compare_exchange_strong(&zcp_state, &s, S_RESOLVING)) {
			zcp_real_resolve();
			atomic_store(&zcp_state, S_SYMBOLS);
		}
	}
	wait_past(S_RESOLVING);
	s = S_SYMBOLS;
	if (environ &&
	    atomic_compare_exchange_strong(&zcp_state, &s, S_CONFIGURING)) {
		load_config();
		if (cfg.nofollow)
			unfollow_environ();
		zcp_atfork(zcp_conv_fork_prepare, zcp_conv_fork_parent,
			   atfork_child);
		for (int c = 0; c < ZCP_NCONV; c++)
			zcp_on[c] = !cfg.disabled[c] &&
				    (zcp_conv_on_by_default(c) || cfg.optin[c]);
		atomic_store_explicit(&zcp_state, S_READY, memory_order_release);
	}
	wait_past(S_CONFIGURING);
}

static bool ready(void)
{
	zcp_init();
	return atomic_load_explicit(&zcp_state, memory_order_acquire) ==
	       S_READY;
}

__attribute__((constructor(101))) static void preload_ctor(void)
{
	int saved = errno;

	zcp_init();
	errno = saved;
}

bool zcp_optin(enum zcp_conv c)
{
	return ready() && c < ZCP_NCONV && cfg.optin[c];
}

bool zcp_in_vfork_child(void)
{
	/* glibc does not cache getpid(); a vfork child has its own pid but
	 * never ran our atfork handler. */
	return cfg.pid && getpid() != cfg.pid;
}

/* ------------------------------------------------------------------ */
/* Reporting.                                                          */

/*
 * The image ends (exit, _exit) or is replaced (exec).  Async-signal-safe:
 * _exit() is often called from signal handlers.
 */
static void report(bool at_exec)
{
	int saved = errno;

	if (atomic_load(&zcp_state) != S_READY || zcp_in_vfork_child())
		goto out;
	if (!cfg.stats && !cfg.stats_file[0])
		goto out;
	/* At exec only an image that did something reports; a shell's
	 * fork+exec child would otherwise print an empty table each time. */
	if (at_exec && !zcp_stats_any())
		goto out;
	if (atomic_exchange(&cfg.reported, 1))
		goto out;
	zcp_stats_emit(cfg.err_fd, cfg.stats_file[0] ? cfg.stats_file : NULL);
	if (at_exec) {
		/* The exec may fail: the rest is reported at exit. */
		zcp_stats_reset();
		atomic_store(&cfg.reported, 0);
	}
out:
	errno = saved;
}

/* exit(): the conversions count what is still open, then the report. */
__attribute__((destructor(101))) static void preload_dtor(void)
{
	zcp_conv_exit();
	report(false);
}

ZCP_EXPORT void _exit(int status)
{
	report(false);
	if (zcp_real._exit)
		zcp_real._exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

ZCP_EXPORT void _Exit(int status)
{
	report(false);
	if (zcp_real._Exit)
		zcp_real._Exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/* ------------------------------------------------------------------ */
/* exec.                                                               */

/*
 * With ZC_NOFOLLOW, an explicit environment loses our LD_PRELOAD entry.
 * No malloc (a vfork child may be calling): the copy lives in the caller's
 * frame, sized by the caller.  Returns envp itself when nothing changes.
 */
static char *const *child_env(char *const *envp, char **copy, size_t cap,
			      char *val, size_t valcap)
{
	size_t i, o = 0;
	bool changed = false;

	if (!cfg.nofollow || !envp)
		return envp;
	for (i = 0; envp[i]; i++) {
		if (o + 1 >= cap)
			return envp;
		if (!strncmp(envp[i], "LD_PRELOAD=", 11) && !changed) {
			memcpy(val, "LD_PRELOAD=", 11);
			if (!strip_value(envp[i] + 11, val + 11, valcap - 11))
				return envp;
			changed = true;
			if (!val[11])
				continue;
			copy[o++] = val;
			continue;
		}
		copy[o++] = envp[i];
	}
	copy[o] = NULL;
	return changed ? copy : envp;
}

static size_t env_count(char *const *envp)
{
	size_t n = 0;

	while (envp && envp[n])
		n++;
	return n;
}

#define WITH_ENV(envp, out)                                                   \
	size_t envn_ = env_count(envp) + 1;                                   \
	char *envcopy_[envn_ < 4096 ? envn_ : 1];                             \
	char envval_[4096];                                                   \
	char *const *out = envn_ < 4096 ? child_env(envp, envcopy_, envn_,    \
						    envval_, sizeof(envval_)) \
					: (envp)

ZCP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	zcp_init();
	report(true);
	WITH_ENV(envp, env);
	return zcp_real.execve(path, argv, env);
}

ZCP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	zcp_init();
	report(true);
	WITH_ENV(envp, env);
	return zcp_real.execvpe(file, argv, env);
}

ZCP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	zcp_init();
	report(true);
	WITH_ENV(envp, env);
	return zcp_real.fexecve(fd, argv, env);
}

ZCP_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
			char *const envp[], int flags)
{
	zcp_init();
	report(true);
	if (!zcp_real.execveat) {
		errno = ENOSYS;
		return -1;
	}
	WITH_ENV(envp, env);
	return zcp_real.execveat(dirfd, path, argv, env, flags);
}

ZCP_EXPORT int execv(const char *path, char *const argv[])
{
	zcp_init();
	report(true);
	return zcp_real.execv(path, argv);
}

ZCP_EXPORT int execvp(const char *file, char *const argv[])
{
	zcp_init();
	report(true);
	return zcp_real.execvp(file, argv);
}

/* The execl family: glibc's own versions call execve internally, past us. */
#define ARGV_FROM_VA(arg0, ap, argv, extra)                                   \
	size_t argc_ = 0;                                                     \
	const char *a0_ = (arg0);                                             \
	/* glibc declares arg nonnull; execl(p, NULL) exists all the same */ \
	__asm__("" : "+r"(a0_));                                              \
	va_start(ap, arg0);                                                   \
	if (a0_)                                                              \
		for (argc_ = 1; va_arg(ap, char *); argc_++)                  \
			;                                                     \
	va_end(ap);                                                           \
	char *argv[argc_ + 1];                                                \
	va_start(ap, arg0);                                                   \
	argv[0] = (char *)(arg0);                                             \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                \
		argv[i_] = va_arg(ap, char *);                                \
	extra;                                                                \
	va_end(ap)

ZCP_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;

	ARGV_FROM_VA(arg, ap, argv, (void)0);
	return execv(path, argv);
}

ZCP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;

	ARGV_FROM_VA(arg, ap, argv, (void)0);
	return execvp(file, argv);
}

ZCP_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char *const *envp;

	ARGV_FROM_VA(arg, ap, argv, envp = va_arg(ap, char *const *));
	return execve(path, argv, envp);
}
