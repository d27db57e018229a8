/*
 * fcgi_probe.c - a FastCGI application (libfcgi's API) that does what the
 * query string says, for tests/fastcgi.bats.  Accepts on fd 0, as servers
 * start FastCGI applications.
 *
 *   size=N      N bytes of body: byte i is "0123456789abcdef..."[i % 62]
 *   len         ... with a Content-Length header (default: none)
 *   chunk=K     ... written K bytes per FCGX_PutStr, flushed after each
 *   echo        body: the request body's length and FNV-1a, "LEN HASH\n"
 *   params      body: every parameter as NAME=VALUE lines, sorted
 *   status=N    a Status: N line ("Status: N Reason")
 *   fields=N    N more header lines, "X-Probe-I: " and 120 letters each
 *   redirect=P  Location: P, nothing else
 *   stderr=N    N lines on FCGI_STDERR
 *   sleep=MS    wait before answering
 *   die=head    exit before anything is written
 *   die=body    exit after the head and part of the body
 *   garbage     write bytes that are not a FastCGI record, then finish
 *   nohead      a body with no blank line after the first line (malformed)
 *
 * Options combine: "size=100000&len&chunk=1000".
 */
#include <fcgiapp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../helpers/fnv.h"

static const char alphabet[] =
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* The value of `key` in the query ("" for a bare key), or NULL. */
static const char *arg(const char *q, const char *key, char *val, size_t n)
{
	size_t kl = strlen(key);

	while (q && *q) {
		const char *amp = strchr(q, '&');
		size_t len = amp ? (size_t)(amp - q) : strlen(q);

		if (len >= kl && !strncmp(q, key, kl) &&
		    (len == kl || q[kl] == '=')) {
			size_t vl = len > kl ? len - kl - 1 : 0;

			if (vl >= n)
				vl = n - 1;
			memcpy(val, q + kl + (len > kl), vl);
			val[vl] = 0;
			return val;
		}
		q = amp ? amp + 1 : NULL;
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_params(FCGX_Request *r)
{
	size_t n = 0;
	char **v;

	while (r->envp[n])
		n++;
	v = malloc(n * sizeof(*v) + 1);
	memcpy(v, r->envp, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp);
	for (size_t i = 0; i < n; i++)
		FCGX_FPrintF(r->out, "%s\n", v[i]);
	free(v);
}

static void serve(FCGX_Request *r)
{
	const char *q = FCGX_GetParam("QUERY_STRING", r->envp);
	char v[256], body[64];
	long size = arg(q, "size", v, sizeof(v)) ? atol(v) : 0;
	long chunk = arg(q, "chunk", v, sizeof(v)) ? atol(v) : 65536;
	uint64_t h = FNV0;
	long len = 0;
	char buf[16384];
	int k;

	if (arg(q, "sleep", v, sizeof(v))) {
		struct timespec ts = { atol(v) / 1000, atol(v) % 1000 * 1000000 };

		nanosleep(&ts, NULL);
	}
	if (arg(q, "die", v, sizeof(v)) && !strcmp(v, "head"))
		_exit(3);
	/* Read the whole body first, as CGI programs do. */
	while ((k = FCGX_GetStr(buf, sizeof(buf), r->in)) > 0) {
		h = fnv(buf, (size_t)k, h);
		len += k;
	}
	if (arg(q, "garbage", v, sizeof(v))) {
		ssize_t w = write(r->ipcFd, "\x01\x63garbage!", 10);

		(void)w;
		return;
	}
	if (arg(q, "stderr", v, sizeof(v)))
		for (long i = 0; i < atol(v); i++)
			FCGX_FPrintF(r->err, "probe stderr line %ld\n", i);
	if (arg(q, "redirect", v, sizeof(v))) {
		FCGX_FPrintF(r->out, "Location: %s\r\n\r\n", v);
		return;
	}
	if (arg(q, "nohead", v, sizeof(v))) {
		FCGX_PutS("Content-Type text/plain\r\n", r->out);
		return;
	}
	if (arg(q, "status", v, sizeof(v)))
		FCGX_FPrintF(r->out, "Status: %s Probe\r\n", v);
	if (arg(q, "fields", v, sizeof(v)))
		for (long i = 0; i < atol(v); i++)
			FCGX_FPrintF(r->out, "X-Probe-%ld: %.120s\r\n", i,
				     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "abcdefghijklmnopqrstuvwxyz");
	FCGX_PutS("Content-Type: text/plain\r\n", r->out);
	if (arg(q, "echo", v, sizeof(v))) {
		snprintf(body, sizeof(body), "%ld %016llx\n", len,
			 (unsigned long long)h);
		FCGX_FPrintF(r->out, "\r\n%s", body);
		return;
	}
	if (arg(q, "params", v, sizeof(v))) {
		FCGX_PutS("\r\n", r->out);
		put_params(r);
		return;
	}
	if (arg(q, "len", v, sizeof(v)))
		FCGX_FPrintF(r->out, "Content-Length: %ld\r\n", size);
	FCGX_PutS("\r\n", r->out);
	for (long off = 0; off < size;) {
		long n = size - off < chunk ? size - off : chunk;
		char *p = malloc((size_t)n);

		for (long i = 0; i < n; i++)
			p[i] = alphabet[(off + i) % 62];
		FCGX_PutStr(p, (int)n, r->out);
		free(p);
		off += n;
		FCGX_FFlush(r->out);
		if (arg(q, "die", v, sizeof(v)) && !strcmp(v, "body") &&
		    off >= size / 2)
			_exit(4);
	}
}

int main(void)
{
	FCGX_Request r;

	FCGX_Init();
	FCGX_InitRequest(&r, 0, 0);
	while (FCGX_Accept_r(&r) >= 0) {
		serve(&r);
		FCGX_Finish_r(&r);
	}
	return 0;
}
