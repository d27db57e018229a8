/*
 * zch2floor - the floor of `zcbench static --protocol h2c`: the least a
 * server built on libnghttp2 does per HTTP/2 request, as a reference
 * "server" (docs/bench-static.md, HTTP/2).
 *
 *   zch2floor --root DIR [--listen 127.0.0.1:8080] [--workers N]
 *
 * zcfloor's counterpart for HTTP/2 with prior knowledge (h2c).  At start
 * every regular file in DIR is read into memory, with the fields of its
 * response made once (content-type, content-length, last-modified, etag,
 * accept-ranges: what zchttpd sends).  Then per connection one nghttp2
 * session with libnghttp2's defaults (automatic window updates) and per
 * request only this: nghttp2 decodes the head; the :path picks the file by
 * a binary search (exact match; 404 otherwise); nghttp2_submit_response
 * with those fields, a server and a date field (made once a second), and
 * the body copied from memory into DATA frames; every frame nghttp2 makes
 * is appended to one output buffer that goes with one send per wake-up.
 * Input: one recv of up to 64 KiB per wake-up, given to nghttp2 whole.
 *
 * No parsing of our own, no files after start, no logging, no timeouts,
 * no limits beyond nghttp2's.  What it costs is nghttp2's part of a
 * request plus a loop around it: the most any server built on nghttp2 can
 * save.  --workers N forks N-1 more processes on the same listener
 * (EPOLLEXCLUSIVE); SIGTERM ends them all.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

struct file {
	char path[256];			/* "/f" */
	unsigned char *body;
	size_t len;
	char clen[24], lastmod[40], etag[48];
};

struct stream {
	const struct file *f;
	size_t off;
	struct stream *next_free;
};

struct conn {
	int fd;
	nghttp2_session *s;
	unsigned char *out;
	size_t out_len, out_sent, out_cap;
	bool waiting_out;		/* EPOLLOUT asked */
};

static struct file *files;
static size_t nfiles;
static struct stream *free_streams;
static char date[40];
static time_t date_at;
static int epfd;

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->path,
		      ((const struct file *)b)->path);
}

static void load(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *de;

	if (!d)
		die(root);
	while ((de = readdir(d))) {
		char p[4096];
		struct stat st;
		struct file *f;
		int fd;

		snprintf(p, sizeof(p), "%s/%s", root, de->d_name);
		if (stat(p, &st) || !S_ISREG(st.st_mode) ||
		    strlen(de->d_name) > 200)
			continue;
		files = realloc(files, (nfiles + 1) * sizeof(*files));
		if (!files)
			die("realloc");
		f = &files[nfiles++];
		memset(f, 0, sizeof(*f));
		snprintf(f->path, sizeof(f->path), "/%s", de->d_name);
		f->len = (size_t)st.st_size;
		f->body = malloc(f->len + 1);
		fd = open(p, O_RDONLY);
		if (!f->body || fd < 0 ||
		    pread(fd, f->body, f->len, 0) != (ssize_t)f->len)
			die(p);
		close(fd);
		snprintf(f->clen, sizeof(f->clen), "%zu", f->len);
		strftime(f->lastmod, sizeof(f->lastmod),
			 "%a, %d %b %Y %H:%M:%S GMT", gmtime(&st.st_mtime));
		/* zchttpd's form and length: mtime in ns, size, in hex. */
		snprintf(f->etag, sizeof(f->etag), "\"%llx-%zx\"",
			 (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
				 (unsigned long long)st.st_mtim.tv_nsec,
			 f->len);
	}
	closedir(d);
	qsort(files, nfiles, sizeof(*files), by_path);
}

static const struct file *find(const uint8_t *path, size_t len)
{
	struct file key;

	if (len >= sizeof(key.path))
		return NULL;
	memcpy(key.path, path, len);
	key.path[len] = '\0';
	return bsearch(&key, files, nfiles, sizeof(*files), by_path);
}

static void update_date(void)
{
	time_t now = time(NULL);

	if (now != date_at) {
		date_at = now;
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT",
			 gmtime(&now));
	}
}

/* ------------------------------------------------------------ nghttp2 */

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len,
		       int flags, void *user)
{
	struct conn *c = user;

	(void)s;
	(void)flags;
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 65536;

		while (cap < c->out_len + len)
			cap *= 2;
		c->out = realloc(c->out, cap);
		if (!c->out)
			die("realloc");
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return (ssize_t)len;
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf,
			 size_t len, uint32_t *flags, nghttp2_data_source *src,
			 void *user)
{
	struct stream *st = src->ptr;
	size_t left = st->f->len - st->off;

	(void)s;
	(void)id;
	(void)user;
	if (len > left)
		len = left;
	memcpy(buf, st->f->body + st->off, len);
	st->off += len;
	if (st->off == st->f->len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)len;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *fr,
			    void *user)
{
	struct stream *st = free_streams;

	(void)user;
	if (fr->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (st)
		free_streams = st->next_free;
	else if (!(st = malloc(sizeof(*st))))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->f = NULL;
	st->off = 0;
	nghttp2_session_set_stream_user_data(s, fr->hd.stream_id, st);
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *fr,
		     const uint8_t *name, size_t nlen, const uint8_t *value,
		     size_t vlen, uint8_t flags, void *user)
{
	struct stream *st;

	(void)flags;
	(void)user;
	if (nlen == 5 && !memcmp(name, ":path", 5) &&
	    (st = nghttp2_session_get_stream_user_data(s, fr->hd.stream_id)))
		st->f = find(value, vlen);
	return 0;
}

#define NV(n, v, vl)                                                         \
	{ (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl),              \
	  NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE }

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *fr,
			 void *user)
{
	struct stream *st;

	(void)user;
	if (fr->hd.type != NGHTTP2_HEADERS ||
	    !(fr->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
	    !(st = nghttp2_session_get_stream_user_data(s, fr->hd.stream_id)))
		return 0;
	update_date();
	if (!st->f) {
		nghttp2_nv nf[] = { NV(":status", "404", 3),
				    NV("server", "zcfloor", 7),
				    NV("date", date, strlen(date)),
				    NV("content-length", "0", 1) };

		return nghttp2_submit_response(s, fr->hd.stream_id, nf, 4,
					       NULL);
	} else {
		const struct file *f = st->f;
		nghttp2_nv nv[] = {
			NV(":status", "200", 3),
			NV("server", "zcfloor", 7),
			NV("date", date, strlen(date)),
			NV("content-type", "application/octet-stream", 24),
			NV("content-length", f->clen, strlen(f->clen)),
			NV("last-modified", f->lastmod, strlen(f->lastmod)),
			NV("etag", f->etag, strlen(f->etag)),
			NV("accept-ranges", "bytes", 5),
		};
		nghttp2_data_provider body = { .source.ptr = st,
					       .read_callback = read_body };

		return nghttp2_submit_response(s, fr->hd.stream_id, nv, 8,
					       &body);
	}
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
	struct stream *st = nghttp2_session_get_stream_user_data(s, id);

	(void)code;
	(void)user;
	if (st) {
		st->next_free = free_streams;
		free_streams = st;
	}
	return 0;
}

/* ------------------------------------------------------------ the loop */

static nghttp2_session_callbacks *callbacks;

static void conn_close(struct conn *c)
{
	close(c->fd);
	nghttp2_session_del(c->s);
	free(c->out);
	free(c);
}

/* Frames nghttp2 has, then the output: false when the connection ends. */
static bool conn_flush(struct conn *c)
{
	if (nghttp2_session_send(c->s))
		return false;
	while (c->out_sent < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_sent,
				 c->out_len - c->out_sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			if (!c->waiting_out) {
				struct epoll_event ev = {
					.events = EPOLLIN | EPOLLOUT,
					.data.ptr = c };

				epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
				c->waiting_out = true;
			}
			return true;
		}
		if (n < 0)
			return false;
		c->out_sent += (size_t)n;
	}
	c->out_len = c->out_sent = 0;
	if (c->waiting_out) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

		epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->waiting_out = false;
	}
	return nghttp2_session_want_read(c->s) ||
	       nghttp2_session_want_write(c->s);
}

static void conn_ready(struct conn *c, uint32_t events)
{
	static uint8_t in[65536];

	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		ssize_t n = recv(c->fd, in, sizeof(in), 0);

		if (n == 0 || (n < 0 && errno != EAGAIN) ||
		    (n > 0 && nghttp2_session_mem_recv(c->s, in, (size_t)n) < 0)) {
			conn_close(c);
			return;
		}
	}
	if (!conn_flush(c))
		conn_close(c);
}

static void conn_new(int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 } };
	struct epoll_event ev = { .events = EPOLLIN };

	if (!c || nghttp2_session_server_new(&c->s, callbacks, c) ||
	    nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, 1))
		die("nghttp2 session");
	c->fd = fd;
	ev.data.ptr = c;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
		die("epoll_ctl");
	if (!conn_flush(c))
		conn_close(c);
}

static void serve(int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE,
				  .data.ptr = NULL }, evs[64];

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev))
		die("epoll");
	nghttp2_session_callbacks_new(&callbacks);
	nghttp2_session_callbacks_set_send_callback(callbacks, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(
		callbacks, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks,
							     on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
							       on_close);
	for (;;) {
		int n = epoll_wait(epfd, evs, 64, -1);

		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr) {
				int fd = accept4(lfd, NULL, NULL,
						 SOCK_NONBLOCK | SOCK_CLOEXEC);

				if (fd >= 0)
					conn_new(fd);
				continue;
			}
			conn_ready(evs[i].data.ptr, evs[i].events);
		}
	}
}

int main(int argc, char **argv)
{
	const char *root = NULL, *listen_at = "127.0.0.1:8080";
	int workers = 1;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--root"))
			root = argv[i + 1];
		else if (!strcmp(argv[i], "--listen"))
			listen_at = argv[i + 1];
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[i + 1]);
	}
	if (!root || workers < 1) {
		fprintf(stderr, "usage: zch2floor --root DIR "
				"[--listen 127.0.0.1:8080] [--workers N]\n");
		return 2;
	}
	load(root);
	floor_run(workers, serve, floor_listen(listen_at));
	return 0;
}
