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

/* Append s escaped, at most max bytes of input. */
static size_t put_escaped(char *o, size_t room, const char *s, size_t n,
			  size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;

	if (!s) {
		if (room)
			o[k++] = '-';
		return k;
	}
	if (n > max)
		n = max;
	for (size_t i = 0; i < n && k + 4 < room; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
			o[k++] = '\\';
			o[k++] = 'x';
			o[k++] = hex[ch >> 4];
			o[k++] = hex[ch & 15];
		} else {
			o[k++] = (char)ch;
		}
	}
	return k;
}

static void peer_name(const struct sockaddr_storage *ss, char *out, size_t n)
{
	if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr,
			  out, (socklen_t)n);
	else if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  out, (socklen_t)n);
	else
		snprintf(out, n, "-");
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
	char line[LOG_LINE_MAX], host[64], when[40];
	const struct http_str *ref, *ua;
	time_t now;
	struct tm tm;
	size_t k;

	if (!l)
		return;
	peer_name(peer, host, sizeof(host));
	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S +0000", &tm);
	k = (size_t)snprintf(line, sizeof(line), "%s - - [%s] \"", host, when);
	if (req) {
		k += put_escaped(line + k, sizeof(line) - k, req->method_str.p,
				 req->method_str.len, 16);
		line[k++] = ' ';
		k += put_escaped(line + k, sizeof(line) - k, req->target.p,
				 req->target.len, 2048);
		if (proto)
			k += (size_t)snprintf(line + k, sizeof(line) - k,
					      " %s", proto);
		else
			k += (size_t)snprintf(line + k, sizeof(line) - k,
					      " HTTP/1.%d", req->minor);
	} else {
		line[k++] = '-';
	}
	ref = field(req, "Referer");
	ua = field(req, "User-Agent");
	k += (size_t)snprintf(line + k, sizeof(line) - k, "\" %d %llu \"",
			      status, (unsigned long long)bytes);
	k += put_escaped(line + k, sizeof(line) - k, ref ? ref->p : NULL,
			 ref ? ref->len : 0, 512);
	k += (size_t)snprintf(line + k, sizeof(line) - k, "\" \"");
	k += put_escaped(line + k, sizeof(line) - k, ua ? ua->p : NULL,
			 ua ? ua->len : 0, 512);
	if (k + 2 > sizeof(line))
		k = sizeof(line) - 2;
	line[k++] = '"';
	line[k++] = '\n';
	if (l->len + k > sizeof(l->buf))
		access_log_flush(l);
	memcpy(l->buf + l->len, line, k);
	l->len += k;
}
