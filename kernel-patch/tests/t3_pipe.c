/* cs_write / cs_read through a pipe: data, move semantics, zero copy. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "cs.h"

#define PG 4096

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7 + (i >> 12));
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7 + (i >> 12)))
			return 0;
	return 1;
}

int main(void)
{
	int p[2], id, cid, off, len, size, r;
	void *a = NULL, *m;
	cs_args args = { &cid, &off, &len, &size, &m };
	long long r0, c0;
	unsigned char buf[3 * PG];
	long w;

	if (cs_init() || NR_cs_read <= 0 || NR_cs_write <= 0) {
		report(0, "pipe-init", "cs_read/cs_write not published");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (pipe(p))
		return 1;

	/* cs_write of a whole container, read back with read(2) */
	id = cs_alloc(3 * PG, &a, CS_MAPNOW);
	fill(a, 3 * PG, 1);
	r0 = ref();
	w = cs_write(p[1], 1, &id, NULL, NULL, 0);
	CHECK("write-pipe", w == 3 * PG, "w=%ld %s", w, strerror(errno));
	CHECK("write-by-reference", ref() - r0 >= 3 * PG, "ref +%lld",
	      ref() - r0);
	CHECK("write-moves-ebadf", cs_map(1, &id, &m, 0) < 0 && errno == EBADF,
	      "errno %d", errno);
	CHECK("write-unmaps", mincore(a, PG, buf) < 0, "writer still maps it");
	CHECK("write-twice-ebadf",
	      cs_write(p[1], 1, &id, NULL, NULL, 0) < 0 && errno == EBADF,
	      "errno %d", errno);
	r = (int)read(p[0], buf, sizeof(buf));
	CHECK("write-read-data", r == 3 * PG && same(buf, 3 * PG, 1), "r=%d", r);

	/* write(2) then cs_read: whole pages are stolen, not copied */
	fill(buf, 2 * PG, 2);
	r = (int)write(p[1], buf, 2 * PG);
	r0 = ref();
	c0 = cpy();
	r = cs_read(p[0], 2 * PG, 4, &args, CS_MAPALL);
	CHECK("read-pipe", r == 1 && len == 2 * PG && off == 0 &&
	      size >= 2 * PG, "r=%d len=%d off=%d size=%d %s", r, len, off,
	      size, strerror(errno));
	if (r == 1)
		CHECK("read-data", same(m, 2 * PG, 2), "data differs");
	info("read: by reference +%lld, copied +%lld", ref() - r0, cpy() - c0);
	CHECK("read-steals-pages", ref() - r0 == 2 * PG && cpy() == c0,
	      "ref +%lld copied +%lld", ref() - r0, cpy() - c0);
	/* the received container is ours: writable, and can be passed on */
	if (r == 1) {
		memset(m, 0x11, 10);
		w = cs_write(p[1], 1, &cid, NULL, NULL, 0);
		CHECK("forward-container", w == 2 * PG, "w=%ld", w);
		r = (int)read(p[0], buf, 2 * PG);
		CHECK("forward-data", r == 2 * PG && buf[0] == 0x11 &&
		      buf[9] == 0x11 && same(buf + 10, 0, 2) &&
		      buf[PG] == (unsigned char)(2 + PG * 7 + 1),
		      "r=%d", r);
	}

	/* a partial page is copied; the rest of the container is zero */
	r = (int)write(p[1], "hello", 5);
	r = cs_read(p[0], 100, 1, &args, CS_MAPALL);
	CHECK("read-small", r == 1 && len == 5 &&
	      !memcmp((char *)m + off, "hello", 5), "r=%d len=%d", r, len);
	if (r == 1) {
		int z = 1;

		for (int i = 0; i < PG; i++)
			if ((i < off || i >= off + 5) && ((char *)m)[i])
				z = 0;
		CHECK("read-rest-zeroed", z, "stale bytes around the data");
		cs_free(1, &cid);
	}

	/* offs/lens: a slice of a container */
	id = cs_alloc(2 * PG, &a, CS_MAPNOW);
	fill(a, 2 * PG, 3);
	off = PG - 10;
	len = 20;
	w = cs_write(p[1], 1, &id, &off, &len, 0);
	r = (int)read(p[0], buf, 64);
	CHECK("write-slice", w == 20 && r == 20 &&
	      !memcmp(buf, (unsigned char *)a + 0, 0) , "w=%ld r=%d", w, r);
	{
		unsigned char want[20];

		fill(want, 0, 3);
		for (int i = 0; i < 20; i++)
			want[i] = (unsigned char)(3 + (PG - 10 + i) * 7 +
						  ((PG - 10 + i) >> 12));
		CHECK("write-slice-data", !memcmp(buf, want, 20), "differs");
	}

	/* bad ranges keep the container */
	id = cs_alloc(PG, NULL, 0);
	off = 0;
	len = PG + 1;
	CHECK("write-badlen-einval", cs_write(p[1], 1, &id, &off, &len, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	off = -1;
	len = 1;
	CHECK("write-badoff-einval", cs_write(p[1], 1, &id, &off, &len, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("write-readfd-ebadf", cs_write(p[0], 1, &id, NULL, NULL, 0) < 0 &&
	      errno == EBADF, "errno %d", errno);
	CHECK("write-failed-keeps", cs_map(1, &id, &m, 0) == 0, "lost it");
	CHECK("read-writefd-ebadf", cs_read(p[1], 10, 1, &args, 0) < 0 &&
	      errno == EBADF, "errno %d", errno);
	CHECK("read-badargs-efault", cs_read(p[0], 10, 1, (cs_args *)8, 0) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	CHECK("read-maxcon0-einval", cs_read(p[0], 10, 0, &args, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);

	/* non-blocking: all or nothing */
	{
		int q[2], big;

		pipe2(q, O_NONBLOCK);
		big = cs_alloc(64 * PG, NULL, 0);	/* more than 16 slots */
		CHECK("nonblock-eagain",
		      cs_write(q[1], 1, &big, NULL, NULL, 0) < 0 &&
		      errno == EAGAIN, "errno %d", errno);
		CHECK("nonblock-keeps", cs_unmap(1, &big) == 0, "lost it");
		CHECK("read-empty-eagain", cs_read(q[0], PG, 1, &args, 0) < 0 &&
		      errno == EAGAIN, "errno %d", errno);
		close(q[1]);
		CHECK("read-eof", cs_read(q[0], PG, 1, &args, 0) == 0,
		      "errno %d", errno);
		close(q[0]);
		cs_free(1, &big);
	}

	/* between processes: a 1 MiB container crosses a blocking pipe */
	{
		pid_t pid = fork();
		int st, total = 0, ok = 1;

		if (pid == 0) {
			void *wa;
			int wid = cs_alloc(256 * PG, &wa, CS_MAPNOW);

			fill(wa, 256 * PG, 9);
			_exit(cs_write(p[1], 1, &wid, NULL, NULL, 0) ==
			      256 * PG ? 0 : 1);
		}
		r0 = ref();
		c0 = cpy();
		while (total < 256 * PG) {
			r = cs_read(p[0], 256 * PG - total, 1, &args, CS_MAPALL);
			if (r != 1) {
				ok = 0;
				break;
			}
			for (int i = 0; i < len; i++)
				if (((unsigned char *)m)[off + i] !=
				    (unsigned char)(9 + (total + i) * 7 +
						    ((total + i) >> 12)))
					ok = 0;
			total += len;
			cs_free(1, &cid);
		}
		waitpid(pid, &st, 0);
		CHECK("ipc-1mib", ok && total == 256 * PG && WIFEXITED(st) &&
		      !WEXITSTATUS(st), "total=%d ok=%d st=%#x", total, ok, st);
		info("ipc 1 MiB: by reference %lld, copied %lld", ref() - r0,
		     cpy() - c0);
		CHECK("ipc-zero-copy", cpy() == c0, "copied %lld", cpy() - c0);
	}

	/* reader gone: EPIPE, nothing given away */
	close(p[0]);
	id = cs_alloc(PG, NULL, 0);
	CHECK("write-epipe", cs_write(p[1], 1, &id, NULL, NULL, 0) < 0 &&
	      errno == EPIPE, "errno %d", errno);
	return test_failed;
}
