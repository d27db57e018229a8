/* fuzz_check.h - CHECK(x): an invariant a fuzz target asserts.  abort()
 * so libFuzzer (and the corpus replay) report the input that broke it. */
#ifndef ZC_FUZZ_CHECK_H
#define ZC_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(x) \
	do { \
		if (!(x)) { \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", \
				__FILE__, __LINE__, #x); \
			abort(); \
		} \
	} while (0)

#endif
