/*
 * io_test_util.h - helpers shared by test_io.c and test_recycle_stress.c:
 * patterned data, descriptor pairs of every kind, a reader thread.
 *
 * The pattern is a hash of (seed, position), not a short-period sequence,
 * so a chunk delivered twice, skipped or resumed at the wrong offset never
 * matches by accident.
 */
#ifndef ZC_IO_TEST_UTIL_H
#define ZC_IO_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static inline uint64_t tu_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Byte `pos` of the stream named by `seed`. */
static inline uint8_t tu_pat(uint64_t seed, uint64_t pos)
{
	return (uint8_t)(tu_mix(seed * 0x100000001b3ull ^ (pos >> 3)) >>
			 ((pos & 7) * 8));
}

/* Fill dst with bytes [pos, pos + len) of stream `seed`. */
static inline void tu_fill(void *dst, size_t len, uint64_t seed, uint64_t pos)
{
	unsigned char *p = dst;

	while (len && (pos & 7)) {
		*p++ = tu_pat(seed, pos++);
		len--;
	}
	while (len >= 8) {
		uint64_t w = tu_mix(seed * 0x100000001b3ull ^ (pos >> 3));

		memcpy(p, &w, 8);	/* little endian: byte k = w >> 8k */
		p += 8;
		pos += 8;
		len -= 8;
	}
	while (len--)
		*p++ = tu_pat(seed, pos++);
}

/* Index of the first byte that differs from the stream, or -1. */
static inline long tu_check(const void *data, size_t len, uint64_t seed,
			    uint64_t pos)
{
	const unsigned char *p = data;
	unsigned char tmp[4096];

	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);

		tu_fill(tmp, n, seed, pos + done);
		if (memcmp(tmp, p + done, n)) {
			for (size_t i = 0; i < n; i++)
				if (tmp[i] != p[done + i])
					return (long)(done + i);
		}
		done += n;
	}
	return -1;
}

static inline const char *tu_tmpdir(void)
{
	const char *d = getenv("ZC_TEST_TMPDIR");

	return d && *d ? d : "/tmp";
}

/* A temporary file (already unlinked unless path is wanted) holding
 * `len` bytes of stream `seed`.  Returns an O_RDWR descriptor. */
static inline int tu_pattern_file(size_t len, uint64_t seed, char *path,
				  size_t pathlen)
{
	char tmpl[256];
	unsigned char chunk[65536];
	int fd;

	snprintf(tmpl, sizeof(tmpl), "%s/zc-io-XXXXXX", tu_tmpdir());
	fd = mkstemp(tmpl);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < len;) {
		size_t n = len - off < sizeof(chunk) ? len - off
						     : sizeof(chunk);

		tu_fill(chunk, n, seed, off);
		if (pwrite(fd, chunk, n, (off_t)off) != (ssize_t)n) {
			close(fd);
			unlink(tmpl);
			return -1;
		}
		off += n;
	}
	if (path)
		snprintf(path, pathlen, "%s", tmpl);
	else
		unlink(tmpl);
	return fd;
}

/* A connected TCP pair over 127.0.0.1 on an ephemeral port. */
static inline int tu_tcp_pair(int *client, int *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l, c, s, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) < 0) {
		close(l);
		return -1;
	}
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(l);
		if (c >= 0)
			close(c);
		return -1;
	}
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	if (s < 0) {
		close(c);
		return -1;
	}
	*client = c;
	*server = s;
	return 0;
}

enum tu_kind { TU_TCP, TU_PIPE, TU_UNIX };

/* wfd: where the sender writes; rfd: where the receiver reads. */
static inline int tu_pair(enum tu_kind kind, int *wfd, int *rfd)
{
	int fds[2];

	switch (kind) {
	case TU_TCP:
		return tu_tcp_pair(wfd, rfd);
	case TU_PIPE:
		if (pipe2(fds, O_CLOEXEC) < 0)
			return -1;
		*rfd = fds[0];
		*wfd = fds[1];
		return 0;
	case TU_UNIX:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
			return -1;
		*wfd = fds[0];
		*rfd = fds[1];
		return 0;
	}
	return -1;
}

static inline void tu_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* Reader thread: reads fd to EOF (or `limit` bytes) into memory. */
struct tu_reader {
	int fd;
	size_t limit;		/* 0: until EOF */
	unsigned char *data;
	size_t len, cap;
	int err;		/* errno of a failed read, 0 */
	pthread_t tid;
};

static inline void *tu_reader_main(void *arg)
{
	struct tu_reader *r = arg;

	for (;;) {
		size_t want = 1 << 16;
		ssize_t n;

		if (r->limit && r->len >= r->limit)
			break;
		if (r->limit && r->limit - r->len < want)
			want = r->limit - r->len;
		if (r->cap - r->len < want) {
			size_t cap = r->cap ? r->cap * 2 : 1 << 20;
			unsigned char *d;

			while (cap - r->len < want)
				cap *= 2;
			d = realloc(r->data, cap);
			if (!d) {
				r->err = ENOMEM;
				break;
			}
			r->data = d;
			r->cap = cap;
		}
		n = read(r->fd, r->data + r->len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r->err = errno;
			break;
		}
		if (n == 0)
			break;
		r->len += (size_t)n;
	}
	return NULL;
}

static inline int tu_reader_start(struct tu_reader *r, int fd, size_t limit)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->limit = limit;
	return pthread_create(&r->tid, NULL, tu_reader_main, r);
}

static inline void tu_reader_join(struct tu_reader *r)
{
	pthread_join(r->tid, NULL);
}

static inline void tu_reader_free(struct tu_reader *r)
{
	free(r->data);
	r->data = NULL;
}

#endif /* ZC_IO_TEST_UTIL_H */
