/*
 * replay_main.c - run a libFuzzer target over a corpus without libFuzzer.
 *
 *   fuzz-replay-http DIR|FILE...
 *
 * Feeds every regular file (directories: every file in them) to
 * LLVMFuzzerTestOneInput, once each.  The targets abort() when an invariant
 * breaks, so this is the corpus as a regression test: it runs in every
 * build (any compiler, with or without sanitizers).  Exits 1 if it replayed
 * nothing, so a lost corpus cannot pass silently.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long replayed;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	/* A copy of exactly n bytes, so ASan sees any read past the input. */
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	replayed++;
	return 0;
}

static int replay(const char *path)
{
	struct stat st;
	struct dirent **ents;
	int n, i, rc = 0;

	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	n = scandir(path, &ents, NULL, alphasort);
	if (n < 0) {
		perror(path);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char *p;

		if (ents[i]->d_name[0] != '.' &&
		    asprintf(&p, "%s/%s", path, ents[i]->d_name) >= 0) {
			if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
			    replay_file(p) != 0)
				rc = -1;
			free(p);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

int main(int argc, char **argv)
{
	int i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++)
		if (replay(argv[i]) != 0)
			rc = 1;
	printf("replayed %lu inputs\n", replayed);
	return rc || replayed == 0;
}
