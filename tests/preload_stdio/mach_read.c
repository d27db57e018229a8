/*
 * mach_read.c - the programs of the Mach paper's Tables 6-1 to 6-3, for today:
 *
 *   mach_read getc FILE   fopen + a getc() loop: "old_read" without the
 *                         preload, "new_read" (mapped stdio) with it
 *   mach_read fmap FILE   fopen + fmap(): reads by array reference
 *                         ("map_read"; needs the preload)
 *   mach_read read FILE   open + malloc + one read() of the whole file, then
 *                         reads by array reference (Table 6-3's "old_read")
 *
 * Each prints the byte count and a sum so the work cannot be optimised away.
 * With MACH_READ_IO set in the environment it also prints this process's
 * /proc/self/io on stderr at the end, one line "io: rchar N syscr N
 * read_bytes N" (zcbench mach counts I/O with it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void report_io(void)
{
	unsigned long long rchar = 0, syscr = 0, rbytes = 0, v;
	char key[64];
	FILE *f;

	if (!getenv("MACH_READ_IO") || !(f = fopen("/proc/self/io", "r")))
		return;
	while (fscanf(f, "%63[^:]: %llu\n", key, &v) == 2) {
		if (!strcmp(key, "rchar"))
			rchar = v;
		else if (!strcmp(key, "syscr"))
			syscr = v;
		else if (!strcmp(key, "read_bytes"))
			rbytes = v;
	}
	fclose(f);
	fprintf(stderr, "io: rchar %llu syscr %llu read_bytes %llu\n",
		rchar, syscr, rbytes);
}

/* open, malloc, read() the whole file, sum it by array reference. */
static int whole_read(const char *path)
{
	unsigned long long sum = 0;
	unsigned char *buf;
	struct stat st;
	size_t got = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return 1;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		return 1;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			perror("read");
			return 1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < got; i++)
		sum += buf[i];
	close(fd);
	free(buf);
	printf("%zu %llu\n", got, sum);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long sum = 0, n = 0;
	FILE *f;
	int c;

	if (argc == 3 && !strcmp(argv[1], "read")) {
		int rc = whole_read(argv[2]);

		fflush(stdout);
		report_io();
		return rc;
	}
	if (argc != 3 || !(f = fopen(argv[2], "r"))) {
		fprintf(stderr, "usage: %s getc|fmap|read FILE\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "fmap")) {
		void *(*fmap)(FILE *, size_t) = dlsym(RTLD_DEFAULT, "fmap");
		size_t (*fbufsize)(FILE *) = dlsym(RTLD_DEFAULT, "fbufsize");
		const unsigned char *data;
		size_t size, i;

		if (!fmap || !fbufsize) {
			fprintf(stderr, "fmap: run under libzc-preload.so\n");
			return 2;
		}
		data = fmap(f, 0);
		if (!data) {
			perror("fmap");
			return 1;
		}
		size = fbufsize(f);
		for (i = 0; i < size; i++)
			sum += data[i];
		n = size;
	} else {
		while ((c = getc(f)) != EOF) {
			sum += c;
			n++;
		}
	}
	printf("%llu %llu\n", n, sum);
	fclose(f);
	fflush(stdout);
	report_io();
	return 0;
}
