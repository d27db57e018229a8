/*
 * fork/leak/exit: children allocate (and map) containers and exit without
 * cs_free; nothing may stay behind (container counters, MemFree).
 */
#include <sys/wait.h>
#include <time.h>
#include "cs.h"

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 10000;
	long before, after, c0, p0;
	time_t t0;
	int bad = 0;

	if (cs_init()) {
		report(0, "leak-init", "no syscall numbers");
		return 1;
	}
	/* warm up caches so the comparison is fair */
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			void *a;

			cs_alloc(65536, &a, CS_MAPNOW);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	c0 = sysfs_ll("/sys/kernel/zc/containers");
	p0 = sysfs_ll("/sys/kernel/zc/container_pages");
	before = memfree_kb();
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
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad++;
	}
	after = memfree_kb();
	info("leak: %d fork/leak/exit iterations in %lds, MemFree %ld -> %ld kB",
	     iters, (long)(time(NULL) - t0), before, after);
	CHECK("leak-children-ok", bad == 0, "%d children failed", bad);
	CHECK("leak-containers-freed",
	      sysfs_ll("/sys/kernel/zc/containers") == c0 &&
	      sysfs_ll("/sys/kernel/zc/container_pages") == p0,
	      "containers %lld->%lld pages %lld->%lld", (long long)c0,
	      sysfs_ll("/sys/kernel/zc/containers"), (long long)p0,
	      sysfs_ll("/sys/kernel/zc/container_pages"));
	/* 4 children x 160 KiB each would leak 160 MB over 10000 runs; allow
	 * 2 MB of noise (page tables, slab caches growing). */
	CHECK("leak-memfree-stable", after > before - 2048,
	      "MemFree dropped %ld kB", before - after);
	return test_failed;
}
