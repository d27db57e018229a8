/*
 * channel_ctl.c - the control socket: reading its messages, and the pools
 * and files the two sides share over it.
 *
 * The socket carries typed control messages only (channel_int.h lists
 * them); the descriptors themselves travel on the rings.  Each pool and
 * each file is sent once per channel, with SCM_RIGHTS, and from then on is
 * named by a number: a pool by its id, a file by a token (its index here).
 * We keep a reference to everything we sent, so that a pool id names one
 * pool for the channel's whole life.
 *
 * Ordering rule: a pool or file a descriptor names is always sent on the
 * socket *before* the descriptor is published on the ring.  AF_UNIX sendmsg
 * queues the message at the receiver before it returns, so a receiver that
 * meets an unknown pool id only has to drain the socket (without blocking)
 * to find it; if it is still unknown the peer is lying (-EPROTO).  That is
 * zc_ch_peer_pool and zc_ch_peer_file.
 *
 * Everything read here comes from the peer and is checked: wrong sizes,
 * unknown types, a pool or file token shared twice, more than the limits
 * are protocol errors, sticky on the channel.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel_int.h"

struct file_msg {
	uint8_t type, pad[3];
	uint32_t token;
	struct zc_file_version v;
};

/* ------------------------------------------------------------- reading */

int zc_ch_read_msg(zc_channel *ch, void *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	int flags = MSG_CMSG_CLOEXEC;
	ssize_t n;

	*fd = -1;
	if (ch->socktype == SOCK_STREAM)
		flags |= MSG_WAITALL;
	do
		n = recvmsg(ch->sock, &mh, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	zc_sock_take_fds(&mh, fd);
	if (n == 0 || (size_t)n != len ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return n == 0 ? -EPIPE : -EPROTO;
	}
	return 0;
}

int zc_ch_peek_type(int sock)
{
	unsigned char t;
	ssize_t n;

	do
		n = recv(sock, &t, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -EAGAIN;
		return errno == ECONNRESET ? -EPIPE : -errno;
	}
	return n == 0 ? -EPIPE : t;
}

/*
 * One read of the control socket: a buffer of messages with the
 * descriptors that came with them.  A stream read joins the one-byte
 * messages (doorbells above all: one per wake-up) that wait there, and
 * the kernel ends it right after a message that carries descriptors, so
 * one recvmsg takes every doorbell -- where a peek and a read took two
 * system calls.  A message the buffer's end cuts in two is completed at
 * once (its sender wrote it whole, so it is queued): nothing is kept
 * between reads.
 */
#define CHUNK_BYTES 256
#define CHUNK_FDS 8

struct chunk {
	unsigned char b[CHUNK_BYTES];
	size_t len, off;
	int fds[CHUNK_FDS];		/* in the order they came */
	unsigned nfds, next_fd;
};

/* Read into c->b after what it holds, at most max bytes: the count (0 at
 * EOF) or -errno.  Descriptors beyond CHUNK_FDS are closed: -EPROTO. */
static ssize_t chunk_read(zc_channel *ch, struct chunk *c, size_t max,
			  int flags)
{
	char cbuf[CMSG_SPACE(CHUNK_FDS * sizeof(int))];
	struct iovec iov = { c->b + c->len, max };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	size_t room = CHUNK_FDS - c->nfds, came;
	ssize_t n;

	do
		n = recvmsg(ch->sock, &mh, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	came = zc_sock_take_fd_array(&mh, c->fds + c->nfds, room);
	c->nfds += came < room ? (unsigned)came : (unsigned)room;
	c->len += (size_t)n;
	if (came > room || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EPROTO;
	return n;
}

/* The next descriptor that came, for the message that carries it; -1 if
 * none did (the peer broke the protocol). */
static int chunk_fd(struct chunk *c)
{
	return c->next_fd < c->nfds ? c->fds[c->next_fd++] : -1;
}

/* The size of a message of type t; 0 for one that may not come here. */
static size_t msg_size(unsigned char t)
{
	switch (t) {
	case ZC_CH_MSG_DOORBELL:
	case ZC_CH_MSG_CLOSE:
	case ZC_CH_MSG_RING:
		return 1;
	case ZC_CH_MSG_FILE:
		return sizeof(struct file_msg);
	case ZC_CH_MSG_HELLO:
		return 0;	/* only once, at the handshake */
	default:
		return ZC_POOL_MSG_SIZE;	/* a pool share */
	}
}

/* A pool share (fd taken). */
static int import_pool(zc_channel *ch, const void *msg, int fd)
{
	struct zc_ch_imp_pool *v;
	zc_pool *p;
	int err = zc_pool_msg_import(msg, ZC_POOL_MSG_SIZE, fd, &p);

	if (err)
		return err == -ENOMEM ? err : -EPROTO;
	for (uint32_t i = 0; i < ch->n_imp_pools; i++) {
		if (ch->imp_pools[i].id == p->id) {
			/* Shared twice: a confused peer; keep the first. */
			zc_pool_put(p);
			return -EPROTO;
		}
	}
	if (ch->n_imp_pools == ch->cap_imp_pools) {
		uint32_t cap = ch->cap_imp_pools ? ch->cap_imp_pools * 2 : 4;

		v = cap > ZC_CH_MAX_POOLS ? NULL :
		    realloc(ch->imp_pools, cap * sizeof(*v));
		if (!v) {
			zc_pool_put(p);
			return cap > ZC_CH_MAX_POOLS ? -EPROTO : -ENOMEM;
		}
		ch->imp_pools = v;
		ch->cap_imp_pools = cap;
	}
	ch->imp_pools[ch->n_imp_pools].id = p->id;
	ch->imp_pools[ch->n_imp_pools++].pool = p;
	return 0;
}

/* A file share (fd taken). */
static int import_file(zc_channel *ch, const void *msg, int fd)
{
	struct file_msg m;
	zc_file *f;
	int err = 0;

	memcpy(&m, msg, sizeof(m));
	if (fd < 0 || m.token >= ZC_CH_MAX_FILES)
		err = -EPROTO;
	if (!err && !ch->imp_files &&
	    !(ch->imp_files = calloc(ZC_CH_MAX_FILES, sizeof(zc_file *))))
		err = -ENOMEM;
	if (!err && ch->imp_files[m.token])
		err = -EPROTO;	/* tokens are never reused */
	if (!err)
		err = zc_file_from_fd(fd, &f);
	if (fd >= 0)
		close(fd);
	if (err)
		return err == -ENOMEM ? err : -EPROTO;
	/* The extents were cut against the sender's version of the file:
	 * keep that version, so a change since then reads as -ESTALE. */
	f->v = m.v;
	ch->imp_files[m.token] = f;
	return 0;
}

/* Doorbells were taken here, outside zc_ch_nb_wait's rule: a caller that
 * waits may have needed one (channel_wait.c). */
static void bells_taken(zc_channel *ch)
{
	if (ch->rx_waiting || ch->tx_waiting)
		ch->bells_lost = true;
}

/* The peer asks for a doorbell (zc_ch_ask_bell): never block, as any
 * doorbell. */
static void ring_back(zc_channel *ch)
{
	static const unsigned char bell = ZC_CH_MSG_DOORBELL;

	(void)zc_sock_send(ch->sock, &bell, 1, -1, MSG_DONTWAIT);
}

/* Handle the whole message at m (type t). */
static int handle_msg(zc_channel *ch, struct chunk *c, unsigned char t,
		      const unsigned char *m, int *bells)
{
	switch (t) {
	case ZC_CH_MSG_DOORBELL:
		(*bells)++;
		return 0;
	case ZC_CH_MSG_CLOSE:
		ch->peer_closed = true;
		return 0;
	case ZC_CH_MSG_RING:
		ring_back(ch);
		return 0;
	case ZC_CH_MSG_FILE:
		return import_file(ch, m, chunk_fd(c));
	default:
		return import_pool(ch, m, chunk_fd(c));
	}
}

/*
 * Read the socket once, without blocking, and handle every message the
 * read brought; *bells counts the doorbells among them.  1: the read was
 * short (the socket had nothing more), 0: it filled the buffer (read
 * again), -EAGAIN: nothing there, -EPIPE: EOF, other <0: error.
 */
static int read_ctl(zc_channel *ch, int *bells)
{
	struct chunk c;
	ssize_t n;
	int err = 0;

	c.len = c.off = 0;
	c.nfds = c.next_fd = 0;
	n = chunk_read(ch, &c, sizeof(c.b), MSG_DONTWAIT);
	if (n == 0)
		return -EPIPE;
	if (n < 0 && n != -EPROTO)
		return (int)n;
	if (n < 0)
		err = -EPROTO;
	while (!err && c.off < c.len) {
		unsigned char t = c.b[c.off];
		size_t size = msg_size(t), have = c.len - c.off;

		if (!size) {
			err = -EPROTO;
			break;
		}
		if (have < size) {
			/* Cut by the buffer's end: the rest is queued.  A
			 * packet socket never cuts one (-EPROTO). */
			if (ch->socktype != SOCK_STREAM) {
				err = -EPROTO;
				break;
			}
			memmove(c.b, c.b + c.off, have);
			c.off = 0;
			c.len = have;
			n = chunk_read(ch, &c, size - have, MSG_WAITALL);
			if (n >= 0 && c.len != size)
				n = n == 0 ? -EPIPE : -EPROTO;
			if (n < 0) {
				err = (int)n;
				break;
			}
		}
		err = handle_msg(ch, &c, t, c.b + c.off, bells);
		c.off += size;
	}
	/* Descriptors no message claimed: a confused peer. */
	while (c.next_fd < c.nfds) {
		close(c.fds[c.next_fd++]);
		if (!err)
			err = -EPROTO;
	}
	if (err)
		return err;
	return c.len < sizeof(c.b);
}

/*
 * Handle what the socket has.  fast: stop after a short read (the socket
 * had nothing more when it was read; on a stream that is one read per
 * wake-up).  That can miss a message another process wrote just after,
 * which callers that wait again on the socket will see; imp_find, which
 * must find the share, reads until the socket is empty.  *bells counts
 * the doorbells taken.  0, or <0 as read_ctl.
 */
static int read_all(zc_channel *ch, bool fast, int *bells)
{
	int r;

	do
		r = read_ctl(ch, bells);
	while (r == 0 || (r == 1 && (!fast || ch->socktype != SOCK_STREAM)));
	return r == 1 || r == -EAGAIN ? 0 : r;
}

/* A read's error, handled: the peer gone, or the channel broken. */
static int read_error(zc_channel *ch, int r)
{
	if (r == -EPIPE) {
		zc_ch_peer_gone(ch);
		return r;
	}
	if (r == -EINTR)
		return r;
	return zc_ch_broke(ch, r == -ENOMEM ? r : -EPROTO);
}

/* Handle what the socket has (read_all): the doorbells taken, or <0 as
 * read_error. */
static int drain(zc_channel *ch, bool fast)
{
	int bells = 0, r = read_all(ch, fast, &bells);

	if (bells)
		bells_taken(ch);
	return r < 0 ? read_error(ch, r) : bells;
}

int zc_ch_drain_sock(zc_channel *ch)
{
	int r = drain(ch, true);

	return r < 0 ? r : 0;
}

int zc_ch_take_bells(zc_channel *ch)
{
	return drain(ch, true);
}

/* Read and handle exactly the message of type t at the socket's head
 * (zc_ch_peek_bells, which must leave the doorbells behind it). */
static int read_one(zc_channel *ch, unsigned char t)
{
	struct chunk c;
	size_t size = msg_size(t);
	ssize_t n;
	int bells = 0, err;

	if (!size)
		return -EPROTO;
	c.len = c.off = 0;
	c.nfds = c.next_fd = 0;
	n = chunk_read(ch, &c, size, MSG_WAITALL);
	if (n >= 0 && c.len != size)
		n = n == 0 ? -EPIPE : -EPROTO;
	err = n < 0 ? (int)n : handle_msg(ch, &c, t, c.b, &bells);
	while (c.next_fd < c.nfds) {
		close(c.fds[c.next_fd++]);
		if (!err)
			err = -EPROTO;
	}
	return err;
}

int zc_ch_peek_bells(zc_channel *ch)
{
	unsigned char b[64];
	ssize_t n, k;
	int r;

	for (;;) {
		do
			n = recv(ch->sock, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return read_error(ch, n == 0 || errno == ECONNRESET ?
					  -EPIPE : -errno);
		for (k = 0; k < n && b[k] == ZC_CH_MSG_DOORBELL; k++)
			;
		if (k > 0)
			return (int)k;
		/* A control message first: handled. */
		r = read_one(ch, b[0]);
		if (r < 0)
			return read_error(ch, r);
	}
}

int zc_ch_take_counted_bells(zc_channel *ch, int n)
{
	unsigned char b[64];
	ssize_t got;

	if (n <= 0)
		return 0;
	do
		got = recv(ch->sock, b, (size_t)n, MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return read_error(ch, errno == ECONNRESET ? -EPIPE : -errno);
	/* We are the socket's only reader: they are still there. */
	return got == n ? 0 : zc_ch_broke(ch, -EPROTO);
}

/* ------------------------------------------ what the peer shared with us */

/* Lookups by pool id and by file token: the entry, or NULL. */
static void *imp_pool_find(zc_channel *ch, uint64_t id)
{
	if (ch->last_imp < ch->n_imp_pools &&
	    ch->imp_pools[ch->last_imp].id == id)
		return ch->imp_pools[ch->last_imp].pool;
	for (uint32_t i = 0; i < ch->n_imp_pools; i++) {
		if (ch->imp_pools[i].id == id) {
			ch->last_imp = i;
			return ch->imp_pools[i].pool;
		}
	}
	return NULL;
}

static void *imp_file_find(zc_channel *ch, uint64_t token)
{
	return ch->imp_files ? ch->imp_files[token] : NULL;
}

static int imp_find(zc_channel *ch, void *(*find)(zc_channel *, uint64_t),
		    uint64_t key, void **out)
{
	int err;

	if ((*out = find(ch, key)))
		return 0;
	/* Not known yet: by the ordering rule it is in the socket now. */
	err = drain(ch, false);
	if (err < 0 && err != -EPIPE)
		return err;
	return (*out = find(ch, key)) ? 0 : -EPROTO;
}

int zc_ch_peer_pool(zc_channel *ch, uint64_t id, zc_pool **out)
{
	void *p;
	int err = imp_find(ch, imp_pool_find, id, &p);

	*out = p;
	return err;
}

int zc_ch_peer_file(zc_channel *ch, uint64_t token, zc_file **out)
{
	void *f = NULL;
	int err = token < ZC_CH_MAX_FILES ?
		  imp_find(ch, imp_file_find, token, &f) : -EPROTO;

	*out = f;
	return err;
}

/* --------------------------------------------- what we share with the peer */

int zc_ch_share_pool(zc_channel *ch, zc_pool *pool)
{
	zc_pool **v;
	int err;

	if (ch->last_pool < ch->n_sent_pools &&
	    ch->sent_pools[ch->last_pool] == pool)
		return 0;
	for (uint32_t i = 0; i < ch->n_sent_pools; i++) {
		if (ch->sent_pools[i] == pool) {
			ch->last_pool = i;
			return 0;
		}
	}
	if (ch->n_sent_pools == ZC_CH_MAX_POOLS)
		return -ENOBUFS;
	if (ch->n_sent_pools == ch->cap_sent_pools) {
		uint32_t cap = ch->cap_sent_pools ? ch->cap_sent_pools * 2 : 4;

		v = realloc(ch->sent_pools, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ch->sent_pools = v;
		ch->cap_sent_pools = cap;
	}
	err = zc_pool_send(ch->sock, pool);
	if (err)
		return err == -ECONNRESET ? -EPIPE : err;
	/* Our reference keeps the pool (and so its id) alive and unique. */
	zc_pool_get(pool);
	ch->last_pool = ch->n_sent_pools;
	ch->sent_pools[ch->n_sent_pools++] = pool;
	return 0;
}

int zc_ch_share_file(zc_channel *ch, zc_file *file, uint32_t *token)
{
	struct file_msg m = { .type = ZC_CH_MSG_FILE };
	int err;

	for (uint32_t i = 0; i < ch->n_sent_files; i++) {
		if (ch->sent_files[i] == file) {
			*token = i;
			return 0;
		}
	}
	if (ch->n_sent_files == ZC_CH_MAX_FILES)
		return -ENFILE;
	if (!ch->sent_files &&
	    !(ch->sent_files = calloc(ZC_CH_MAX_FILES, sizeof(zc_file *))))
		return -ENOMEM;
	m.token = ch->n_sent_files;
	zc_file_version(file, &m.v);
	err = zc_sock_send(ch->sock, &m, sizeof(m), zc_file_fd(file), 0);
	if (err)
		return err;
	ch->sent_files[ch->n_sent_files] = zc_file_ref(file);
	*token = ch->n_sent_files++;
	return 0;
}

void zc_ch_ask_bell(zc_channel *ch)
{
	static const unsigned char ring = ZC_CH_MSG_RING;

	(void)zc_sock_send(ch->sock, &ring, 1, -1, MSG_DONTWAIT);
}

void zc_ch_send_close(zc_channel *ch)
{
	static const unsigned char bye = ZC_CH_MSG_CLOSE;

	(void)zc_sock_send(ch->sock, &bye, 1, -1, MSG_DONTWAIT);
}

void zc_ch_ctl_free(zc_channel *ch)
{
	for (uint32_t i = 0; i < ch->n_sent_pools; i++)
		zc_pool_put(ch->sent_pools[i]);
	for (uint32_t i = 0; i < ch->n_sent_files; i++)
		zc_file_release(ch->sent_files[i]);
	for (uint32_t i = 0; i < ch->n_imp_pools; i++)
		zc_pool_put(ch->imp_pools[i].pool);
	for (uint32_t i = 0; ch->imp_files && i < ZC_CH_MAX_FILES; i++)
		zc_file_release(ch->imp_files[i]);
	free(ch->sent_pools);
	free(ch->sent_files);
	free(ch->imp_pools);
	free(ch->imp_files);
}
