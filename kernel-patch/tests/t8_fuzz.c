/*
 * Random arguments to all six Container Shipping calls and the two IO-Lite
 * calls (iol_read, iol_write: slices from earlier reads, mutated).  Pointers come
 * from a set that cannot corrupt this program (NULL, kernel and unmapped
 * addresses, a read-only page, a scratch area), so any failure is the
 * kernel's.  Descriptors: both ends of a pipe, TCP and AF_UNIX stream
 * sockets, a UDP socket, a regular file, procfs and sysfs files, and bad
 * numbers.  None of them may block the fuzzer: pipes and sockets are
 * non-blocking, and the sockets have a send timeout for the rest of a
 * cs_write that started (which is sent blocking).  The guest's /init
 * checks dmesg for BUG/Oops/WARNING afterwards.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include "iol.h"

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static unsigned long long rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char *scratch, *rdonly, *hole;
static int pipefd[2], filefd = -1, tcp[2] = { -1, -1 }, unx[2] = { -1, -1 };
static int udp = -1, procfd = -1, sysfd = -1;

/* Valid cs_read arrays (CS_MAX_COUNT entries), used half of the time so
 * that calls get past the argument checks into the I/O paths. */
static int g_cids[CS_MAX_COUNT], g_offs[CS_MAX_COUNT], g_lens[CS_MAX_COUNT];
static int g_sizes[CS_MAX_COUNT];
static void *g_addrs[CS_MAX_COUNT];
static cs_args good = { g_cids, g_offs, g_lens, g_sizes, g_addrs };

/* Slices the last successful iol_read returned. */
static struct iol_slice g_sl[IOL_MAX_SLICES];
static long g_nsl;

static void *rptr(void)
{
	switch (rnd() % 8) {
	case 0: return NULL;
	case 1: return (void *)0xffff888000000000ULL;
	case 2: return hole;
	case 3: return rdonly;
	case 4: return scratch + (rnd() % 4096);	/* misaligned too */
	case 5: return (void *)(unsigned long)(rnd() & 0xffff);
	default: return scratch + 8192;
	}
}

static int rndint(void)
{
	switch (rnd() % 6) {
	case 0: return 0;
	case 1: return -1;
	case 2: return (int)(rnd() % 8);
	case 3: return (int)(rnd() % 70000);
	case 4: return 0x7fffffff;
	default: return (int)rnd();
	}
}

static int rfd(void)
{
	switch (rnd() % 12) {
	case 0: return pipefd[0];
	case 1: return pipefd[1];
	case 2: return -1;
	case 3: return 1000;
	case 4: return tcp[0];
	case 5: return tcp[1];
	case 6: return unx[0];
	case 7: return unx[1];
	case 8: return udp;
	case 9: return procfd;
	case 10: return sysfd;
	default: return filefd;	/* a regular file of its own */
	}
}

/* A 64-bit value: small, near a page, huge, or random. */
static unsigned long long rnd64(void)
{
	switch (rnd() % 6) {
	case 0: return 0;
	case 1: return rnd() % 16;
	case 2: return rnd() % 20000;
	case 3: return ~0ULL - rnd() % 4096;
	case 4: return 1ULL << (rnd() % 64);
	default: return rnd();
	}
}

/* iol_read: random arguments, or good slices and random sizes. */
static long fuzz_iol_read(int *maxid)
{
	long r;

	if (rnd() % 2)
		return iol_read(rfd(), rptr(), (unsigned int)rndint(),
				rnd() % 4 ? 0 : (unsigned int)rndint());
	if (rnd() % 4 == 0)	/* the file again from its start */
		lseek(filefd, 0, SEEK_SET);
	g_sl[0].len = rnd() % 4 ? 1 + rnd() % 200000 : rnd64();
	r = iol_read(rfd(), g_sl, rnd() % 2 ? 1 + rnd() % 8 :
		     (unsigned int)rndint(), rnd() % 8 ? 0 : 1);
	if (r > 0) {
		g_nsl = r;
		for (long j = 0; j < r; j++)
			if ((int)g_sl[j].buf > *maxid)
				*maxid = (int)g_sl[j].buf;
	}
	return r;
}

/* iol_write: random arguments, or slices of real buffers, some mutated. */
static long fuzz_iol_write(void)
{
	struct iol_slice s[8];
	unsigned int n = 1 + rnd() % 8;

	if (rnd() % 2)
		return iol_write(rfd(), rptr(), (unsigned int)rndint(),
				 rnd() % 4 ? 0 : (unsigned int)rndint());
	for (unsigned int k = 0; k < n; k++) {
		s[k] = g_sl[g_nsl ? rnd() % g_nsl : 0];
		switch (rnd() % 8) {
		case 0: s[k].off = rnd64(); break;
		case 1: s[k].len = rnd64(); break;
		case 2: s[k].gen += rnd() % 3 - 1; break;
		case 3: s[k].buf = rnd64(); break;
		case 4: s[k].off += rnd() % 64; s[k].len = rnd() % 9000; break;
		default: break;
		}
	}
	return iol_write(rfd(), s, n, rnd() % 8 ? 0 : IOL_CHECK);
}

/* Non-blocking, and a cs_write that started gives up after 50 ms. */
static void tame(int fd)
{
	struct timeval tv = { 0, 50 * 1000 };

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void sockets(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l >= 0 && !bind(l, (void *)&a, sizeof(a)) && !listen(l, 1) &&
	    !getsockname(l, (void *)&a, &len)) {
		tcp[0] = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(tcp[0], (void *)&a, sizeof(a)) == 0)
			tcp[1] = accept(l, NULL, NULL);
	}
	close(l);
	socketpair(AF_UNIX, SOCK_STREAM, 0, unx);
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < 2; i++) {
		tame(tcp[i]);
		tame(unx[i]);
	}
	tame(udp);
}

/* Empty what the calls left in pipes and sockets. */
static void drain(void)
{
	static char buf[65536];
	int fds[] = { pipefd[0], tcp[0], tcp[1], unx[0], unx[1] };

	for (unsigned int k = 0; k < sizeof(fds) / sizeof(fds[0]); k++)
		while (read(fds[k], buf, sizeof(buf)) > 0)
			;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100000;
	int calls = 0, ok = 0, maxid = 0, okc[8] = { 0 };
	int *ids;
	time_t t0 = time(NULL);

	if (iol_init()) {
		report(0, "fuzz-init", "no syscall numbers");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	scratch = mmap(NULL, 4 * 16384, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rdonly = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 4096);
	filefd = open("/tmp/fuzzfile", O_RDWR | O_CREAT | O_TRUNC, 0600);
	procfd = open("/proc/self/stat", O_RDONLY);
	sysfd = open("/sys/kernel/zc/abi_version", O_RDONLY);
	if (pipe2(pipefd, O_NONBLOCK)) {
		report(0, "fuzz-init", "pipe");
		return 1;
	}
	sockets();
	/* The scratch area doubles as id arrays: some ids exist. */
	ids = (int *)(scratch + 8192);
	for (int i = 0; i < iters; i++) {
		long r = -1;
		int which;

		if (i % 256 == 0) {	/* free what the calls created */
			for (int k = 0; k <= maxid; k++)
				cs_free(1, &k);
			maxid = 0;
		}
		if (i % 64 == 0) {
			for (int k = 0; k < 16; k++)
				ids[k] = cs_alloc(1 + (int)(rnd() % 40000),
						  NULL, 0);
			for (int k = 0; k < 16; k++)
				if (ids[k] > maxid)
					maxid = ids[k];
			if (rnd() % 2)
				memcpy(scratch + (rnd() % 4096), ids, 64);
		}
		switch (which = (int)(rnd() % 8)) {
		case 0:
			r = cs_alloc(rndint(), rptr(), rndint());
			if (r > maxid)
				maxid = (int)r;
			break;
		case 1:
			r = cs_free(rndint(), rptr());
			break;
		case 2:
			r = cs_map(rndint(), rptr(), rptr(), rnd() % 4 ? 0 : rndint());
			break;
		case 3:
			r = cs_unmap(rndint(), rptr());
			break;
		case 4:
			if (rnd() % 2) {
				r = cs_read(rfd(), rndint(), rndint(), rptr(),
					    rndint());
				break;
			}
			r = cs_read(rfd(), 1 + (int)(rnd() % 200000),
				    rnd() % 2 ? 1 + (int)(rnd() % 8) : rndint(),
				    &good, rnd() % 2 ? CS_MAPALL : 0);
			for (int j = 0; j < r; j++)
				if (g_cids[j] > maxid)
					maxid = g_cids[j];
			break;
		case 5:
			if (rnd() % 2) {
				r = cs_write(rfd(), rndint(), rptr(), rptr(),
					     rptr(), rnd() % 4 ? 0 : rndint());
				break;
			}
			r = cs_write(rfd(), 1 + (int)(rnd() % 4), ids + rnd() % 12,
				     rnd() % 2 ? NULL : rptr(),
				     rnd() % 2 ? NULL : rptr(), 0);
			break;
		case 6:
			r = fuzz_iol_read(&maxid);
			break;
		case 7:
			r = fuzz_iol_write();
			break;
		}
		calls++;
		if (r >= 0) {
			ok++;
			okc[which]++;
		}
		if (i % 64 == 0)	/* make room now and then */
			drain();
		if (i % 1024 == 0) {	/* the file must not fill the guest */
			ftruncate(filefd, 0);
			pwrite(filefd, scratch, 3 * 16384, 0);
		}
	}
	for (int k = 0; k <= maxid + 64; k++)
		cs_free(1, &k);
	info("fuzz: %d calls, %d succeeded (alloc %d free %d map %d unmap %d "
	     "read %d write %d iol_read %d iol_write %d), %lds", calls, ok,
	     okc[0], okc[1], okc[2], okc[3], okc[4], okc[5], okc[6], okc[7],
	     (long)(time(NULL) - t0));
	/* the fuzzer must have got past the checks, both ways */
	CHECK("fuzz-iol-calls-succeeded", okc[6] > 100 && okc[7] > 100,
	      "iol_read %d iol_write %d succeeded", okc[6], okc[7]);
	report(1, "fuzz-no-crash", NULL);
	return test_failed;
}
