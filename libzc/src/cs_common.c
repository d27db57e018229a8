/*
 * cs_common.c - what both Container Shipping backends use: buffers for
 * containers, the next data of a stream (with the rest of an earlier read
 * kept pending), and reporting new containers to the caller.
 *
 * The portable backend reads every descriptor through zc_cs_stream_next;
 * the kernel backend only channels, which the kernel knows nothing about.
 * Neither backend is called from here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "internal.h"
#include "channel.h"
#include "cs_common.h"

#define RECLAIM_WAIT_MS 1000	/* a container waits this long for loans */

/* -------------------------------------------------------------- buffers */

/* A full pool usually means the memory is out on loan to channel peers:
 * collect what they returned, then wait a little for more, before giving
 * up. */
int zc_cs_alloc_buf(size_t size, zc_buf **out)
{
	zc_pool *pool = zc_default_pool();
	int err;

	if (!pool)
		return -ENOMEM;
	err = zc_buf_alloc(pool, size, out);
	if (err == -ENOMEM && zc_channel_reclaim(0) > 0)
		err = zc_buf_alloc(pool, size, out);
	if (err == -ENOMEM && zc_channel_reclaim(RECLAIM_WAIT_MS) > 0)
		err = zc_buf_alloc(pool, size, out);
	return err;
}

/* -------------------------------------------------------- pending rests */

/* The rest of a cs_read that did not fit in `size` or `maxcon`: the next
 * cs_read on the same descriptor returns it first, nothing is lost. */
struct cs_pending {
	int fd;
	uint64_t key1, key2;	/* channel serial, or st_dev/st_ino */
	zc_agg *rest;
};

static struct {
	pthread_mutex_t lock;
	struct cs_pending *v;
	size_t n, cap;
} pend = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };

/* What identifies the stream behind fd, so pending data never leaks into
 * a different file or channel that reuses the number. */
static int stream_key(int fd, zc_channel *ch, uint64_t *k1, uint64_t *k2)
{
	struct stat st;

	if (ch) {
		*k1 = zc_channel_serial(ch);
		*k2 = 0;
		return 0;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	*k1 = (uint64_t)st.st_dev;
	*k2 = (uint64_t)st.st_ino;
	return 0;
}

/* Take the pending rest for this stream, if any (a rest left for a
 * stream that fd no longer names is dropped). */
static zc_agg *pending_get(int fd, uint64_t k1, uint64_t k2)
{
	zc_agg *rest = NULL;

	pthread_mutex_lock(&pend.lock);
	for (size_t i = 0; i < pend.n; i++) {
		struct cs_pending p = pend.v[i];

		if (p.fd != fd)
			continue;
		pend.v[i] = pend.v[--pend.n];
		if (p.key1 == k1 && p.key2 == k2)
			rest = p.rest;
		else
			zc_agg_release(p.rest);	/* fd now names another stream */
		break;
	}
	pthread_mutex_unlock(&pend.lock);
	return rest;
}

static int pending_put(int fd, uint64_t k1, uint64_t k2, zc_agg *rest)
{
	int err = 0;

	pthread_mutex_lock(&pend.lock);
	if (pend.n == pend.cap) {
		size_t cap = pend.cap ? pend.cap * 2 : 8;
		struct cs_pending *v = realloc(pend.v, cap * sizeof(*v));

		if (v) {
			pend.v = v;
			pend.cap = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err)
		pend.v[pend.n++] = (struct cs_pending){ fd, k1, k2, rest };
	pthread_mutex_unlock(&pend.lock);
	return err;
}

/* ------------------------------------------------------------- streams */

/* Fresh data from fd: 1 with *agg, 0 at end of stream, <0 error. */
static int read_more(int fd, zc_channel *ch, size_t size, zc_agg **agg)
{
	ssize_t r;
	int err;

	*agg = NULL;
	while (ch) {
		err = zc_channel_recv(ch, agg);
		if (err == -EPIPE)
			return 0;	/* the peer is gone: end of stream */
		if (err)
			return err;
		if (zc_agg_len(*agg))
			return 1;
		zc_agg_release(*agg);	/* empty message: not an EOF */
		*agg = NULL;
	}
	r = iol_read(fd, agg, size);
	if (r > 0)
		return 1;
	zc_agg_release(*agg);
	*agg = NULL;
	return (int)r;
}

/* Keep at most `size` bytes in at most `maxcon` slices of agg; the rest
 * waits for the next cs_read. */
static int cut(zc_agg *agg, size_t size, size_t maxcon, int fd, uint64_t k1,
	       uint64_t k2)
{
	size_t at = 0, n = zc_agg_nslices(agg);
	struct zc_slice s;
	zc_agg *rest;
	int err;

	for (size_t i = 0; i < n && i < maxcon; i++) {
		zc_agg_slice(agg, i, &s);
		at += s.len;
	}
	if (at > size)
		at = size;
	if (at == zc_agg_len(agg))
		return 0;
	err = zc_agg_split(agg, at, &rest);
	if (!err && (err = pending_put(fd, k1, k2, rest)))
		zc_agg_release(rest);
	return err;
}

int zc_cs_stream_next(int fd, zc_channel *ch, size_t size, size_t maxcon,
		      zc_agg **agg)
{
	uint64_t k1 = 0, k2 = 0;
	int r;

	if ((r = stream_key(fd, ch, &k1, &k2)))
		return r;
	*agg = pending_get(fd, k1, k2);
	if (!*agg && (r = read_more(fd, ch, size, agg)) <= 0)
		return r;
	r = cut(*agg, size, maxcon, fd, k1, k2);
	if (r) {
		zc_agg_release(*agg);
		*agg = NULL;
		return r;
	}
	return 1;
}

/* ------------------------------------------------------------ reporting */

void zc_cs_fill_args(cs_args *args, const struct zc_cs_made *m, size_t n,
		     bool mapall)
{
	for (size_t i = 0; i < n; i++) {
		args->cids[i] = m[i].cid;
		if (args->offs)
			args->offs[i] = m[i].off;
		if (args->lens)
			args->lens[i] = m[i].len;
		if (args->sizes)
			args->sizes[i] = m[i].size;
		if (args->addrs)
			args->addrs[i] = mapall ? m[i].addr : NULL;
	}
}
