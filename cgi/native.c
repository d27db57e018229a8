/*
 * native.c - zcfcgi_* (include/zcfcgi.h): content handed over by
 * reference.
 *
 * Zero-copy transport: what the stream has written so far is published
 * (zcf_writer_seal), then the slices are appended to the stream's pending
 * content; they leave with the next send as slices of records.  Standard
 * transport: the staged bytes and the new content go out now as one batch
 * (the document's bytes gathered from the application's memory, a file
 * extent with sendfile), so the order on the wire is the order written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "zcfcgi.h"

struct zcfcgi_doc {
	const void *data;
	size_t len;
	_Atomic(zc_buf *) buf;	/* published on first use on a channel */
};

static struct zcf_stream *writer_of(FCGX_Stream *out)
{
	if (!out || out->isReader)
		return NULL;
	return (struct zcf_stream *)out;
}

static bool usable(struct zcf_stream *st)
{
	struct Params *q = st->req ? st->req->paramsPtr : NULL;

	if (st->s.isClosed || st->s.FCGI_errno)
		return false;
	if (q && q->aborted) {
		zcf_stream_fail(st, ECONNABORTED);
		return false;
	}
	return true;
}

/* Copy the bytes of slice i of a through the stream (a file the channel
 * cannot be sent any more). */
static int put_copied(struct zcf_stream *st, const zc_agg *a, size_t off,
		      size_t len)
{
	char tmp[65536];

	while (len) {
		size_t k = len < sizeof(tmp) ? len : sizeof(tmp);
		ssize_t n = zc_agg_copyout(a, off, tmp, k);

		if (n <= 0)
			return zcf_stream_fail(st, n ? (int)-n : EIO);
		if (FCGX_PutStr(tmp, (int)n, &st->s) < 0)
			return -1;
		off += (size_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Put the content of a (taken over) on the stream. */
static int put_slices(struct zcf_stream *st, zc_agg *a)
{
	struct zcf_conn *c = zcf_req_conn(st->req);
	size_t off = 0;
	bool failed = false;
	int err = 0;

	if (!usable(st)) {
		zc_agg_release(a);
		return -1;
	}
	st->used = true;
	if (!zcf_stream_on_channel(st))
		return zcf_writer_push(st, NULL, 0, a, false);
	for (size_t i = 0; i < zc_agg_nslices(a) && !err && !failed; i++) {
		struct zc_slice s;

		zc_agg_slice(a, i, &s);
		if (s.kind == ZC_SLICE_FILE && !zcf_conn_file_ok(c, s.file)) {
			failed = put_copied(st, a, off, s.len) != 0;
			off += s.len;
			continue;
		}
		if (zcf_writer_seal(st)) {
			failed = true;
			break;
		}
		if (!st->pend && (err = zc_agg_create(&st->pend)))
			break;
		err = s.kind == ZC_SLICE_BUF
			      ? zc_agg_append_buf(st->pend, s.buf, s.off, s.len)
			      : zc_agg_append_file(st->pend, s.file, s.off,
						   s.len);
		off += s.len;
	}
	zc_agg_release(a);
	if (failed)
		return -1;
	if (err)
		return zcf_stream_fail(st, -err);
	if (st->pend && zc_agg_len(st->pend) >= ZCF_SEND_AT)
		return zcf_writer_send(st, false);
	return 0;
}

int zcfcgi_put_cached(FCGX_Stream *out, zcfcgi_doc **docp, const void *data,
		      size_t len)
{
	struct zcf_stream *st = writer_of(out);
	zcfcgi_doc *d, *expect = NULL;
	zc_buf *buf;
	zc_agg *a;
	int err;

	if (!st || !docp || (!*docp && !data && len)) {
		errno = EINVAL;
		return -1;
	}
	if (!(d = __atomic_load_n(docp, __ATOMIC_ACQUIRE))) {
		if (!(d = calloc(1, sizeof(*d))))
			return zcf_stream_fail(st, ENOMEM);
		d->data = data;
		d->len = len;
		if (!__atomic_compare_exchange_n(docp, &expect, d, false,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			free(d);
			d = expect;
		}
	}
	if (d->len == 0)
		return usable(st) ? 0 : -1;
	if (!zcf_stream_on_channel(st)) {
		/* The bytes straight from the application's memory. */
		if (!usable(st))
			return -1;
		st->used = true;
		return zcf_writer_push(st, d->data, d->len, NULL, false);
	}
	if (!(buf = atomic_load(&d->buf))) {
		zc_buf *mine, *none = NULL;

		if ((err = zc_buf_from_bytes(zcf_pool(), d->data, d->len,
					     &mine)))
			return zcf_stream_fail(st, -err);
		if (atomic_compare_exchange_strong(&d->buf, &none, mine)) {
			buf = mine;
		} else {
			zc_buf_release(mine);
			buf = none;
		}
	}
	if ((err = zc_agg_create(&a)))
		return zcf_stream_fail(st, -err);
	if ((err = zc_agg_append_buf(a, buf, 0, d->len))) {
		zc_agg_release(a);
		return zcf_stream_fail(st, -err);
	}
	return put_slices(st, a);
}

void zcfcgi_doc_free(zcfcgi_doc *doc)
{
	if (!doc)
		return;
	zc_buf_release(atomic_load(&doc->buf));
	free(doc);
}

int zcfcgi_put_file(FCGX_Stream *out, int fd, off_t off, size_t len)
{
	struct zcf_stream *st = writer_of(out);
	struct stat sb;
	zc_file *f;
	zc_agg *a;
	int err;

	if (!st || off < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (uint64_t)off > (uint64_t)sb.st_size ||
	    len > (uint64_t)sb.st_size - (uint64_t)off) {
		errno = EINVAL;
		return -1;
	}
	if (len == 0)
		return usable(st) ? 0 : -1;
	if ((err = zcf_file_get(fd, &f)))
		return zcf_stream_fail(st, -err);
	if ((err = zc_agg_create(&a)) == 0 &&
	    (err = zc_agg_append_file(a, f, (uint64_t)off, len)))
		zc_agg_release(a);
	zc_file_release(f);
	if (err)
		return zcf_stream_fail(st, -err);
	return put_slices(st, a);
}

int zcfcgi_put_agg(FCGX_Stream *out, zc_agg *agg)
{
	struct zcf_stream *st = writer_of(out);
	zc_agg *a;
	int err;

	if (!st || !agg) {
		errno = EINVAL;
		return -1;
	}
	if (zc_agg_len(agg) == 0)
		return usable(st) ? 0 : -1;
	if ((err = zc_agg_dup(agg, &a)))
		return zcf_stream_fail(st, -err);
	return put_slices(st, a);
}

int zcfcgi_transport(FCGX_Stream *stream)
{
	struct zcf_stream *st = (struct zcf_stream *)stream;

	if (!stream || !st->req || !zcf_req_conn(st->req))
		return -1;
	return zcf_stream_on_channel(st) ? 1 : 0;
}
