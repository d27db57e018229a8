/*
 * access_log.c - Combined Log Format:
 *
 *   host - - [day/Mon/year:HH:MM:SS +0000] "request line" status bytes
 *   "referer" "user-agent"
 *
 * Lines are collected in a buffer and written when the loop is about to
 * sleep (or the buffer fills), so logging costs one write per loop
 * iteration, not one per request.  Each write holds whole lines and the
 * file is opened O_APPEND, so workers sharing a file never interleave
 * inside a line.  Everything taken from the request is escaped (\xHH for
 * control bytes, quotes and backslashes): a client cannot forge log lines.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "access_log.h"
#include "addr_text.h"
#include "http_lex.h"

#define LOG_BUF (64u << 10)
#define LOG_LINE_MAX 4096	/* fields are cut to keep lines bounded */

struct access_log {
	int fd;
	size_t len;
	char buf[LOG_BUF];
};

int access_log_open_fd(const char *path)
{
	int fd;

	if (strcmp(path, "-") == 0)
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	else
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			  0644);
	return fd < 0 ? -errno : fd;
}

int access_log_adopt(int fd, struct access_log **out)
{
	struct access_log *l;

	*out = NULL;
	if (fd < 0)
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = fd;
	*out = l;
	return 0;
}

void access_log_flush(struct access_log *l)
{
	size_t off = 0;

	if (!l)
		return;
	while (off < l->len) {
		ssize_t n = write(l->fd, l->buf + off, l->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;	/* a full disk loses log lines, not requests */
		off += (size_t)n;
	}
	l->len = 0;
}

int access_log_reopen(struct access_log *l, const char *path)
{
	int fd;

	if (!l || !path)
		return 0;
	access_log_flush(l);
	fd = access_log_open_fd(path);
	if (fd < 0)
		return fd;
	close(l->fd);
	l->fd = fd;
	return 0;
}

void access_log_close(struct access_log *l)
{
	if (!l)
		return;
	access_log_flush(l);
	close(l->fd);
	free(l);
}

/* A line being built.  Every append is cut to the room left, two bytes
 * kept back for the closing quote and newline: a line never passes
 * LOG_LINE_MAX, however long and however escaped its fields. */
struct line {
	size_t len;
	char buf[LOG_LINE_MAX];
};

#define LINE_ROOM (LOG_LINE_MAX - 2)

static void put(struct line *o, const char *s, size_t n)
{
	if (n > LINE_ROOM - o->len)
		n = LINE_ROOM - o->len;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* A string literal, its length counted by the compiler. */
#define put_lit(o, lit) put((o), (lit), sizeof(lit) - 1)

static void put_dec(struct line *o, uint64_t v)
{
	char d[HTTP_DEC_MAX], *p = http_dec(d, v);

	put(o, p, (size_t)(d + sizeof(d) - p));
}

/* s escaped, at most max bytes of input; "-" for none. */
static void put_escaped(struct line *o, const char *s, size_t n, size_t max)
{
	static const char hex[] = "0123456789abcdef";

	if (!s) {
		put_lit(o, "-");
		return;
	}
	if (n > max)
		n = max;
	for (size_t i = 0; i < n && o->len + 4 <= LINE_ROOM; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
			o->buf[o->len++] = '\\';
			o->buf[o->len++] = 'x';
			o->buf[o->len++] = hex[ch >> 4];
			o->buf[o->len++] = hex[ch & 15];
		} else {
			o->buf[o->len++] = (char)ch;
		}
	}
}

/* "[26/Nov/2026:16:28:56 +0000] \"": gmtime and strftime once per second. */
static void put_time(struct line *o)
{
	static time_t sec = -1;
	static char when[48];
	static size_t when_len;
	time_t now = time(NULL);

	if (now != sec) {
		struct tm tm;

		gmtime_r(&now, &tm);
		when_len = strftime(when, sizeof(when),
				    "[%d/%b/%Y:%H:%M:%S +0000] \"", &tm);
		sec = now;
	}
	put(o, when, when_len);
}

static void put_peer(struct line *o, const struct sockaddr_storage *ss)
{
	char host[ADDR_TEXT_MAX];
	size_t n = addr_text(ss, host);

	if (n)
		put(o, host, n);
	else
		put_lit(o, "-");
}

static const struct http_str *field(const struct http_request *req,
				    const char *name)
{
	const struct http_header *h = req ? http_find_header(req, name) : NULL;

	return h ? &h->value : NULL;
}

void access_log_request_proto(struct access_log *l,
			      const struct sockaddr_storage *peer,
			      const struct http_request *req,
			      const char *proto, int status, uint64_t bytes)
{
	access_log_request_upstream(l, peer, req, proto, status, bytes, NULL,
				    0);
}

void access_log_request_upstream(struct access_log *l,
				 const struct sockaddr_storage *peer,
				 const struct http_request *req,
				 const char *proto, int status, uint64_t bytes,
				 const char *upstream, uint64_t upstream_ms)
{
	/* Formatted by hand, not by printf: this runs once per request. */
	struct line o;
	const struct http_str *ref, *ua;

	if (!l)
		return;
	o.len = 0;
	put_peer(&o, peer);
	put_lit(&o, " - - ");
	put_time(&o);
	if (req) {
		put_escaped(&o, req->method_str.p, req->method_str.len, 16);
		put_lit(&o, " ");
		put_escaped(&o, req->target.p, req->target.len, 2048);
		if (proto) {
			put_lit(&o, " ");
			put(&o, proto, strlen(proto));
		} else {
			put_lit(&o, " HTTP/1.");
			put_dec(&o, (uint64_t)req->minor);
		}
	} else {
		put_lit(&o, "-");
	}
	ref = field(req, "Referer");
	ua = field(req, "User-Agent");
	put_lit(&o, "\" ");
	if (status < 0)
		put_lit(&o, "-");
	put_dec(&o, status < 0 ? -(uint64_t)status : (uint64_t)status);
	put_lit(&o, " ");
	put_dec(&o, bytes);
	put_lit(&o, " \"");
	put_escaped(&o, ref ? ref->p : NULL, ref ? ref->len : 0, 512);
	put_lit(&o, "\" \"");
	put_escaped(&o, ua ? ua->p : NULL, ua ? ua->len : 0, 512);
	if (upstream) {
		put_lit(&o, "\" upstream=");
		put_escaped(&o, upstream, strlen(upstream), 256);
		put_lit(&o, " upstream_time=");
		put_dec(&o, upstream_ms / 1000);
		put_lit(&o, ".");
		put_dec(&o, upstream_ms / 100 % 10);
		put_dec(&o, upstream_ms / 10 % 10);
		put_dec(&o, upstream_ms % 10);
		o.buf[o.len++] = '\n';	/* one of the two bytes kept back */
	} else {
		o.buf[o.len++] = '"';	/* the two bytes kept back */
		o.buf[o.len++] = '\n';
	}
	if (l->len + o.len > sizeof(l->buf))
		access_log_flush(l);
	memcpy(l->buf + l->len, o.buf, o.len);
	l->len += o.len;
}
