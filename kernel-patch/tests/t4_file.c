/* cs_read from and cs_write to regular files (tmpfs and the rootfs). */
#include <signal.h>
#include <sys/mman.h>
#include "cs.h"

#define PG 4096
#define FSIZE (3 * PG + 100)

static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 13 + (i >> 12) + 5);
}

static void one(const char *dir)
{
	char path[64], name[96];
	static unsigned char buf[FSIZE + PG];
	int fd, out, cid, off, len, size, r, p[2];
	void *m;
	cs_args args = { &cid, &off, &len, &size, &m };
	long long r0, c0;
	long w;

#define N(x) (snprintf(name, sizeof(name), "%s-%s", x, dir), name)
	snprintf(path, sizeof(path), "%s/zcfile", dir);
	for (size_t i = 0; i < FSIZE; i++)
		buf[i] = pat(i);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, FSIZE) != FSIZE) {
		report(0, N("file-setup"), "%s", strerror(errno));
		return;
	}
	close(fd);
	fd = open(path, O_RDONLY);
	r0 = ref();
	c0 = cpy();
	r = cs_read(fd, 1 << 20, 1, &args, CS_MAPALL);
	CHECK(N("file-read"), r == 1 && off == 0 && len == FSIZE &&
	      size == 4 * PG, "r=%d off=%d len=%d size=%d %s", r, off, len,
	      size, strerror(errno));
	if (r != 1)
		return;
	CHECK(N("file-read-data"), !memcmp(m, buf, FSIZE), "differs");
	CHECK(N("file-read-by-reference"), ref() - r0 == FSIZE &&
	      cpy() == c0, "ref +%lld copied +%lld", ref() - r0, cpy() - c0);
	CHECK(N("file-read-eof"), cs_read(fd, PG, 1, &args, 0) == 0,
	      "errno %d", errno);
	/* a store into the mapping copies the page: the file is unchanged */
	((unsigned char *)m)[PG + 1] = 0xee;
	memset(m, 'X', 8);
	r = (int)pread(fd, buf + FSIZE, 16, 0);
	CHECK(N("file-cow-file-unchanged"), r == 16 && buf[FSIZE] == pat(0) &&
	      buf[FSIZE + 7] == pat(7), "file changed");
	r = (int)pread(fd, buf + FSIZE, 2, PG);
	CHECK(N("file-cow-file-unchanged-2"), r == 2 &&
	      buf[FSIZE + 1] == pat(PG + 1), "file changed");
	/* the container keeps what its owner stored, across unmap/map */
	CHECK(N("file-cow-unmap"), cs_unmap(1, &cid) == 0, "%s",
	      strerror(errno));
	CHECK(N("file-cow-kept"), cs_map(1, &cid, &m, 0) == 0 &&
	      ((unsigned char *)m)[7] == 'X' &&
	      ((unsigned char *)m)[PG + 1] == 0xee &&
	      ((unsigned char *)m)[2 * PG] == pat(2 * PG), "lost the store");
	/* ... and hands it on: to a pipe */
	if (pipe(p) == 0) {
		w = cs_write(p[1], 1, &cid, NULL, NULL, 0);
		r = (int)read(p[0], buf + FSIZE, 16);
		CHECK(N("file-container-to-pipe"), w == FSIZE && r == 16 &&
		      buf[FSIZE] == 'X' && buf[FSIZE + 8] == pat(8),
		      "w=%ld r=%d", w, r);
		close(p[0]);
		close(p[1]);
	}
	CHECK(N("file-moved-ebadf"), cs_unmap(1, &cid) < 0 && errno == EBADF,
	      "errno %d", errno);
	CHECK(N("file-unchanged-after"), pread(fd, buf + FSIZE, 8, 0) == 8 &&
	      buf[FSIZE] == pat(0), "file changed");

	/* an unaligned extent: offset inside the first page */
	lseek(fd, PG + 10, SEEK_SET);
	r = cs_read(fd, 50, 1, &args, CS_MAPALL);
	CHECK(N("file-read-extent"), r == 1 && off == 10 && len == 50 &&
	      !memcmp((char *)m + 10, buf + PG + 10, 50), "r=%d off=%d len=%d",
	      r, off, len);
	CHECK(N("file-read-advances"), lseek(fd, 0, SEEK_CUR) == PG + 60,
	      "pos %ld", (long)lseek(fd, 0, SEEK_CUR));
	if (r == 1)
		cs_free(1, &cid);
	/* write through the page cache */
	snprintf(path, sizeof(path), "%s/zcout", dir);
	out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	{
		void *a;
		int id = cs_alloc(2 * PG, &a, CS_MAPNOW);

		memcpy(a, buf, 2 * PG);
		off = 5;
		len = 2 * PG - 5;
		w = cs_write(out, 1, &id, &off, &len, 0);
		r = (int)pread(out, buf + FSIZE, PG, 0);
		CHECK(N("file-write"), w == len && r == PG &&
		      !memcmp(buf + FSIZE, buf + 5, PG), "w=%ld r=%d %s", w, r,
		      strerror(errno));
		CHECK(N("file-write-moves"), cs_map(1, &id, &a, 0) < 0 &&
		      errno == EBADF, "errno %d", errno);
		id = cs_alloc(PG, NULL, 0);
		CHECK(N("file-write-rdonly-ebadf"),
		      cs_write(fd, 1, &id, NULL, NULL, 0) < 0 && errno == EBADF,
		      "errno %d", errno);
		cs_free(1, &id);
	}
	close(out);
	close(fd);
#undef N
}

/* Files whose page cache is not their content are read by copy. */
static void pseudo_files(void)
{
	static const char *const paths[] = {
		"/sys/kernel/zc/abi_version", "/proc/version",
	};
	int cid, off, len, size, fd, r;
	void *m;
	cs_args args = { &cid, &off, &len, &size, &m };

	for (unsigned int i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char want[512], name[64];
		long long r0, c0;
		int n;

		snprintf(name, sizeof(name), "file-pseudo-%u", i);
		fd = open(paths[i], O_RDONLY);
		n = fd < 0 ? -1 : (int)read(fd, want, sizeof(want));
		if (fd >= 0)
			lseek(fd, 0, SEEK_SET);
		r0 = ref();
		c0 = cpy();
		r = fd < 0 ? -1 : cs_read(fd, 1 << 20, 1, &args, CS_MAPALL);
		CHECK(name, n > 0 && r == 1 && off == 0 && len == n &&
		      !memcmp(m, want, (size_t)n) && cpy() - c0 == n &&
		      ref() == r0, "%s: n=%d r=%d off=%d len=%d copied +%lld "
		      "ref +%lld %s", paths[i], n, r, off, len, cpy() - c0,
		      ref() - r0, strerror(errno));
		if (r == 1)
			cs_free(1, &cid);
		if (fd >= 0)
			close(fd);
	}
}

int main(void)
{
	int d, cid;
	cs_args args = { &cid, NULL, NULL, NULL, NULL };

	if (cs_init() || NR_cs_read <= 0) {
		report(0, "file-init", "no cs_read");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	one("/tmp");
	one("");	/* the rootfs */
	pseudo_files();
	d = open("/", O_RDONLY | O_DIRECTORY);
	CHECK("file-dir-einval", cs_read(d, PG, 1, &args, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("file-none-left", sysfs_ll("/sys/kernel/zc/containers") == 0,
	      "containers=%lld", sysfs_ll("/sys/kernel/zc/containers"));
	return test_failed;
}
