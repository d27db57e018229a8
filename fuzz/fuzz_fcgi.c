/*
 * fuzz_fcgi.c - libFuzzer target: the FastCGI protocol library
 * (fcgi_proto.h) fed a record stream, and the CGI response head parser.
 *
 * The input is read the way a peer's bytes are: record headers one after
 * the other (each decoded by both decoders), BEGIN_REQUEST and
 * END_REQUEST bodies, the UNKNOWN_TYPE answer to a type above 11, the PARAMS stream joined and walked as name-value
 * pairs (GET_VALUES contents too, and the raw input as a shortcut), the
 * STDOUT stream and the raw input as a CGI response head.  Asserted:
 *   - the decoders return 0 or -EPROTO, agree with each other, and what
 *     they accept satisfies the header's rules and encodes back to the
 *     same bytes (the reserved byte aside);
 *   - BEGIN/END bodies decode only at 8 bytes and round-trip;
 *   - every name-value pair lies inside its block, the walk advances and
 *     ends exactly at the end or at an error that leaves *off alone, and
 *     every pair re-encodes and decodes to the same name and value;
 *   - cgi_head_parse fed all at once, in two pieces at a split point
 *     taken from the input, and byte by byte on a moving buffer (short
 *     inputs) gives the same result; every pointer lies inside the head;
 *     values are trimmed and free of control bytes; the limits hold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi_proto.h"

#include "fuzz_check.h"

/* ------------------------------------------------------------- records */

static void check_header(const uint8_t *b)
{
	struct fcgi_header h, h2;
	uint8_t enc[FCGI_HEADER_LEN];
	int any = fcgi_header_decode_any(b, &h);
	int strict = fcgi_header_decode(b, &h2);

	CHECK(any == 0 || any == -EPROTO);
	CHECK(strict == 0 || strict == -EPROTO);
	if (strict == 0) {
		CHECK(any == 0);
		CHECK(h.version == h2.version && h.type == h2.type &&
		      h.request_id == h2.request_id &&
		      h.content_length == h2.content_length &&
		      h.padding_length == h2.padding_length);
		CHECK(h.type >= FCGI_BEGIN_REQUEST && h.type <= FCGI_UNKNOWN_TYPE);
	}
	if (any != 0)
		return;
	if (strict != 0)
		CHECK(h.type > FCGI_UNKNOWN_TYPE);
	CHECK(h.version == FCGI_VERSION_1 && h.type != 0);
	CHECK((h.type >= FCGI_GET_VALUES) == (h.request_id == 0));
	if (h.type == FCGI_BEGIN_REQUEST || h.type == FCGI_END_REQUEST ||
	    h.type == FCGI_UNKNOWN_TYPE)
		CHECK(h.content_length == 8);
	if (h.type == FCGI_ABORT_REQUEST)
		CHECK(h.content_length == 0);
	CHECK(fcgi_record_len(&h) ==
	      8 + (size_t)h.content_length + h.padding_length);
	fcgi_header_encode(enc, h.type, h.request_id, h.content_length,
			   h.padding_length);
	CHECK(memcmp(enc, b, 7) == 0 && enc[7] == 0);
}

static void check_begin(const uint8_t *body, size_t len)
{
	struct fcgi_begin b, b2;
	uint8_t rec[16];

	if (fcgi_begin_decode(body, len, &b) != 0) {
		CHECK(len != 8);
		return;
	}
	CHECK(len == 8);
	fcgi_begin_encode(rec, 1, b.role, b.flags);
	CHECK(memcmp(rec + 8, body, 3) == 0);
	CHECK(fcgi_begin_decode(rec + 8, 8, &b2) == 0);
	CHECK(b2.role == b.role && b2.flags == b.flags);
}

static void check_end(const uint8_t *body, size_t len)
{
	struct fcgi_end e, e2;
	uint8_t rec[16];

	if (fcgi_end_decode(body, len, &e) != 0) {
		CHECK(len != 8 || body[4] > FCGI_UNKNOWN_ROLE);
		return;
	}
	CHECK(len == 8 && e.protocol_status <= FCGI_UNKNOWN_ROLE);
	fcgi_end_encode(rec, 1, e.app_status, e.protocol_status);
	CHECK(memcmp(rec + 8, body, 5) == 0);
	CHECK(fcgi_end_decode(rec + 8, 8, &e2) == 0);
	CHECK(e2.app_status == e.app_status &&
	      e2.protocol_status == e.protocol_status);
}

/* An application's answer to a record of a type it does not know. */
static void check_unknown_type(uint8_t type)
{
	struct fcgi_header h;
	uint8_t rec[16];

	fcgi_unknown_type_encode(rec, type);
	CHECK(fcgi_header_decode(rec, &h) == 0);
	CHECK(h.type == FCGI_UNKNOWN_TYPE && h.request_id == 0 &&
	      h.content_length == 8 && h.padding_length == 0);
	CHECK(rec[8] == type);
}

/* Walk a name-value block; every pair in it re-encodes and decodes back. */
static void walk_nv(const uint8_t *block, size_t len)
{
	static uint8_t enc[8 + 2 * 65536];
	struct fcgi_nv nv, nv2;
	size_t off = 0;

	for (;;) {
		size_t before = off, eoff = 0, doff = 0;
		int r = fcgi_nv_next(block, len, &off, &nv);

		CHECK(r == 1 || r == 0 || r == -EPROTO);
		if (r == 0) {
			CHECK(off == len);
			return;
		}
		if (r < 0) {
			CHECK(off == before && off < len);
			return;
		}
		CHECK(off > before && off <= len);
		CHECK(nv.name_len > 0);
		CHECK((const uint8_t *)nv.name > block + before);
		CHECK(nv.name + nv.name_len == nv.value);
		CHECK((const uint8_t *)nv.value + nv.value_len == block + off);
		/* minimal lengths: at most the bytes it took */
		CHECK(fcgi_nv_len(nv.name_len, nv.value_len) <= off - before);
		if (off - before > sizeof(enc))
			continue;
		CHECK(fcgi_nv_encode(enc, sizeof(enc), &eoff, nv.name,
				     nv.name_len, nv.value, nv.value_len) == 0);
		CHECK(eoff == fcgi_nv_len(nv.name_len, nv.value_len));
		CHECK(fcgi_nv_next(enc, eoff, &doff, &nv2) == 1 && doff == eoff);
		CHECK(nv2.name_len == nv.name_len &&
		      nv2.value_len == nv.value_len);
		CHECK(memcmp(nv2.name, nv.name, nv.name_len) == 0);
		CHECK(nv.value_len == 0 ||
		      memcmp(nv2.value, nv.value, nv.value_len) == 0);
		/* one byte short of room: nothing */
		eoff = 0;
		CHECK(fcgi_nv_encode(enc, fcgi_nv_len(nv.name_len,
						      nv.value_len) - 1,
				     &eoff, nv.name, nv.name_len, nv.value,
				     nv.value_len) == -ENOSPC && eoff == 0);
	}
}

/* ------------------------------------------------------------ CGI heads */

#define MAX_FIELDS 6

struct head_result {
	ssize_t ret;
	struct cgi_head h;
	struct cgi_field f[MAX_FIELDS];
};

static void result_init(struct head_result *r, size_t max_fields)
{
	memset(r, 0, sizeof(*r));
	r->h.fields = r->f;
	r->h.max_fields = max_fields;
}

static void check_in(const char *p, size_t n, const char *base, size_t len)
{
	CHECK(p != NULL);
	CHECK(p >= base && p <= base + len && n <= (size_t)(base + len - p));
}

static void check_value(const char *p, size_t n)
{
	size_t i;

	if (n == 0)
		return;
	CHECK(p[0] != ' ' && p[0] != '\t');
	CHECK(p[n - 1] != ' ' && p[n - 1] != '\t');
	for (i = 0; i < n; i++)
		CHECK(((unsigned char)p[i] >= 0x20 && p[i] != 0x7f) ||
		      p[i] == '\t');
}

static void check_head(const struct head_result *r, const char *buf,
		       size_t size, size_t max_bytes)
{
	const struct cgi_head *h = &r->h;
	size_t i, n;

	CHECK(r->ret == CGI_HEAD_INCOMPLETE || r->ret == -EPROTO ||
	      r->ret == -E2BIG || (r->ret > 0 && (size_t)r->ret <= size));
	if (r->ret <= 0)
		return;
	n = (size_t)r->ret;
	CHECK(n <= max_bytes && buf[n - 1] == '\n');
	CHECK(h->fields == r->f && h->nfields <= h->max_fields);
	CHECK(h->nfields > 0 || h->status || h->location || h->content_type ||
	      h->has_content_length);
	if (h->status) {
		CHECK(h->status >= 100 && h->status <= 999);
		check_in(h->reason, h->reason_len, buf, n);
		check_value(h->reason, h->reason_len);
	} else {
		CHECK(h->reason == NULL && h->reason_len == 0);
	}
	if (h->location) {
		check_in(h->location, h->location_len, buf, n);
		CHECK(h->location_len > 0);
		check_value(h->location, h->location_len);
	}
	if (h->content_type) {
		check_in(h->content_type, h->content_type_len, buf, n);
		CHECK(h->content_type_len > 0);
		check_value(h->content_type, h->content_type_len);
	}
	if (h->has_content_length)
		CHECK(h->content_length <= (uint64_t)INT64_MAX);
	for (i = 0; i < h->nfields; i++) {
		check_in(h->fields[i].name, h->fields[i].name_len, buf, n);
		check_in(h->fields[i].value, h->fields[i].value_len, buf, n);
		CHECK(h->fields[i].name_len > 0);
		CHECK(h->fields[i].name[h->fields[i].name_len] == ':');
		check_value(h->fields[i].value, h->fields[i].value_len);
	}
}

#define OFF(p, base) ((p) ? (p) - (base) : -1)

static void check_same(const struct head_result *a, const char *ba,
		       const struct head_result *b, const char *bb)
{
	const struct cgi_head *x = &a->h, *y = &b->h;
	size_t i;

	CHECK(a->ret == b->ret);
	if (a->ret <= 0)
		return;
	CHECK(x->nfields == y->nfields && x->status == y->status &&
	      x->has_content_length == y->has_content_length &&
	      x->content_length == y->content_length);
	CHECK(OFF(x->reason, ba) == OFF(y->reason, bb) &&
	      x->reason_len == y->reason_len);
	CHECK(OFF(x->location, ba) == OFF(y->location, bb) &&
	      x->location_len == y->location_len);
	CHECK(OFF(x->content_type, ba) == OFF(y->content_type, bb) &&
	      x->content_type_len == y->content_type_len);
	for (i = 0; i < x->nfields; i++) {
		CHECK(OFF(x->fields[i].name, ba) == OFF(y->fields[i].name, bb));
		CHECK(x->fields[i].name_len == y->fields[i].name_len);
		CHECK(OFF(x->fields[i].value, ba) ==
		      OFF(y->fields[i].value, bb));
		CHECK(x->fields[i].value_len == y->fields[i].value_len);
	}
}

/* buf[0..size) all at once, in two pieces at `cut`, and byte by byte on
 * a buffer that moves between calls. */
static void check_cgi(const char *buf, size_t size, size_t cut,
		      size_t max_bytes, size_t max_fields)
{
	static struct head_result all, piece, moved;
	struct cgi_head_parser p;
	size_t i;

	result_init(&all, max_fields);
	cgi_head_parser_init(&p);
	all.ret = cgi_head_parse(&p, buf, size, max_bytes, &all.h);
	check_head(&all, buf, size, max_bytes);
	/* complete: asked again, the same */
	if (all.ret > 0) {
		result_init(&piece, max_fields);
		piece.ret = cgi_head_parse(&p, buf, size, max_bytes, &piece.h);
		check_same(&all, buf, &piece, buf);
	}

	result_init(&piece, max_fields);
	cgi_head_parser_init(&p);
	piece.ret = cgi_head_parse(&p, buf, cut, max_bytes, &piece.h);
	if (piece.ret == CGI_HEAD_INCOMPLETE)
		piece.ret = cgi_head_parse(&p, buf, size, max_bytes, &piece.h);
	check_same(&all, buf, &piece, buf);

	if (size <= 1024) {
		char *a = malloc(size + 1), *b = malloc(size + 1), *last = a;

		CHECK(a && b);
		memcpy(a, buf, size);
		memcpy(b, buf, size);
		result_init(&moved, max_fields);
		moved.ret = CGI_HEAD_INCOMPLETE;
		cgi_head_parser_init(&p);
		for (i = 0; i <= size && moved.ret == CGI_HEAD_INCOMPLETE; i++) {
			last = i % 2 ? a : b;
			moved.ret = cgi_head_parse(&p, last, i, max_bytes,
						   &moved.h);
		}
		check_same(&all, buf, &moved, last);
		free(a);
		free(b);
	}
}

/* ----------------------------------------------------------------- main */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t params[65536], stdout_buf[65536];
	size_t pos = 0, np = 0, ns = 0, cut;
	char *copy;

	/* the record stream */
	while (size - pos >= FCGI_HEADER_LEN) {
		struct fcgi_header h;
		const uint8_t *content;

		check_header(data + pos);
		if (fcgi_header_decode_any(data + pos, &h) != 0)
			break;
		if (fcgi_record_len(&h) > size - pos)
			break;	/* truncated: a receiver waits for more */
		content = data + pos + FCGI_HEADER_LEN;
		switch (h.type) {
		case FCGI_BEGIN_REQUEST:
			check_begin(content, h.content_length);
			break;
		case FCGI_END_REQUEST:
			check_end(content, h.content_length);
			break;
		case FCGI_PARAMS:
			if (h.content_length == 0) {	/* end of the stream */
				walk_nv(params, np);
				np = 0;
			} else if (h.content_length <= sizeof(params) - np) {
				memcpy(params + np, content, h.content_length);
				np += h.content_length;
			}
			break;
		case FCGI_GET_VALUES:
		case FCGI_GET_VALUES_RESULT:
			walk_nv(content, h.content_length);
			break;
		case FCGI_STDOUT:
			if (h.content_length <= sizeof(stdout_buf) - ns) {
				memcpy(stdout_buf + ns, content,
				       h.content_length);
				ns += h.content_length;
			}
			break;
		default:
			if (h.type > FCGI_UNKNOWN_TYPE)
				check_unknown_type(h.type);
			break;
		}
		pos += fcgi_record_len(&h);
	}
	if (ns)
		check_cgi((const char *)stdout_buf, ns, ns / 2, 4096,
			  MAX_FIELDS);

	/* Shortcuts for the fuzzer: the raw input as a body, a name-value
	 * block and a CGI head (a copy, so ASan sees any read past it). */
	check_begin(data, size);
	check_end(data, size);
	walk_nv(data, size);
	copy = malloc(size ? size : 1);
	CHECK(copy);
	memcpy(copy, data, size);
	cut = size ? data[0] % (size + 1) : 0;
	check_cgi(copy, size, cut, 512, MAX_FIELDS);
	check_cgi(copy, size, size - cut, SIZE_MAX, 2);
	free(copy);
	return 0;
}
