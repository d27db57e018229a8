/*
 * stdio_prog.c - exercises the stdio paths libzc-preload.so converts.
 *
 * Each mode prints a transcript that depends only on the file contents and
 * on stdio's documented semantics, so tests/preload_stdio.bats can compare
 * it byte for byte with and without the preload.  fmap()/fbufsize() exist
 * only under the preload; the "fmap" mode finds them with dlsym and prints
 * the same transcript either way (computed with fread when they are absent).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers/fnv.h"

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static FILE *xfopen(const char *p, const char *m)
{
	FILE *f = fopen(p, m);

	if (!f)
		die(p);
	return f;
}


/* ftell/fseek/fgetpos/ungetc/rewind/SEEK_END, each result printed. */
static int mode_seek(const char *path)
{
	FILE *f = xfopen(path, "r");
	char line[256];
	long marks[8] = { 0 };
	fpos_t pos;
	int n = 0, c;

	while (fgets(line, sizeof(line), f)) {
		printf("%ld:%zu ", ftell(f), strlen(line));
		if (n < 8)
			marks[n] = ftell(f);
		if (++n % 7 == 0 && n < 50) {
			fseek(f, marks[n % 8], SEEK_SET);
			printf("back %ld ", ftell(f));
		}
		if (n > 200)
			break;
	}
	printf("\neof %d err %d\n", feof(f), ferror(f));
	rewind(f);
	c = getc(f);
	printf("first %d ungetc-same %d ", c, ungetc(c, f));
	printf("again %d ", getc(f));
	printf("ungetc-other %d ", ungetc('#', f));
	printf("got %d tell %ld ", getc(f), ftell(f));
	ungetc('x', f);
	ungetc('y', f);
	printf("two %d %d %d\n", getc(f), getc(f), getc(f));
	fgetpos(f, &pos);
	fgets(line, sizeof(line), f);
	printf("line-a %s|", line);
	fsetpos(f, &pos);
	fgets(line, sizeof(line), f);
	printf("line-b %s|\n", line);
	printf("seek-end %d tell %ld ", fseek(f, -3, SEEK_END), ftell(f));
	while ((c = getc(f)) != EOF)
		printf("%d,", c);
	printf(" eof %d\n", feof(f));
	printf("seek-past %d ", fseek(f, 100, SEEK_END));
	printf("getc %d eof %d tell %ld\n", getc(f), feof(f), ftell(f));
	printf("seek-neg %d errno-einval %d\n", fseek(f, -1, SEEK_SET),
	       errno == EINVAL);
	fclose(f);
	return 0;
}

/* fread in odd sizes and getline, hashed. */
static int mode_read(const char *path)
{
	FILE *f = xfopen(path, "rb");
	char buf[7777];
	char *line = NULL;
	size_t cap = 0, n, total = 0;
	ssize_t l;
	uint64_t h = FNV0;
	int i = 0;

	while ((n = fread(buf, 1, 1 + (i++ * 977) % sizeof(buf), f)) > 0) {
		h = fnv(buf, n, h);
		total += n;
	}
	printf("fread %zu %016llx eof %d\n", total, (unsigned long long)h,
	       feof(f));
	fclose(f);
	f = xfopen(path, "r");
	h = FNV0;
	total = 0;
	while ((l = getline(&line, &cap, f)) >= 0) {
		h = fnv(line, l, h);
		total++;
	}
	printf("getline %zu %016llx\n", total, (unsigned long long)h);
	free(line);
	fclose(f);
	return 0;
}

/* Mach's fmap()/fbufsize(): the file as an array, mixed with fread. */
static int mode_fmap(const char *path, const char *wpath)
{
	void *(*fmap)(FILE *, size_t) = dlsym(RTLD_DEFAULT, "fmap");
	size_t (*fbufsize)(FILE *) = dlsym(RTLD_DEFAULT, "fbufsize");
	FILE *f = xfopen(path, "r");
	struct stat st;
	const char *data;
	char *copy, buf[4096];
	size_t size, n, off;

	if (fstat(fileno(f), &st))
		die("fstat");
	size = st.st_size;
	copy = malloc(size + 1);
	n = fread(copy, 1, size, f);
	rewind(f);
	if (fmap) {
		data = fmap(f, 0);
		if (!data)
			die("fmap");
		if (fbufsize(f) != size)
			printf("fbufsize %zu != %zu\n", fbufsize(f), size);
		if (n != size || memcmp(data, copy, size))
			printf("fmap data differs\n");
		/* fread and fseek keep working next to direct references. */
		for (off = 0; off < size; off += 4096 * 3 + 1) {
			fseek(f, off, SEEK_SET);
			n = fread(buf, 1, sizeof(buf), f);
			if (memcmp(buf, data + off, n))
				printf("fread at %zu differs\n", off);
		}
		if (fmap(f, size) != data)
			printf("second fmap moved\n");
	}
	printf("fmap %zu %016llx\n", size, (unsigned long long)fnv(copy, size, FNV0));
	fclose(f);
	free(copy);

	/* Write mapping: zero-filled buffer that reaches the file. */
	if (fmap && wpath) {
		char *w;
		FILE *o = xfopen(wpath, "w");

		fputs("head", o);
		w = fmap(o, 10000);
		if (!w || fbufsize(o) != 10000)
			die("fmap w");
		if (memcmp(w, "head", 4) || w[5] || w[9999])
			printf("write map not as expected\n");
		memcpy(w + 5000, "middle", 6);
		w[9999] = 'z';
		fclose(o);
		o = xfopen(wpath, "r");
		n = fread(buf, 1, sizeof(buf), o);
		fseek(o, 5000, SEEK_SET);
		n = fread(buf, 1, 6, o);
		fseek(o, 0, SEEK_END);
		printf("wmap %.6s %ld\n", buf, ftell(o));
		fclose(o);
	} else if (wpath) {
		printf("wmap middle 10000\n");
	}
	return 0;
}

/* A file that grows while read: the reader must see the new bytes. */
static int mode_append(const char *path)
{
	FILE *f = xfopen(path, "r"), *a;
	size_t n = 0, m = 0;
	int c;

	while (getc(f) != EOF)
		n++;
	printf("first %zu eof %d\n", n, feof(f));
	a = xfopen(path, "a");
	for (c = 0; c < 10000; c++)
		fputc('a' + c % 26, a);
	fclose(a);
	clearerr(f);
	while ((c = getc(f)) != EOF)
		m++;
	printf("then %zu tell %ld\n", m, ftell(f));
	a = xfopen(path, "a");
	fputs("tail\n", a);
	fclose(a);
	printf("seek-end %d tell %ld\n", fseek(f, -5, SEEK_END), ftell(f));
	printf("getc %c\n", getc(f));
	fclose(f);
	return 0;
}

/*
 * A file truncated while read must not kill the reader.  What it reads
 * after the truncation is not compared (it depends on buffering: the
 * read() mode stops at the new EOF, the mapped mode sees zeros first).
 */
static int mode_truncate(const char *path)
{
	FILE *f = xfopen(path, "r");
	char buf[100];
	size_t n = 0;

	if (fread(buf, 1, sizeof(buf), f) != sizeof(buf))
		die("short file");
	if (truncate(path, 10))
		die("truncate");
	while (getc(f) != EOF)
		n++;
	if (truncate(path, 0))
		die("truncate");
	rewind(f);
	while (getc(f) != EOF)
		n++;
	fclose(f);
	printf("survived\n");
	return 0;
}

struct tharg {
	const char *path;
	FILE *shared;
	uint64_t sum;
	size_t lines;
};

static void *reader(void *p)
{
	struct tharg *a = p;
	FILE *f = xfopen(a->path, "r");
	char line[512];
	int c;

	while ((c = getc(f)) != EOF)
		a->sum += c;
	fclose(f);
	/* The shared stream: fgets takes the FILE lock; lines are whole. */
	while (fgets(line, sizeof(line), a->shared))
		a->lines++;
	return NULL;
}

static int mode_threads(const char *path)
{
	struct tharg a[4];
	pthread_t t[4];
	FILE *shared = xfopen(path, "r");
	size_t lines = 0;
	int i;

	for (i = 0; i < 4; i++) {
		a[i] = (struct tharg){ .path = path, .shared = shared };
		pthread_create(&t[i], NULL, reader, &a[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		lines += a[i].lines;
		printf("sum %llu\n", (unsigned long long)a[i].sum);
	}
	printf("lines %zu\n", lines);
	fclose(shared);
	return 0;
}

/* fork before the first read: the child's reads move the shared offset. */
static int mode_fork(const char *path)
{
	FILE *f = xfopen(path, "r");
	char line[256];
	pid_t pid;
	int i, st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		for (i = 0; i < 3 && fgets(line, sizeof(line), f); i++)
			printf("child %s", line);
		exit(0); /* exit syncs the descriptor to the stream position */
	}
	waitpid(pid, &st, 0);
	printf("parent tell %ld\n", ftell(f));
	if (fgets(line, sizeof(line), f))
		printf("parent %s", line);
	fclose(f);
	return 0;
}

/* fdopen at a non-zero offset; fflush then read() on the descriptor. */
static int mode_fd(const char *path)
{
	char line[256], raw[6] = { 0 };
	int fd = open(path, O_RDONLY);
	FILE *f;

	if (fd < 0)
		die(path);
	if (read(fd, raw, 5) < 0)
		die("read");
	f = fdopen(fd, "r");
	if (!f)
		die("fdopen");
	printf("tell %ld\n", ftell(f));
	if (fgets(line, sizeof(line), f))
		printf("fdopen %s", line);
	fflush(f); /* POSIX: before using another handle */
	memset(raw, 0, sizeof(raw));
	printf("read %zd ", read(fd, raw, 5));
	printf("'%s'\n", raw);
	printf("tell %ld\n", ftell(f));
	if (fgets(line, sizeof(line), f))
		printf("after %s", line);
	fclose(f);
	return 0;
}

/*
 * Is the stream served from a mapping?  glibc's mapped mode makes the
 * stdio buffer the whole file, so the buffer size tells.  Prints 1 under
 * the preload (for a regular non-empty file), 0 without it.
 */
static int mode_mapped(const char *path)
{
	FILE *f = xfopen(path, "r");
	struct stat st;

	getc(f);
	fstat(fileno(f), &st);
	printf("mapped %d\n", st.st_size > 8192 && __fbufsize(f) == (size_t)st.st_size);
	fclose(f);
	return 0;
}

static volatile sig_atomic_t got;
static void on_bus(int sig)
{
	got = sig;
}

/* The program's own SIGBUS handler still runs and is reported back. */
static int mode_sigbus(const char *path)
{
	struct sigaction sa = { .sa_handler = on_bus }, old;
	FILE *f = xfopen(path, "r");

	getc(f);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGBUS, NULL, &old);
	printf("mine %d\n", old.sa_handler == on_bus);
	raise(SIGBUS);
	printf("got %d\n", got);
	printf("signal-old %d\n", signal(SIGBUS, SIG_DFL) == on_bus);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s seek|read|fmap|append|truncate|threads|fork|fd|mapped|sigbus FILE [WFILE]\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (!strcmp(argv[1], "seek"))
		return mode_seek(argv[2]);
	if (!strcmp(argv[1], "read"))
		return mode_read(argv[2]);
	if (!strcmp(argv[1], "fmap"))
		return mode_fmap(argv[2], argc > 3 ? argv[3] : NULL);
	if (!strcmp(argv[1], "append"))
		return mode_append(argv[2]);
	if (!strcmp(argv[1], "truncate"))
		return mode_truncate(argv[2]);
	if (!strcmp(argv[1], "threads"))
		return mode_threads(argv[2]);
	if (!strcmp(argv[1], "fork"))
		return mode_fork(argv[2]);
	if (!strcmp(argv[1], "fd"))
		return mode_fd(argv[2]);
	if (!strcmp(argv[1], "mapped"))
		return mode_mapped(argv[2]);
	if (!strcmp(argv[1], "sigbus"))
		return mode_sigbus(argv[2]);
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
