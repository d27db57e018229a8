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
			     NGHTTP2_NV_FLAG_NONE };
}

int h2_head_fields(char *text, size_t len, nghttp2_nv *nv, size_t max,
		   int *status, size_t *head_len)
{
	char *p = text, *end = text + len, *eol;
	size_t n = 0;

	/* "HTTP/1.x SSS reason" */
	eol = memchr(p, '\n', len);
	if (!max || !eol || eol - p < 12 || memcmp(p, "HTTP/1.", 7) ||
	    p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' ||
	    p[10] > '9' || p[11] < '0' || p[11] > '9')
		return -1;
	*status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	nv[n++] = nv_of(":status", 7, p + 9, 3);
	for (p = eol + 1; p < end; p = eol + 1) {
		char *colon, *v, *ve;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return -1;
		ve = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (ve == p) {			/* the empty line: done */
			*head_len = (size_t)(eol + 1 - text);
			return (int)n;
		}
		colon = name_lower(p, ve);
		if (!colon || colon == p)
			return -1;
		if (connection_specific(p, (size_t)(colon - p)))
			continue;
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (n == max)
			return -1;
		nv[n++] = nv_of(p, (size_t)(colon - p), v, (size_t)(ve - v));
	}
	return -1;				/* no empty line */
}
