/*
 * cs_read with maxcon > 1: pipe buffers that cannot continue a container
 * start their own (no copy), large file reads continue in the next
 * container, and the args arrays are checked before data is consumed.
 */
#include <signal.h>
#include <sys/mman.h>
#include "cs.h"

#define PG 4096
#define MiB (1 << 20)

static unsigned char pat(long long i)
{
	return (unsigned char)(i * 29 + (i >> 12) + 3);
}

struct rd {
	int cids[8], offs[8], lens[8], sizes[8];
	void *addrs[8];
	struct cs_args a;
};

static struct cs_args *args_of(struct rd *r)
{
	r->a = (struct cs_args){ r->cids, r->offs, r->lens, r->sizes, r->addrs };
	return &r->a;
}

/* Four slices from the middle of four containers: each its own pipe buffer. */
static void write_slices(int wfd, int first)
{
	int ids[4], offs[4], lens[4];

	for (int k = 0; k < 4; k++) {
		void *a;

		ids[k] = cs_alloc(PG, &a, CS_MAPNOW);
		for (int i = 0; i < 3000; i++)
			((unsigned char *)a)[500 + i] = pat(first + k * 3000 + i);
		offs[k] = 500;
		lens[k] = 3000;
	}
	if (cs_write(wfd, 4, ids, offs, lens, 0) != 12000)
		report(0, "maxcon-setup", "cs_write: %s", strerror(errno));
}

static void pipes(void)
{
	struct rd r;
	long long r0, c0;
	int p[2], n, ok = 1;

	if (pipe(p)) {
		report(0, "maxcon-pipe", "pipe: %s", strerror(errno));
		return;
	}
	/* maxcon 4: four containers, all four pages stolen */
	write_slices(p[1], 0);
	r0 = ref();
	c0 = cpy();
	n = cs_read(p[0], 1 << 20, 4, args_of(&r), CS_MAPALL);
	for (int k = 0; k < n && ok; k++)
		for (int i = 0; i < r.lens[k]; i++)
			if (((unsigned char *)r.addrs[k])[r.offs[k] + i] !=
			    pat(k * 3000 + i))
				ok = 0;
	CHECK("maxcon-pipe-split", n == 4 && ok && r.offs[0] == 500 &&
	      r.lens[0] == 3000 && r.offs[3] == 500 && r.sizes[3] == PG,
	      "n=%d ok=%d off=%d len=%d", n, ok, r.offs[0], r.lens[0]);
	CHECK("maxcon-pipe-no-copy", cpy() == c0 && ref() - r0 == 12000,
	      "copied +%lld ref +%lld", cpy() - c0, ref() - r0);
	if (n > 0)
		cs_free(n, r.cids);

	/* maxcon 1: the first page stolen, the other three copied after it */
	write_slices(p[1], 0);
	r0 = ref();
	c0 = cpy();
	n = cs_read(p[0], 1 << 20, 1, args_of(&r), CS_MAPALL);
	ok = n == 1 && r.lens[0] == 12000;
	for (int i = 0; ok && i < 12000; i++)
		if (((unsigned char *)r.addrs[0])[r.offs[0] + i] != pat(i))
			ok = 0;
	CHECK("maxcon1-pipe-one", ok, "n=%d len=%d", n, r.lens[0]);
	CHECK("maxcon1-pipe-copies", cpy() - c0 == 9000 && ref() - r0 == 3000,
	      "copied +%lld ref +%lld", cpy() - c0, ref() - r0);
	if (n > 0)
		cs_free(n, r.cids);

	/* maxcon 2 of 4 buffers: two stolen, the rest copied into the second */
	write_slices(p[1], 0);
	c0 = cpy();
	n = cs_read(p[0], 1 << 20, 2, args_of(&r), 0);
	CHECK("maxcon2-pipe-bound", n == 2 && r.lens[0] == 3000 &&
	      r.lens[1] == 9000 && r.addrs[0] == NULL && r.addrs[1] == NULL &&
	      cpy() - c0 == 6000, "n=%d lens %d %d copied +%lld", n,
	      r.lens[0], r.lens[1], cpy() - c0);
	if (n > 0)
		cs_free(n, r.cids);
	/* size bounds the bytes: 3500 of them (500 of the second buffer are
	 * not all of it, so they are copied after the first), the rest stays
	 * in the pipe */
	write_slices(p[1], 0);
	n = cs_read(p[0], 3500, 8, args_of(&r), 0);
	CHECK("maxcon-size-bound", n == 1 && r.lens[0] == 3500,
	      "n=%d len %d", n, r.lens[0]);
	if (n > 0)
		cs_free(n, r.cids);
	n = cs_read(p[0], 1 << 20, 8, args_of(&r), CS_MAPALL);
	CHECK("maxcon-size-rest", n == 3 && r.lens[0] == 2500 &&
	      ((unsigned char *)r.addrs[0])[r.offs[0]] == pat(3500),
	      "n=%d len %d", n, r.lens[0]);
	if (n > 0)
		cs_free(n, r.cids);

	/* a bad array is found before anything is consumed */
	{
		char *two = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int *last = (int *)(two + PG) - 1;
		struct cs_args a = { last, NULL, NULL, NULL, NULL };

		mprotect(two + PG, PG, PROT_NONE);
		write_slices(p[1], 0);
		CHECK("maxcon-args-efault",
		      cs_read(p[0], 1 << 20, 2, &a, 0) < 0 && errno == EFAULT,
		      "errno %d", errno);
		n = cs_read(p[0], 1 << 20, 4, args_of(&r), CS_MAPALL);
		CHECK("maxcon-args-efault-keeps-data", n == 4 &&
		      ((unsigned char *)r.addrs[0])[500] == pat(0),
		      "n=%d", n);
		if (n > 0)
			cs_free(n, r.cids);
		/* maxcon far beyond CS_MAX_COUNT is capped, not refused: the
		 * arrays are checked for CS_MAX_COUNT entries */
		{
			static int cids[1024];
			struct cs_args big = { cids, NULL, NULL, NULL, NULL };

			write_slices(p[1], 0);
			n = cs_read(p[0], 1 << 20, 1 << 30, &big, 0);
			CHECK("maxcon-huge-capped", n == 4, "n=%d errno %d",
			      n, errno);
			if (n > 0)
				cs_free(n, cids);
		}
		munmap(two, 2 * PG);
	}
	close(p[0]);
	close(p[1]);
}

/* A file larger than a container: the rest goes to the next container. */
static void files(void)
{
	const long long fsize = 64LL * MiB + 3 * PG + 7;
	static unsigned char buf[MiB];
	long long r0, c0, pos;
	struct rd r;
	int fd, n;

	fd = open("/tmp/maxcon", O_RDWR | O_CREAT | O_TRUNC, 0600);
	for (pos = 0; fd >= 0 && pos < fsize; pos += n) {
		n = (int)(fsize - pos < MiB ? fsize - pos : MiB);
		for (int i = 0; i < n; i++)
			buf[i] = pat(pos + i);
		if (write(fd, buf, (size_t)n) != n)
			break;
	}
	if (fd < 0 || pos != fsize) {
		report(0, "maxcon-file-setup", "%s", strerror(errno));
		return;
	}
	lseek(fd, 100, SEEK_SET);
	r0 = ref();
	c0 = cpy();
	n = cs_read(fd, 0x7fffffff, 4, args_of(&r), CS_MAPALL);
	CHECK("maxcon-file-split", n == 2 && r.offs[0] == 100 &&
	      r.lens[0] == 64 * MiB - 100 && r.sizes[0] == 64 * MiB &&
	      r.offs[1] == 0 && r.lens[1] == fsize - 64 * MiB &&
	      r.sizes[1] == 4 * PG, "n=%d off=%d len=%d size=%d len1=%d",
	      n, r.offs[0], r.lens[0], r.sizes[0], r.lens[1]);
	if (n == 2) {
		unsigned char *a = r.addrs[0], *b = r.addrs[1];

		CHECK("maxcon-file-data", a[100] == pat(100) &&
		      a[64 * MiB - 1] == pat(64 * MiB - 1) &&
		      b[0] == pat(64 * MiB) &&
		      b[r.lens[1] - 1] == pat(fsize - 1), "differs");
		CHECK("maxcon-file-by-reference",
		      ref() - r0 == fsize - 100 && cpy() == c0,
		      "ref +%lld copied +%lld", ref() - r0, cpy() - c0);
		cs_free(n, r.cids);
	}
	CHECK("maxcon-file-eof", cs_read(fd, PG, 4, args_of(&r), 0) == 0,
	      "errno %d", errno);
	/* maxcon 1: one container's worth, the position says where */
	lseek(fd, 0, SEEK_SET);
	n = cs_read(fd, 0x7fffffff, 1, args_of(&r), 0);
	CHECK("maxcon1-file", n == 1 && r.lens[0] == 64 * MiB &&
	      lseek(fd, 0, SEEK_CUR) == 64 * MiB, "n=%d len=%d", n,
	      r.lens[0]);
	if (n > 0)
		cs_free(n, r.cids);
	close(fd);
	unlink("/tmp/maxcon");
}

int main(void)
{
	if (cs_init() || NR_cs_read <= 0) {
		report(0, "maxcon-init", "no cs_read");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	pipes();
	files();
	CHECK("maxcon-none-left", sysfs_ll("/sys/kernel/zc/containers") == 0,
	      "containers=%lld", sysfs_ll("/sys/kernel/zc/containers"));
	return test_failed;
}
