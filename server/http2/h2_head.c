/*
 * h2_head.c - a response head, as the handlers write it for HTTP/1.1
 * (respond.h, fcgi_reply.c), turned into HTTP/2 fields (RFC 9113 8.3.2).
 *
 * The handlers do not know which protocol carries their response, and
 * need not: the status line gives ":status", every field keeps its value,
 * names are lower-cased (HTTP/2 requires it), and the fields that describe
 * an HTTP/1.1 connection -- Connection, Keep-Alive, Proxy-Connection,
 * Transfer-Encoding, Upgrade (RFC 9113 8.2.2) -- are left out.  A stream's
 * end delimits its body, so no handler frames one for HTTP/2.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "h2_int.h"

/* Is n[0..len) (lower-case) a field that describes an HTTP/1.1
 * connection?  Every field of every response passes here: by length
 * first, one comparison at most. */
static bool connection_specific(const char *n, size_t len)
{
	switch (len) {
	case 7:
		return !memcmp(n, "upgrade", 7);
	case 10:
		return n[0] == 'c' ? !memcmp(n, "connection", 10) :
				     !memcmp(n, "keep-alive", 10);
	case 16:
		return !memcmp(n, "proxy-connection", 16);
	case 17:
		return !memcmp(n, "transfer-encoding", 17);
	default:
		return false;
	}
}

static char lower(char c)
{
	return (char)(c | ((unsigned char)(c - 'A') < 26 ? 0x20 : 0));
}

/* Lower-case the field name that starts at p, in place, up to its colon
 * (before end): the colon, or NULL.  Every name of every response passes
 * here: eight bytes at a time where it can. */
static char *name_lower(char *p, char *end)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull;
	const uint64_t highs = 0x8080808080808080ull;

	while (end - p >= 8) {
		uint64_t w, colon, low7, upper;

		memcpy(&w, p, 8);
		/* The high bit of each byte that is ':' (the lowest one is
		 * exact, which is all that is used). */
		colon = w ^ (ones * ':');
		colon = (colon - ones) & ~colon & highs;
		/* ... and of each byte in 'A'..'Z' (none of 0x80 and up). */
		low7 = w & ~highs;
		upper = (low7 + ones * (0x80 - 'A')) &
			~(low7 + ones * (0x80 - 'Z' - 1)) & ~w & highs;
		if (colon) {
			unsigned k = (unsigned)__builtin_ctzll(colon) / 8;

			/* Only the bytes before the colon. */
			upper &= k ? ~0ull >> (64 - 8 * k) : 0;
			w |= upper >> 2;
			memcpy(p, &w, 8);
			return p + k;
		}
		w |= upper >> 2;
		memcpy(p, &w, 8);
		p += 8;
	}
#endif
	for (; p < end; p++) {
		if (*p == ':')
			return p;
		*p = lower(*p);
	}
	return NULL;
}

static nghttp2_nv nv_of(char *name, size_t nlen, char *value, size_t vlen)
{
	return (nghttp2_nv){ (uint8_t *)name, (uint8_t *)value, nlen, vlen,
			     NGHTTP2_NV_FLAG_NO_COPY_NAME |
				     NGHTTP2_NV_FLAG_NO_COPY_VALUE };
}

/*
 * The last head turned into fields, kept so that the next one is not
 * parsed again where it has the same bytes: most heads start with the same
 * lines (the status line, Server and Date -- the same within a second),
 * and a file served again repeats its entity fields too.  The lines that
 * the new head shares byte for byte with the memo's, from its start, take
 * the memo's parse: their names lower-cased by one copy, their fields by
 * offsets.  One memo: only the worker's loop runs HTTP/2 (static data, as
 * h2_stream.c's spare streams).
 */
#define MEMO_LINES 32
struct memo_line {
	uint16_t end;		/* offset past its '\n' */
	uint16_t nlen;		/* 0: no field (left out) */
	uint16_t value, vlen;	/* offset and length of its value */
};
static struct {
	size_t len;		/* of the head (0: none) */
	unsigned nlines;	/* the status line, fields, the empty line */
	char text[RESP_HEAD_MAX];	/* the head as written */
	char lower[RESP_HEAD_MAX];	/* ... its names lower-cased */
	struct memo_line line[MEMO_LINES];
} memo;

/* How many bytes a[0..n) and b[0..n) share from their start. */
static size_t common_prefix(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	if (!memcmp(a, b, n))
		return n;
	for (; n - i >= 8; i += 8) {
		uint64_t x, y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return i + (size_t)__builtin_ctzll(x ^ y) / 8;
#else
			break;
#endif
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* Record line k of the head being parsed (its end at offset `end`; nlen 0
 * for none) in the memo; false once it has no room. */
static bool memo_note(unsigned k, size_t end, size_t nlen, size_t value,
		      size_t vlen)
{
	if (k >= MEMO_LINES || end > sizeof(memo.text))
		return false;
	memo.line[k] = (struct memo_line){ (uint16_t)end, (uint16_t)nlen,
					   (uint16_t)value, (uint16_t)vlen };
	return true;
}

int h2_head_fields(char *text, size_t len, nghttp2_nv *nv, size_t max,
		   int *status, size_t *head_len)
{
	char *p = text, *end = text + len, *eol;
	size_t n = 0, same, start = 0;
	unsigned k = 0;
	bool noting;

	if (!max)
		return -1;
	/* The memo's lines that this head repeats: as they were parsed. */
	same = common_prefix(text, memo.text, len < memo.len ? len : memo.len);
	while (k < memo.nlines && memo.line[k].end <= same) {
		const struct memo_line *l = &memo.line[k];

		if (!k)				/* the status line */
			nv[n++] = nv_of(":status", 7, text + 9, 3);
		else if (l->nlen) {
			if (n == max)
				break;
			nv[n++] = nv_of(text + start, l->nlen, text + l->value,
					l->vlen);
		}
		start = l->end;
		k++;
	}
	if (k) {
		memcpy(text, memo.lower, start);	/* names lower-cased */
		*status = (text[9] - '0') * 100 + (text[10] - '0') * 10 +
			  (text[11] - '0');
		if (k == memo.nlines) {			/* all of it */
			*head_len = start;
			return (int)n;
		}
		p = text + start;
	}
	/* The rest is parsed, and the memo becomes this head. */
	memcpy(memo.text + start, p,
	       (len < sizeof(memo.text) ? len : sizeof(memo.text)) - start);
	memo.len = 0;
	noting = true;		/* until a line ends past the memo's room */
	if (!k) {
		/* "HTTP/1.x SSS reason" */
		eol = memchr(p, '\n', len);
		if (!eol || eol - p < 12 || memcmp(p, "HTTP/1.", 7) ||
		    p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' ||
		    p[10] > '9' || p[11] < '0' || p[11] > '9')
			return -1;
		*status = (p[9] - '0') * 100 + (p[10] - '0') * 10 +
			  (p[11] - '0');
		nv[n++] = nv_of(":status", 7, p + 9, 3);
		noting = noting && memo_note(k++, (size_t)(eol + 1 - text), 0,
					     0, 0);
		p = eol + 1;
	}
	for (; p < end; p = eol + 1) {
		char *colon, *v, *ve;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return -1;
		ve = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (ve == p) {			/* the empty line: done */
			*head_len = (size_t)(eol + 1 - text);
			if (noting && memo_note(k++, *head_len, 0, 0, 0)) {
				memcpy(memo.lower, text, *head_len);
				memo.nlines = k;
				memo.len = *head_len;
			}
			return (int)n;
		}
		colon = name_lower(p, ve);
		if (!colon || colon == p)
			return -1;
		if (connection_specific(p, (size_t)(colon - p))) {
			noting = noting && memo_note(k++,
						     (size_t)(eol + 1 - text),
						     0, 0, 0);
			continue;
		}
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (n == max)
			return -1;
		nv[n++] = nv_of(p, (size_t)(colon - p), v, (size_t)(ve - v));
		noting = noting && memo_note(k++, (size_t)(eol + 1 - text),
					     (size_t)(colon - p),
					     (size_t)(v - text),
					     (size_t)(ve - v));
	}
	return -1;				/* no empty line */
}
