/*
 * fuzz_uri.c - libFuzzer target: request-target path normalization.
 *
 * Asserts, for every input:
 *   - the result is 0, 400 or 414, and on success the output is a relative
 *     path ("" or "a/b"): no leading or trailing '/', no empty, "." or ".."
 *     segment, no control byte, NUL-terminated at len;
 *   - the query lies inside the input;
 *   - normalizing the result again (as "/" + out) changes nothing, when
 *     the result is free of '%', '?' and '#' (which would be re-read);
 *   - a buffer one byte too small for the result gives 414, never a
 *     truncated path.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uri.h"

#include "fuzz_check.h"

static void check_relative(const char *out, size_t len)
{
	const char *s = out, *e;

	CHECK(strlen(out) == len);
	if (len == 0)
		return;
	CHECK(out[0] != '/' && out[len - 1] != '/');
	for (; s < out + len; s = e + 1) {
		e = memchr(s, '/', out + len - s);
		if (!e)
			e = out + len;
		CHECK(e > s);				/* no empty segment */
		CHECK(!(e - s == 1 && s[0] == '.'));
		CHECK(!(e - s == 2 && s[0] == '.' && s[1] == '.'));
	}
	for (s = out; s < out + len; s++)
		CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char out[1024], again[1024 + 2], small[1024];
	struct uri_path up, up2;
	enum uri_error e;

	e = uri_normalize_path(in, size, out, sizeof(out), &up);
	CHECK(e == URI_OK || e == URI_E_BAD || e == URI_E_TOO_LONG);
	if (up.query) {
		CHECK(up.query >= in && up.query + up.query_len <= in + size);
		CHECK(up.query[-1] == '?');
	}
	if (e != URI_OK) {
		CHECK(up.why != NULL);
		return 0;
	}
	check_relative(out, up.len);
	CHECK(up.len <= size);

	/* idempotent */
	if (!strpbrk(out, "%?#")) {
		size_t n;

		again[0] = '/';
		memcpy(again + 1, out, up.len);
		n = up.len + 1;
		if (up.trailing_slash && up.len)
			again[n++] = '/';
		e = uri_normalize_path(again, n, small, sizeof(small), &up2);
		CHECK(e == URI_OK);
		CHECK(up2.len == up.len && memcmp(small, out, up.len) == 0);
		CHECK(up2.trailing_slash == up.trailing_slash);
	}

	/* exactly enough room succeeds the same way; one byte less is 414 */
	e = uri_normalize_path(in, size, small, up.len + 1, &up2);
	if (e == URI_OK)
		CHECK(up2.len == up.len && memcmp(small, out, up.len + 1) == 0);
	else
		CHECK(e == URI_E_TOO_LONG);	/* a longer intermediate path */
	e = uri_normalize_path(in, size, small, up.len, &up2);
	CHECK(e == URI_E_TOO_LONG);
	return 0;
}
