/*
 * Checksum caching (patch 0009): cs_write over TCP between two network
 * namespaces joined by a veth pair with tx checksumming off, so the
 * sender's kernel sums every byte in software.  The same sealed memfd is
 * sent again and again: /sys/kernel/zc/csum_bytes_cached must grow on the
 * repeats.  New contents (another sealed memfd, an unsealed file written
 * between sends, the writer's own pages recycled and refilled) must be
 * summed afresh: every byte is verified by the receiver, and a stale sum
 * would show as InCsumErrors, drops and retransmits in /proc/net/snmp.
 * Memory pressure must make the cache's shrinker give its entries back,
 * and /sys/kernel/zc/csum_cache 0 must switch the cache off.
 */
#include "cs.h"
#include "netns.h"
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SIZE		(256 * 1024)	/* bytes per send */
#define PORT		7711
#define ADDR_A		"10.77.0.1"
#define ADDR_B		"10.77.0.2"

/* ----------------------------------------------------------- counters */

struct cnt {
	long long computed, cached, inval;
};

static void cnt_read(struct cnt *c)
{
	c->computed = sysfs_ll("/sys/kernel/zc/csum_bytes_computed");
	c->cached = sysfs_ll("/sys/kernel/zc/csum_bytes_cached");
	c->inval = sysfs_ll("/sys/kernel/zc/csum_invalidations");
}

/* ------------------------------------------------------------- data */

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

#define FNV0 0xcbf29ce484222325ULL

#define MAXC 64		/* containers per cs_read */

static unsigned char buf[SIZE];

/* ----------------------------------------------------------- receiver */

/*
 * In netns B: accept connections one after another, read each to its end,
 * answer with the FNV-1a hash and the byte count.  A connection that
 * brings no byte ends it.  Every wait is bounded.
 */
static void receiver(int l)
{
	static unsigned char rb[64 * 1024];
	struct timeval tv = { 20, 0 };

	for (;;) {
		struct pollfd p = { .fd = l, .events = POLLIN };
		uint64_t h = FNV0, reply[2];
		long long total = 0;
		ssize_t r;
		int c;

		if (poll(&p, 1, 60000) != 1)
			_exit(2);
		c = accept(l, NULL, NULL);
		if (c < 0)
			_exit(3);
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		while ((r = read(c, rb, sizeof(rb))) > 0) {
			h = fnv(h, rb, (size_t)r);
			total += r;
		}
		reply[0] = h;
		reply[1] = (uint64_t)total;
		if (write(c, reply, sizeof(reply)) != sizeof(reply))
			_exit(4);
		close(c);
		if (!total)
			_exit(r < 0 ? 5 : 0);
	}
}

/* ------------------------------------------------------------- sender */

/* Connect to the receiver from netns A (the current one). */
static int connect_b(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct timeval tv = { 20, 0 };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	inet_pton(AF_INET, ADDR_B, &a.sin_addr);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s, (void *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	return s;
}

/*
 * cs_write the containers to a new connection; 1 if all len bytes went and
 * the receiver's hash and count match (hash, len), else 0 with why.
 */
static int send_check(int n, const int *cids, uint64_t hash, long long len,
		      char *why, size_t whylen)
{
	uint64_t reply[2];
	size_t got = 0;
	long w;
	int s = connect_b();

	if (s < 0) {
		snprintf(why, whylen, "connect: %s", strerror(errno));
		return 0;
	}
	w = cs_write(s, n, cids, NULL, NULL, 0);
	if (w != len) {
		snprintf(why, whylen, "cs_write %ld of %lld: %s", w, len,
			 strerror(errno));
		close(s);
		return 0;
	}
	shutdown(s, SHUT_WR);
	while (got < sizeof(reply)) {
		ssize_t r = read(s, (char *)reply + got, sizeof(reply) - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(s);
	if (got != sizeof(reply)) {
		snprintf(why, whylen, "no answer from the receiver");
		return 0;
	}
	if ((long long)reply[1] != len || reply[0] != hash) {
		snprintf(why, whylen, "receiver got %lld bytes, hash %s",
			 (long long)reply[1], reply[0] == hash ? "ok" : "WRONG");
		return 0;
	}
	return 1;
}

/* Containers with the file's first size bytes (page-cache pages). */
static int read_file_n(int fd, int *cids, int max, int size)
{
	cs_args args = { cids, NULL, NULL, NULL, NULL };

	if (lseek(fd, 0, SEEK_SET) != 0)
		return -1;
	return cs_read(fd, size, max, &args, 0);
}

static int read_file(int fd, int *cids, int max)
{
	return read_file_n(fd, cids, max, SIZE);
}

/* A memfd of chunks * SIZE bytes from seed.., sealed against changes. */
static int sealed_memfd_n(unsigned seed, int chunks, uint64_t *hash)
{
	int fd = memfd_create("t11", MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	*hash = FNV0;
	for (int i = 0; i < chunks; i++) {
		fill_seeded(buf, SIZE, seed + (unsigned)i);
		*hash = fnv(*hash, buf, SIZE);
		if (write(fd, buf, SIZE) != SIZE) {
			close(fd);
			return -1;
		}
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int sealed_memfd(unsigned seed, uint64_t *hash)
{
	return sealed_memfd_n(seed, 1, hash);
}

/* Send the first size bytes of fd once; 1 if the receiver got them. */
static int send_file(int fd, int size, uint64_t hash, struct cnt *c0,
		     struct cnt *c1, char *why, size_t whylen)
{
	int cids[MAXC], n;

	cnt_read(c0);
	n = read_file_n(fd, cids, MAXC, size);
	if (n <= 0) {
		snprintf(why, whylen, "cs_read: %s", strerror(errno));
		return 0;
	}
	n = send_check(n, cids, hash, size, why, whylen);
	cnt_read(c1);
	return n;
}

static void on_alarm(int sig)
{
	(void)sig;
	printf("FAIL csum-timeout: the test did not finish in time\n");
	fflush(stdout);
	_exit(1);
}

int main(void)
{
	struct snmp a0, a1, b0, b1;
	struct cnt c0, c1, start;
	char why[160];
	int ns_a, ns_b, l, fd, n, i, ok, cids[MAXC];
	long long cont0, pages0;
	uint64_t hash;
	pid_t rx;
	int st;

	signal(SIGALRM, on_alarm);
	alarm(100);
	signal(SIGPIPE, SIG_IGN);
	if (cs_init() || NR_cs_write <= 0 || NR_cs_read <= 0) {
		report(0, "csum-init", "no Container Shipping calls");
		return 1;
	}
	cnt_read(&start);
	CHECK("csum-sysfs", start.computed >= 0 && start.cached >= 0 &&
	      start.inval >= 0 &&
	      sysfs_ll("/sys/kernel/zc/csum_entries") >= 0,
	      "csum counters missing in /sys/kernel/zc");
	if (start.computed < 0)
		return 1;
	cont0 = sysfs_ll("/sys/kernel/zc/containers");
	pages0 = sysfs_ll("/sys/kernel/zc/container_pages");

	/* Two network namespaces, A (sender) and B (receiver). */
	ok = unshare(CLONE_NEWNET) == 0;
	ns_a = ok ? open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC) : -1;
	ok = ok && ns_a >= 0 && unshare(CLONE_NEWNET) == 0;
	ns_b = ok ? open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC) : -1;
	ok = ok && ns_b >= 0 && setns(ns_a, CLONE_NEWNET) == 0;
	CHECK("csum-netns", ok, "unshare/setns: %s", strerror(errno));
	if (!ok)
		return 1;
	i = veth_add("csa", "csb", ns_b);
	CHECK("csum-veth", i == 0, "RTM_NEWLINK veth: %s", strerror(-i));
	if (i)
		return 1;
	ok = if_up("csa", ADDR_A) == 0 && tx_csum_off("csa") == 0 &&
	     no_tlp() == 0 && snmp_read(&a0) == 0;
	ok = ok && setns(ns_b, CLONE_NEWNET) == 0 &&
	     if_up("csb", ADDR_B) == 0 && tx_csum_off("csb") == 0 &&
	     no_tlp() == 0 && snmp_read(&b0) == 0;
	CHECK("csum-txoff", ok, "addresses, tx checksumming off, no TLP, snmp: %s",
	      strerror(errno));
	if (!ok)
		return 1;

	/* The receiver lives in B. */
	{
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(PORT) };
		int one = 1;

		inet_pton(AF_INET, ADDR_B, &a.sin_addr);
		l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		ok = l >= 0 && bind(l, (void *)&a, sizeof(a)) == 0 &&
		     listen(l, 4) == 0;
	}
	CHECK("csum-listen", ok, "listen in B: %s", strerror(errno));
	if (!ok)
		return 1;
	rx = fork();
	if (rx == 0) {
		alarm(100);
		receiver(l);
	}
	close(l);
	if (rx < 0 || setns(ns_a, CLONE_NEWNET)) {
		report(0, "csum-fork", "%s", strerror(errno));
		return 1;
	}

	/* 1. The same sealed memfd, sent five times. */
	fd = sealed_memfd(1, &hash);
	CHECK("csum-memfd", fd >= 0, "memfd/seal: %s", strerror(errno));
	if (fd < 0)
		goto done;
	for (i = 0; i < 5; i++) {
		char name[64];

		cnt_read(&c0);
		n = read_file(fd, cids, MAXC);
		ok = n > 0 && send_check(n, cids, hash, SIZE, why, sizeof(why));
		cnt_read(&c1);
		snprintf(name, sizeof(name), "csum-sealed-send-%d", i + 1);
		CHECK(name, ok, "%s", n > 0 ? why : "cs_read");
		info("sealed send %d: computed %lld cached %lld invalidations %lld",
		     i + 1, c1.computed - c0.computed, c1.cached - c0.cached,
		     c1.inval - c0.inval);
		snprintf(name, sizeof(name), "csum-sealed-software-%d", i + 1);
		CHECK(name, (c1.computed - c0.computed) +
		      (c1.cached - c0.cached) >= SIZE,
		      "only %lld bytes summed on the sender (device sums?)",
		      (c1.computed - c0.computed) + (c1.cached - c0.cached));
		snprintf(name, sizeof(name), "csum-sealed-cached-%d", i + 1);
		if (i == 0)
			CHECK(name, c1.cached - c0.cached < SIZE / 8,
			      "first send took %lld bytes from the cache",
			      c1.cached - c0.cached);
		else
			CHECK(name, c1.cached - c0.cached >= SIZE / 2,
			      "repeat took only %lld bytes from the cache",
			      c1.cached - c0.cached);
	}

	/* 2. Other contents in another sealed memfd: summed afresh. */
	close(fd);
	fd = sealed_memfd(2, &hash);
	cnt_read(&c0);
	n = fd >= 0 ? read_file(fd, cids, MAXC) : -1;
	ok = n > 0 && send_check(n, cids, hash, SIZE, why, sizeof(why));
	cnt_read(&c1);
	CHECK("csum-new-memfd-send", ok, "%s", n > 0 ? why : "memfd/cs_read");
	CHECK("csum-new-memfd-computed",
	      c1.computed - c0.computed >= SIZE * 7 / 8 &&
	      c1.cached - c0.cached < SIZE / 8,
	      "computed %lld cached %lld", c1.computed - c0.computed,
	      c1.cached - c0.cached);
	info("new memfd: computed %lld cached %lld", c1.computed - c0.computed,
	     c1.cached - c0.cached);
	if (fd >= 0)
		close(fd);

	/* 3. An unsealed file, changed between sends: never from the cache. */
	fd = open("/tmp/t11.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	cnt_read(&c0);
	for (i = 0; fd >= 0 && i < 3; i++) {
		char name[64];

		fill_seeded(buf, SIZE, 10 + i);
		hash = fnv(FNV0, buf, SIZE);
		ok = pwrite(fd, buf, SIZE, 0) == SIZE;
		n = ok ? read_file(fd, cids, MAXC) : -1;
		ok = n > 0 && send_check(n, cids, hash, SIZE, why, sizeof(why));
		snprintf(name, sizeof(name), "csum-file-changed-%d", i + 1);
		CHECK(name, ok, "%s", n > 0 ? why : "write/cs_read");
	}
	cnt_read(&c1);
	CHECK("csum-file-not-cached", fd >= 0 && c1.cached == c0.cached &&
	      c1.computed - c0.computed >= 3LL * SIZE,
	      "unsealed file: computed %lld cached %lld",
	      c1.computed - c0.computed, c1.cached - c0.cached);
	if (fd >= 0)
		close(fd);
	unlink("/tmp/t11.dat");

	/*
	 * 4. The writer's own pages: given away, recycled when the stack is
	 * done, refilled with other bytes and sent again.  Their entries end
	 * when they come back (csum_invalidations); a stale sum would never
	 * get the bytes through.
	 */
	cnt_read(&c0);
	for (i = 0; i < 6; i++) {
		char name[64];
		int k;

		hash = FNV0;
		ok = 1;
		for (k = 0; k < 16 && ok; k++) {
			void *p;

			cids[k] = cs_alloc(SIZE / 16, &p, CS_MAPNOW);
			ok = cids[k] >= 0;
			if (ok) {
				fill_seeded(p, SIZE / 16, 100 + i * 16 + k);
				hash = fnv(hash, p, SIZE / 16);
			}
		}
		ok = ok && send_check(16, cids, hash, SIZE, why, sizeof(why));
		snprintf(name, sizeof(name), "csum-own-pages-%d", i + 1);
		CHECK(name, ok, "%s", why);
	}
	cnt_read(&c1);
	info("own pages: computed %lld cached %lld invalidations %lld",
	     c1.computed - c0.computed, c1.cached - c0.cached,
	     c1.inval - c0.inval);
	CHECK("csum-own-invalidated", c1.inval > c0.inval,
	      "no entry ended although pages were recycled (%lld)",
	      c1.inval - c0.inval);

	/*
	 * 5. The shrinker.  A 2 MiB sealed memfd (512 pages) sent once into
	 * an empty table registers most of its pages (the table is
	 * direct-mapped: a few collide); memory pressure -- drop_caches 2
	 * runs every shrinker -- must give most of the entries back, counted
	 * in csum_shrunk.  The same bytes sent twice more must arrive intact,
	 * the second time with most sums from the refilled cache.
	 */
	{
		long long before, after, shrunk0, shrunk1;
		int big = 8 * SIZE;

		fd = sealed_memfd_n(20, 8, &hash);
		ok = fd >= 0 && sysfs_write("/sys/kernel/zc/csum_entries", "0") == 0;
		ok = ok && send_file(fd, big, hash, &c0, &c1, why, sizeof(why));
		CHECK("csum-shrink-fill", ok, "%s", fd >= 0 ? why : "memfd");
		before = sysfs_ll("/sys/kernel/zc/csum_entries");
		shrunk0 = sysfs_ll("/sys/kernel/zc/csum_shrunk");
		CHECK("csum-shrink-filled", before >= big / 4096 / 2,
		      "%lld entries after sending %d pages", before, big / 4096);
		ok = sysfs_write("/proc/sys/vm/drop_caches", "2") == 0;
		after = sysfs_ll("/sys/kernel/zc/csum_entries");
		shrunk1 = sysfs_ll("/sys/kernel/zc/csum_shrunk");
		info("shrinker: %lld entries, after drop_caches %lld, "
		     "csum_shrunk +%lld", before, after, shrunk1 - shrunk0);
		CHECK("csum-shrink-dropped", ok && after < before / 4 &&
		      shrunk1 - shrunk0 >= before - after,
		      "entries %lld -> %lld, csum_shrunk +%lld (drop_caches %s)",
		      before, after, shrunk1 - shrunk0, ok ? "ok" : "failed");
		ok = fd >= 0 && send_file(fd, big, hash, &c0, &c1, why, sizeof(why));
		CHECK("csum-shrink-resend-1", ok, "%s", why);
		ok = fd >= 0 && send_file(fd, big, hash, &c0, &c1, why, sizeof(why));
		CHECK("csum-shrink-resend-2", ok, "%s", why);
		CHECK("csum-shrink-refilled", c1.cached - c0.cached >= big / 2,
		      "second send after the shrink took %lld of %d bytes "
		      "from the cache", c1.cached - c0.cached, big);

		/*
		 * 6. The switch: with csum_cache 0 the table is empty and
		 * stays so, and nothing comes from it; back at 1 the
		 * repeats hit again.
		 */
		ok = sysfs_write("/sys/kernel/zc/csum_cache", "0") == 0 &&
		     sysfs_ll("/sys/kernel/zc/csum_cache") == 0 &&
		     sysfs_ll("/sys/kernel/zc/csum_entries") == 0;
		CHECK("csum-off", ok, "csum_cache 0: cache %lld, entries %lld",
		      sysfs_ll("/sys/kernel/zc/csum_cache"),
		      sysfs_ll("/sys/kernel/zc/csum_entries"));
		for (i = 0; i < 2; i++) {
			ok = fd >= 0 &&
			     send_file(fd, big, hash, &c0, &c1, why, sizeof(why));
			CHECK(i ? "csum-off-send-2" : "csum-off-send-1", ok,
			      "%s", why);
		}
		CHECK("csum-off-not-cached", c1.cached == c0.cached &&
		      c1.computed - c0.computed >= big &&
		      sysfs_ll("/sys/kernel/zc/csum_entries") == 0,
		      "cache off: computed %lld cached %lld, %lld entries",
		      c1.computed - c0.computed, c1.cached - c0.cached,
		      sysfs_ll("/sys/kernel/zc/csum_entries"));
		ok = sysfs_write("/sys/kernel/zc/csum_cache", "1") == 0 &&
		     sysfs_ll("/sys/kernel/zc/csum_cache") == 1;
		for (i = 0; ok && i < 2; i++)
			ok = fd >= 0 &&
			     send_file(fd, big, hash, &c0, &c1, why, sizeof(why));
		CHECK("csum-on-again", ok && c1.cached - c0.cached >= big / 2,
		      "cache back on: %s, second send cached %lld of %d",
		      ok ? "sent" : why, c1.cached - c0.cached, big);
		if (fd >= 0)
			close(fd);
	}

	/*
	 * 7. A cs_write that gives nothing away (EPIPE before the first
	 * byte): its first page was registered, goes back to its container
	 * and is writable again, so its entry must end.  The empty
	 * connection also stops the receiver.
	 */
	{
		long w = 0;
		void *p = NULL;
		int id, s = connect_b();

		cnt_read(&c0);
		id = cs_alloc(4 * 4096, &p, CS_MAPNOW);
		if (id >= 0)
			fill_seeded(p, 4 * 4096, 7);
		ok = s >= 0 && id >= 0 && shutdown(s, SHUT_WR) == 0;
		errno = 0;
		if (ok)
			w = cs_write(s, 1, &id, NULL, NULL, 0);
		cnt_read(&c1);
		CHECK("csum-epipe-kept", ok && w < 0 && errno == EPIPE &&
		      cs_free(1, &id) == 0,
		      "cs_write after shutdown: %ld, %s", w, strerror(errno));
		CHECK("csum-epipe-invalidated", c1.inval - c0.inval == 1,
		      "%lld entries ended, not 1", c1.inval - c0.inval);
		if (s >= 0) {
			read(s, why, sizeof(why));
			close(s);
		}
	}

done:
	/* Stop the receiver if it still runs: a connection without data. */
	n = connect_b();
	if (n >= 0) {
		shutdown(n, SHUT_WR);
		read(n, why, sizeof(why));
		close(n);
	}
	ok = waitpid(rx, &st, 0) == rx && WIFEXITED(st) &&
	     WEXITSTATUS(st) == 0;
	CHECK("csum-receiver", ok, "receiver exit status %d", st);

	ok = snmp_read(&a1) == 0 && setns(ns_b, CLONE_NEWNET) == 0 &&
	     snmp_read(&b1) == 0;
	CHECK("csum-snmp", ok, "snmp: %s", strerror(errno));
	info("snmp A: RetransSegs +%lld InCsumErrors +%lld InErrs +%lld; "
	     "B: RetransSegs +%lld InCsumErrors +%lld InErrs +%lld",
	     a1.retrans - a0.retrans, a1.csum_err - a0.csum_err,
	     a1.in_err - a0.in_err, b1.retrans - b0.retrans,
	     b1.csum_err - b0.csum_err, b1.in_err - b0.in_err);
	info("A: TCPLossProbes +%lld TCPTimeouts +%lld; B: +%lld +%lld",
	     a1.probes - a0.probes, a1.timeouts - a0.timeouts,
	     b1.probes - b0.probes, b1.timeouts - b0.timeouts);
	CHECK("csum-no-csum-errors", ok && a1.csum_err == a0.csum_err &&
	      b1.csum_err == b0.csum_err && a1.in_err == a0.in_err &&
	      b1.in_err == b0.in_err, "checksum errors on the receiving side");
	CHECK("csum-no-retransmits", ok && a1.retrans == a0.retrans &&
	      b1.retrans == b0.retrans, "TCP retransmitted segments");

	cnt_read(&c1);
	info("total: computed %lld cached %lld invalidations %lld",
	     c1.computed - start.computed, c1.cached - start.cached,
	     c1.inval - start.inval);

	/* Nothing left behind: the cache empties, containers are gone. */
	ok = sysfs_write("/sys/kernel/zc/csum_entries", "0") == 0 &&
	     sysfs_ll("/sys/kernel/zc/csum_entries") == 0;
	CHECK("csum-flush", ok, "csum_entries not emptied");
	CHECK("csum-no-leak", sysfs_ll("/sys/kernel/zc/containers") == cont0 &&
	      sysfs_ll("/sys/kernel/zc/container_pages") == pages0,
	      "containers %lld -> %lld, pages %lld -> %lld", cont0,
	      sysfs_ll("/sys/kernel/zc/containers"), pages0,
	      sysfs_ll("/sys/kernel/zc/container_pages"));
	CHECK("csum-write-1-einval",
	      sysfs_write("/sys/kernel/zc/csum_entries", "1") < 0,
	      "csum_entries accepted a non-zero write");
	return test_failed;
}
