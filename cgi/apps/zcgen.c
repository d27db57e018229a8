/*
 * zcgen - the document generator of the FastCGI benchmark: GET
 * /...?size=N answers N bytes of deterministic content.  Each size's
 * document is built once and resent: with zcstack's library it goes out by
 * reference (zcfcgi_put_cached: one pool buffer for every request), with
 * Debian's libfcgi through FCGX_PutStr.  The same binary runs on both.
 *
 *   zcgen [--listen ADDR] [--cache-mb MB]
 *
 * Documents are cached up to --cache-mb (default 256) in all; larger or
 * further sizes are generated per request in 64 KiB pieces.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>

#define ZCFCGI_WEAK
#include "zcfcgi.h"
#include "app.h"

#define MAX_SIZE ((size_t)1 << 32)
#define MAX_DOCS 256

struct doc {
	size_t size;
	char *data;
	zcfcgi_doc *zdoc;	/* zcstack's library: the published buffer */
};

static struct doc docs[MAX_DOCS];
static size_t ndocs, cached_bytes, cache_max = (size_t)256 << 20;

/* Byte i of every document. */
static const char pattern[] = "abcdefghijklmnopqrstuvwxyz0123456789\n";
#define PATLEN (sizeof(pattern) - 1)

static void fill(char *p, size_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern[(from + i) % PATLEN];
}

static struct doc *doc_for(size_t size)
{
	struct doc *d;

	for (size_t i = 0; i < ndocs; i++)
		if (docs[i].size == size)
			return &docs[i];
	if (ndocs == MAX_DOCS || size > cache_max - cached_bytes)
		return NULL;
	d = &docs[ndocs];
	if (!(d->data = malloc(size ? size : 1)))
		return NULL;
	fill(d->data, 0, size);
	d->size = size;
	cached_bytes += size;
	ndocs++;
	return d;
}

static void put_bytes(const char *p, size_t n, FCGX_Stream *out)
{
	while (n) {
		int k = n > (1u << 30) ? 1 << 30 : (int)n;

		if (FCGX_PutStr(p, k, out) != k)
			return;
		p += k;
		n -= (size_t)k;
	}
}

static void answer(FCGX_Request *r)
{
	const char *qs = FCGX_GetParam("QUERY_STRING", r->envp);
	char val[32], *end;
	unsigned long long size;
	struct doc *d;

	if (app_query(qs, "size", val, sizeof(val)) <= 0 ||
	    (errno = 0, size = strtoull(val, &end, 10), *end) || errno ||
	    size > MAX_SIZE) {
		FCGX_PutS("Status: 400 Bad Request\r\n"
			  "Content-Type: text/plain\r\n\r\n"
			  "zcgen: ?size=N (0 <= N <= 2^32)\n", r->out);
		return;
	}
	FCGX_FPrintF(r->out, "Content-Type: application/octet-stream\r\n"
			     "Content-Length: %llu\r\n\r\n", size);
	if ((d = doc_for((size_t)size))) {
		/* The cached document: by reference where we can. */
		if (zcfcgi_put_cached)
			zcfcgi_put_cached(r->out, &d->zdoc,
					  d->data, d->size);
		else
			put_bytes(d->data, d->size, r->out);
		return;
	}
	{
		char piece[65536];

		for (size_t off = 0; off < size; off += sizeof(piece)) {
			size_t n = size - off < sizeof(piece) ? size - off
							     : sizeof(piece);

			fill(piece, off, n);
			if (FCGX_PutStr(piece, (int)n, r->out) < 0)
				break;
		}
	}
}

int main(int argc, char **argv)
{
	const char *mb = app_option(argc, argv, "cache-mb");
	if (mb)
		cache_max = (size_t)strtoull(mb, NULL, 10) << 20;
	return app_serve(argc, argv, answer);
}
