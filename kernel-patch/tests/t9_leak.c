/*
 * fork/leak/exit: children allocate (and map) containers, leave some in a
 * pipe and a socket nobody reads, hold IO-Lite buffers of a file's page
 * cache and of a pipe, send them into a pipe and a socket nobody reads,
 * and exit without cs_free; nothing may stay behind: the container
 * counters, the container slab caches, the open files (a file buffer
 * holds its file) and MemFree must come back to where they were.
 */
#include <dirent.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include "iol.h"

struct slab {
	long active, total, per_slab;
	int exact;		/* shrunk first: active counts live objects */
};

/*
 * Shrink the cache first (/sys/kernel/slab/<cache>/shrink): SLUB then
 * flushes the CPU's slab, whose free objects slabinfo would count as
 * active, and KASAN releases the cache's objects from its quarantine.
 * Returns 0 when that worked, so that the count is exact.
 */
static int shrink(const char *cache)
{
	char path[96];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", cache);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, "1", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

/*
 * MemFree after shrinking every slab cache: on the KASAN kernel the
 * quarantine holds freed objects of every cache (up to 1/32 of memory), so
 * the 2,500 children's task, mm and file structures would otherwise look
 * like megabytes missing; shrinking a cache releases its quarantined
 * objects and its empty slabs, on either kernel.
 */
static long memfree_settled_kb(void)
{
	struct dirent *d;
	DIR *dir = opendir("/sys/kernel/slab");

	while (dir && (d = readdir(dir)))
		if (d->d_name[0] != '.')
			shrink(d->d_name);
	if (dir)
		closedir(dir);
	return memfree_kb();
}

/* A cache's line of /proc/slabinfo (the guest boots with slab_nomerge, so
 * cs_container and cs_table are caches of their own), after shrink(). */
static int slabinfo(const char *cache, struct slab *s)
{
	char line[512], name[64];
	FILE *f;
	int found = 0;

	s->exact = shrink(cache) == 0;
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		long size;

		if (sscanf(line, "%63s %ld %ld %ld %ld", name, &s->active,
			   &s->total, &size, &s->per_slab) == 5 &&
		    !strcmp(name, cache))
			found = 1;
	}
	fclose(f);
	return found ? 0 : -1;
}

/* One child's leftovers beyond its containers: one in a pipe and one in
 * a socket, neither ever read. */
static void leave_in_transit(int i)
{
	int fds[2], id;
	void *a;

	if (i % 4 == 1 && pipe(fds) == 0) {
		id = cs_alloc(8192, &a, CS_MAPNOW);
		cs_write(fds[1], 1, &id, NULL, NULL, 0);
	}
	if (i % 4 == 2 && socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
		id = cs_alloc(8192, &a, CS_MAPNOW);
		cs_write(fds[0], 1, &id, NULL, NULL, 0);
	}
}

/* IO-Lite buffers: of the file's page cache and of a pipe, sent into a
 * pipe and a socket that nobody reads. */
static void leave_iol(int i)
{
	struct iol_slice s[4], t[4];
	int fd = open("/tmp/iolleak", O_RDONLY), p[2], sv[2];
	long n, m = 0;

	n = iol_read_n(fd, s, 4, 3 * 16384);
	if (n < 1)
		_exit(4);
	if (pipe(p) == 0) {
		if (write(p[1], s[0].addr ? (void *)s[0].addr : "x", 4096) != 4096)
			_exit(5);
		m = iol_read_n(p[0], t, 4, 4096);
		if (m < 1 || iol_write(p[1], s, n, 0) < 0)
			_exit(6);
	}
	if (i % 4 == 2 && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 &&
	    (iol_write(sv[0], s, n, 0) < 0 || iol_write(sv[0], t, m, 0) < 0))
		_exit(7);
	close(fd);
}

/* Whether this is the KASAN guest (zc.flavour=kasan): TCG runs it several
 * times slower, so it makes a quarter of the children. */
static int kasan(void)
{
	char line[512] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
	}
	return strstr(line, "zc.flavour=kasan") != NULL;
}

/* Files in use (the first field of /proc/sys/fs/file-nr). */
static long files_in_use(void)
{
	long n = -1;
	FILE *f = fopen("/proc/sys/fs/file-nr", "r");

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : kasan() ? 2500 : 10000;
	long before, after, c0, p0, f0, f1;
	struct slab sc0, sc1, st0, st1;
	time_t t0;
	int bad = 0, slabs;

	if (iol_init()) {
		report(0, "leak-init", "no syscall numbers");
		return 1;
	}
	{
		static char data[3 * 16384];
		int fd = open("/tmp/iolleak", O_RDWR | O_CREAT | O_TRUNC, 0644);

		memset(data, 'L', sizeof(data));
		if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data)) {
			report(0, "leak-init", "/tmp/iolleak");
			return 1;
		}
		close(fd);
	}
	/* warm up caches so the comparison is fair */
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			void *a;

			cs_alloc(65536, &a, CS_MAPNOW);
			leave_iol(i);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	c0 = sysfs_ll("/sys/kernel/zc/containers");
	p0 = sysfs_ll("/sys/kernel/zc/container_pages");
	slabs = slabinfo("cs_container", &sc0) || slabinfo("cs_table", &st0);
	before = memfree_settled_kb();
	f0 = files_in_use();
	t0 = time(NULL);
	for (int i = 0; i < iters; i++) {
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			bad++;
			break;
		}
		if (pid == 0) {
			void *a;
			int id;

			for (int k = 0; k < 4; k++) {
				id = cs_alloc(16384 * (k + 1), &a,
					      k % 2 ? CS_MAPNOW : 0);
				if (id < 0)
					_exit(1);
				if (k % 2)
					memset(a, k, 16384);
			}
			if (i % 3 == 0) {	/* an unmapped one too */
				id = cs_alloc(8192, &a, CS_MAPNOW);
				cs_unmap(1, &id);
			}
			leave_in_transit(i);
			if (i % 2 == 0)
				leave_iol(i);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad++;
	}
	after = memfree_settled_kb();
	f1 = files_in_use();
	slabs = slabs || slabinfo("cs_container", &sc1) ||
		slabinfo("cs_table", &st1);
	info("leak: %d fork/leak/exit iterations in %lds, MemFree %ld -> %ld kB",
	     iters, (long)(time(NULL) - t0), before, after);
	CHECK("leak-children-ok", bad == 0, "%d children failed", bad);
	/* 5,000 children held the file open through their buffers; the
	 * count of files in use is per-CPU batched: allow 64 */
	info("leak: files in use %ld -> %ld", f0, f1);
	CHECK("leak-files-released", f0 >= 0 && f1 >= 0 && f1 <= f0 + 64,
	      "files in use %ld -> %ld", f0, f1);
	CHECK("leak-containers-freed",
	      sysfs_ll("/sys/kernel/zc/containers") == c0 &&
	      sysfs_ll("/sys/kernel/zc/container_pages") == p0,
	      "containers %lld->%lld pages %lld->%lld", (long long)c0,
	      sysfs_ll("/sys/kernel/zc/containers"), (long long)p0,
	      sysfs_ll("/sys/kernel/zc/container_pages"));
	/* The children made about 48,000 containers and 10,000 tables: not
	 * one may be left.  Without shrink (no /sys/kernel/slab) SLUB counts
	 * free objects in the CPU's slab as active: then allow four slabs'
	 * worth; a leak of one object per child is far beyond that. */
	CHECK("leak-slabinfo", !slabs,
	      "no cs_container/cs_table in /proc/slabinfo");
	if (!slabs) {
		info("slab cs_container active %ld -> %ld (of %ld -> %ld, "
		     "%ld per slab), cs_table %ld -> %ld, %s", sc0.active,
		     sc1.active, sc0.total, sc1.total, sc0.per_slab,
		     st0.active, st1.active,
		     sc0.exact && sc1.exact && st0.exact && st1.exact ?
		     "shrunk first: exact" : "not shrunk: approximate");
		long cslack = sc0.exact && sc1.exact ? 0 : 4 * sc0.per_slab;
		long tslack = st0.exact && st1.exact ? 0 : 4 * st0.per_slab;

		CHECK("leak-container-slab-stable",
		      sc1.active <= sc0.active + cslack,
		      "cs_container active %ld -> %ld (slack %ld)", sc0.active,
		      sc1.active, cslack);
		CHECK("leak-table-slab-stable",
		      st1.active <= st0.active + tslack,
		      "cs_table active %ld -> %ld (slack %ld)", st0.active,
		      st1.active, tslack);
	}
	/* 4 children x 160 KiB each would leak 160 MB over 10000 runs; allow
	 * 2 MB of noise (page tables, slab caches growing). */
	CHECK("leak-memfree-stable", after > before - 2048,
	      "MemFree dropped %ld kB", before - after);
	return test_failed;
}
