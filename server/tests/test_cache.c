/*
 * test_cache.c - the unified cache shared by worker processes (cache.h):
 * lookups, second-request loads, bodies by the right path, pins that keep
 * an evicted body's bytes, processes that share it, and processes killed
 * at the worst moments (holding the lock, loading a body) -- after each,
 * the zone's audit (cache_zone.h) must find every count in agreement and
 * every body the exact bytes of its file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache.h"
#include "cache_zone.h"

#define NFILES 40

static char dir[64];
static int dirfd_root;

/* File i: i * 1500 + 100 bytes of a pattern that depends on i and the
 * offset, so a body from the wrong file or place is caught. */
static size_t file_size(int i)
{
	return (size_t)i * 1500 + 100;
}

static unsigned char pattern(int i, size_t off)
{
	return (unsigned char)(i * 31 + off * 7 + off / 4096);
}

static void name_of(int i, char *buf, size_t n)
{
	snprintf(buf, n, "f%d.bin", i);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_cache.XXXXXX");
	assert_non_null(mkdtemp(dir));
	dirfd_root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd_root >= 0);
	for (int i = 0; i < NFILES; i++) {
		char name[32];
		size_t n = file_size(i);
		unsigned char *b = malloc(n);
		int fd;

		name_of(i, name, sizeof(name));
		for (size_t k = 0; k < n; k++)
			b[k] = pattern(i, k);
		fd = openat(dirfd_root, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, b, n), (ssize_t)n);
		close(fd);
		free(b);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NFILES; i++) {
		char name[32];

		name_of(i, name, sizeof(name));
		unlinkat(dirfd_root, name, 0);
	}
	close(dirfd_root);
	rmdir(dir);
	return 0;
}

static struct cache_zone *zone(uint64_t budget, unsigned nworkers)
{
	struct cache_config cfg = {
		.budget = budget,
		.max_entries = 64,
		.small_max = 64 << 10,
		.copy_max = 16 << 10,
		.ttl_ms = 1000000,
		.nworkers = nworkers,
	};
	struct cache_zone *z;

	assert_int_equal(cache_zone_create(&cfg, &z), 0);
	return z;
}

static void audit_ok(struct cache_zone *z)
{
	struct cache_audit a;

	zone_audit(z, &a);
	if (!a.ok)
		fail_msg("zone audit: %s (ready %llu dead %llu limbo %llu "
			 "body pages %llu arena pages %llu)", a.why,
			 (unsigned long long)a.ready, (unsigned long long)a.dead,
			 (unsigned long long)a.limbo,
			 (unsigned long long)a.body_pages,
			 (unsigned long long)a.arena_pages);
}

/* The entry for file i: a hit, or a miss made into an entry; NULL on a
 * failure.  No cmocka assertions here or in body_is_right: child
 * processes call them, and a failed assertion would jump into the test
 * runner of the child. */
static struct cache_entry *try_get(struct cache *c, int i, bool *hit)
{
	char key[40], name[32];
	struct cache_entry *e;
	struct stat st;
	int fd;

	name_of(i, name, sizeof(name));
	snprintf(key, sizeof(key), "/%s", name);
	e = cache_lookup(c, 0, key, 1);
	if (hit)
		*hit = e != NULL;
	if (e)
		return e;
	fd = openat(dirfd_root, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	e = cache_insert(c, 0, key, dirfd_root, name, fd, &st, 1,
			 CACHE_IDENTITY, 0);
	if (!e)
		close(fd);
	return e;
}

static struct cache_entry *get(struct cache *c, int i, bool *hit)
{
	struct cache_entry *e = try_get(c, i, hit);

	assert_non_null(e);
	return e;
}

/* This worker's descriptor of e's file (file i), opened if it has none,
 * as static.c does before it sends from the file or loads the body. */
static bool have_fd(struct cache *c, struct cache_entry *e, int i)
{
	char name[32];
	struct stat st;
	int fd;

	if (cache_file(c, e))
		return true;
	name_of(i, name, sizeof(name));
	fd = openat(dirfd_root, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return false;
	}
	return cache_adopt_fd(c, e, fd, &st) == 0;
}

/* The body a response from e would carry, byte for byte as the client
 * would get it (copied out of the aggregate): NULL if it is file i's,
 * else what is wrong. */
static const char *body_is_right(struct cache *c, struct cache_entry *e,
				 int i)
{
	static char why[128];
	size_t n = file_size(i);
	unsigned char *b = malloc(n);
	const char *bad = NULL;
	zc_agg *a;

	if (!b || zc_agg_create(&a)) {
		free(b);
		return "out of memory";
	}
	if (!cache_body_in_memory(c, e) && !have_fd(c, e, i))
		bad = "no descriptor";
	if (!bad && cache_append_body(c, e, a, 0, n, 0))
		bad = "cache_append_body failed";
	if (!bad && (zc_agg_len(a) != n ||
		     zc_agg_copyout(a, 0, b, n) != (ssize_t)n))
		bad = "short body";
	for (size_t k = 0; !bad && k < n; k++)
		if (b[k] != pattern(i, k)) {
			snprintf(why, sizeof(why), "file %d: byte %zu is %u, "
				 "not %u", i, k, b[k], pattern(i, k));
			bad = why;
		}
	zc_agg_release(a);
	free(b);
	return bad;
}

static void check_body(struct cache *c, struct cache_entry *e, int i)
{
	const char *bad = body_is_right(c, e, i);

	if (bad)
		fail_msg("%s", bad);
}

/* Bring e's body (file i) into memory as a second request would. */
static bool load(struct cache *c, struct cache_entry *e, int i)
{
	if (!have_fd(c, e, i) || !cache_load_begin(c, e))
		return false;
	cache_load_end(c, e, cache_load_fill(c, e, false));
	return true;
}

/* File i asked for twice: its entry (a reference), body in memory. */
static struct cache_entry *twice(struct cache *c, int i)
{
	struct cache_entry *e = get(c, i, NULL);

	cache_put(c, e);
	e = get(c, i, NULL);
	assert_true(load(c, e, i));
	return e;
}

static void test_miss_then_hit_loads_the_body(void **state)
{
	struct cache_zone *z = zone(1 << 20, 1);
	struct cache_stats st;
	struct cache_entry *e;
	struct cache *c;
	bool hit;

	(void)state;
	assert_int_equal(cache_attach(z, 0, &c), 0);
	e = get(c, 3, &hit);
	assert_false(hit);
	/* The first request: the file, not memory. */
	assert_false(cache_body_in_memory(c, e));
	assert_non_null(cache_file(c, e));
	check_body(c, e, 3);
	cache_put(c, e);
	e = get(c, 3, &hit);
	assert_true(hit);
	assert_true(load(c, e, 3));
	assert_true(cache_body_in_memory(c, e));
	assert_false(load(c, e, 3));	/* once */
	check_body(c, e, 3);
	cache_put(c, e);
	cache_stats(c, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.bodies_loaded, 1);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.pinned_entries, 0);
	audit_ok(z);
	cache_detach(c);
	cache_zone_unmap(z);
}

/* Held bodies up to copy_max leave by copy (borrowed memory), larger ones
 * by sendfile from the zone's memfd (a file slice) -- unless they leave in
 * frames (HTTP/2): then by copy at any size, the bytes the same. */
static void test_copy_or_sendfile_by_size(void **state)
{
	struct cache_zone *z = zone(4 << 20, 1);
	struct zc_slice sl;
	struct cache *c;
	int small = 2, large = 30;	/* 3,100 and 45,100 bytes */

	(void)state;
	assert_int_equal(cache_attach(z, 0, &c), 0);
	for (int k = 0; k < 4; k++) {
		/* Framed: the next files (4,600 and 46,600 bytes). */
		bool framed = k >= 2;
		int i = (k & 1 ? large : small) + framed;
		struct cache_entry *e = twice(c, i);
		zc_agg *a;
		char *copy;

		assert_int_equal(zc_agg_create(&a), 0);
		assert_int_equal(cache_append_body(c, e, a, 0, file_size(i),
						   framed ? CACHE_FRAMED : 0),
				 0);
		assert_int_equal(zc_agg_nslices(a), 1);
		assert_int_equal(zc_agg_slice(a, 0, &sl), 0);
		assert_int_equal(sl.kind, k == 1 ? ZC_SLICE_FILE :
						   ZC_SLICE_MEM);
		/* Either way the aggregate holds the file's bytes. */
		copy = malloc(file_size(i));
		assert_non_null(copy);
		assert_int_equal(zc_agg_copyout(a, 0, copy, file_size(i)),
				 (ssize_t)file_size(i));
		for (size_t b = 0; b < file_size(i); b++)
			assert_int_equal((unsigned char)copy[b], pattern(i, b));
		free(copy);
		zc_agg_release(a);
		check_body(c, e, i);
		cache_put(c, e);
	}
	cache_detach(c);
	cache_zone_unmap(z);
}

/*
 * A worker holds at most max_files descriptors (half its RLIMIT_NOFILE)
 * and sweeps an eighth when it passes that.  The descriptor it has just
 * opened for the request it is answering must survive that sweep: a
 * replay of 50,000 requests lost one response in a few runs, its head
 * sent and its body gone with the swept descriptor.
 */
static struct rlimit nofile_before;

static int restore_nofile(void **state)
{
	(void)state;
	return setrlimit(RLIMIT_NOFILE, &nofile_before);
}

static void test_new_descriptor_survives_the_sweep(void **state)
{
	struct rlimit low;
	struct cache_zone *z = zone(4 << 20, 1);
	struct cache *c;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile_before), 0);
	low = nofile_before;
	low.rlim_cur = 48;		/* max_files 24, fewer than NFILES */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(cache_attach(z, 0, &c), 0);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < NFILES; i++) {
			struct cache_entry *e = get(c, i, NULL);

			assert_true(have_fd(c, e, i));
			if (!cache_file(c, e))
				fail_msg("round %d, file %d: the descriptor "
					 "just adopted was swept", round, i);
			check_body(c, e, i);
			cache_put(c, e);
		}
	cache_detach(c);
	cache_zone_unmap(z);
}

/* An entry evicted while a response uses it keeps its bytes until the last
 * pin goes; then its slot and arena pages come back. */
static void test_pinned_body_outlives_eviction(void **state)
{
	/* Room for about three 16 KiB bodies. */
	struct cache_zone *z = zone(56 << 10, 1);
	struct cache_entry *held;
	struct cache_stats st;
	struct cache *c;

	(void)state;
	assert_int_equal(cache_attach(z, 0, &c), 0);
	held = twice(c, 10);		/* 15,100 bytes */
	for (int i = 11; i < 20; i++) {
		struct cache_entry *e = get(c, i, NULL);

		cache_put(c, e);
	}
	cache_stats(c, &st);
	assert_true(st.evictions > 0);
	assert_int_equal(atomic_load(&held->state), CE_DEAD);
	check_body(c, held, 10);	/* still the right bytes */
	audit_ok(z);
	cache_put(c, held);		/* the last pin: freed */
	audit_ok(z);
	assert_int_equal(z->limbo, 0);
	cache_detach(c);
	cache_zone_unmap(z);
}

/*
 * --page-cache policy: every file the policy lets go has its pages
 * dropped, however many one insert evicts.  30 one-byte files fill an LRU
 * cache charged by file size (no bodies held); one file as large as all of
 * them evicts every one in a single insert -- more than a fixed list of
 * drops owed after the lock once held (16), past which the pages of the
 * rest stayed in memory, outside the budget.
 */
#define TINY 30
static void test_policy_drops_every_evicted_file(void **state)
{
	struct cache_config cfg = {
		.budget = TINY * (512 + 1) + 100,	/* 512: an entry */
		.max_entries = 64,
		.small_max = 0,				/* no body in memory */
		.ttl_ms = 1000000,
		.policy = gds_policy_find("lru"),
		.owns_pages = true,
		.nworkers = 1,
	};
	char name[32], key[40];
	struct cache_entry *e;
	struct cache_stats st;
	struct cache_zone *z;
	struct cache *c;
	struct stat sb;
	int fd;

	(void)state;
	assert_int_equal(cache_zone_create(&cfg, &z), 0);
	assert_int_equal(cache_attach(z, 0, &c), 0);
	for (int i = 0; i <= TINY; i++) {
		size_t n = i < TINY ? 1 : TINY * (512 + 1) - 512;
		char *b = calloc(1, n);

		snprintf(name, sizeof(name), "tiny%d.bin", i);
		snprintf(key, sizeof(key), "/%s", name);
		fd = openat(dirfd_root, name, O_RDWR | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, b, n), (ssize_t)n);
		free(b);
		assert_int_equal(fstat(fd, &sb), 0);
		e = cache_insert(c, 0, key, dirfd_root, name, fd, &sb, 1,
				 CACHE_IDENTITY, 0);
		assert_non_null(e);
		assert_true(atomic_load(&e->state) == CE_READY);
		cache_put(c, e);
	}
	cache_stats(c, &st);
	assert_int_equal(st.evictions, TINY);	/* all in the last insert */
	assert_int_equal(st.dropped, TINY);
	audit_ok(z);
	cache_detach(c);
	cache_zone_unmap(z);
	for (int i = 0; i <= TINY; i++) {
		snprintf(name, sizeof(name), "tiny%d.bin", i);
		unlinkat(dirfd_root, name, 0);
	}
}

/* Run fn in a child process that attaches as worker w; its exit status. */
static int in_child(struct cache_zone *z, unsigned w,
		    int (*fn)(struct cache_zone *z, struct cache *c, int arg),
		    int arg)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct cache *c;

		if (cache_attach(z, w, &c))
			_exit(90);
		_exit(fn(z, c, arg));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* In a second worker: file `arg` is a hit with its body in memory (the
 * same arena pages the first worker filled), and the right bytes. */
static int child_finds_body(struct cache_zone *z, struct cache *c, int arg)
{
	char key[32];
	struct cache_entry *e;
	struct cache_stats st;

	(void)z;
	snprintf(key, sizeof(key), "/f%d.bin", arg);
	e = cache_lookup(c, 0, key, 1);
	if (!e)
		return 1;
	if (!cache_body_in_memory(c, e) || cache_file(c, e))
		return 2;
	if (body_is_right(c, e, arg))
		return 4;
	cache_put(c, e);
	cache_stats(c, &st);
	return st.hits == 1 && st.misses == 0 ? 0 : 3;
}

static void test_workers_share_one_copy(void **state)
{
	struct cache_zone *z = zone(1 << 20, 2);
	struct cache_entry *e;
	struct cache *c;

	(void)state;
	assert_int_equal(cache_attach(z, 0, &c), 0);
	e = twice(c, 5);
	cache_put(c, e);
	assert_int_equal(in_child(z, 1, child_finds_body, 5), 0);
	assert_int_equal(z->arena_used, (file_size(5) + 4095) / 4096);
	audit_ok(z);
	cache_detach(c);
	cache_zone_unmap(z);
}

/* A second worker takes the lock and is killed holding it: the next
 * holder rebuilds the zone.  An entry the first worker pins keeps its
 * bytes (now dead); the rest are gone; the cache works on. */
static int child_dies_holding_lock(struct cache_zone *z, struct cache *c,
				   int arg)
{
	(void)c;
	(void)arg;
	zone_lock(z);
	/* Half-way through something: a slot's count odd. */
	atomic_fetch_add(&z->slots[z->cfg.max_entries - 1].seq, 1);
	raise(SIGKILL);
	return 0;
}

static void test_death_holding_the_lock_rebuilds(void **state)
{
	struct cache_zone *z = zone(1 << 20, 2);
	struct cache_entry *held, *e;
	struct cache_stats st;
	struct cache *c;
	bool hit;

	(void)state;
	assert_int_equal(cache_attach(z, 0, &c), 0);
	held = twice(c, 7);
	e = get(c, 8, NULL);
	cache_put(c, e);
	assert_int_equal(in_child(z, 1, child_dies_holding_lock, 0),
			 100 + SIGKILL);
	e = get(c, 9, &hit);		/* takes the lock: EOWNERDEAD */
	assert_false(hit);
	cache_put(c, e);
	cache_stats(c, &st);
	assert_int_equal(st.rebuilds, 1);
	assert_int_equal(atomic_load(&held->state), CE_DEAD);
	check_body(c, held, 7);
	e = get(c, 8, &hit);		/* forgotten by the rebuild */
	assert_false(hit);
	cache_put(c, e);
	cache_put(c, held);
	audit_ok(z);
	e = get(c, 9, &hit);
	assert_true(hit);
	check_body(c, e, 9);
	cache_put(c, e);
	audit_ok(z);
	cache_detach(c);
	cache_zone_unmap(z);
}

/* A worker killed outside the lock with pins held and a body half loaded:
 * the master's cache_zone_worker_gone gives both back. */
static int child_dies_loading(struct cache_zone *z, struct cache *c, int arg)
{
	struct cache_entry *e;

	(void)z;
	e = try_get(c, arg, NULL);
	if (!e)
		return 2;
	cache_put(c, e);
	e = try_get(c, arg, NULL);	/* pinned */
	if (!e || !have_fd(c, e, arg) || !cache_load_begin(c, e))
		return 1;
	raise(SIGKILL);
	return 0;
}

static void test_worker_gone_releases_pins_and_loads(void **state)
{
	struct cache_zone *z = zone(1 << 20, 2);
	struct cache_entry *e;
	struct cache *c;
	bool hit;

	(void)state;
	assert_int_equal(in_child(z, 1, child_dies_loading, 12), 100 + SIGKILL);
	assert_int_equal(z->arena_used, (file_size(12) + 4095) / 4096);
	cache_zone_worker_gone(z, 1);
	assert_int_equal(z->arena_used, 0);
	audit_ok(z);
	assert_int_equal(cache_attach(z, 0, &c), 0);
	e = get(c, 12, &hit);
	assert_true(hit);
	assert_true(load(c, e, 12));	/* loadable again */
	check_body(c, e, 12);
	cache_put(c, e);
	/* Evict everything: nothing may stay pinned by the dead worker. */
	for (int i = 0; i < NFILES; i++) {
		e = get(c, i, NULL);
		cache_put(c, e);
	}
	audit_ok(z);
	assert_int_equal(z->limbo, 0);
	cache_detach(c);
	cache_zone_unmap(z);
}

/* Three workers and the parent at once on a budget that keeps evicting:
 * every body any of them gets is the exact bytes of its file. */
static int child_hammers(struct cache_zone *z, struct cache *c, int seed)
{
	(void)z;
	srand((unsigned)seed);
	for (int n = 0; n < 3000; n++) {
		int i = rand() % NFILES;
		struct cache_entry *e = try_get(c, i, NULL);
		const char *bad;

		if (!e)
			return 2;
		if (rand() % 2)
			load(c, e, i);
		bad = body_is_right(c, e, i);
		if (bad) {
			fprintf(stderr, "worker %d: %s\n", seed, bad);
			return 1;
		}
		if (rand() % 50 == 0)
			cache_drop(c, e);
		cache_put(c, e);
		if (n % 100 == 0)
			cache_maintain(c, 1);
	}
	cache_detach(c);
	return 0;
}

static void test_concurrent_workers_keep_every_byte(void **state)
{
	struct cache_zone *z = zone(160 << 10, 4);
	pid_t pids[3];

	(void)state;
	for (unsigned w = 1; w <= 3; w++) {
		pids[w - 1] = fork();
		assert_true(pids[w - 1] >= 0);
		if (pids[w - 1] == 0) {
			struct cache *c;

			if (cache_attach(z, w, &c))
				_exit(90);
			_exit(child_hammers(z, c, (int)w));
		}
	}
	struct cache *c;

	assert_int_equal(cache_attach(z, 0, &c), 0);
	assert_int_equal(child_hammers(z, c, 0), 0);
	for (int k = 0; k < 3; k++) {
		int status;

		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	audit_ok(z);
	assert_int_equal(z->limbo, 0);
	cache_zone_unmap(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_miss_then_hit_loads_the_body),
		cmocka_unit_test(test_copy_or_sendfile_by_size),
		cmocka_unit_test_teardown(test_new_descriptor_survives_the_sweep,
					  restore_nofile),
		cmocka_unit_test(test_pinned_body_outlives_eviction),
		cmocka_unit_test(test_policy_drops_every_evicted_file),
		cmocka_unit_test(test_workers_share_one_copy),
		cmocka_unit_test(test_death_holding_the_lock_rebuilds),
		cmocka_unit_test(test_worker_gone_releases_pins_and_loads),
		cmocka_unit_test(test_concurrent_workers_keep_every_byte),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
