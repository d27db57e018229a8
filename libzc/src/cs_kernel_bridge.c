/*
 * cs_kernel_bridge.c - the kernel backend of Container Shipping for the
 * descriptors the kernel does not serve, through the containers' mappings:
 *
 *   libzc channel          the peer speaks libzc's descriptor protocol over
 *                          shared pools, which the kernel knows nothing
 *                          about: cs_write copies the container's bytes into
 *                          pool buffers once and sends their descriptors;
 *                          cs_read copies what arrives into new containers
 *   anything else          cs_write writes from the container's mapping;
 *   (devices, datagram     cs_read reads into a new container's mapping (one
 *   and seqpacket sockets) copy, the one read() makes anyway)
 *
 * Every bridged byte is counted in zc_io_stats' bytes_copied.  Move
 * semantics hold here too: a container written is gone (the bridge frees
 * it once everything went out), a failed write keeps it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cs_kernel.h"
#include "cs_common.h"

#define BRIDGE_RECV_DEFAULT (64 * 1024)	/* cs_read size when nothing queued */

/* --------------------------------------------------------------- cs_write */

/* Channel: one pool buffer per range, the bytes at the same offset within
 * the page (the receiver sees the same offsets), descriptors sent. */
static int write_channel(zc_channel *ch, int count, void **addrs,
			 const struct zc_krange *v)
{
	zc_agg *agg = NULL;
	int err = zc_agg_create(&agg);

	for (int i = 0; !err && i < count; i++) {
		size_t at = (size_t)v[i].off % zc_page_size();
		zc_buf *b;

		if (!v[i].len)
			continue;
		err = zc_cs_alloc_buf(at + (size_t)v[i].len, &b);
		if (err)
			break;
		memcpy((char *)zc_buf_wptr(b) + at,
		       (char *)addrs[i] + v[i].off, (size_t)v[i].len);
		err = zc_buf_publish(b, at + (size_t)v[i].len);
		if (!err)
			err = zc_agg_append_buf(agg, b, at, (size_t)v[i].len);
		zc_buf_release(b);
	}
	if (!err && zc_agg_len(agg))
		err = zc_channel_send(ch, agg);
	if (!err)
		zc_stat_copy(zc_agg_len(agg));
	zc_agg_release(agg);
	return err;
}

/* Anything else: write from the mappings (sendmsg without SIGPIPE where
 * the descriptor is a socket).  A container goes whole or not at all, so
 * once part went out, EAGAIN waits for room. */
static ssize_t write_stream(int fd, int count, void **addrs,
			    const struct zc_krange *v)
{
	size_t total = 0, done = 0;
	bool sock = true;

	for (int i = 0; i < count; i++)
		total += (size_t)v[i].len;
	while (done < total) {
		struct iovec iov[64];
		size_t skip = done;
		int n = 0;
		ssize_t r = -1;

		for (int i = 0; i < count && n < 64; i++) {
			if (skip >= (size_t)v[i].len) {
				skip -= (size_t)v[i].len;
				continue;
			}
			iov[n].iov_base = (char *)addrs[i] + v[i].off + skip;
			iov[n].iov_len = (size_t)v[i].len - skip;
			skip = 0;
			n++;
		}
		if (sock) {
			struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };

			r = sendmsg(fd, &mh, MSG_NOSIGNAL);
			if (r < 0 && errno == ENOTSOCK)
				sock = false;
		}
		if (!sock)
			r = writev(fd, iov, n);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r == 0)
			return -EIO;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && done) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, -1);
			continue;
		}
		return -errno;
	}
	zc_stat_copy(total);
	return (ssize_t)total;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* An id listed twice cannot be given away twice: -EINVAL. */
static int check_unique(int count, const int *cids)
{
	int stackv[ZC_CS_STACK], *v, err = 0;

	if (!(v = zc_cs_scratch((size_t)count, sizeof(*v), stackv)))
		return -ENOMEM;
	memcpy(v, cids, (size_t)count * sizeof(*v));
	qsort(v, (size_t)count, sizeof(*v), cmp_int);
	for (int i = 1; i < count && !err; i++)
		if (v[i] == v[i - 1])
			err = -EINVAL;
	zc_cs_scratch_free(v, stackv);
	return err;
}

/* The kernel vouches for the ids (mapping them), the shadow for the
 * ranges; nothing is given away before all of it went out. */
ssize_t zc_kcs_bridge_write(int fd, enum zc_fdkind kind, int count,
			    const int *cids, const int *offs, const int *lens,
			    struct zc_krange *v)
{
	void *stacka[ZC_CS_STACK], **addrs;
	uint32_t stackg[ZC_CS_STACK], *gens;
	ssize_t r;

	addrs = zc_cs_scratch((size_t)count, sizeof(*addrs), stacka);
	gens = zc_cs_scratch((size_t)count, sizeof(*gens), stackg);
	r = addrs && gens ? 0 : -ENOMEM;
	if (!r)
		r = check_unique(count, cids);
	if (!r)
		r = zc_kcs_map(count, cids, addrs);
	if (!r)
		r = zc_kcs_resolve(count, cids, offs, lens, v);
	if (r)
		goto out;
	zc_kcs_shadow_gens(count, cids, gens);
	if (kind == ZC_FD_CHANNEL) {
		r = write_channel(zc_channel_from_fd(fd), count, addrs, v);
		if (!r)
			for (int i = 0; i < count; i++)
				r += v[i].len;
	} else {
		r = write_stream(fd, count, addrs, v);
	}
	if (r >= 0) {
		long err = zc_kcs_call(ZC_KNR_FREE, count, (long)cids, 0, 0, 0,
				       0);

		if (err)
			r = err;	/* another thread freed one meanwhile */
		else
			zc_kcs_shadow_drop(count, cids, gens);
	}
out:
	if (addrs)
		zc_cs_scratch_free(addrs, stacka);
	if (gens)
		zc_cs_scratch_free(gens, stackg);
	return r;
}

/* ---------------------------------------------------------------- cs_read */

/* A new mapped container of off + len bytes; its data region is
 * [off, off + len).  The caller fills it.  Its size is reported as
 * off + len, what the portable backend reports for a received buffer (the
 * bytes up to the data's end); the pages behind it are zero. */
static int make_one(size_t off, size_t len, struct zc_cs_made *m)
{
	if (off + len > INT_MAX)
		return -EOVERFLOW;
	m->cid = zc_kcs_alloc((int)(off + len), &m->addr, CS_MAPNOW);
	if (m->cid < 0)
		return m->cid;
	m->off = (int)off;
	m->len = (int)len;
	m->size = (int)(off + len);
	zc_kcs_shadow_set(m->cid, off + len, off, len);
	return 0;
}

/* Unmap what the caller did not ask to see mapped; on error, free all. */
static int finish(struct zc_cs_made *m, int n, int err, bool mapall)
{
	for (int i = 0; i < n && !err && !mapall; i++)
		err = zc_kcs_unmap(1, &m[i].cid);
	for (int i = 0; i < n && err; i++)
		zc_kcs_free(1, &m[i].cid);
	return err;
}

/* A channel message: each slice copied into a container of its own. */
int zc_kcs_bridge_read_channel(int fd, zc_channel *ch, int size, int maxcon,
			       cs_args *args, bool mapall)
{
	struct zc_cs_made stackm[ZC_CS_STACK], *m;
	size_t pos = 0;
	zc_agg *agg;
	int n = 0, r, err = 0;

	r = zc_cs_stream_next(fd, ch, (size_t)size, (size_t)maxcon, &agg);
	if (r <= 0)
		return r;
	r = (int)zc_agg_nslices(agg);
	if (!(m = zc_cs_scratch((size_t)r, sizeof(*m), stackm)))
		err = -ENOMEM;
	for (; !err && n < r; n++) {
		struct zc_slice s;
		ssize_t got;

		zc_agg_slice(agg, (size_t)n, &s);
		err = make_one(s.off % zc_page_size(), s.len, &m[n]);
		if (err)
			break;
		got = zc_agg_copyout(agg, pos, (char *)m[n].addr + m[n].off,
				     s.len);
		if (got >= 0 && (size_t)got != s.len)
			got = -ESTALE;
		if (got < 0)
			err = (int)got;
		pos += s.len;
	}
	zc_agg_release(agg);
	if (m) {
		err = finish(m, n, err, mapall);
		if (!err) {
			zc_stat_copy(pos);
			zc_cs_fill_args(args, m, (size_t)r, mapall);
		}
		zc_cs_scratch_free(m, stackm);
	}
	return err ? err : r;
}

/* Read straight into a new container, as big as what is queued (FIONREAD)
 * or a default when that is unknown. */
int zc_kcs_bridge_read_stream(int fd, int size, cs_args *args, bool mapall)
{
	struct zc_cs_made m;
	size_t want = (size_t)size;
	int avail = 0, err;
	ssize_t r;

	if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
		if ((size_t)avail < want)
			want = (size_t)avail;
	} else if (want > BRIDGE_RECV_DEFAULT) {
		want = BRIDGE_RECV_DEFAULT;
	}
	err = make_one(0, want, &m);
	if (err)
		return err;
	do
		r = read(fd, m.addr, want);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		err = r < 0 ? -errno : 0;
		zc_kcs_free(1, &m.cid);
		return err;
	}
	/* The data is what arrived; the rest of the pages stays zero. */
	m.len = (int)r;
	zc_kcs_shadow_set(m.cid, (size_t)m.size, 0, (size_t)m.len);
	err = finish(&m, 1, 0, mapall);
	if (err)
		return err;
	zc_stat_copy((uint64_t)r);
	zc_cs_fill_args(args, &m, 1, mapall);
	return 1;
}
