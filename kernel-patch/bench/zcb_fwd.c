/*
 * zcb_fwd - forwarding to a TCP socket (loopback, to a sink that counts):
 * IO-Lite's iol_read/iol_write against read/write and the splice family,
 * for a pipe and for a file as the source.
 *
 *   zcb_fwd --mb N --file-kb K --chunk-kb C --runs R
 *
 *   pipe -> socket: a producer child write()s N MiB into a pipe; this
 *     process moves it to the socket by read+write (through a C KiB
 *     buffer), splice(2) (pipe to socket) or iol_read+iol_write (C KiB per
 *     iol_read; the buffers freed after each iol_write).
 *   file -> socket: a K KiB tmpfs file sent over and over until N MiB by
 *     read+write, sendfile(2), splice(2) through a pipe, or iol_read+
 *     iol_write.
 * Cases interleaved run by run.  The forwarder's own CPU (proc_cpu_s) is
 * what the methods differ in; all_cpu_s adds the producer and the sink.
 * One BENCH-JSON line per run; PASS per case when every run's bytes
 * arrived.
 */
#include "bench.h"
#include <sys/sendfile.h>

#define PORT		7713
#define ADDR		"127.0.0.1"

enum source { S_PIPE, S_FILE };
enum method { M_RW, M_SPLICE, M_SENDFILE, M_IOL };

struct bcase {
	const char *name;
	enum source src;
	enum method m;
};

static const struct bcase cases[] = {
	{ "pipe-rw", S_PIPE, M_RW },
	{ "pipe-splice", S_PIPE, M_SPLICE },
	{ "pipe-iol", S_PIPE, M_IOL },
	{ "file-rw", S_FILE, M_RW },
	{ "file-sendfile", S_FILE, M_SENDFILE },
	{ "file-splice", S_FILE, M_SPLICE },
	{ "file-iol", S_FILE, M_IOL },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

static long long chunk;		/* bytes per call */
static unsigned char *buf;	/* chunk bytes: read+write, producer */

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* splice exactly n bytes from in to out; 0 or -1. */
static int splice_all(int in, int out, size_t n)
{
	while (n) {
		ssize_t w = splice(in, NULL, out, NULL, n, SPLICE_F_MOVE);

		if (w <= 0)
			return -1;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Move one call's worth from src to the socket s: up to chunk bytes.
 * Returns the bytes moved, 0 at the end of src, -1 on error.  p is the
 * pipe splice goes through for a file source.
 */
static long long move_once(enum method m, int src, int s, const int *p)
{
	struct iol_slice sl[MAXS];
	ssize_t r;
	long n;

	switch (m) {
	case M_RW:
		r = read(src, buf, (size_t)chunk);
		if (r > 0 && write_all(s, buf, (size_t)r))
			return -1;
		return r;
	case M_SPLICE:
		if (!p)
			return splice(src, NULL, s, NULL, (size_t)chunk,
				      SPLICE_F_MOVE);
		r = splice(src, NULL, p[1], NULL, (size_t)chunk, SPLICE_F_MOVE);
		if (r > 0 && splice_all(p[0], s, (size_t)r))
			return -1;
		return r;
	case M_SENDFILE:
		return sendfile(s, src, NULL, (size_t)chunk);
	case M_IOL:
		n = iol_read_n(src, sl, MAXS, (unsigned long long)chunk);
		if (n <= 0)
			return n;
		r = 0;
		for (long i = 0; i < n; i++)
			r += (ssize_t)sl[i].len;
		if (iol_write_all(s, sl, (int)n))
			r = -1;
		iol_free(sl, n);
		return r;
	}
	return -1;
}

/* A producer child writing total bytes into a new pipe; its read end. */
static int producer(long long total, pid_t *pid)
{
	int p[2];

	if (pipe(p))
		return -1;
	fcntl(p[1], F_SETPIPE_SZ, (int)chunk);
	*pid = fork();
	if (*pid < 0)
		return -1;
	if (*pid == 0) {
		close(p[0]);
		for (long long left = total; left > 0; left -= chunk)
			if (write_all(p[1], buf, (size_t)(left < chunk ?
							  left : chunk)))
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	fcntl(p[0], F_SETPIPE_SZ, (int)chunk);
	return p[0];
}

/* One run of case c: total bytes to the sink; 1 when all arrived. */
static int run_case(const struct bcase *c, int run, int file, long long size,
		    long long total)
{
	struct bench_clock t0, t1;
	long long moved = 0, got, r = 0;
	int s, src, sp[2] = { -1, -1 }, st = 0;
	pid_t prod = -1;

	s = bench_connect(ADDR, PORT);
	if (s < 0)
		return 0;
	if (c->src == S_FILE && c->m == M_SPLICE) {
		if (pipe(sp))
			return 0;
		fcntl(sp[1], F_SETPIPE_SZ, (int)chunk);
	}
	src = c->src == S_PIPE ? producer(total, &prod) : file;
	bench_clock_read(&t0);
	while (src >= 0 && moved < total) {
		r = move_once(c->m, src, s, sp[0] >= 0 ? sp : NULL);
		if (r < 0)
			break;
		if (r == 0) {
			/* End of the file: from its start again. */
			if (c->src == S_PIPE || lseek(file, 0, SEEK_SET))
				break;
			continue;
		}
		moved += r;
	}
	got = bench_finish(s);
	bench_clock_read(&t1);
	bench_clock_diff(&t1, &t0);
	if (prod > 0) {
		close(src);
		waitpid(prod, &st, 0);
	} else {
		lseek(file, 0, SEEK_SET);
	}
	if (sp[0] >= 0) {
		close(sp[0]);
		close(sp[1]);
	}
	printf("BENCH-JSON {\"bench\":\"forward\",\"case\":\"%s\",\"run\":%d,"
	       "\"bytes\":%lld,\"file_bytes\":%lld,\"chunk\":%lld,"
	       "\"wall_s\":%.6f,\"proc_cpu_s\":%.6f,\"all_cpu_s\":%.6f,"
	       "\"ok\":%s}\n", c->name, run, got,
	       c->src == S_FILE ? size : 0, chunk, t1.wall, t1.proc, t1.all,
	       moved == total && got == total ? "true" : "false");
	fflush(stdout);
	if (moved != total || got != total)
		info("zcb_fwd %s run %d: moved %lld of %lld, sink got %lld (%s)",
		     c->name, run, moved, total, got,
		     r < 0 ? strerror(errno) : "short");
	return moved == total && got == total;
}

int main(int argc, char **argv)
{
	long long mb = 4, file_kb = 1024, chunk_kb = 256, runs = 1;
	const struct bench_opt opts[] = {
		{ "--mb", &mb, NULL }, { "--file-kb", &file_kb, NULL },
		{ "--chunk-kb", &chunk_kb, NULL }, { "--runs", &runs, NULL },
		{ NULL, NULL, NULL },
	};
	long long size, total;
	int file, ok[NCASES];
	pid_t sink;

	signal(SIGPIPE, SIG_IGN);
	if (bench_args(argc, argv, opts) || mb <= 0 || file_kb <= 0 ||
	    chunk_kb <= 0 || chunk_kb > 1024 || runs <= 0) {
		fprintf(stderr, "usage: zcb_fwd [--mb N] [--file-kb K] "
			"[--chunk-kb C (<= 1024)] [--runs R]\n");
		return 2;
	}
	chunk = chunk_kb * 1024;
	size = file_kb * 1024;
	total = mb * 1024 * 1024;
	buf = malloc((size_t)(chunk > size ? chunk : size));
	if (!buf || iol_init()) {
		report(0, "bench-fwd-setup", "memory or IO-Lite calls");
		return 1;
	}
	/* The file: K KiB of deterministic bytes; buf keeps its first chunk. */
	fill_seeded(buf, (size_t)(chunk > size ? chunk : size), 3);
	file = open("/tmp/zcb_fwd.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (file < 0 || write_all(file, buf, (size_t)size) ||
	    lseek(file, 0, SEEK_SET)) {
		report(0, "bench-fwd-setup", "file: %s", strerror(errno));
		return 1;
	}
	sink = bench_sink(NULL, ADDR, PORT);
	if (sink < 0) {
		report(0, "bench-fwd-setup", "sink: %s", strerror(errno));
		return 1;
	}
	info("zcb_fwd: %lld bytes per run, %lld KiB per call, file %lld KiB, "
	     "%lld runs", total, chunk_kb, file_kb, runs);
	for (int c = 0; c < NCASES; c++)
		ok[c] = 1;
	for (int r = 0; r < runs; r++)
		for (int c = 0; c < NCASES; c++)
			ok[c] &= run_case(&cases[c], r, file, size, total);
	for (int c = 0; c < NCASES; c++)
		bench_report_case("bench-fwd", cases[c].name, ok[c]);
	report(bench_sink_stop(sink, ADDR, PORT), "bench-fwd-sink",
	       "the sink did not exit cleanly");
	unlink("/tmp/zcb_fwd.dat");
	return test_failed;
}
