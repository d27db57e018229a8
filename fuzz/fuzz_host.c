/*
 * fuzz_host.c - libFuzzer target: the site name of a Host value.
 *
 * Asserts, for every input:
 *   - the result is -1 or a length <= HTTP_HOST_MAX, NUL-terminated there,
 *     with no upper-case letter, no ':' outside brackets, no control,
 *     space or delimiter byte ('/', '@', '\\');
 *   - the name taken again gives itself (idempotent);
 *   - a buffer of exactly its length + 1 succeeds, one byte less fails.
 */
#include <stdint.h>
#include <string.h>

#include "http_host.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char out[HTTP_HOST_MAX + 8], again[HTTP_HOST_MAX + 8];
	ssize_t n, m;

	n = http_host_name(in, size, out, sizeof(out));
	CHECK(n >= -1 && n <= HTTP_HOST_MAX);
	if (n < 0)
		return 0;
	CHECK(strlen(out) == (size_t)n);
	CHECK((size_t)n <= size);
	for (ssize_t i = 0; i < n; i++) {
		CHECK(!(out[i] >= 'A' && out[i] <= 'Z'));
		CHECK((unsigned char)out[i] > 0x20 && (unsigned char)out[i] < 0x7f);
		CHECK(out[i] != '/' && out[i] != '@' && out[i] != '\\');
		if (out[0] != '[')
			CHECK(out[i] != ':' && out[i] != '[' && out[i] != ']');
	}
	if (n && out[0] == '[')
		CHECK(out[n - 1] == ']');

	m = http_host_name(out, (size_t)n, again, sizeof(again));
	/* "a.." loses one dot per pass: idempotent from the second on. */
	if (!(n && out[n - 1] == '.')) {
		CHECK(m == n && memcmp(again, out, (size_t)n + 1) == 0);
	}

	m = http_host_name(in, size, again, (size_t)n + 1);
	CHECK(m == n);
	if (n) {
		m = http_host_name(in, size, again, (size_t)n);
		CHECK(m == -1);
	}
	return 0;
}
