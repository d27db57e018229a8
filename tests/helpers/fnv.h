/*
 * fnv.h - FNV-1a, for the preload test programs: enough to tell two
 * transcripts of bytes apart (not a cryptographic hash).
 */
#ifndef ZC_TESTS_FNV_H
#define ZC_TESTS_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV0 0xcbf29ce484222325ull

static inline uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 0x100000001b3ull;
	return h;
}

#endif
