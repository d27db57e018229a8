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
#include <string.h>
#include <strings.h>

#include "h2_int.h"

static bool connection_specific(const char *n, size_t len)
{
#define NAME(s) { s, sizeof(s) - 1 }
	static const struct { const char *s; size_t len; } names[] = {
		NAME("connection"), NAME("keep-alive"),
		NAME("proxy-connection"), NAME("transfer-encoding"),
		NAME("upgrade"),
	};
#undef NAME

	/* Every field of every response passes here: lengths first. */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].len == len && !memcmp(n, names[i].s, len))
			return true;
	return false;
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
		colon = memchr(p, ':', (size_t)(ve - p));
		if (!colon || colon == p)
			return -1;
		for (char *q = p; q < colon; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q + ('a' - 'A'));
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
