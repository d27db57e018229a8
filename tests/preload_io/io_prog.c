/*
 * io_prog.c - provokes the edge cases of the pipe and mapwrite conversions
 * of libzc-preload.so (tests/preload_io.bats).
 *
 * Every mode writes data from a file mapping (the source mapwrite converts)
 * through a pipe or a socket to a reader, and prints a transcript made
 * only of facts that hold whatever the timing: what the reader received
 * (length and hash), whether the results the writer saw obey write(2)'s
 * rules, and which errors and signals occurred.  The bats file runs each
 * mode without the preload, with it, and with ZC_ENABLE=mapwrite, and
 * compares the transcripts and exit statuses byte for byte.  A mode exits
 * 3 when one of its own checks fails (printing what).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers/fnv.h"

static int failed;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		if (!(cond)) {                                         \
			printf("CHECK FAILED line %d: ", __LINE__);    \
			printf(__VA_ARGS__);                           \
			printf("\n");                                  \
			failed = 1;                                    \
		}                                                      \
	} while (0)

static void die(const char *what)
{
	perror(what);
	exit(2);
}


struct src {
	const char *p;
	size_t len;
};

static struct src map_file(const char *path, int flags)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	struct src s;

	if (fd < 0 || fstat(fd, &st) != 0)
		die(path);
	s.len = st.st_size;
	s.p = mmap(NULL, s.len ? s.len : 1, PROT_READ, flags, fd, 0);
	if (s.p == MAP_FAILED)
		die("mmap");
	close(fd); /* the preload must keep its own descriptor */
	return s;
}

/* ------------------------------------------------------------------ */
/* A reader process: reads fd to EOF, prints "read N hash H".           */

struct reader {
	pid_t pid;
	int rfd; /* its result comes back on this pipe */
};

/* delay_us: sleep that long before reading (and between reads). */
static struct reader start_reader(int fd, int close_fd, long delay_us,
				  size_t stop_after)
{
	int res[2];
	struct reader r;

	if (pipe(res))
		die("pipe");
	r.pid = fork();
	if (r.pid < 0)
		die("fork");
	if (r.pid == 0) {
		static char buf[1 << 16];
		uint64_t h = FNV0;
		size_t total = 0;
		ssize_t n;
		char line[64];

		close(res[0]);
		if (close_fd >= 0)
			close(close_fd);
		if (delay_us)
			usleep(delay_us);
		while ((n = read(fd, buf, sizeof(buf))) != 0) {
			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("reader read");
			}
			if (stop_after && total + n > stop_after)
				n = stop_after - total;
			h = fnv(buf, n, h);
			total += n;
			if (stop_after && total >= stop_after)
				break;
			if (delay_us)
				usleep(delay_us / 10);
		}
		n = snprintf(line, sizeof(line), "%zu %llx", total,
			     (unsigned long long)h);
		if (write(res[1], line, n) != n)
			_exit(2);
		_exit(0);
	}
	close(res[1]);
	r.rfd = res[0];
	return r;
}

static void finish_reader(struct reader r, size_t *total, uint64_t *hash)
{
	char line[64] = { 0 };
	unsigned long long h = 0;
	int st;

	if (read(r.rfd, line, sizeof(line) - 1) < 0)
		die("result");
	close(r.rfd);
	waitpid(r.pid, &st, 0);
	sscanf(line, "%zu %llx", total, &h);
	*hash = h;
}

/* Write all of [p, p+n) in writes of chunk bytes; returns bytes written. */
static size_t write_all(int fd, const char *p, size_t n, size_t chunk)
{
	size_t off = 0;

	while (off < n) {
		size_t k = n - off < chunk ? n - off : chunk;
		ssize_t w = write(fd, p + off, k);

		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				struct pollfd pf = { fd, POLLOUT, 0 };

				poll(&pf, 1, -1);
				continue;
			}
			die("write");
		}
		CHECK(w > 0 && (size_t)w <= k, "write returned %zd of %zu", w, k);
		off += w;
	}
	return off;
}

static void report(const char *what, struct src s, size_t off, size_t n,
		   size_t total, uint64_t hash)
{
	CHECK(total == n, "%s: reader got %zu of %zu", what, total, n);
	CHECK(hash == fnv(s.p + off, n, FNV0), "%s: bytes differ", what);
	printf("%s: %zu bytes intact\n", what, total);
}

/* Through a fresh pipe to a reader; checks and prints what arrived. */
static void through_pipe(const char *what, struct src s, size_t off, size_t n,
			 size_t chunk)
{
	struct reader r;
	size_t total;
	uint64_t h;
	int p[2];

	if (pipe(p))
		die("pipe");
	r = start_reader(p[0], p[1], 0, 0);
	close(p[0]);
	write_all(p[1], s.p + off, n, chunk);
	close(p[1]);
	finish_reader(r, &total, &h);
	report(what, s, off, n, total, h);
}

/* ------------------------------------------------------------------ */
/* Modes.                                                              */

/* Blocking pipe, chunks of every interesting size, from odd offsets. */
static int mode_pipe(const char *path, int mapflags)
{
	static const size_t chunks[] = { 4096, 4097, 65536, 65537, 131072,
					 1 << 20, 3 << 20 };
	static const size_t offs[] = { 0, 1, 4095, 4096, 12345 };
	struct src s = map_file(path, mapflags);
	size_t i, j;

	for (i = 0; i < sizeof(chunks) / sizeof(*chunks); i++)
		for (j = 0; j < sizeof(offs) / sizeof(*offs); j++) {
			size_t off = offs[j] < s.len ? offs[j] : 0;
			char what[64];

			snprintf(what, sizeof(what), "chunk %zu off %zu",
				 chunks[i], off);
			through_pipe(what, s, off, s.len - off, chunks[i]);
		}
	return failed ? 3 : 0;
}

/* writev: a header from the heap, the body from the mapping, a trailer. */
static int mode_writev(const char *path, int sock)
{
	struct src s = map_file(path, MAP_SHARED);
	char head[100], tail[7] = "trailer";
	int p[2];
	struct reader r;
	size_t total, want, done = 0;
	uint64_t h, mine;

	memset(head, 'H', sizeof(head));
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
		die("pipe");
	r = start_reader(p[0], p[1], 0, 0);
	close(p[0]);
	want = sizeof(head) + s.len + sizeof(tail);
	while (done < want) {
		struct iovec v[3] = { { head, sizeof(head) },
				      { (void *)s.p, s.len },
				      { tail, sizeof(tail) } };
		struct iovec *iv = v;
		int n = 3;
		size_t skip = done;
		ssize_t w;

		/* resume after a short count, as a careful program does */
		while (n && skip >= iv->iov_len) {
			skip -= iv->iov_len;
			iv++;
			n--;
		}
		iv->iov_base = (char *)iv->iov_base + skip;
		iv->iov_len -= skip;
		w = writev(p[1], iv, n);
		if (w < 0)
			die("writev");
		done += w;
	}
	close(p[1]);
	finish_reader(r, &total, &h);
	mine = fnv(tail, sizeof(tail), fnv(s.p, s.len, fnv(head, sizeof(head), FNV0)));
	CHECK(total == want && h == mine, "writev: got %zu of %zu", total, want);
	printf("writev %s: %zu bytes intact\n", sock ? "socket" : "pipe", total);
	return failed ? 3 : 0;
}

/*
 * Non-blocking destination, nobody reading yet: a large write is partial
 * or EAGAIN, never more than fits; a write of PIPE_BUF or less is whole or
 * EAGAIN.  Then the reader starts and the writer finishes with poll.
 */
static int mode_nonblock(const char *path, int sock)
{
	struct src s = map_file(path, MAP_SHARED);
	size_t off = 0, total;
	int p[2], eagain = 0, partial_small = 0;
	struct reader r;
	uint64_t h;
	ssize_t w;

	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
		die("pipe");
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	/* Fill it: large writes until EAGAIN. */
	while (off < s.len) {
		size_t k = s.len - off < (1 << 20) ? s.len - off : (1 << 20);

		w = write(p[1], s.p + off, k);
		if (w < 0) {
			CHECK(errno == EAGAIN, "errno %d, not EAGAIN", errno);
			eagain = 1;
			break;
		}
		CHECK(w > 0 && (size_t)w <= k, "returned %zd of %zu", w, k);
		off += w;
	}
	/* Small writes into a full pipe: whole or EAGAIN, never partial. */
	if (!sock && off + PIPE_BUF <= s.len) {
		w = write(p[1], s.p + off, PIPE_BUF);
		if (w > 0) {
			partial_small = w != PIPE_BUF;
			off += w;
		} else {
			CHECK(errno == EAGAIN, "small write errno %d", errno);
		}
	}
	r = start_reader(p[0], p[1], 0, 0);
	close(p[0]);
	off += write_all(p[1], s.p + off, s.len - off, 1 << 20);
	close(p[1]);
	finish_reader(r, &total, &h);
	CHECK(!partial_small, "a write of PIPE_BUF bytes was split");
	printf("nonblock %s: EAGAIN met %s\n", sock ? "socket" : "pipe",
	       s.len > (8 << 20) ? (eagain ? "yes" : "NO") : "(small file)");
	report("nonblock", s, 0, s.len, total, h);
	return failed ? 3 : 0;
}

/* Signals caught by number (SIGALRM, SIGPIPE). */
static volatile sig_atomic_t caught[65];

static void count_signal(int sig)
{
	caught[sig]++;
}

/*
 * A timer signal every 500 us while blocking writes wait on a slow reader;
 * restart: SA_RESTART or not.  Every -1 must be EINTR (never without
 * SA_RESTART... with it, never at all) and the data must arrive intact.
 */
static int mode_eintr(const char *path, int sock, int restart)
{
	struct src s = map_file(path, MAP_SHARED);
	struct sigaction sa = { .sa_handler = count_signal };
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	size_t off = 0, total;
	int p[2], eintr = 0, other = 0;
	struct reader r;
	uint64_t h;

	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
		die("pipe");
	r = start_reader(p[0], p[1], 2000, 0);
	close(p[0]);
	setitimer(ITIMER_REAL, &it, NULL);
	while (off < s.len) {
		size_t k = s.len - off < (1 << 20) ? s.len - off : (1 << 20);
		ssize_t w = write(p[1], s.p + off, k);

		if (w < 0) {
			if (errno == EINTR)
				eintr++;
			else
				other++;
			continue;
		}
		off += w;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	close(p[1]);
	finish_reader(r, &total, &h);
	CHECK(!other, "errors other than EINTR");
	CHECK(restart ? !eintr : 1, "EINTR despite SA_RESTART");
	printf("eintr %s %s: only EINTR errors\n", sock ? "socket" : "pipe",
	       restart ? "SA_RESTART" : "no SA_RESTART");
	report("eintr", s, 0, s.len, total, h);
	return failed ? 3 : 0;
}

/*
 * The reader takes 100000 bytes and leaves.  how: "default" (SIGPIPE
 * kills: the exit status says so), "ignore" (EPIPE), "handler" (EPIPE, and
 * the handler counts), "nosignal" (send with MSG_NOSIGNAL on a socket).
 * Printed: the bytes that reached the reader are a prefix of the data, and
 * a SIGPIPE came exactly once per call that returned EPIPE (never for a
 * call that wrote something).
 */
static int mode_epipe(const char *path, int sock, const char *how)
{
	struct src s = map_file(path, MAP_SHARED);
	size_t off = 0, total;
	int p[2], epipe = 0, rounds = 0;
	struct reader r;
	uint64_t h;

	if (!strcmp(how, "ignore"))
		signal(SIGPIPE, SIG_IGN);
	else if (!strcmp(how, "handler"))
		signal(SIGPIPE, count_signal);
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
		die("pipe");
	r = start_reader(p[0], p[1], 0, 100000);
	close(p[0]);
	fflush(stdout);
	while (rounds++ < 100) {
		size_t k = s.len - off < (1 << 20) ? s.len - off : (1 << 20);
		ssize_t w;

		if (k == 0)
			off = 0, k = s.len < (1 << 20) ? s.len : (1 << 20);
		if (!strcmp(how, "nosignal"))
			w = send(p[1], s.p + off, k, MSG_NOSIGNAL);
		else
			w = write(p[1], s.p + off, k);
		if (w < 0) {
			CHECK(errno == EPIPE, "errno %d, not EPIPE", errno);
			if (++epipe == 3)
				break;
			continue;
		}
		off += w;
	}
	finish_reader(r, &total, &h);
	close(p[1]);
	CHECK(total == 100000 && h == fnv(s.p, 100000, FNV0),
	      "reader got %zu bytes", total);
	/* A pipe raises SIGPIPE also for a call that wrote part and then
	 * found the reader gone; a socket only for a call that wrote nothing. */
	if (!strcmp(how, "handler"))
		CHECK(caught[SIGPIPE] == epipe ||
		      (!sock && caught[SIGPIPE] == epipe + 1),
		      "%d SIGPIPE for %d EPIPE", (int)caught[SIGPIPE], epipe);
	printf("epipe %s %s: %d EPIPE, SIGPIPE %s\n", sock ? "socket" : "pipe",
	       how, epipe,
	       !strcmp(how, "handler") ? "once per EPIPE" : "not delivered");
	return failed ? 3 : 0;
}

/* Threads, each writing its own file (one byte value each) to one pipe. */
struct twork {
	int fd;
	struct src s;
};

static void *twrite(void *a)
{
	struct twork *w = a;

	write_all(w->fd, w->s.p, w->s.len, 65536 + 4096);
	return NULL;
}

static int mode_threads(int nfiles, char **files, int sock)
{
	struct twork w[8];
	pthread_t t[8];
	int p[2], i, st;
	pid_t reader;

	if (nfiles > 8)
		nfiles = 8;
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
		die("pipe");
	/* The reader counts every byte value: writes may interleave (they
	 * are larger than PIPE_BUF), bytes may not be lost or repeated. */
	reader = fork();
	if (reader == 0) {
		static unsigned char buf[1 << 16];
		unsigned long long count[256] = { 0 };
		ssize_t n, k;

		close(p[1]);
		while ((n = read(p[0], buf, sizeof(buf))) > 0)
			for (k = 0; k < n; k++)
				count[buf[k]]++;
		for (i = 0; i < 256; i++)
			if (count[i])
				printf("threads: byte %d x %llu\n", i, count[i]);
		_exit(0);
	}
	close(p[0]);
	for (i = 0; i < nfiles; i++) {
		w[i].fd = p[1];
		w[i].s = map_file(files[i], MAP_SHARED);
		pthread_create(&t[i], NULL, twrite, &w[i]);
	}
	for (i = 0; i < nfiles; i++)
		pthread_join(t[i], NULL);
	close(p[1]);
	waitpid(reader, &st, 0);
	return failed ? 3 : 0;
}

static sigjmp_buf jb;
static volatile sig_atomic_t segvs;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	segvs++;
	siglongjmp(jb, 1);
}

/* The program's own SIGSEGV and SIGBUS handlers keep working. */
static int mode_signals(const char *path)
{
	struct src s = map_file(path, MAP_SHARED);
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(jb, 1) == 0)
		*(volatile char *)s.p = 1; /* a store to a read-only mapping */
	if (sigsetjmp(jb, 1) == 0)
		*(volatile char *)NULL = 1;
	printf("signals: %d SIGSEGV handled by the program\n", (int)segvs);
	/* The mapping still writes out correctly afterwards. */
	through_pipe("after signals", s, 0, s.len, 1 << 20);
	return failed ? 3 : 0;
}

/*
 * The file shrinks.  First synchronously (truncated to 10 bytes, then the
 * program writes from the vanished part: EFAULT, no SIGBUS), then under a
 * blocking write (another thread truncates while the writer waits on a
 * slow reader): the program must survive, whatever each call returned.
 */
struct trunc_arg {
	const char *path;
};

static void *truncator(void *a)
{
	usleep(3000);
	if (truncate(((struct trunc_arg *)a)->path, 4096 * 3 + 5))
		die("truncate");
	return NULL;
}

static int mode_truncate(const char *path)
{
	struct src s = map_file(path, MAP_SHARED);
	struct trunc_arg ta = { path };
	size_t half = s.len / 2 & ~(size_t)4095, total;
	struct reader r;
	pthread_t t;
	int p[2], efault = 0, other = 0;
	ssize_t w;
	uint64_t h;

	if (pipe(p))
		die("pipe");
	r = start_reader(p[0], p[1], 1000, 0);
	close(p[0]);
	write_all(p[1], s.p, half, 1 << 20);
	pthread_create(&t, NULL, truncator, &ta);
	for (size_t off = half; off < s.len;) {
		size_t k = s.len - off < (1 << 20) ? s.len - off : (1 << 20);

		w = write(p[1], s.p + off, k);
		if (w < 0) {
			if (errno == EFAULT)
				efault++;
			else
				other++;
			break;
		}
		off += w;
	}
	pthread_join(t, NULL);
	/* Synchronously: the file is now 4096*3+5 bytes; page 10 is gone. */
	w = write(p[1], s.p + 10 * 4096, 65536);
	CHECK(w < 0 && errno == EFAULT, "write past the end: %zd errno %d", w,
	      errno);
	close(p[1]);
	finish_reader(r, &total, &h);
	CHECK(total >= half, "reader got %zu", total);
	CHECK(!other, "errors other than EFAULT");
	(void)efault; /* whether the hole was met mid-call depends on timing */
	printf("truncate: survived\n");
	return failed ? 3 : 0;
}

/*
 * The mapping changes behind the preload's back, through raw system
 * calls it cannot see: made writable and written (a private mapping now
 * holds copies), and replaced by an anonymous mapping at the same address.
 * The bytes written must be the memory's, not the file's.
 */
static int mode_behind(const char *path)
{
	struct src s = map_file(path, MAP_PRIVATE);
	char *m = (char *)s.p;

	if (s.len > (1 << 20))
		s.len = 1 << 20;
	/* report() compares with what the memory holds, not the file. */
	syscall(SYS_mprotect, m, s.len, PROT_READ | PROT_WRITE);
	memset(m + 4096, 'X', 100);
	syscall(SYS_mprotect, m, s.len, PROT_READ);
	through_pipe("behind: private mapping with written pages", s, 0,
		     s.len, s.len);

	/* Replaced: anonymous memory at the same address. */
	if ((void *)syscall(SYS_mmap, m, s.len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != m)
		die("mmap fixed");
	memset(m, 'A', s.len);
	syscall(SYS_mprotect, m, s.len, PROT_READ);
	through_pipe("behind: replaced by anonymous memory", s, 0, s.len,
		     s.len);
	return failed ? 3 : 0;
}

/*
 * Descriptor games: close_range over everything, dup2 onto every number
 * from 3 to 1100 that is not ours, close() on numbers nobody opened: the
 * results are those of a process without the preload, and the mapping
 * still writes out correctly.
 */
static int mode_fds(const char *path, bool raw)
{
	static bool open_before[1100];
	int fd, bad = 0, null;
	struct src s;

	/* What is open before the mapping exists: inherited, not ours. */
	for (fd = 0; fd < 1100; fd++)
		open_before[fd] = fcntl(fd, F_GETFD) >= 0;
	s = map_file(path, MAP_SHARED);
	null = open("/dev/null", O_RDONLY);
	/* Numbers this program never opened: close says EBADF. */
	for (fd = 3; fd < 1100; fd++)
		if (fd != null && !open_before[fd] &&
		    (close(fd) == 0 || errno != EBADF))
			bad++;
	CHECK(!bad, "%d closes of unopened numbers did not say EBADF", bad);
	/* dup2 onto each of them succeeds. */
	for (fd = 3; fd < 1100; fd++)
		if (fd != null && dup2(null, fd) != fd)
			bad++;
	CHECK(!bad, "%d dup2 failed", bad);
	/* raw: behind the preload's back (it must notice its files gone). */
#ifdef __GLIBC__
	if (!raw)
		close_range(3, ~0u, 0);
	else
#endif
		syscall(SYS_close_range, 3, ~0u, 0);
	fd = open("/dev/null", O_RDONLY);
	CHECK(fd == 3, "the lowest number after close_range is %d", fd);
	close(fd);
	through_pipe("fds", s, 0, s.len, 1 << 20);
	return failed ? 3 : 0;
}

/* fork and vfork children writing from the parent's mapping. */
static int mode_fork(const char *path, char *self)
{
	struct src s = map_file(path, MAP_SHARED);
	size_t half = s.len / 2, total;
	struct reader r;
	uint64_t h;
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		die("pipe");
	r = start_reader(p[0], p[1], 0, 0);
	close(p[0]);
	pid = fork();
	if (pid == 0) {
		write_all(p[1], s.p, half, 1 << 20);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	pid = vfork();
	if (pid == 0) {
		/* Only write and _exit: what a vfork child may do. */
		size_t off = half;

		while (off < s.len) {
			ssize_t w = write(p[1], s.p + off, s.len - off);

			if (w <= 0)
				_exit(1);
			off += w;
		}
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "vfork child failed");
	close(p[1]);
	finish_reader(r, &total, &h);
	report("fork+vfork", s, 0, s.len, total, h);
	fflush(stdout);
	/* And an exec'd image of this program writes from its own mapping. */
	pid = fork();
	if (pid == 0) {
		execl(self, self, "pipe-quick", path, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "exec'd child failed");
	return failed ? 3 : 0;
}

/*
 * fork while other threads map, unmap and open streams: a child must not
 * inherit a lock of the preload held by a thread it does not have (its own
 * mmap or fopen would wait for ever).  Each child maps, unmaps, opens and
 * closes once and exits; a child that hangs is killed by its alarm.
 */
static volatile int stop_churn;

static void *churn(void *a)
{
	const char *path = a;

	while (!stop_churn) {
		struct src s = map_file(path, MAP_SHARED);
		FILE *f = fopen(path, "r");

		if (f) {
			getc(f);
			fclose(f);
		}
		munmap((void *)s.p, s.len);
	}
	return NULL;
}

static int mode_fork_locks(const char *path)
{
	pthread_t t[2];
	int i, hung = 0, st;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn, (void *)path);
	for (i = 0; i < 100; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			struct src s;
			FILE *f;

			alarm(10);
			s = map_file(path, MAP_SHARED);
			munmap((void *)s.p, s.len);
			f = fopen(path, "r");
			if (f)
				fclose(f);
			_exit(0);
		}
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			hung++;
	}
	stop_churn = 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(!hung, "%d of 100 children hung or failed", hung);
	printf("fork-locks: 100 children mapped and opened\n");
	return failed ? 3 : 0;
}

/*
 * A pipe whose size the program set itself keeps it; a fresh pipe reports
 * the default before any traffic.
 */
static int mode_pipesize(const char *path)
{
	struct src s = map_file(path, MAP_SHARED);
	int p[2], before, after;
	struct reader r;
	size_t total;
	uint64_t h;

	if (pipe(p))
		die("pipe");
	before = fcntl(p[1], F_GETPIPE_SZ);
	fcntl(p[1], F_SETPIPE_SZ, 8192);
	r = start_reader(p[0], p[1], 0, 0);
	write_all(p[1], s.p, s.len, 1 << 20);
	after = fcntl(p[1], F_GETPIPE_SZ);
	close(p[0]);
	close(p[1]);
	finish_reader(r, &total, &h);
	printf("pipesize: fresh %d, set by the program 8192, after traffic %d\n",
	       before, after);
	report("pipesize", s, 0, s.len, total, h);
	return failed ? 3 : 0;
}

/* A sealed memfd: the source mapwrite converts by default. */
static int mode_memfd(const char *path)
{
	struct src f = map_file(path, MAP_SHARED), s;
	int fd = memfd_create("io_prog", MFD_ALLOW_SEALING);

	if (fd < 0 || write(fd, f.p, f.len) != (ssize_t)f.len)
		die("memfd");
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW |
				   F_SEAL_SEAL))
		die("seal");
	s.len = f.len;
	s.p = mmap(NULL, s.len, PROT_READ, MAP_SHARED, fd, 0);
	if (s.p == MAP_FAILED)
		die("mmap memfd");
	close(fd);
	through_pipe("memfd", s, 0, s.len, 1 << 20);
	return failed ? 3 : 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	const char *f = argc > 2 ? argv[2] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: %s MODE FILE...\n", argv[0]);
		return 2;
	}
	if (!strcmp(m, "pipe"))
		return mode_pipe(f, MAP_SHARED);
	if (!strcmp(m, "pipe-private"))
		return mode_pipe(f, MAP_PRIVATE);
	if (!strcmp(m, "pipe-quick")) {
		struct src s = map_file(f, MAP_SHARED);

		through_pipe("exec'd", s, 0, s.len, 1 << 20);
		return failed ? 3 : 0;
	}
	if (!strcmp(m, "writev-pipe"))
		return mode_writev(f, 0);
	if (!strcmp(m, "writev-socket"))
		return mode_writev(f, 1);
	if (!strcmp(m, "nonblock-pipe"))
		return mode_nonblock(f, 0);
	if (!strcmp(m, "nonblock-socket"))
		return mode_nonblock(f, 1);
	if (!strcmp(m, "eintr-pipe"))
		return mode_eintr(f, 0, 0);
	if (!strcmp(m, "eintr-pipe-restart"))
		return mode_eintr(f, 0, 1);
	if (!strcmp(m, "eintr-socket"))
		return mode_eintr(f, 1, 0);
	if (!strcmp(m, "epipe-pipe") && argc > 3)
		return mode_epipe(f, 0, argv[3]);
	if (!strcmp(m, "epipe-socket") && argc > 3)
		return mode_epipe(f, 1, argv[3]);
	if (!strcmp(m, "threads-pipe"))
		return mode_threads(argc - 2, argv + 2, 0);
	if (!strcmp(m, "threads-socket"))
		return mode_threads(argc - 2, argv + 2, 1);
	if (!strcmp(m, "signals"))
		return mode_signals(f);
	if (!strcmp(m, "truncate"))
		return mode_truncate(f);
	if (!strcmp(m, "behind"))
		return mode_behind(f);
	if (!strcmp(m, "fds"))
		return mode_fds(f, false);
	if (!strcmp(m, "fds-raw"))
		return mode_fds(f, true);
	if (!strcmp(m, "fork"))
		return mode_fork(f, argv[0]);
	if (!strcmp(m, "fork-locks"))
		return mode_fork_locks(f);
	if (!strcmp(m, "pipesize"))
		return mode_pipesize(f);
	if (!strcmp(m, "memfd"))
		return mode_memfd(f);
	fprintf(stderr, "unknown mode %s\n", m);
	return 2;
}
