/*
 * cs_write to and cs_read from stream sockets over loopback: TCP and
 * AF_UNIX.  Pages go to the socket by reference and must survive until
 * the stack is done with them; reads land in container pages.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "cs.h"

#define PG 4096
#define KiB 1024

static unsigned char pat(unsigned seed, long long i)
{
	return (unsigned char)(seed + i * 11 + (i >> 12));
}

/* A connected TCP pair over 127.0.0.1 (an ephemeral port). */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &len))
		return -1;
	sv[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (sv[0] < 0 || connect(sv[0], (void *)&a, sizeof(a)))
		return -1;
	sv[1] = accept(l, NULL, NULL);
	close(l);
	return sv[1] < 0 ? -1 : 0;
}

static int pattern_con(size_t len, unsigned seed, long long from)
{
	void *a;
	int id = cs_alloc((int)len, &a, CS_MAPNOW);

	for (size_t i = 0; id >= 0 && i < len; i++)
		((unsigned char *)a)[i] = pat(seed, from + (long long)i);
	return id;
}

/* read(2) exactly len bytes and compare them with the pattern. */
static int recv_check(int fd, size_t len, unsigned seed, long long from)
{
	static unsigned char buf[64 * KiB];
	size_t got = 0;
	int ok = 1;

	while (got < len) {
		size_t want = len - got < sizeof(buf) ? len - got : sizeof(buf);
		ssize_t r = read(fd, buf, want);

		if (r <= 0)
			return 0;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pat(seed, from + (long long)(got + i)))
				ok = 0;
		got += (size_t)r;
	}
	return ok;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* Fill the socket until it takes nothing more. */
static void fill(int fd)
{
	static char junk[64 * KiB];

	set_nonblock(fd, 1);
	while (write(fd, junk, sizeof(junk)) > 0)
		;
}

/*
 * A cs_write that no one may wait on forever: once a byte of a container
 * went, its rest is sent blocking (a container goes whole), and when the
 * socket took only part of a page nothing here reads the other end.  A
 * one-second alarm (SIGALRM without SA_RESTART) ends such a wait with the
 * part it sent; the socket is full then.  (Before this, t5_socket hung
 * once in about ten runs after tcp-write-slices.)
 */
static long cs_write_bounded(int fd, int id)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	long w;

	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	w = cs_write(fd, 1, &id, NULL, NULL, 0);
	alarm(0);
	return w;
}

/*
 * Make the TCP socket fd full for cs_write too, and return the id of a
 * one-page container that a non-blocking cs_write refused (TCP appends a
 * page to the last skb while that has room, even when write(2) would not,
 * and acknowledgements in flight free room: wait for them, fill again).
 */
static int fill_with_container(int fd)
{
	int id = -1;

	fill(fd);
	usleep(200 * 1000);
	fill(fd);
	for (int k = 0; k < 64; k++) {
		id = pattern_con(PG, 3, 0);
		if (cs_write_bounded(fd, id) < 0)
			break;
	}
	return id;
}

/*
 * full: check EAGAIN and EINTR on a socket that takes nothing more.  Only
 * for TCP: AF_UNIX's ->sendpage() appends a page to the reader's last skb
 * without waiting for send-buffer room, so a "full" AF_UNIX socket still
 * takes a page, and neither error can be provoked there.
 */
static void writes(const char *kind, int sv[2], int full)
{
	char name[64];
	long long r0, c0;
	int id, ids[64];
	void *m;
	long w;

#define N(x) (snprintf(name, sizeof(name), "%s-%s", kind, x), name)
	/* a 64 KiB container (what the socket holds unread), by reference */
	id = pattern_con(64 * KiB, 1, 0);
	r0 = ref();
	c0 = cpy();
	w = cs_write(sv[0], 1, &id, NULL, NULL, 0);
	CHECK(N("write"), w == 64 * KiB, "w=%ld %s", w, strerror(errno));
	CHECK(N("write-by-reference"), ref() - r0 == 64 * KiB && cpy() == c0,
	      "ref +%lld copied +%lld", ref() - r0, cpy() - c0);
	CHECK(N("write-moves"), cs_map(1, &id, &m, 0) < 0 && errno == EBADF,
	      "errno %d", errno);
	/* The pages are in the socket until read: new containers (whose
	 * pages would be the same ones, were they recycled too early) are
	 * filled with something else before the reader looks. */
	for (int k = 0; k < 64; k++) {
		ids[k] = cs_alloc(4 * PG, &m, CS_MAPNOW);
		memset(m, 0xee, 4 * PG);
	}
	CHECK(N("write-pages-not-reused"), recv_check(sv[1], 64 * KiB, 1, 0),
	      "the reader saw other bytes");
	cs_free(64, ids);

	/* slices of three containers */
	{
		int c[3], offs[3] = { 100, 0, PG - 1 }, lens[3];

		c[0] = cs_alloc(2 * PG, &m, CS_MAPNOW);
		for (int i = 0; i < 5000; i++)
			((unsigned char *)m)[100 + i] = pat(2, i);
		c[1] = pattern_con(3 * PG, 2, 5000);
		c[2] = cs_alloc(2 * PG, &m, CS_MAPNOW);
		((unsigned char *)m)[PG - 1] = pat(2, 5000 + 3 * PG);
		((unsigned char *)m)[PG] = pat(2, 5001 + 3 * PG);
		lens[0] = 5000;
		lens[1] = 3 * PG;
		lens[2] = 2;
		w = cs_write(sv[0], 3, c, offs, lens, 0);
		CHECK(N("write-slices"), w == 5002 + 3 * PG &&
		      recv_check(sv[1], (size_t)w, 2, 0), "w=%ld", w);
	}

	if (!full)
		goto whole;
	/* non-blocking and full: EAGAIN, the container stays.  As below, an
	 * acknowledgement that frees room after the fill lets the page (or
	 * part of it) go: fill again and retry, a few times at most. */
	{
		int attempt;

		for (attempt = 1; ; attempt++) {
			id = fill_with_container(sv[0]);
			w = cs_write_bounded(sv[0], id);
			if (w < 0 || attempt == 5)
				break;
		}
		if (attempt > 1)
			info("%s: room appeared after the fill %d time(s)",
			     kind, attempt - 1);
		CHECK(N("write-full-eagain"), w < 0 && errno == EAGAIN,
		      "w=%ld errno %d", w, errno);
	}
	CHECK(N("write-eagain-keeps"), cs_map(1, &id, &m, 0) == 0 &&
	      ((unsigned char *)m)[7] == pat(3, 7), "lost it");
	/*
	 * blocking and full: a signal stops it before a byte went out.  Under
	 * a loaded emulator an acknowledgement can arrive late and free room
	 * after the EAGAIN above, and then the blocking write rightly takes
	 * the page: fill again and retry (a few times at most).  A kernel
	 * that never gives EINTR still fails every attempt.
	 */
	{
		int attempt;

		for (attempt = 1; ; attempt++) {
			set_nonblock(sv[0], 0);
			w = cs_write_bounded(sv[0], id);
			if (w < 0 || attempt == 5)
				break;
			/* room had appeared: the page went; fill up again */
			id = fill_with_container(sv[0]);
		}
		if (attempt > 1)
			info("%s: room appeared after EAGAIN %d time(s)", kind,
			     attempt - 1);
		CHECK(N("write-eintr"), w < 0 && errno == EINTR, "w=%ld errno %d",
		      w, errno);
		CHECK(N("write-eintr-keeps"), cs_unmap(1, &id) == 0, "lost it");
	}
	/* drain what fill() queued, then everything flows again */
	set_nonblock(sv[1], 1);
	{
		static char junk[64 * KiB];

		while (read(sv[1], junk, sizeof(junk)) > 0)
			;
	}
	set_nonblock(sv[1], 0);
	cs_free(1, &id);

whole:
	/* non-blocking, more than the socket holds: once started, all of it
	 * goes (a child reads it slowly) */
	{
		pid_t pid = fork();
		int st, okc;

		if (pid == 0)
			_exit(recv_check(sv[1], 4 << 20, 4, 0) ? 0 : 1);
		set_nonblock(sv[0], 1);
		id = pattern_con(4 << 20, 4, 0);
		w = cs_write(sv[0], 1, &id, NULL, NULL, 0);
		set_nonblock(sv[0], 0);
		waitpid(pid, &st, 0);
		okc = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		CHECK(N("write-nonblock-whole"), w == 4 << 20 && okc,
		      "w=%ld errno %d child ok %d", w, errno, okc);
	}
#undef N
}

static void reads(const char *kind, int sv[2])
{
	int cids[8], offs[8], lens[8], sizes[8], n, total, ok;
	void *addrs[8];
	cs_args args = { cids, offs, lens, sizes, addrs };
	char name[64];
	long long r0, c0;

#define N(x) (snprintf(name, sizeof(name), "%s-%s", kind, x), name)
	/* queued data: one container as big as what waits */
	{
		static unsigned char buf[100 * KiB];

		for (int i = 0; i < 100 * KiB; i++)
			buf[i] = pat(5, i);
		if (write(sv[0], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			report(0, N("read-setup"), "%s", strerror(errno));
	}
	total = 0;
	ok = 1;
	r0 = ref();
	c0 = cpy();
	while (total < 100 * KiB) {
		n = cs_read(sv[1], 1 << 20, 1, &args, CS_MAPALL);
		if (n != 1 || offs[0] != 0 || sizes[0] % PG) {
			ok = 0;
			break;
		}
		for (int i = 0; i < lens[0]; i++)
			if (((unsigned char *)addrs[0])[i] != pat(5, total + i))
				ok = 0;
		total += lens[0];
		cs_free(1, cids);
	}
	CHECK(N("read"), ok && total == 100 * KiB, "total %d n=%d %s", total,
	      n, strerror(errno));
	CHECK(N("read-copied-once"), cpy() - c0 == 100 * KiB && ref() == r0,
	      "copied +%lld ref +%lld", cpy() - c0, ref() - r0);

	/* a container, written, read back on the other end: written by
	 * reference, received with one copy */
	{
		int id = pattern_con(64 * KiB, 6, 0);

		if (cs_write(sv[0], 1, &id, NULL, NULL, 0) != 64 * KiB)
			report(0, N("read-setup-2"), "%s", strerror(errno));
		total = 0;
		ok = 1;
		while (total < 64 * KiB) {
			n = cs_read(sv[1], 64 * KiB - total, 8, &args, 0);
			if (n < 1 || n > 8 || cs_map(n, cids, addrs, 0)) {
				ok = 0;
				break;
			}
			for (int k = 0; k < n; k++) {
				for (int i = 0; i < lens[k]; i++)
					if (((unsigned char *)addrs[k])[offs[k] + i] !=
					    pat(6, total + i))
						ok = 0;
				total += lens[k];
			}
			cs_free(n, cids);
		}
		CHECK(N("read-container-roundtrip"), ok && total == 64 * KiB,
		      "total %d", total);
	}

	/* received pages are the reader's: writable, and can go on */
	{
		int id;

		if (write(sv[0], "zero-copy", 9) != 9)
			report(0, N("read-setup-3"), "%s", strerror(errno));
		n = cs_read(sv[1], PG, 1, &args, CS_MAPALL);
		ok = n == 1 && lens[0] == 9 &&
		     !memcmp(addrs[0], "zero-copy", 9);
		if (ok) {
			memcpy(addrs[0], "ZERO", 4);
			id = cids[0];
			ok = cs_write(sv[1], 1, &id, NULL, NULL, 0) == 9;
		}
		{
			char back[9];

			ok = ok && read(sv[0], back, 9) == 9 &&
			     !memcmp(back, "ZERO-copy", 9);
		}
		CHECK(N("read-then-forward"), ok, "n=%d len %d", n, lens[0]);
	}

	/* nothing there: EAGAIN when non-blocking; 0 once the peer shut down */
	set_nonblock(sv[1], 1);
	CHECK(N("read-empty-eagain"), cs_read(sv[1], PG, 4, &args, 0) < 0 &&
	      errno == EAGAIN, "errno %d", errno);
	set_nonblock(sv[1], 0);
	shutdown(sv[0], SHUT_WR);
	CHECK(N("read-eof"), cs_read(sv[1], PG, 4, &args, 0) == 0, "errno %d",
	      errno);
#undef N
}

int main(void)
{
	int sv[2], id, r;
	void *m;

	if (cs_init() || NR_cs_read <= 0 || NR_cs_write <= 0) {
		report(0, "socket-init", "cs_read/cs_write not published");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	if (tcp_pair(sv)) {
		report(0, "tcp-setup", "%s", strerror(errno));
		return 1;
	}
	writes("tcp", sv, 1);
	reads("tcp", sv);
	close(sv[0]);
	close(sv[1]);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		report(0, "unix-setup", "%s", strerror(errno));
		return 1;
	}
	writes("unix", sv, 0);
	reads("unix", sv);
	/* the reader is gone: EPIPE, nothing given away */
	close(sv[1]);
	id = cs_alloc(PG, NULL, 0);
	CHECK("unix-write-epipe", cs_write(sv[0], 1, &id, NULL, NULL, 0) < 0 &&
	      errno == EPIPE, "errno %d", errno);
	CHECK("unix-epipe-keeps", cs_map(1, &id, &m, 0) == 0, "lost it");
	cs_free(1, &id);
	close(sv[0]);

	/* datagram and seqpacket sockets are not for containers */
	id = cs_alloc(PG, NULL, 0);
	r = socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	CHECK("dgram-write-einval", r == 0 &&
	      cs_write(sv[0], 1, &id, NULL, NULL, 0) < 0 && errno == EINVAL,
	      "errno %d", errno);
	{
		int cid;
		cs_args args = { &cid, NULL, NULL, NULL, NULL };

		CHECK("dgram-read-einval", cs_read(sv[1], PG, 1, &args, 0) < 0 &&
		      errno == EINVAL, "errno %d", errno);
	}
	CHECK("dgram-keeps", cs_free(1, &id) == 0, "lost it");
	close(sv[0]);
	close(sv[1]);
	CHECK("socket-none-left", sysfs_ll("/sys/kernel/zc/containers") == 0,
	      "containers=%lld", sysfs_ll("/sys/kernel/zc/containers"));
	return test_failed;
}
