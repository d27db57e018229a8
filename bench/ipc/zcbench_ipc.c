/*
 * zcbench-ipc - the Container Shipping IPC experiment, today.
 *
 * Two processes (fork) move --bytes (default 2 GiB) in --block (default
 * 128 KiB) blocks, five ways:
 *
 *   (a) pipe   write/read over a pipe
 *   (b) unix   write/read over an AF_UNIX stream socketpair   (the baseline)
 *   (c) full   cs_write/cs_read over a libzc channel; the sender maps and
 *              writes every byte, the receiver maps and reads every byte
 *   (d) half   the sender maps and writes, the receiver does not map
 *   (e) nomap  neither side maps: the sender gives away fresh containers,
 *              the receiver frees what arrives without touching it
 *   (f) shm    no library, no system calls: a ring of blocks in memory
 *              both processes share, with the same fill and check as (c).
 *              The most any scheme can reach when both sides touch every
 *              byte on this machine: (c) over (f) is what libzc costs.
 *   (g) cswrite-read  the paper's mixed cases, over an AF_UNIX stream
 *   (h) write-csread  socket: cs_write (mapped, filled) to a conventional
 *              read, and a conventional write to cs_read (mapped, summed).
 *
 * In (a), (b) and (c) the sender writes every byte of a block before it
 * sends it (memset with the block's byte, block number in the first and
 * last word) and the receiver reads every byte (a sum of 64-bit words,
 * checked against the expected sum): the cases differ only in how the data
 * moves.
 *
 * --transport pipe runs (c), (d) and (e) over a plain pipe instead of a
 * channel: on the patched kernel (libzc's kernel backend) that is where
 * cs_write and cs_read move the pages themselves, while a channel, which
 * the kernel does not know, costs the kernel backend a copy each way.  Each run measures every case once, in turn, so machine noise hits
 * all cases alike; the table reports the median of --runs runs, and each
 * case's ratio against (b).  docs/ipc-benchmark.md describes the method.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zc.h"
#include "zc_channel.h"
#include "zc_cs.h"

enum { C_PIPE, C_UNIX, C_FULL, C_HALF, C_NOMAP, C_SHM, C_CSW_READ,
       C_WRITE_CSR, NCASES };

/* The paper's mixed cases, over an AF_UNIX stream socket like (b). */
static bool mixed(int kase)
{
	return kase == C_CSW_READ || kase == C_WRITE_CSR;
}

static const struct {
	const char *id, *name, *what;
} cases[NCASES] = {
	{ "a", "pipe", "write/read over a pipe" },
	{ "b", "unix", "write/read over AF_UNIX stream" },
	{ "c", "full", "cs_write/cs_read, full map + access" },
	{ "d", "half", "cs_write/cs_read, sender maps only" },
	{ "e", "nomap", "cs_write/cs_read, no map" },
	{ "f", "shm", "shared-memory ring, no library (ref.)" },
	{ "g", "cswrite-read", "cs_write (full map) / conventional read" },
	{ "h", "write-csread", "conventional write / cs_read (full map)" },
};

struct opts {
	uint64_t bytes;
	size_t block;
	int runs;
	bool json;
	bool want[NCASES];	/* --cases */
	bool cs_pipe;		/* --transport pipe: (c)-(e) over a pipe */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ----------------------------------------------------- touching the data */

static uint64_t pattern_word(uint64_t blk)
{
	return 0x0101010101010101ull * (uint8_t)(blk * 37 + 1);
}

/* The sender writes every byte: the block's byte, and the block number in
 * the first and last word. */
static void fill(void *p, size_t len, uint64_t blk)
{
	memset(p, (uint8_t)(blk * 37 + 1), len);
	memcpy(p, &blk, 8);
	memcpy((char *)p + len - 8, &blk, 8);
}

/* Every byte read: the sum of the 64-bit words. */
static uint64_t sum_words(const void *p, size_t len)
{
	const uint64_t *w = p;
	size_t n = len / 8;
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		s0 += w[i];
		s1 += w[i + 1];
		s2 += w[i + 2];
		s3 += w[i + 3];
	}
	for (; i < n; i++)
		s0 += w[i];
	return s0 + s1 + s2 + s3;
}

/* The sum, first and last word a block of len bytes must have. */
static bool block_ok(uint64_t sum, uint64_t first, uint64_t last, size_t len,
		     uint64_t blk)
{
	uint64_t want = (uint64_t)(len / 8 - 2) * pattern_word(blk) + 2 * blk;

	return first == blk && last == blk && sum == want;
}

/* The receiver reads every byte (summing 64-bit words) and checks the sum
 * and the block number.  Returns true if the block is right. */
static bool consume(const void *p, size_t len, uint64_t blk)
{
	uint64_t first, last;

	memcpy(&first, p, 8);
	memcpy(&last, (const char *)p + len - 8, 8);
	return block_ok(sum_words(p, len), first, last, len, blk);
}

/* ------------------------------------------------------- plain sockets */

static int write_full(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p = (const char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_full(int fd, void *p, size_t len)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p = (char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static void *block_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int plain_send(int fd, const struct opts *o)
{
	uint64_t nblk = o->bytes / o->block;
	void *buf = block_buf(o->block);

	if (!buf)
		return 1;
	for (uint64_t b = 0; b < nblk; b++) {
		fill(buf, o->block, b);
		if (write_full(fd, buf, o->block))
			return 2;
	}
	return 0;
}

static uint64_t plain_recv(int fd, const struct opts *o)
{
	uint64_t nblk = o->bytes / o->block, bad = 0;
	void *buf = block_buf(o->block);

	if (!buf)
		return nblk;
	for (uint64_t b = 0; b < nblk; b++) {
		if (read_full(fd, buf, o->block))
			return bad + nblk - b;
		bad += !consume(buf, o->block, b);
	}
	munmap(buf, o->block);
	return bad;
}

/* ---------------------------------------------------- Container Shipping */

static int cs_send(int fd, const struct opts *o, int kase)
{
	uint64_t nblk = o->bytes / o->block;
	bool map = kase != C_NOMAP;

	for (uint64_t b = 0; b < nblk; b++) {
		void *addr = NULL;
		int cid = cs_alloc((int)o->block, map ? &addr : NULL,
				   map ? CS_MAPNOW : 0);

		if (cid < 0)
			return 3;
		if (map)
			fill(addr, o->block, b);
		if (cs_write(fd, 1, &cid, NULL, NULL, 0) != (ssize_t)o->block)
			return 4;
	}
	return 0;
}

/*
 * A block over a pipe or a stream socket may arrive in pieces of any
 * length (a pipe passes the sender's pages as it has room, a socket what
 * FIONREAD saw): a running sum of the block's 64-bit words that takes the
 * pieces as they come, the words cut by a piece boundary assembled in
 * part[].
 */
struct piecesum {
	uint64_t sum, first, last;
	size_t pos;		/* bytes of the block seen */
	unsigned char part[8];
};

static void piece_word(struct piecesum *ps, uint64_t w, size_t at, size_t block)
{
	ps->sum += w;
	if (at == 0)
		ps->first = w;
	if (at == block - 8)
		ps->last = w;
}

static void piece_add(struct piecesum *ps, const unsigned char *p, size_t len,
		      size_t block)
{
	while (len && ps->pos % 8) {
		ps->part[ps->pos++ % 8] = *p++;
		len--;
		if (ps->pos % 8 == 0) {
			uint64_t w;

			memcpy(&w, ps->part, 8);
			piece_word(ps, w, ps->pos - 8, block);
		}
	}
	size_t n = len / 8 * 8;

	if (n) {
		uint64_t w0, wl;

		if ((uintptr_t)p % 8 == 0) {
			ps->sum += sum_words(p, n);
		} else {
			for (size_t i = 0; i < n; i += 8) {
				memcpy(&w0, p + i, 8);
				ps->sum += w0;
			}
		}
		memcpy(&w0, p, 8);
		memcpy(&wl, p + n - 8, 8);
		if (ps->pos == 0)
			ps->first = w0;
		if (ps->pos + n == block)
			ps->last = wl;
		ps->pos += n;
		p += n;
		len -= n;
	}
	while (len) {
		ps->part[ps->pos++ % 8] = *p++;
		len--;
	}
}

/* Read one block in pieces with cs_read; true if the block is right. */
static bool cs_recv_pieces(int fd, const struct opts *o, uint64_t b, bool map)
{
	struct piecesum ps = { 0 };
	size_t got = 0;
	int cid, off, len;
	void *addr;
	cs_args args = { &cid, &off, &len, NULL, &addr };

	while (got < o->block) {
		if (cs_read(fd, (int)(o->block - got), 1, &args,
			    map ? CS_MAPALL : 0) != 1)
			return false;
		if (len <= 0 || (map && !addr)) {
			cs_free(1, &cid);
			return false;
		}
		if (map)
			piece_add(&ps, (const unsigned char *)addr + off,
				  (size_t)len, o->block);
		got += (size_t)len;
		cs_free(1, &cid);
	}
	return !map || (got == o->block &&
			block_ok(ps.sum, ps.first, ps.last, o->block, b));
}

static uint64_t cs_recv(int fd, const struct opts *o, int kase)
{
	uint64_t nblk = o->bytes / o->block, bad = 0;
	bool map = kase == C_FULL || kase == C_WRITE_CSR;
	int cid, off, len;
	void *addr;
	cs_args args = { &cid, &off, &len, NULL, &addr };

	for (uint64_t b = 0; b < nblk; b++) {
		if (o->cs_pipe || kase == C_WRITE_CSR) {
			bad += !cs_recv_pieces(fd, o, b, map);
			continue;
		}
		if (cs_read(fd, (int)o->block, 1, &args,
			    map ? CS_MAPALL : 0) != 1)
			return bad + nblk - b;
		if (len != (int)o->block)
			bad++;
		else if (map)
			bad += !consume((char *)addr + off, (size_t)len, b);
		cs_free(1, &cid);
	}
	return bad;
}

/* ------------------------------------------------- the ceiling: (f) */

/*
 * A ring of shm_slots blocks in a shared mapping, two counters, spinning
 * (with a yield now and then) instead of system calls.  1 MiB in flight
 * (8 slots at 128 KiB blocks, like the channel's default window; more
 * slots for smaller blocks, 8 for larger ones).
 */
static uint64_t shm_slots = 8;

/* Slots for a block size: 1 MiB of ring (Streamline's best "Pthreads" ring
 * size), at least 8 blocks. */
static void shm_size_for(size_t block)
{
	shm_slots = block >= (1 << 20) / 8 ? 8 : (1 << 20) / block;
}

struct shm_ring {
	_Alignas(64) _Atomic uint64_t prod;
	_Alignas(64) _Atomic uint64_t cons;
};

static void shm_wait(_Atomic uint64_t *v, uint64_t want_above, bool less)
{
	for (unsigned i = 1;; i++) {
		uint64_t x = atomic_load_explicit(v, memory_order_acquire);

		if (less ? x + shm_slots > want_above : x > want_above)
			return;
		if (i % 1024 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

static void *shm_map(size_t block)
{
	void *p = mmap(NULL, 4096 + shm_slots * block, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static char *shm_slot(void *m, size_t block, uint64_t b)
{
	return (char *)m + 4096 + (b % shm_slots) * block;
}

static int shm_send(void *m, const struct opts *o)
{
	struct shm_ring *r = m;
	uint64_t nblk = o->bytes / o->block;

	for (uint64_t b = 0; b < nblk; b++) {
		shm_wait(&r->cons, b, true);	/* a free slot */
		fill(shm_slot(m, o->block, b), o->block, b);
		atomic_store_explicit(&r->prod, b + 1, memory_order_release);
	}
	return 0;
}

static uint64_t shm_recv(void *m, const struct opts *o)
{
	struct shm_ring *r = m;
	uint64_t nblk = o->bytes / o->block, bad = 0;

	for (uint64_t b = 0; b < nblk; b++) {
		shm_wait(&r->prod, b, false);	/* block b is there */
		bad += !consume(shm_slot(m, o->block, b), o->block, b);
		atomic_store_explicit(&r->cons, b + 1, memory_order_release);
	}
	return bad;
}

/* ------------------------------------------------------------ one case */

/* (c)-(e) over a channel (not --transport pipe). */
static bool on_channel(int kase, const struct opts *o)
{
	return kase >= C_FULL && kase <= C_NOMAP && !o->cs_pipe;
}

/* The descriptors of one case: [0] the receiver's, [1] the sender's. */
static int make_pair(int kase, const struct opts *o, int sv[2])
{
	int p[2];

	if (kase == C_PIPE || (kase >= C_FULL && kase <= C_NOMAP && o->cs_pipe)) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		/* Containers over a pipe get 1 MiB in flight, like a channel's
		 * window (a pipe holds 64 KiB by default: half a block). */
		if (kase != C_PIPE)
			fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		sv[0] = p[0];
		sv[1] = p[1];
		return 0;
	}
	return socketpair(AF_UNIX, (kase == C_UNIX || mixed(kase) ? SOCK_STREAM :
				    SOCK_SEQPACKET) | SOCK_CLOEXEC, 0, sv);
}

/* The sending child.  Channels are opened after fork, one end in each
 * process, so neither inherits the other's libzc state. */
static int child(int kase, int fd, void *shm, int sync_w, int go_r,
		 const struct opts *o)
{
	zc_channel *ch = NULL;
	char c = 'r';
	int rc;

	if (on_channel(kase, o)) {
		if (zc_channel_open(fd, &ch) || !zc_default_pool())
			return 5;
		fd = zc_channel_fd(ch);
	}
	if (write(sync_w, &c, 1) != 1 || read(go_r, &c, 1) != 1)
		return 6;
	if (kase == C_SHM)
		rc = shm_send(shm, o);
	else if (kase == C_CSW_READ)
		rc = cs_send(fd, o, C_FULL);
	else if (kase == C_WRITE_CSR)
		rc = plain_send(fd, o);
	else if (kase >= C_FULL)
		rc = cs_send(fd, o, kase);
	else
		rc = plain_send(fd, o);
	if (ch)
		zc_channel_close(ch);
	return rc;
}

/* Run one case: MB/s, or a negative value on failure. */
static double run_case(int kase, const struct opts *o, uint64_t *bad)
{
	int sv[2], sync[2], go[2], status;
	zc_channel *ch = NULL;
	void *shm = NULL;
	double t0, t1;
	pid_t pid;
	char c;
	int fd;

	if (kase == C_SHM && !(shm = shm_map(o->block)))
		return -1;
	if (make_pair(kase, o, sv) || pipe2(sync, O_CLOEXEC) ||
	    pipe2(go, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(sv[0]);
		_exit(child(kase, sv[1], shm, sync[1], go[0], o));
	}
	close(sv[1]);
	close(sync[1]);
	close(go[0]);
	fd = sv[0];
	if (on_channel(kase, o)) {
		if (zc_channel_open(fd, &ch))
			goto fail;
		fd = zc_channel_fd(ch);
	}
	if (read(sync[0], &c, 1) != 1)
		goto fail;
	t0 = now_s();
	if (write(go[1], "g", 1) != 1)
		goto fail;
	if (kase == C_SHM)
		*bad = shm_recv(shm, o);
	else if (kase == C_CSW_READ)
		*bad = plain_recv(fd, o);
	else if (kase >= C_FULL)
		*bad = cs_recv(fd, o, kase);
	else
		*bad = plain_recv(fd, o);
	t1 = now_s();
	if (ch)
		zc_channel_close(ch);
	else
		close(fd);
	close(sync[0]);
	close(go[1]);
	if (shm)
		munmap(shm, 4096 + shm_slots * o->block);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "zcbench-ipc: %s sender failed (status %d)\n",
			cases[kase].name, status);
		return -1;
	}
	return (double)(o->bytes / o->block * o->block) / (t1 - t0) / 1e6;
fail:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* ----------------------------------------------------------- reporting */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double *s = malloc((size_t)n * sizeof(*s));
	double m;

	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/* Ratio against (b), or 0 when (b) was not measured. */
static double ratio(const struct opts *o, const double *med, int k)
{
	return o->want[C_UNIX] && med[C_UNIX] > 0 ? med[k] / med[C_UNIX] : 0;
}

static void report_text(const struct opts *o, const double *med)
{
	printf("zcbench-ipc: %.2f GiB in %zu %s blocks, median of %d runs, "
	       "backend %s, (c)-(e) over a %s\n", (double)o->bytes / (1 << 30),
	       o->block % 1024 ? o->block : o->block >> 10,
	       o->block % 1024 ? "B" : "KiB", o->runs, zc_backend_name(),
	       o->cs_pipe ? "pipe" : "channel");
	printf("%-4s %-38s %10s %9s\n", "case", "", "MB/s", "vs (b)");
	for (int k = 0; k < NCASES; k++) {
		if (!o->want[k])
			continue;
		printf("(%s)  %-38s %10.0f", cases[k].id, cases[k].what, med[k]);
		if (ratio(o, med, k) > 0)
			printf(" %8.1fx\n", ratio(o, med, k));
		else
			printf(" %9s\n", "-");
	}
}

static void report_json(const struct opts *o, double res[][NCASES],
			const double *med)
{
	bool first = true;

	printf("{\"benchmark\":\"ipc\",\"backend\":\"%s\",\"transport\":"
	       "\"%s\",\"bytes\":%" PRIu64 ",\"block\":%zu,\"runs\":%d,"
	       "\"unit\":\"MB/s\",\"cases\":[", zc_backend_name(),
	       o->cs_pipe ? "pipe" : "channel", o->bytes, o->block, o->runs);
	for (int k = 0; k < NCASES; k++) {
		if (!o->want[k])
			continue;
		printf("%s{\"id\":\"%s\",\"name\":\"%s\",\"what\":\"%s\","
		       "\"median_mbps\":%.1f,\"ratio_vs_b\":",
		       first ? "" : ",", cases[k].id, cases[k].name,
		       cases[k].what, med[k]);
		if (ratio(o, med, k) > 0)
			printf("%.3f", ratio(o, med, k));
		else
			printf("null");
		printf(",\"runs_mbps\":[");
		for (int r = 0; r < o->runs; r++)
			printf("%s%.1f", r ? "," : "", res[r][k]);
		printf("]}");
		first = false;
	}
	printf("]}\n");
}

/* ----------------------------------------------------------------- main */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;

	if (end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* "b,e" or "unix,nomap" */
static int parse_cases(const char *list, bool *want)
{
	char *dup = strdup(list), *save = NULL, *tok;
	int err = 0;

	memset(want, 0, NCASES * sizeof(*want));
	for (tok = strtok_r(dup, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < NCASES; k++)
			if (!strcmp(tok, cases[k].id) || !strcmp(tok, cases[k].name))
				break;
		if (k == NCASES)
			err = -1;
		else
			want[k] = true;
	}
	free(dup);
	return err;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zcbench-ipc [--json] [--bytes N] [--block N] [--runs N]\n"
		"  --bytes N   data moved per case and run (default 2G; K/M/G)\n"
		"  --block N   bytes per transfer (default 128K, a multiple of 8,\n"
		"              64 to 1G)\n"
		"  --runs N    runs; the median is reported (default 5)\n"
		"  --cases L   only these cases, e.g. b,e (default all: a-h)\n"
		"  --transport channel|pipe\n"
		"              what (c)-(e) run over (default channel)\n"
		"  --json      machine-readable output on stdout\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "bytes", required_argument, NULL, 'n' },
		{ "block", required_argument, NULL, 'b' },
		{ "runs", required_argument, NULL, 'r' },
		{ "cases", required_argument, NULL, 'c' },
		{ "transport", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	*o = (struct opts){ (uint64_t)2 << 30, 128 << 10, 5, false,
			    { true, true, true, true, true, true, true, true }, false };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'n':
			if (parse_size(optarg, &o->bytes))
				return -1;
			break;
		case 'b':
			if (parse_size(optarg, &v) || v % 8 || v < 64 ||
			    v > (1u << 30))
				return -1;
			o->block = (size_t)v;
			break;
		case 'r':
			if (parse_size(optarg, &v) || v > 1000)
				return -1;
			o->runs = (int)v;
			break;
		case 'c':
			if (parse_cases(optarg, o->want))
				return -1;
			break;
		case 't':
			if (!strcmp(optarg, "pipe"))
				o->cs_pipe = true;
			else if (strcmp(optarg, "channel"))
				return -1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind != argc || o->bytes < o->block)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	double (*res)[NCASES], med[NCASES], col[1000];
	uint64_t bad_total = 0;
	struct opts o;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	shm_size_for(o.block);
	res = calloc((size_t)o.runs, sizeof(*res));
	if (!res)
		return 1;
	for (int r = 0; r < o.runs; r++) {
		fprintf(stderr, "run %d/%d:", r + 1, o.runs);
		for (int k = 0; k < NCASES; k++) {
			uint64_t bad = 0;

			if (!o.want[k])
				continue;
			res[r][k] = run_case(k, &o, &bad);
			if (res[r][k] < 0) {
				fprintf(stderr, "\nzcbench-ipc: case (%s) %s failed\n",
					cases[k].id, cases[k].name);
				return 1;
			}
			bad_total += bad;
			fprintf(stderr, " (%s) %.0f", cases[k].id, res[r][k]);
		}
		fprintf(stderr, " MB/s\n");
	}
	if (bad_total) {
		fprintf(stderr, "zcbench-ipc: %" PRIu64 " blocks arrived wrong\n",
			bad_total);
		return 1;
	}
	for (int k = 0; k < NCASES; k++) {
		for (int r = 0; r < o.runs; r++)
			col[r] = res[r][k];
		med[k] = median(col, o.runs);
	}
	if (o.json)
		report_json(&o, res, med);
	else
		report_text(&o, med);
	free(res);
	return 0;
}
