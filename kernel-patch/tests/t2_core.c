/* cs_alloc, cs_free, cs_map, cs_unmap: semantics and argument checks. */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "cs.h"

#define PG 4096

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static int mapped(void *addr)
{
	unsigned char vec;

	return mincore(addr, PG, &vec) == 0;
}

int main(void)
{
	void *a = NULL, *b = NULL, *addrs[4];
	int id, id2, ids[4], r;
	pid_t pid;
	int st;

	if (cs_init()) {
		report(0, "core-init", "no syscall numbers in /sys/kernel/zc");
		return 1;
	}

	/* alloc without mapping, then map: zeroed, writable */
	id = cs_alloc(3 * PG + 100, NULL, 0);
	CHECK("alloc-nomap", id >= 0, "%s", strerror(errno));
	r = cs_map(1, &id, addrs, 0);
	CHECK("map", r == 0 && addrs[0], "r=%d %s", r, strerror(errno));
	if (r == 0) {
		CHECK("map-zeroed", all_bytes(addrs[0], 4 * PG, 0), "not zero");
		memset(addrs[0], 0xab, 4 * PG);
		a = addrs[0];
	}
	/* mapping again returns the same address */
	r = cs_map(1, &id, addrs, 0);
	CHECK("map-twice-same", r == 0 && addrs[0] == a, "%p vs %p", addrs[0], a);
	/* unmap keeps the container and its data */
	r = cs_unmap(1, &id);
	CHECK("unmap", r == 0 && !mapped(a), "r=%d mapped=%d", r, mapped(a));
	r = cs_map(1, &id, addrs, 0);
	CHECK("remap-keeps-data", r == 0 && all_bytes(addrs[0], 4 * PG, 0xab),
	      "r=%d", r);
	/* user munmap of the whole mapping: the container stays */
	if (r == 0) {
		CHECK("partial-munmap-refused",
		      munmap((char *)addrs[0] + PG, PG) < 0 && errno == EINVAL,
		      "errno %d", errno);
		CHECK("mremap-refused",
		      mremap(addrs[0], 4 * PG, 4 * PG, MREMAP_MAYMOVE |
			     MREMAP_FIXED, (char *)addrs[0] + 64 * PG) ==
		      MAP_FAILED, "mremap moved a container mapping");
		munmap(addrs[0], 4 * PG);
		r = cs_map(1, &id, addrs, 0);
		CHECK("munmap-then-map", r == 0 &&
		      all_bytes(addrs[0], 4 * PG, 0xab), "r=%d", r);
	}
	r = cs_free(1, &id);
	CHECK("free", r == 0, "%s", strerror(errno));
	CHECK("free-unmaps", !mapped(addrs[0]), "still mapped");
	CHECK("free-twice-ebadf", cs_free(1, &id) < 0 && errno == EBADF,
	      "errno %d", errno);
	CHECK("map-freed-ebadf", cs_map(1, &id, addrs, 0) < 0 &&
	      errno == EBADF, "errno %d", errno);
	CHECK("unmap-freed-ebadf", cs_unmap(1, &id) < 0 && errno == EBADF,
	      "errno %d", errno);

	/* CS_MAPNOW */
	id = cs_alloc(PG, &b, CS_MAPNOW);
	CHECK("alloc-mapnow", id >= 0 && b, "%s", strerror(errno));
	if (id >= 0 && b) {
		memset(b, 0x5a, PG);
		r = cs_map(1, &id, addrs, 0);
		CHECK("mapnow-same-addr", r == 0 && addrs[0] == b, "r=%d", r);
	}

	/* several at once; duplicates refused where a container is consumed */
	id2 = cs_alloc(PG, NULL, 0);
	ids[0] = id;
	ids[1] = id2;
	r = cs_map(2, ids, addrs, 0);
	CHECK("map-two", r == 0 && addrs[0] == b && addrs[1] &&
	      addrs[1] != b, "r=%d", r);
	ids[1] = id;
	CHECK("free-duplicate-einval", cs_free(2, ids) < 0 && errno == EINVAL,
	      "errno %d", errno);
	ids[1] = 12345;
	CHECK("free-unknown-ebadf", cs_free(2, ids) < 0 && errno == EBADF,
	      "errno %d", errno);
	CHECK("free-atomic", cs_map(1, &id, addrs, 0) == 0,
	      "a failed cs_free freed something");

	/* argument checks */
	CHECK("alloc-size0-einval", cs_alloc(0, NULL, 0) < 0 && errno == EINVAL,
	      "errno %d", errno);
	CHECK("alloc-negative-einval", cs_alloc(-5, NULL, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("alloc-huge-einval", cs_alloc(0x7fffffff, NULL, 0) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("alloc-badopt-einval", cs_alloc(PG, NULL, 0x100) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("alloc-mapnow-null-einval", cs_alloc(PG, NULL, CS_MAPNOW) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("alloc-badaddr-efault",
	      cs_alloc(PG, (void **)8, CS_MAPNOW) < 0 && errno == EFAULT,
	      "errno %d", errno);
	CHECK("free-badptr-efault", cs_free(1, (int *)8) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	CHECK("free-negcount-einval", cs_free(-1, ids) < 0 && errno == EINVAL,
	      "errno %d", errno);
	CHECK("free-hugecount-einval", cs_free(1 << 30, ids) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("map-badopt-einval", cs_map(1, &id, addrs, 1) < 0 &&
	      errno == EINVAL, "errno %d", errno);
	CHECK("map-badaddrs-efault", cs_map(1, &id, (void **)8, 0) < 0 &&
	      errno == EFAULT, "errno %d", errno);
	ids[0] = -1;
	CHECK("map-negid-ebadf", cs_map(1, ids, addrs, 0) < 0 && errno == EBADF,
	      "errno %d", errno);

	/* fork: the child owns nothing of the parent's, and fresh pages
	 * there are zeroed; the parent's container is untouched */
	pid = fork();
	if (pid == 0) {
		void *c = NULL;
		int cid;

		if (cs_map(1, &id, addrs, 0) == 0 || errno != EBADF)
			_exit(2);
		if (mapped(b))
			_exit(3);
		cid = cs_alloc(PG, &c, CS_MAPNOW);
		if (cid < 0 || !all_bytes(c, PG, 0))
			_exit(4);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK("fork-child-owns-nothing", WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child status %#x", st);
	CHECK("fork-parent-intact", all_bytes(b, PG, 0x5a), "parent data changed");

	/* pages recycled to the same process are not zeroed again (the
	 * content is the process's own) -- only check it does not fail */
	ids[0] = id;
	ids[1] = id2;
	CHECK("free-two", cs_free(2, ids) == 0, "%s", strerror(errno));
	id = cs_alloc(2 * PG, &a, CS_MAPNOW);
	CHECK("alloc-after-free", id >= 0, "%s", strerror(errno));
	cs_free(1, &id);
	CHECK("no-containers-left",
	      sysfs_ll("/sys/kernel/zc/containers") == 0,
	      "containers=%lld", sysfs_ll("/sys/kernel/zc/containers"));
	return test_failed;
}
