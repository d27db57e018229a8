/*
 * mach_read.c - the programs of the Mach paper's Table 6-1, for today:
 *
 *   mach_read getc FILE   fopen + a getc() loop: "old_read" without the
 *                         preload, "new_read" (mapped stdio) with it
 *   mach_read fmap FILE   fopen + fmap(): reads by array reference
 *                         ("map_read"; needs the preload)
 *
 * Both print the byte count and a sum so the work cannot be optimised away.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	unsigned long long sum = 0, n = 0;
	FILE *f;
	int c;

	if (argc != 3 || !(f = fopen(argv[2], "r"))) {
		fprintf(stderr, "usage: %s getc|fmap FILE\n", argv[0]);
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
	return 0;
}
