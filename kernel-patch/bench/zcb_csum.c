/*
 * zcb_csum - what checksum caching saves: CPU per GB sent over TCP through
 * a veth pair with tx checksumming off (the sending kernel sums every byte
 * in software), the same file sent again and again.
 *
 *   zcb_csum --tx-ns FILE --rx-ns FILE --addr IP --mb N --file-kb K --runs R
 *
 * The namespaces are vethpair's (tests/zchttpd/vethpair.c), the sink
 * listens on IP in rx-ns.  Cases, interleaved run by run:
 *   sealed-iol-cache    a sealed memfd's IO-Lite buffers sent by iol_write,
 *                       the cache on: its sums come from the cache
 *   sealed-iol-nocache  the same with /sys/kernel/zc/csum_cache 0
 *   file-iol            an ordinary tmpfs file by iol_write: not cacheable
 *                       (its pages may change), summed every time
 *   file-sendfile       the ordinary file by sendfile(2): a server without
 *                       zcstack
 * Each run sends N MiB (the K KiB file over and over) on one connection.
 * One BENCH-JSON line per run; PASS per case when every run's bytes
 * arrived, FAIL otherwise, and FAIL when either namespace counted a
 * checksum error.
 */
#include "bench.h"
#include "netns.h"
#include <sys/mman.h>
#include <sys/sendfile.h>

#define PORT		7712

enum method { M_IOL, M_SENDFILE };

struct bcase {
	const char *name;
	int sealed;		/* source: the sealed memfd, else the file */
	int cache;		/* /sys/kernel/zc/csum_cache */
	enum method m;
};

static const struct bcase cases[] = {
	{ "sealed-iol-cache", 1, 1, M_IOL },
	{ "sealed-iol-nocache", 1, 0, M_IOL },
	{ "file-iol", 0, 1, M_IOL },
	{ "file-sendfile", 0, 1, M_SENDFILE },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* sendfile all of fd's size bytes from offset 0; 0 or -1. */
static int sendfile_all(int s, int fd, long long size)
{
	off_t off = 0;

	while (off < size) {
		ssize_t w = sendfile(s, fd, &off, (size_t)(size - off));

		if (w <= 0)
			return -1;
	}
	return 0;
}

/* A tmpfs file (sealed memfd or ordinary file) of size bytes. */
static int make_source(int sealed, long long size)
{
	unsigned char *b = malloc((size_t)size);
	int fd;

	if (!b)
		return -1;
	fill_seeded(b, (size_t)size, sealed ? 1 : 2);
	fd = sealed ? memfd_create("zcb", MFD_ALLOW_SEALING) :
		      open("/tmp/zcb_csum.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && (write(fd, b, (size_t)size) != size ||
			(sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE |
					 F_SEAL_SHRINK | F_SEAL_GROW)))) {
		close(fd);
		fd = -1;
	}
	free(b);
	return fd;
}

/*
 * One run of case c: total bytes of the source (fd, its IO-Lite slices
 * sl[0..n)) on one connection.  Prints its BENCH-JSON line; 1 when all
 * arrived.
 */
static int run_case(const struct bcase *c, int run, int fd,
		    const struct iol_slice *sl, int n, long long size,
		    long long total, const char *addr)
{
	struct bench_clock t0, t1;
	long long comp0, cach0, comp1, cach1, sent = 0, got;
	int s, err = 0;

	if (sysfs_write("/sys/kernel/zc/csum_cache", c->cache ? "1" : "0"))
		return 0;
	s = bench_connect(addr, PORT);
	if (s < 0)
		return 0;
	comp0 = sysfs_ll("/sys/kernel/zc/csum_bytes_computed");
	cach0 = sysfs_ll("/sys/kernel/zc/csum_bytes_cached");
	bench_clock_read(&t0);
	while (!err && sent < total) {
		err = c->m == M_IOL ? iol_write_all(s, sl, n) :
				      sendfile_all(s, fd, size);
		sent += size;
	}
	got = bench_finish(s);
	bench_clock_read(&t1);
	bench_clock_diff(&t1, &t0);
	comp1 = sysfs_ll("/sys/kernel/zc/csum_bytes_computed");
	cach1 = sysfs_ll("/sys/kernel/zc/csum_bytes_cached");
	printf("BENCH-JSON {\"bench\":\"csum\",\"case\":\"%s\",\"run\":%d,"
	       "\"bytes\":%lld,\"file_bytes\":%lld,\"wall_s\":%.6f,"
	       "\"proc_cpu_s\":%.6f,\"all_cpu_s\":%.6f,"
	       "\"csum_computed\":%lld,\"csum_cached\":%lld,\"ok\":%s}\n",
	       c->name, run, got, size, t1.wall, t1.proc, t1.all,
	       comp1 - comp0, cach1 - cach0,
	       !err && got == sent ? "true" : "false");
	fflush(stdout);
	if (err || got != sent)
		info("zcb_csum %s run %d: sent %lld, sink got %lld (%s)",
		     c->name, run, sent, got, err ? strerror(errno) : "short");
	return !err && got == sent;
}

static int snmp_in(int ns, struct snmp *s)
{
	return setns(ns, CLONE_NEWNET) == 0 ? snmp_read(s) : -1;
}

int main(int argc, char **argv)
{
	long long mb = 4, file_kb = 256, runs = 1;
	const char *tx_ns = NULL, *rx_ns = NULL, *addr = NULL;
	const struct bench_opt opts[] = {
		{ "--mb", &mb, NULL }, { "--file-kb", &file_kb, NULL },
		{ "--runs", &runs, NULL }, { "--tx-ns", NULL, &tx_ns },
		{ "--rx-ns", NULL, &rx_ns }, { "--addr", NULL, &addr },
		{ NULL, NULL, NULL },
	};
	struct iol_slice sl[2][MAXS];
	int nsl[2], src[2], ok[NCASES], tx, rx;
	long long size, total;
	struct snmp a0, a1, b0, b1;
	pid_t sink;

	signal(SIGPIPE, SIG_IGN);
	if (bench_args(argc, argv, opts) || !tx_ns || !rx_ns || !addr ||
	    mb <= 0 || file_kb <= 0 || file_kb % 4 || runs <= 0) {
		fprintf(stderr, "usage: zcb_csum --tx-ns FILE --rx-ns FILE "
			"--addr IP [--mb N] [--file-kb K] [--runs R]\n");
		return 2;
	}
	size = file_kb * 1024;
	total = (mb * 1024 * 1024 + size - 1) / size * size;
	tx = open(tx_ns, O_RDONLY | O_CLOEXEC);
	rx = open(rx_ns, O_RDONLY | O_CLOEXEC);
	if (iol_init() || tx < 0 || rx < 0 || snmp_in(rx, &b0) ||
	    snmp_in(tx, &a0)) {
		report(0, "bench-csum-setup", "IO-Lite calls or namespaces: %s",
		       strerror(errno));
		return 1;
	}
	sink = bench_sink(rx_ns, addr, PORT);
	for (int k = 0; k < 2; k++) {
		src[k] = make_source(k == 0, size);
		nsl[k] = -1;
		if (src[k] >= 0 && lseek(src[k], 0, SEEK_SET) == 0)
			nsl[k] = (int)iol_read_n(src[k], sl[k], MAXS,
						 (unsigned long long)size);
	}
	if (sink < 0 || src[0] < 0 || src[1] < 0 || nsl[0] <= 0 ||
	    nsl[1] <= 0) {
		report(0, "bench-csum-setup", "sink, sources or iol_read: %s",
		       strerror(errno));
		return 1;
	}
	info("zcb_csum: %lld bytes per run from a %lld KiB file, %lld runs",
	     total, file_kb, runs);
	for (int c = 0; c < NCASES; c++)
		ok[c] = 1;
	/* Interleaved: every case once per run, so load changes hit all. */
	for (int r = 0; r < runs; r++)
		for (int c = 0; c < NCASES; c++) {
			int k = cases[c].sealed ? 0 : 1;

			ok[c] &= run_case(&cases[c], r, src[k], sl[k], nsl[k],
					  size, total, addr);
		}
	sysfs_write("/sys/kernel/zc/csum_cache", "1");
	for (int c = 0; c < NCASES; c++)
		bench_report_case("bench-csum", cases[c].name, ok[c]);
	report(bench_sink_stop(sink, addr, PORT), "bench-csum-sink",
	       "the sink did not exit cleanly");
	if (snmp_in(rx, &b1) || snmp_in(tx, &a1))
		report(0, "bench-csum-snmp", "snmp: %s", strerror(errno));
	else
		report(a1.csum_err == a0.csum_err && b1.csum_err == b0.csum_err,
		       "bench-csum-no-csum-errors",
		       "InCsumErrors +%lld (tx) +%lld (rx)",
		       a1.csum_err - a0.csum_err, b1.csum_err - b0.csum_err);
	iol_free(sl[0], nsl[0]);
	iol_free(sl[1], nsl[1]);
	unlink("/tmp/zcb_csum.dat");
	return test_failed;
}
