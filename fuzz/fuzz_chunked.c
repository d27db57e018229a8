/*
 * fuzz_chunked.c - libFuzzer target: the chunked body decoder
 * (http_chunked.h).
 *
 * The input is a request body followed by whatever comes after it.  It is
 * decoded as one segment, then cut into three segments at points taken
 * from the input, then byte by byte (short inputs); each segment is a
 * copy of exactly its bytes, so ASan sees any read outside it.  Asserted:
 *   - every call returns -EPROTO, -E2BIG or 0 <= n <= len, 0 only for an
 *     empty segment or a finished body; its data span lies inside the
 *     consumed prefix; errors are final; a finished body takes nothing;
 *   - the data, the bytes consumed and the result are the same however
 *     the input was cut;
 *   - a finished body decodes the same from its own bytes alone (the
 *     bytes after it played no part), and its data is within max_body.
 * Small limits, so that every -E2BIG is reached at fuzzing sizes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_chunked.h"

#include "fuzz_check.h"

static const struct http_chunked_limits lim = { 2048, 32, 64 };

struct outcome {
	ssize_t err;
	bool done;
	size_t consumed;
	uint8_t data[8192];	/* larger than any max_body */
	size_t data_len;
};

static void feed(struct http_chunked *d, const uint8_t *src, size_t len,
		 struct outcome *o)
{
	char *seg = malloc(len ? len : 1);
	size_t pos = 0, off, dlen;

	CHECK(seg);
	memcpy(seg, src, len);
	while (!o->err && !o->done && pos < len) {
		ssize_t n = http_chunked_step(d, seg + pos, len - pos, &off,
					      &dlen);

		if (n < 0) {
			CHECK(n == -EPROTO || n == -E2BIG);
			CHECK(dlen == 0);
			CHECK(!http_chunked_done(d));
			o->err = n;
			CHECK(http_chunked_step(d, seg + pos, len - pos, &off,
						&dlen) == n);
			break;
		}
		CHECK((size_t)n <= len - pos);
		CHECK(off + dlen <= (size_t)n);
		o->done = http_chunked_done(d);
		CHECK(n > 0 || o->done);
		CHECK(o->data_len + dlen <= lim.max_body);
		memcpy(o->data + o->data_len, seg + pos + off, dlen);
		o->data_len += dlen;
		pos += n;
		o->consumed += n;
	}
	if (o->done) {
		CHECK(http_chunked_step(d, seg + pos, len - pos, &off,
					&dlen) == 0);
		CHECK(dlen == 0);
	}
	free(seg);
}

static void decode(const uint8_t *data, size_t size, const size_t *cuts,
		   size_t ncuts, struct outcome *o)
{
	struct http_chunked d;
	size_t i, prev = 0;

	memset(o, 0, offsetof(struct outcome, data));
	o->data_len = 0;
	http_chunked_init(&d, &lim);
	for (i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : size;

		feed(&d, data + prev, end - prev, o);
		prev = end;
	}
	CHECK(o->done == http_chunked_done(&d));
	if (!o->err) {
		CHECK(d.body == o->data_len);
		if (!o->done)
			CHECK(o->consumed == size);
	}
}

static void check_same(const struct outcome *a, const struct outcome *b)
{
	CHECK(a->err == b->err && a->done == b->done);
	if (a->err)
		return;
	CHECK(a->consumed == b->consumed && a->data_len == b->data_len);
	CHECK(memcmp(a->data, b->data, a->data_len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome all, pieces, alone;
	size_t cuts[2], i;

	decode(data, size, NULL, 0, &all);

	cuts[0] = size ? data[size - 1] % (size + 1) : 0;
	cuts[1] = cuts[0] + (size - cuts[0]) / 3;
	decode(data, size, cuts, 2, &pieces);
	check_same(&all, &pieces);

	if (size <= 1024) {
		struct http_chunked d;

		memset(&pieces, 0, offsetof(struct outcome, data));
		pieces.data_len = 0;
		http_chunked_init(&d, &lim);
		for (i = 0; i < size; i++)
			feed(&d, data + i, 1, &pieces);
		check_same(&all, &pieces);
	}

	if (all.done) {
		decode(data, all.consumed, NULL, 0, &alone);
		check_same(&all, &alone);
		CHECK(alone.consumed == all.consumed);
	}
	return 0;
}
