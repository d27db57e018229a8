/*
 * Random arguments to every implemented Container Shipping call.  Pointers
 * come from a set that cannot corrupt this program (NULL, kernel and
 * unmapped addresses, a read-only page, a scratch area), so any failure is
 * the kernel's.  The guest's /init checks dmesg for BUG/Oops afterwards.
 */
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include "cs.h"

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static unsigned long long rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char *scratch, *rdonly, *hole;
static int pipefd[2], filefd = -1;

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
	switch (rnd() % 5) {
	case 0: return pipefd[0];
	case 1: return pipefd[1];
	case 2: return -1;
	case 3: return 1000;
	default: return filefd;	/* a regular file of its own */
	}
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	int calls = 0, ok = 0, maxid = 0;
	int *ids;
	time_t t0 = time(NULL);

	if (cs_init()) {
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
	if (pipe2(pipefd, O_NONBLOCK)) {
		report(0, "fuzz-init", "pipe");
		return 1;
	}
	/* The scratch area doubles as id arrays: some ids exist. */
	ids = (int *)(scratch + 8192);
	for (int i = 0; i < iters; i++) {
		long r = -1;

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
		switch (rnd() % 6) {
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
			if (NR_cs_read > 0)
				r = cs_read(rfd(), rndint(), rndint(), rptr(), rndint());
			break;
		case 5:
			if (NR_cs_write > 0)
				r = cs_write(rfd(), rndint(), rptr(), rptr(), rptr(),
					     rnd() % 4 ? 0 : rndint());
			break;
		}
		calls++;
		if (r >= 0)
			ok++;
		if (i % 512 == 0) {	/* drain the pipe now and then */
			char buf[65536];

			while (read(pipefd[0], buf, sizeof(buf)) > 0)
				;
		}
	}
	for (int k = 0; k <= maxid + 64; k++)
		cs_free(1, &k);
	info("fuzz: %d calls, %d succeeded, %lds", calls, ok,
	     (long)(time(NULL) - t0));
	report(1, "fuzz-no-crash", NULL);
	return test_failed;
}
