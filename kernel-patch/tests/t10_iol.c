/*
 * IO-Lite: iol_read and iol_write on pipes, files, AF_UNIX and TCP
 * sockets; generations and ESTALE; the file-change rule (a buffer that
 * shares the page cache becomes stale when the file is written or
 * truncated); read-only mappings; argument checks; the IO-Lite counters;
 * non-blocking pipes and sockets take what fits, as write(2) does.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "iol.h"

#define PG 4096
#define FSIZE (3 * PG + 100)
#define BIG (64 * 1024 + 123)

static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 31 + (i >> 11) + 7);
}

static unsigned char buf[BIG + PG];

static int make_file(const char *path, size_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	for (size_t i = 0; i < size; i++)
		buf[i] = pat(i);
	if (fd < 0 || write(fd, buf, size) != (ssize_t)size)
		return -1;
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Whether the n slices hold exactly pat(start ...) for total bytes. */
static int slices_equal(const struct iol_slice *s, long n, size_t start,
			size_t total)
{
	size_t pos = start;

	for (long i = 0; i < n; i++) {
		const unsigned char *p = (const unsigned char *)s[i].addr + s[i].off;

		if (!s[i].addr)
			return 0;
		for (unsigned long long k = 0; k < s[i].len; k++)
			if (p[k] != pat(pos++))
				return 0;
	}
	return pos - start == total;
}

/* Read everything from fd until EOF (or max bytes), compare with pat. */
static int drain_equal(int fd, size_t want)
{
	static unsigned char in[BIG + PG];
	size_t got = 0;
	ssize_t r;

	while (got < want && (r = read(fd, in + got, sizeof(in) - got)) > 0)
		got += r;
	if (got != want)
		return 0;
	for (size_t i = 0; i < want; i++)
		if (in[i] != pat(i))
			return 0;
	return 1;
}

static void sysfs_abi(void)
{
	CHECK("iol-syscalls-listed", NR_iol_read > 0 && NR_iol_write > 0 &&
	      NR_iol_read != NR_iol_write && NR_iol_read != NR_cs_write &&
	      NR_iol_write != NR_cs_read, "iol_read %ld iol_write %ld",
	      NR_iol_read, NR_iol_write);
	CHECK("iol-counters", iref() >= 0 && icpy() >= 0, "missing");
}

static void file_read(const char *dir)
{
	char path[64], name[96];
	struct iol_slice s[4];
	long long r0, c0, cr0;
	long n;
	int fd;

#define N(x) (snprintf(name, sizeof(name), "%s-%s", x, dir), name)
	snprintf(path, sizeof(path), "%s/iolfile", dir);
	fd = make_file(path, FSIZE);
	if (fd < 0) {
		report(0, N("iol-file-setup"), "%s", strerror(errno));
		return;
	}
	r0 = iref();
	c0 = icpy();
	cr0 = ref();
	n = iol_read_n(fd, s, 4, 1 << 20);
	CHECK(N("iol-file-read"), n == 1 && s[0].off == 0 && s[0].len == FSIZE &&
	      s[0].addr && s[0].gen, "n=%ld off=%llu len=%llu %s", n,
	      s[0].off, s[0].len, strerror(errno));
	if (n != 1)
		return;
	CHECK(N("iol-file-read-exact"), slices_equal(s, 1, 0, FSIZE), "differs");
	CHECK(N("iol-file-read-by-reference"), iref() - r0 == FSIZE &&
	      icpy() == c0 && ref() == cr0, "iol ref +%lld copied +%lld cs ref +%lld",
	      iref() - r0, icpy() - c0, ref() - cr0);
	CHECK(N("iol-file-read-eof"), iol_read_n(fd, s + 1, 1, PG) == 0,
	      "errno %d", errno);
	CHECK(N("iol-file-check-fresh"), iol_write(-1, s, 1, IOL_CHECK) == 0,
	      "%s", strerror(errno));
	iol_free(s, 1);

	/* unaligned: data starts inside the first page */
	lseek(fd, PG + 10, SEEK_SET);
	n = iol_read_n(fd, s, 4, 100);
	CHECK(N("iol-file-read-unaligned"), n == 1 && s[0].off == 10 &&
	      s[0].len == 100 && slices_equal(s, 1, PG + 10, 100),
	      "n=%ld off=%llu len=%llu", n, s[0].off, s[0].len);
	if (n == 1)
		iol_free(s, 1);
	close(fd);
	unlink(path);
#undef N
}

/* The mapping is read-only: mprotect refuses, a store kills a child. */
static void read_only(void)
{
	struct iol_slice s[1];
	int fd = make_file("/tmp/iolro", FSIZE), p[2], st;
	char c = 0;
	pid_t pid;
	long n;

	n = iol_read_n(fd, s, 1, FSIZE);
	if (n != 1) {
		report(0, "iol-ro-setup", "n=%ld %s", n, strerror(errno));
		return;
	}
	CHECK("iol-ro-mprotect", mprotect((void *)s[0].addr, PG,
					  PROT_READ | PROT_WRITE) < 0 &&
	      errno == EACCES, "mprotect errno %d", errno);
	iol_free(s, 1);
	if (pipe(p))
		return;
	pid = fork();
	if (pid == 0) {
		/* mappings are not inherited: the child reads its own */
		lseek(fd, 0, SEEK_SET);
		if (iol_read_n(fd, s, 1, FSIZE) != 1)
			_exit(2);
		c = ((volatile char *)s[0].addr)[5];
		if (write(p[1], &c, 1) != 1)
			_exit(3);
		((volatile char *)s[0].addr)[5] = 'X';	/* must fault */
		_exit(0);
	}
	close(p[1]);
	st = 0;
	n = read(p[0], &c, 1);
	waitpid(pid, &st, 0);
	CHECK("iol-ro-store-faults", n == 1 && c == (char)pat(5) &&
	      WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
	      "read %ld, status %#x", n, st);
	CHECK("iol-ro-file-unchanged", pread(fd, &c, 1, 5) == 1 &&
	      c == (char)pat(5), "file changed");
	close(p[0]);
	close(fd);
	unlink("/tmp/iolro");
}

/*
 * The file-change rule: a buffer shares the page cache and sees later
 * writes (no snapshot), but it becomes stale: IOL_CHECK and iol_write
 * say ESTALE after a write or a truncation, a new iol_read is fresh.
 */
static void file_change(void)
{
	struct iol_slice s[1], t[1];
	int fd = make_file("/tmp/iolchg", FSIZE), p[2];
	long n, w;

	n = iol_read_n(fd, s, 1, FSIZE);
	if (n != 1 || pipe(p)) {
		report(0, "iol-change-setup", "n=%ld %s", n, strerror(errno));
		return;
	}
	CHECK("iol-change-fresh", iol_write(-1, s, 1, IOL_CHECK) == 0,
	      "%s", strerror(errno));
	/* reading the file does not make it stale */
	CHECK("iol-change-read-keeps", pread(fd, buf, 16, 0) == 16 &&
	      iol_write(-1, s, 1, IOL_CHECK) == 0, "%s", strerror(errno));
	CHECK("iol-change-pwrite", pwrite(fd, "Z", 1, 5) == 1, "%s",
	      strerror(errno));
	CHECK("iol-change-check-estale", iol_write(-1, s, 1, IOL_CHECK) < 0 &&
	      errno == ESTALE, "errno %d", errno);
	w = iol_write(p[1], s, 1, 0);
	CHECK("iol-change-write-estale", w < 0 && errno == ESTALE,
	      "w=%ld errno %d", w, errno);
	CHECK("iol-change-shared-not-snapshot",
	      ((char *)s[0].addr)[5] == 'Z', "buffer shows %#x",
	      ((unsigned char *)s[0].addr)[5]);
	lseek(fd, 0, SEEK_SET);
	n = iol_read_n(fd, t, 1, FSIZE);
	CHECK("iol-change-reread-fresh", n == 1 &&
	      iol_write(-1, t, 1, IOL_CHECK) == 0 &&
	      ((char *)t[0].addr)[5] == 'Z', "n=%ld %s", n, strerror(errno));
	if (n == 1) {
		/*
		 * Truncation takes the pages out of the page cache while both
		 * buffers still map them (the dmesg check: no "still mapped
		 * when deleted"); the buffers keep the pages they had.
		 */
		CHECK("iol-change-ftruncate", ftruncate(fd, PG) == 0 &&
		      iol_write(-1, t, 1, IOL_CHECK) < 0 && errno == ESTALE,
		      "errno %d", errno);
		CHECK("iol-change-truncated-still-mapped",
		      ((char *)t[0].addr)[5] == 'Z' &&
		      ((unsigned char *)t[0].addr)[3 * PG + 1] == pat(3 * PG + 1),
		      "buffer lost its pages");
		iol_free(t, 1);
	}
	/* splice(2) from a pipe into the file makes it stale too */
	lseek(fd, 0, SEEK_SET);
	n = iol_read_n(fd, t, 1, FSIZE);
	if (n == 1) {
		off_t at = 7;

		CHECK("iol-change-splice-fresh",
		      iol_write(-1, t, 1, IOL_CHECK) == 0, "%s", strerror(errno));
		CHECK("iol-change-splice-estale", write(p[1], "Q", 1) == 1 &&
		      splice(p[0], NULL, fd, &at, 1, 0) == 1 &&
		      iol_write(-1, t, 1, IOL_CHECK) < 0 && errno == ESTALE &&
		      ((char *)t[0].addr)[7] == 'Q', "errno %d", errno);
		iol_free(t, 1);
	}
	iol_free(s, 1);
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink("/tmp/iolchg");
}

static void pipe_round_trip(void)
{
	struct iol_slice s[16];
	int p[2], q[2];
	long long r0;
	size_t total = 0;
	long n, w;

	if (pipe(p) || pipe(q))
		return;
	for (size_t i = 0; i < 20000; i++)
		buf[i] = pat(i);
	if (write(p[1], buf, 20000) != 20000)
		return;
	n = iol_read_n(p[0], s, 16, 20000);
	for (long i = 0; i < n; i++)
		total += s[i].len;
	CHECK("iol-pipe-read", n >= 1 && total == 20000 &&
	      slices_equal(s, n, 0, 20000), "n=%ld total=%zu %s", n, total,
	      strerror(errno));
	if (n < 1)
		return;
	CHECK("iol-pipe-buffer-ro", mprotect((void *)s[0].addr, PG,
					     PROT_READ | PROT_WRITE) < 0,
	      "mprotect succeeded");
	r0 = iref();
	w = iol_write(q[1], s, n, 0);
	CHECK("iol-pipe-write", w == 20000, "w=%ld %s", w, strerror(errno));
	CHECK("iol-pipe-write-by-reference", iref() - r0 == 20000,
	      "iol ref +%lld", iref() - r0);
	CHECK("iol-pipe-round-trip-exact", drain_equal(q[0], 20000), "differs");
	/* the writer keeps its buffers, unchanged: send them again */
	CHECK("iol-pipe-kept", iol_write(-1, s, n, IOL_CHECK) == 0 &&
	      slices_equal(s, n, 0, 20000), "%s", strerror(errno));
	w = iol_write(q[1], s, n, 0);
	CHECK("iol-pipe-write-again", w == 20000 && drain_equal(q[0], 20000),
	      "w=%ld", w);
	/* a slice of a slice */
	{
		struct iol_slice one = s[0];

		one.off += 3;
		one.len = 5;
		w = iol_write(q[1], &one, 1, 0);
		CHECK("iol-pipe-subslice", w == 5 && read(q[0], buf, 16) == 5 &&
		      buf[0] == pat(3) && buf[4] == pat(7), "w=%ld", w);
	}
	iol_free(s, n);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* A child reads want bytes from fd and exits 0 when they are exact. */
static pid_t reader(int fd, size_t want)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(drain_equal(fd, want) ? 0 : 1);
	return pid;
}

static void socket_send(const char *kind, int wfd, int rfd)
{
	struct iol_slice s[4];
	char name[64];
	long long r0, c0;
	int fd = make_file("/tmp/iolsock", BIG), st = -1;
	size_t total = 0;
	long n, w;
	pid_t pid;

	lseek(fd, 0, SEEK_SET);
	n = iol_read_n(fd, s, 4, BIG);
	for (long i = 0; i < n; i++)
		total += s[i].len;
	if (n < 1 || total != BIG) {
		snprintf(name, sizeof(name), "iol-%s-setup", kind);
		report(0, name, "n=%ld %s", n, strerror(errno));
		return;
	}
	pid = reader(rfd, BIG);
	r0 = iref();
	c0 = icpy();
	w = iol_write(wfd, s, n, 0);
	waitpid(pid, &st, 0);
	snprintf(name, sizeof(name), "iol-%s-send-exact", kind);
	CHECK(name, w == BIG && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "w=%ld status %#x %s", w, st, strerror(errno));
	snprintf(name, sizeof(name), "iol-%s-by-reference", kind);
	CHECK(name, iref() - r0 == BIG && icpy() == c0,
	      "iol ref +%lld copied +%lld", iref() - r0, icpy() - c0);
	snprintf(name, sizeof(name), "iol-%s-buffer-kept", kind);
	CHECK(name, slices_equal(s, n, 0, BIG) &&
	      iol_write(-1, s, n, IOL_CHECK) == 0, "changed");
	iol_free(s, n);
	close(fd);
	unlink("/tmp/iolsock");
}

/* A TCP connection over loopback, c -> *acc; the accepted end with
 * SO_RCVBUF rcvbuf (set on the listener, before the window is agreed)
 * unless 0.  0, or -1 with errno. */
static int tcp_pair(int *c, int *acc, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), ret = -1;

	*c = *acc = -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || (rcvbuf && setsockopt(l, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
					   sizeof(rcvbuf))) ||
	    bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &len))
		goto out;
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (*c >= 0 && connect(*c, (void *)&a, sizeof(a)) == 0 &&
	    (*acc = accept(l, NULL, NULL)) >= 0)
		ret = 0;
out:
	if (l >= 0)
		close(l);
	return ret;
}

static void sockets(void)
{
	int sv[2], c, acc;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
		socket_send("unix", sv[0], sv[1]);
		close(sv[0]);
		close(sv[1]);
	}
	if (tcp_pair(&c, &acc, 0)) {
		report(0, "iol-tcp-setup", "%s", strerror(errno));
		return;
	}
	socket_send("tcp", c, acc);
	close(c);
	close(acc);
}

/* The slices of s[0..n) after their first skip bytes, into rest. */
static long slices_after(const struct iol_slice *s, long n, size_t skip,
			 struct iol_slice *rest)
{
	long k = 0;

	for (long i = 0; i < n; i++) {
		if (skip >= s[i].len) {
			skip -= s[i].len;
			continue;
		}
		rest[k] = s[i];
		rest[k].off += skip;
		rest[k].len -= skip;
		skip = 0;
		k++;
	}
	return k;
}

/*
 * Non-blocking destinations take what fits and return the count, -EAGAIN
 * only when nothing fits; the bytes sent and the rest sent later are
 * exact.  (cs_write gives a container whole or not at all; a buffer stays
 * the writer's, so iol_write need not.)
 */
static void nonblocking(void)
{
	struct iol_slice s[4], rest[4];
	int fd = make_file("/tmp/iolnb", BIG), q[2], sv[2], small = 4096;
	size_t total = 0, sent;
	long n, w, w2;
	pid_t pid;
	int st = -1;

	n = iol_read_n(fd, s, 4, BIG);
	for (long i = 0; i < n; i++)
		total += s[i].len;
	if (n < 1 || total != BIG || pipe2(q, O_NONBLOCK) ||
	    fcntl(q[1], F_SETPIPE_SZ, PG) < 0) {
		report(0, "iol-nonblock-setup", "n=%ld %s", n, strerror(errno));
		return;
	}
	/* A one-page pipe: one page segment of the 17, then full. */
	w = iol_write(q[1], s, n, 0);
	w2 = iol_write(q[1], s, n, 0);
	CHECK("iol-nonblock-pipe-partial", w > 0 && w <= PG &&
	      w2 == -1 && errno == EAGAIN, "w=%ld then %ld %s", w, w2,
	      strerror(errno));
	CHECK("iol-nonblock-pipe-exact", w > 0 && drain_equal(q[0], (size_t)w),
	      "differs");
	close(q[0]);
	close(q[1]);

	/* TCP with small buffers and no reader yet: part of it, at once (not
	 * a wait for room until all went).  (Not AF_UNIX: its ->sendpage()
	 * in 6.1 takes everything without looking at the send buffer.) */
	if (tcp_pair(&sv[0], &sv[1], small) ||
	    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK)) {
		report(0, "iol-nonblock-tcp-setup", "%s", strerror(errno));
		iol_free(s, n);
		return;
	}
	alarm(20);	/* a wait for room would never end */
	w = iol_write(sv[0], s, n, 0);
	alarm(0);
	CHECK("iol-nonblock-tcp-partial", w > 0 && (size_t)w < total,
	      "w=%ld of %zu %s", w, total, strerror(errno));
	/* The rest, blocking, while a reader checks every byte. */
	sent = w > 0 ? (size_t)w : 0;
	pid = reader(sv[1], BIG);
	fcntl(sv[0], F_SETFL, 0);
	w2 = iol_write(sv[0], rest, slices_after(s, n, sent, rest), 0);
	waitpid(pid, &st, 0);
	CHECK("iol-nonblock-tcp-rest-exact",
	      sent + (size_t)(w2 > 0 ? w2 : 0) == total &&
	      WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "sent %zu then %ld of %zu, status %#x %s", sent, w2, total, st,
	      strerror(errno));
	close(sv[0]);
	close(sv[1]);
	iol_free(s, n);
	close(fd);
	unlink("/tmp/iolnb");
}

/* A file buffer to a file: through the page cache (a copy). */
static void to_file(void)
{
	struct iol_slice s[1];
	int in = make_file("/tmp/iolin", FSIZE);
	int out = open("/tmp/iolout", O_RDWR | O_CREAT | O_TRUNC, 0644);
	long long c0 = icpy();
	long n, w;

	n = iol_read_n(in, s, 1, FSIZE);
	w = n == 1 ? iol_write(out, s, 1, 0) : -1;
	lseek(out, 0, SEEK_SET);
	CHECK("iol-file-to-file", w == FSIZE && drain_equal(out, FSIZE) &&
	      icpy() - c0 == FSIZE, "n=%ld w=%ld copied +%lld %s", n, w,
	      icpy() - c0, strerror(errno));
	if (n == 1)
		iol_free(s, 1);
	close(in);
	close(out);
	unlink("/tmp/iolin");
	unlink("/tmp/iolout");
}

/* Generations: an id freed and reused names a new buffer. */
static void estale(void)
{
	struct iol_slice s[1], t[1], bad;
	int fd = make_file("/tmp/iolgen", FSIZE), p[2], k = -1;
	long n, m;

	if (pipe(p))
		return;
	n = iol_read_n(fd, s, 1, FSIZE);
	if (n != 1) {
		report(0, "iol-estale-setup", "%s", strerror(errno));
		return;
	}
	bad = s[0];
	bad.gen++;
	CHECK("iol-estale-wrong-gen", iol_write(p[1], &bad, 1, 0) < 0 &&
	      errno == ESTALE, "errno %d", errno);
	bad.gen = 0;
	CHECK("iol-estale-gen-0", iol_write(p[1], &bad, 1, 0) < 0 &&
	      errno == ESTALE, "errno %d", errno);
	iol_free(s, 1);
	CHECK("iol-freed-ebadf", iol_write(p[1], s, 1, 0) < 0 && errno == EBADF,
	      "errno %d", errno);
	lseek(fd, 0, SEEK_SET);
	m = iol_read_n(fd, t, 1, FSIZE);
	CHECK("iol-estale-reused-id", m == 1 && t[0].buf == s[0].buf &&
	      t[0].gen != s[0].gen && iol_write(p[1], s, 1, 0) < 0 &&
	      errno == ESTALE, "m=%ld id %llu/%llu gen %llu/%llu errno %d",
	      m, t[0].buf, s[0].buf, t[0].gen, s[0].gen, errno);
	CHECK("iol-estale-nothing-written", ioctl(p[0], FIONREAD, &k) == 0 &&
	      k == 0, "pipe holds %d", k);
	if (m == 1)
		iol_free(t, 1);
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink("/tmp/iolgen");
}

/* A container that is not a buffer (cs_alloc) is refused. */
static void not_a_buffer(void)
{
	struct iol_slice s = { 0 };
	void *a;
	int id = cs_alloc(PG, &a, CS_MAPNOW), p[2];

	if (id < 0 || pipe(p))
		return;
	s.buf = id;
	s.len = 10;
	CHECK("iol-write-cs-container-einval", iol_write(p[1], &s, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	cs_free(1, &id);
	close(p[0]);
	close(p[1]);
}

static void bad_args(void)
{
	struct iol_slice s[2], g;
	int fd = make_file("/tmp/iolbad", FSIZE), p[2], efd, k = -1;
	char *ro, *two;
	long n;

	if (pipe(p))
		return;
	/* iol_read */
	CHECK("iol-read-null-efault", iol_read(fd, NULL, 1, 0) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	CHECK("iol-read-kernel-ptr-efault",
	      iol_read(fd, (void *)0xffff888000000000ULL, 1, 0) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	s[0].len = 100;
	CHECK("iol-read-max0-einval", iol_read(fd, s, 0, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("iol-read-max-big-einval",
	      iol_read(fd, s, IOL_MAX_SLICES + 1, 0) < 0 && errno == EINVAL,
	      "errno %d", errno);
	CHECK("iol-read-flags-einval", iol_read(fd, s, 1, 8) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	s[0].len = 0;
	CHECK("iol-read-len0-einval", iol_read(fd, s, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	s[0].len = (unsigned long long)IOL_MAX_READ + 1;
	CHECK("iol-read-len-big-einval", iol_read(fd, s, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	s[0].len = ~0ULL;
	CHECK("iol-read-len-huge-einval", iol_read(fd, s, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("iol-read-badfd", iol_read_n(1000, s, 1, 10) < 0 &&
	      errno == EBADF, "errno %d", errno);
	efd = eventfd(0, 0);
	CHECK("iol-read-eventfd-einval", iol_read_n(efd, s, 1, 10) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("iol-read-wronly-ebadf", iol_read_n(p[1], s, 1, 10) < 0 &&
	      errno == EBADF, "errno %d", errno);
	/* slices not writable: EFAULT, and nothing consumed */
	ro = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	((struct iol_slice *)ro)->len = 100;
	mprotect(ro, PG, PROT_READ);
	if (write(p[1], "abcdef", 6) != 6)
		return;
	n = iol_read(p[0], (void *)ro, 1, 0);
	CHECK("iol-read-ro-slices-efault", n < 0 && errno == EFAULT &&
	      ioctl(p[0], FIONREAD, &k) == 0 && k == 6,
	      "n=%ld errno %d, pipe holds %d", n, errno, k);
	/* the second slice of two is in a hole */
	two = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(two + PG, PG);
	{
		struct iol_slice *sl = (void *)(two + PG - sizeof(*sl));

		sl->len = 6;
		n = iol_read(p[0], sl, 2, 0);
		CHECK("iol-read-half-slices-efault", n < 0 && errno == EFAULT &&
		      ioctl(p[0], FIONREAD, &k) == 0 && k == 6,
		      "n=%ld errno %d, pipe holds %d", n, errno, k);
		n = iol_read(p[0], sl, 1, 0);
		CHECK("iol-read-last-slot", n == 1 && sl->len == 6, "n=%ld", n);
		if (n == 1)
			iol_free(sl, 1);
	}

	/* iol_write */
	n = iol_read_n(fd, &g, 1, FSIZE);
	if (n != 1) {
		report(0, "iol-bad-setup", "%s", strerror(errno));
		return;
	}
	CHECK("iol-write-null-efault", iol_write(p[1], NULL, 1, 0) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	CHECK("iol-write-hole-efault", iol_write(p[1], (void *)(two + PG), 1, 0) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	CHECK("iol-write-n-big-einval",
	      iol_write(p[1], &g, IOL_MAX_SLICES + 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("iol-write-flags-einval", iol_write(p[1], &g, 1, 2) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("iol-write-n0", iol_write(p[1], &g, 0, 0) == 0, "errno %d", errno);
	s[0] = g;
	s[0].off = ~0ULL - 1;
	s[0].len = 2;
	CHECK("iol-write-overflow-einval", iol_write(p[1], s, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	s[0] = g;
	s[0].len = 4 * PG + 1;
	CHECK("iol-write-past-end-einval", iol_write(p[1], s, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	s[0] = g;
	s[0].off = 4 * PG;
	s[0].len = 0;
	CHECK("iol-write-empty-at-end", iol_write(p[1], s, 1, 0) == 0,
	      "errno %d", errno);
	s[0] = g;
	s[0].buf = 1ULL << 40;
	CHECK("iol-write-huge-id-ebadf", iol_write(p[1], s, 1, 0) < 0 &&
	      errno == EBADF, "errno %d", errno);
	s[0] = g;
	s[1] = g;
	s[1].buf = 60000;
	CHECK("iol-write-second-bad-ebadf", iol_write(p[1], s, 2, 0) < 0 &&
	      errno == EBADF && ioctl(p[0], FIONREAD, &k) == 0 && k == 0,
	      "errno %d, pipe holds %d", errno, k);
	CHECK("iol-write-badfd", iol_write(1000, &g, 1, 0) < 0 &&
	      errno == EBADF, "errno %d", errno);
	CHECK("iol-write-rdonly-ebadf", iol_write(p[0], &g, 1, 0) < 0 &&
	      errno == EBADF, "errno %d", errno);
	CHECK("iol-write-eventfd-einval", iol_write(efd, &g, 1, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	{
		int udp = socket(AF_INET, SOCK_DGRAM, 0);

		CHECK("iol-write-udp-einval", iol_write(udp, &g, 1, 0) < 0 &&
		      errno == EINVAL, "errno %d", errno);
		close(udp);
	}
	iol_free(&g, 1);
	close(efd);
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink("/tmp/iolbad");
}

int main(void)
{
	long c0;

	if (iol_init()) {
		report(0, "iol-init", "no iol_read/iol_write in /sys/kernel/zc/syscalls");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	c0 = (long)sysfs_ll("/sys/kernel/zc/containers");
	sysfs_abi();
	file_read("/tmp");
	file_read("");
	read_only();
	file_change();
	pipe_round_trip();
	sockets();
	nonblocking();
	to_file();
	estale();
	not_a_buffer();
	bad_args();
	CHECK("iol-no-containers-left",
	      sysfs_ll("/sys/kernel/zc/containers") == c0,
	      "containers %ld -> %lld", c0, sysfs_ll("/sys/kernel/zc/containers"));
	return test_failed;
}
