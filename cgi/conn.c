/*
 * conn.c - one connection from the web server: accepting it and telling
 * its transport apart, reading its record stream, and sending records.
 *
 * Transports (docs/fastcgi.md): the first byte the server sends is 0x01
 * (a FastCGI header: the standard protocol on the socket itself) or 0xC1
 * (libzc's channel handshake: the zero-copy transport).  We peek at it
 * without consuming it; a peek does not take the descriptors a handshake
 * carries (SCM_RIGHTS stay with the message until it is really received:
 * cgi/tests/test_conn.c checks that).
 *
 * Input is read as chunks: the next contiguous bytes, valid until the
 * caller consumes them.  On a socket a chunk lies in our read buffer; on a
 * channel it is a slice of a received buffer (the server's pool, mapped
 * read-only), which goes back to its owner once consumed.  The readers
 * above consume a chunk only when they fetch the next one, so the bytes an
 * application reads from FCGX_GetStr never move.
 *
 * Output goes as batches of records built by the streams, framed by the
 * protocol library (fcgi_batch.h) into one aggregate.  On a socket it is
 * written with iol_write: record headers (from the batch itself) and bytes
 * staged or lent by the app gathered into sendmsg, file extents with
 * sendfile.  On a channel it is ONE message: all the record headers (and
 * the few bodies that are bytes) copied into one small pool buffer, and
 * the content as slices of the streams' pool buffers, cached documents and
 * file extents, each record's content a sub-slice of them (no copy).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MSG_FCGI 0x01
#define MSG_ZC_HELLO 0xC1

/* ------------------------------------------------------- registry by fd */

/*
 * Every FCGX call finds its connection here by descriptor, several times a
 * request, so a lookup takes no lock: the table is published with a
 * release store and read with acquire loads.  Writers (accept, close)
 * hold reg_lock.  A table that grows is replaced, never freed: a reader
 * may still be looking into it, and the old tables, chained from the new
 * one, add up to less than the newest (they double).
 */
struct reg_table {
	size_t cap;
	struct reg_table *retired;	/* the one this replaced */
	_Atomic(struct zcf_conn *) slot[];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct reg_table *) reg;

static int reg_set(int fd, struct zcf_conn *c)
{
	struct reg_table *t;
	int err = 0;

	pthread_mutex_lock(&reg_lock);
	t = atomic_load_explicit(&reg, memory_order_relaxed);
	if ((!t || (size_t)fd >= t->cap) && c) {
		size_t have = t ? t->cap : 0, cap = have ? have : 64;
		struct reg_table *n;

		while (cap <= (size_t)fd)
			cap *= 2;
		n = calloc(1, sizeof(*n) + cap * sizeof(n->slot[0]));
		if (!n) {
			err = -ENOMEM;
		} else {
			n->cap = cap;
			n->retired = t;
			for (size_t i = 0; i < have; i++)
				atomic_init(&n->slot[i], atomic_load_explicit(
					&t->slot[i], memory_order_relaxed));
			atomic_store_explicit(&reg, n, memory_order_release);
			t = n;
		}
	}
	if (!err && t && (size_t)fd < t->cap)
		atomic_store_explicit(&t->slot[fd], c, memory_order_release);
	pthread_mutex_unlock(&reg_lock);
	return err;
}

struct zcf_conn *zcf_conn_get(int fd)
{
	struct reg_table *t = atomic_load_explicit(&reg, memory_order_acquire);

	if (fd < 0 || !t || (size_t)fd >= t->cap)
		return NULL;
	return atomic_load_explicit(&t->slot[fd], memory_order_acquire);
}

/* ------------------------------------------------------------- accepting */

/* FCGI_WEB_SERVER_ADDRS: the IPv4 addresses a TCP peer must have, comma
 * separated (libfcgi's variable; unset means anyone). */
static char *addrs;
static size_t pool_size = (size_t)1 << 30;

/* The environment is read when the library loads: later, FCGI_Accept
 * points environ at a request's parameters (which a client controls). */
__attribute__((constructor)) static void env_init(void)
{
	const char *v = getenv("FCGI_WEB_SERVER_ADDRS");

	addrs = v && *v ? strdup(v) : NULL;
	v = getenv("ZCFCGI_POOL_MB");
	if (v && atol(v) > 0)
		pool_size = (size_t)atol(v) << 20;
}

static bool peer_allowed(int fd)
{
	const char *list;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[INET6_ADDRSTRLEN];
	const char *p;
	size_t n;

	if (!(list = addrs))
		return true;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	if (ss.ss_family == AF_UNIX)
		return true;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
			  addr, sizeof(addr));
	else if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
			  addr, sizeof(addr));
	else
		return false;
	n = strlen(addr);
	for (p = list; *p;) {
		size_t l = strcspn(p, ", \t");

		if (l == n && !memcmp(p, addr, n))
			return true;
		p += l;
		p += strspn(p, ", \t");
	}
	return false;
}

/* Sleep until fd is readable (0) or wake is (1); a negative errno if poll
 * failed (-EINTR: a signal came). */
static int wait_readable(int fd, int wake)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = wake, .events = POLLIN } };

	if (poll(p, 2, -1) < 0)		/* a negative fd is left out */
		return -errno;
	return p[1].revents & POLLIN ? 1 : 0;
}

/* A listening socket left blocking could put us to sleep in accept after
 * poll said a connection waits, if another process took it first: a
 * sleep with nothing watching `wake`.  One check per process and socket
 * (the flag belongs to the socket, shared with every process that
 * accepts on it, all of which handle -EAGAIN); only a listening socket
 * is touched -- a CGI's fd 0 is somebody's pipe or terminal. */
static void make_nonblocking(int lsock)
{
	static _Atomic int done = -1;
	socklen_t len = sizeof(int);
	int fl, on = 0;

	if (atomic_load_explicit(&done, memory_order_relaxed) == lsock)
		return;
	if (getsockopt(lsock, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 ||
	    !on || (fl = fcntl(lsock, F_GETFL)) < 0)
		return;		/* accept will say what is wrong */
	if (!(fl & O_NONBLOCK) && fcntl(lsock, F_SETFL, fl | O_NONBLOCK) < 0)
		return;
	atomic_store_explicit(&done, lsock, memory_order_relaxed);
}

static struct zcf_conn *conn_new(int fd)
{
	struct zcf_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	return c;
}

int zcf_conn_accept(int lsock, int wake, struct zcf_conn **out)
{
	struct zcf_conn *c;
	unsigned char b;
	ssize_t n;
	int fd, err;

	*out = NULL;
	make_nonblocking(lsock);
	fd = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			err = wait_readable(lsock, wake);
			return err == 1 ? -EINTR : err ? err : -EAGAIN;
		}
		if (errno == ECONNABORTED || errno == EPROTO)
			return -EAGAIN;
		return -errno;
	}
	if (!peer_allowed(fd)) {
		close(fd);
		return -EAGAIN;
	}
	/* The first byte tells the transport; until it comes, a stop asked
	 * for still ends the wait. */
	while ((n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT)) < 0 &&
	       (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		if (errno == EINTR)
			continue;
		err = wait_readable(fd, wake);
		if (err == 1) {
			close(fd);
			return -EINTR;
		}
		if (err < 0 && err != -EINTR)
			break;
	}
	if (n != 1 || (b != MSG_FCGI && b != MSG_ZC_HELLO)) {
		close(fd);
		return -EAGAIN;
	}
	c = conn_new(fd);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	if (b == MSG_ZC_HELLO) {
		err = zc_channel_open(fd, &c->ch);
		if (err) {
			close(fd);
			free(c);
			return -EAGAIN;
		}
		c->fd = zc_channel_fd(c->ch);
	} else {
		c->rbuf = malloc(ZCF_RBUF_SIZE);
		if (!c->rbuf || zc_sink_init(&c->sink, fd)) {
			free(c->rbuf);
			close(fd);
			free(c);
			return -ENOMEM;
		}
	}
	if ((err = reg_set(c->fd, c))) {
		zcf_conn_close(c);
		return err;
	}
	*out = c;
	return 0;
}

/* Closing a socket with unread input makes the kernel answer with a
 * reset, which can destroy the response still on its way to the server
 * (a server that sent an empty STDIN record we never read, say).  So: our
 * side shut down, then input drained until the server closes (it has
 * everything), for at most LINGER_MS. */
#define LINGER_MS 2000

static void lingering_close(struct zcf_conn *c)
{
	struct timespec t0, t;
	char sink[4096];

	if (!c->eof && shutdown(c->fd, SHUT_WR) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };
			long ms;
			ssize_t n;

			clock_gettime(CLOCK_MONOTONIC, &t);
			ms = (t.tv_sec - t0.tv_sec) * 1000 +
			     (t.tv_nsec - t0.tv_nsec) / 1000000;
			if (ms >= LINGER_MS || poll(&p, 1, (int)(LINGER_MS - ms)) <= 0)
				break;
			n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EINTR &&
				       errno != EAGAIN))
				break;
		}
	}
	close(c->fd);
}

void zcf_conn_close(struct zcf_conn *c)
{
	if (!c)
		return;
	reg_set(c->fd, NULL);
	zc_agg_release(c->rin);
	if (c->ch)
		zc_channel_close(c->ch);
	else
		lingering_close(c);
	for (unsigned i = 0; i < c->nfiles; i++)
		zc_file_release(c->files[i]);
	free(c->files);
	free(c->rbuf);
	free(c->bounce);
	free(c);
}

/* ----------------------------------------------------------------- input */

/* One message onto the input: 1, 0 at the end, or a negative errno
 * (-EINTR included). */
static int chan_recv_once(struct zcf_conn *c)
{
	zc_agg *m;
	int err;

	err = zc_channel_recv(c->ch, &m);
	if (err == -EPIPE) {
		c->eof = true;
		return 0;
	}
	if (err)
		return err;
	if (!c->rin) {
		c->rin = m;
		return 1;
	}
	err = zc_agg_concat(c->rin, m);
	zc_agg_release(m);
	return err ? err : 1;
}

static int chan_recv(struct zcf_conn *c)
{
	int err;

	do
		err = chan_recv_once(c);
	while (err == -EINTR);
	return err;
}

int zcf_conn_wait_input(struct zcf_conn *c, int wake)
{
	int err;

	if (c->eof || zcf_conn_buffered(c) > 0)
		return 0;
	if (!c->ch) {
		err = wait_readable(c->fd, wake);
		return err == 1 ? -EINTR : err;
	}
	/* The channel's own sleep watches wake too (its spin first). */
	zc_channel_set_interrupt(c->ch, wake);
	err = chan_recv_once(c);
	zc_channel_set_interrupt(c->ch, -1);
	return err < 0 ? err : 0;
}

ssize_t zcf_conn_peek(struct zcf_conn *c, const uint8_t **p, size_t max)
{
	struct zc_slice s;
	ssize_t n;
	int err;

	if (max == 0)
		return 0;
	if (!c->ch) {
		while (c->rpos == c->rend) {
			if (c->eof)
				return 0;
			c->rpos = c->rend = 0;
			n = recv(c->fd, c->rbuf, ZCF_RBUF_SIZE, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != ECONNRESET)
				return -errno;
			if (n <= 0) {
				c->eof = true;
				return 0;
			}
			c->rend = (size_t)n;
		}
		*p = c->rbuf + c->rpos;
		n = (ssize_t)(c->rend - c->rpos);
		return (size_t)n < max ? n : (ssize_t)max;
	}
	while (!c->rin || zc_agg_len(c->rin) == 0) {
		if (c->eof)
			return 0;
		if ((err = chan_recv(c)) <= 0)
			return err;
	}
	if ((err = zc_agg_slice(c->rin, 0, &s)))
		return err;
	if (s.len < max)
		max = s.len;
	if (s.kind == ZC_SLICE_BUF) {
		const uint8_t *d = zc_buf_data(s.buf);

		if (!d)
			return -EIO;
		*p = d + s.off;
		return (ssize_t)max;
	}
	/* A file extent in the input (zchttpd sends none): read a copy. */
	if (max > ZCF_RBUF_SIZE)
		max = ZCF_RBUF_SIZE;
	if (!c->bounce && !(c->bounce = malloc(ZCF_RBUF_SIZE)))
		return -ENOMEM;
	n = zc_agg_copyout(c->rin, 0, c->bounce, max);
	if (n <= 0)
		return n < 0 ? n : -EIO;
	*p = c->bounce;
	return n;
}

void zcf_conn_consume(struct zcf_conn *c, size_t n)
{
	if (!c->ch)
		c->rpos += n;
	else if (n)
		zc_agg_trim_front(c->rin, n);
}

static int read_bytes(struct zcf_conn *c, uint8_t *dst, size_t len)
{
	while (len) {
		const uint8_t *p;
		ssize_t n = zcf_conn_peek(c, &p, len);

		if (n <= 0)
			return n ? (int)n : -EPIPE;
		memcpy(dst, p, (size_t)n);
		zcf_conn_consume(c, (size_t)n);
		dst += n;
		len -= (size_t)n;
	}
	return 0;
}

static int skip_bytes(struct zcf_conn *c, size_t len)
{
	while (len) {
		const uint8_t *p;
		ssize_t n = zcf_conn_peek(c, &p, len);

		if (n <= 0)
			return n ? (int)n : -EPIPE;
		zcf_conn_consume(c, (size_t)n);
		len -= (size_t)n;
	}
	return 0;
}

int zcf_conn_next_record(struct zcf_conn *c)
{
	uint8_t h[FCGI_HEADER_LEN];
	int err;

	if ((err = skip_bytes(c, c->rec_left + c->pad_left)))
		return err;
	c->rec_left = c->pad_left = 0;
	if ((err = read_bytes(c, h, sizeof(h))))
		return err;
	if ((err = fcgi_header_decode_any(h, &c->rec)))
		return err;
	c->rec_left = c->rec.content_length;
	c->pad_left = c->rec.padding_length;
	return 0;
}

int zcf_conn_read_content(struct zcf_conn *c, void *dst)
{
	int err = read_bytes(c, dst, c->rec_left);

	if (!err)
		c->rec_left = 0;
	return err;
}

size_t zcf_conn_buffered(struct zcf_conn *c)
{
	if (!c->ch)
		return c->rend - c->rpos;
	return c->rin ? zc_agg_len(c->rin) : 0;
}

int zcf_conn_poll_input(struct zcf_conn *c)
{
	ssize_t n;
	int err;

	if (c->eof || c->broken)
		return 0;
	if (c->ch) {
		zc_channel_set_nonblock(c->ch, 1);
		err = chan_recv(c);
		zc_channel_set_nonblock(c->ch, 0);
		return err == -EAGAIN || err > 0 ? 0 : err;
	}
	/* No chunk is out (the caller read its input to the end): the
	 * buffered bytes may move to the front. */
	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rend - c->rpos);
		c->rend -= c->rpos;
		c->rpos = 0;
	}
	if (c->rend == ZCF_RBUF_SIZE)
		return 0;
	n = recv(c->fd, c->rbuf + c->rend, ZCF_RBUF_SIZE - c->rend,
		 MSG_DONTWAIT);
	if (n > 0)
		c->rend += (size_t)n;
	else if (n == 0 || errno == ECONNRESET)
		c->eof = true;
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -errno;
	return 0;
}

void zcf_conn_copy_buffered(struct zcf_conn *c, size_t off, void *dst,
			    size_t n)
{
	if (!c->ch)
		memcpy(dst, c->rbuf + c->rpos + off, n);
	else
		(void)zc_agg_copyout(c->rin, off, dst, n);
}

/* ---------------------------------------------------------------- output */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static zc_pool *out_pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* The pool is reserved, not touched (untouched pages cost nothing), so it
 * can be large: buffers lent to zchttpd come back only when the client
 * has taken the response.  ZCFCGI_POOL_MB overrides the size. */

/* After fork the pool is the parent's (read-only here): the child makes
 * its own on first use.  An atfork handler rather than a getpid() per
 * call (this is on every response's path). */
static void pool_fork_child(void)
{
	pthread_mutex_init(&pool_lock, NULL);
	out_pool = NULL;
}

static void pool_once_init(void)
{
	pthread_atfork(NULL, NULL, pool_fork_child);
}

zc_pool *zcf_pool(void)
{
	zc_pool *p;

	pthread_once(&pool_once, pool_once_init);
	pthread_mutex_lock(&pool_lock);
	if (!out_pool && zc_pool_create(pool_size, &out_pool))
		out_pool = NULL;
	p = out_pool;
	pthread_mutex_unlock(&pool_lock);
	return p;
}

__attribute__((destructor)) static void pool_fini(void)
{
	/* Buffers still lent keep the memory until they come back. */
	zc_pool_release(out_pool);
	out_pool = NULL;
}

/* Files shared by requests: the same version of the same file is one
 * zc_file, so a channel sends its descriptor once. */
#define FILE_CACHE 64

static struct {
	struct zc_file_version v;
	zc_file *f;
} file_cache[FILE_CACHE];
static unsigned file_next;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

int zcf_file_get(int fd, zc_file **out)
{
	struct zc_file_version v;
	struct stat st;
	zc_file *f;
	int err;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	v.dev = st.st_dev;
	v.ino = st.st_ino;
	v.size = st.st_size;
	v.mtime_ns = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	v.ctime_ns = st.st_ctim.tv_sec * 1000000000ll + st.st_ctim.tv_nsec;
	pthread_mutex_lock(&file_lock);
	for (unsigned i = 0; i < FILE_CACHE; i++) {
		if (file_cache[i].f && !memcmp(&file_cache[i].v, &v, sizeof(v))) {
			*out = zc_file_ref(file_cache[i].f);
			pthread_mutex_unlock(&file_lock);
			return 0;
		}
	}
	err = zc_file_from_fd(fd, &f);
	if (!err) {
		unsigned i = file_next++ % FILE_CACHE;

		zc_file_release(file_cache[i].f);
		zc_file_version(f, &file_cache[i].v);
		file_cache[i].f = zc_file_ref(f);
		*out = f;
	}
	pthread_mutex_unlock(&file_lock);
	return err;
}

__attribute__((destructor)) static void file_cache_fini(void)
{
	for (unsigned i = 0; i < FILE_CACHE; i++) {
		zc_file_release(file_cache[i].f);
		file_cache[i].f = NULL;
	}
}

bool zcf_conn_file_ok(struct zcf_conn *c, zc_file *f)
{
	zc_file **v;

	for (unsigned i = 0; i < c->nfiles; i++)
		if (c->files[i] == f)
			return true;
	if (c->nfiles >= ZCF_CONN_FILES)
		return false;
	v = realloc(c->files, (c->nfiles + 1) * sizeof(*v));
	if (!v)
		return false;
	c->files = v;
	c->files[c->nfiles++] = zc_file_ref(f);
	return true;
}

void zcf_batch_init(struct zcf_batch *b, struct zcf_conn *c, int rawfd)
{
	b->c = c;
	b->rawfd = c ? c->fd : rawfd;
	fcgi_batch_init(&b->recs);
}

/* The standard transport: the records written with iol_write -- headers
 * and bytes gathered into sendmsg from where they are, buffer slices
 * from their memory or by reference, file extents with sendfile -- on
 * the connection's sink (probed once), or a bare socket's. */
static int send_socket(struct zcf_batch *b, zc_agg *recs)
{
	zc_sink bare;
	const zc_sink *sink = b->c ? &b->c->sink : &bare;

	if (!b->c && zc_sink_init(&bare, b->rawfd))
		return -EBADF;
	while (zc_agg_len(recs)) {
		ssize_t n = iol_write_sink(sink, recs);

		if (n < 0 && n != -EINTR)
			return (int)n;
	}
	return 0;
}

int zcf_batch_send(struct zcf_batch *b)
{
	bool chan = b->c && b->c->ch;
	zc_agg *recs = NULL;
	int err = 0;

	if (b->c && b->c->broken)
		err = -EPIPE;
	if (!err && b->recs.n && !(err = zc_agg_create(&recs)))
		/* A channel: one message, the headers and bytes in one of our
		 * buffers.  A socket: nothing copied before the kernel. */
		err = chan ? fcgi_batch_build(&b->recs, FCGI_BATCH_COPY,
					      zcf_pool(), recs)
			   : fcgi_batch_build(&b->recs, FCGI_BATCH_BORROW,
					      NULL, recs);
	if (!err && recs && chan) {
		do
			err = zc_channel_send(b->c->ch, recs);
		while (err == -EINTR);
	} else if (!err && recs) {
		err = send_socket(b, recs);
	}
	zc_agg_release(recs);
	if (err && b->c)
		b->c->broken = true;
	fcgi_batch_free(&b->recs);
	return err;
}

int zcf_conn_send_record(struct zcf_conn *c, uint8_t type, uint16_t id,
			 const void *content, size_t len)
{
	struct zcf_batch b;

	zcf_batch_init(&b, c, -1);
	fcgi_batch_bytes(&b.recs, type, id, content, len);
	return zcf_batch_send(&b);
}
