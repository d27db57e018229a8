/*
 * h2_data.c - DATA frames by reference, and the connection's output queue
 * (h2_int.h).
 *
 * nghttp2 writes every frame itself except DATA: for those the provider
 * says NGHTTP2_DATA_FLAG_NO_COPY, and nghttp2 calls send_data with the
 * frame's 9-byte header.  The header is copied into the output; the payload
 * is the front of the stream's response aggregate, moved into the output
 * slice by slice -- the cache's memory, the arena's memfd, a file extent --
 * so iol_write sends it as it would for HTTP/1.1 (sendfile for extents,
 * or kernel TLS).  Nothing of a body is copied here.
 *
 * Frame bytes live in chunks of borrowed memory until the socket has sent
 * past them; a body's cache entry stays pinned until the socket has sent
 * past its last DATA frame.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "h2_int.h"
#include "zchttpd.h"

/* ------------------------------------------------------------ queue */

int h2_out_init(struct h2_out *o)
{
	memset(o, 0, sizeof(*o));
	return zc_agg_create(&o->agg);
}

void h2_out_fini(struct h2_out *o, struct zh_worker *w)
{
	struct h2_chunk *k, *next;

	zc_agg_release(o->agg);		/* before the memory it borrows */
	o->agg = NULL;
	for (k = o->first; k; k = next) {
		next = k->next;
		free(k);
	}
	free(o->spare);
	for (unsigned i = 0; i < o->npins; i++)
		cache_unpin(w->cache, o->pins[i].e);
	free(o->pins);
	memset(o, 0, sizeof(*o));
}

int h2_out_bytes(struct h2_out *o, const void *p, size_t n)
{
	while (n) {
		struct h2_chunk *k = o->last;
		size_t room = k ? H2_CHUNK - k->used : 0, take;

		if (!room) {
			k = o->spare ? o->spare : malloc(sizeof(*k));
			if (!k)
				return -ENOMEM;
			o->spare = NULL;
			k->next = NULL;
			k->used = 0;
			if (o->last)
				o->last->next = k;
			else
				o->first = k;
			o->last = k;
			room = H2_CHUNK;
		}
		take = n < room ? n : room;
		memcpy(k->data + k->used, p, take);
		if (zc_agg_append_mem(o->agg, k->data + k->used, take))
			return -ENOMEM;
		k->used += take;
		k->end = h2_out_end(o);
		p = (const char *)p + take;
		n -= take;
	}
	return 0;
}

void h2_out_sent(struct h2_out *o, struct zh_worker *w, size_t n)
{
	unsigned i, k = 0;

	o->sent += n;
	/* Every chunk the socket has sent past is free; the last one is
	 * reused in place once nothing is queued at all. */
	while (o->first && o->first != o->last && o->first->end <= o->sent) {
		struct h2_chunk *c = o->first;

		o->first = c->next;
		if (!o->spare)
			o->spare = c;
		else
			free(c);
	}
	if (o->last && !zc_agg_len(o->agg))
		o->last->used = 0;
	/* Pins end in the order their streams closed, not sent: a few
	 * per connection, looked through. */
	for (i = 0; i < o->npins; i++) {
		if (o->pins[i].end <= o->sent)
			cache_unpin(w->cache, o->pins[i].e);
		else
			o->pins[k++] = o->pins[i];
	}
	o->npins = k;
}

void h2_out_trim(struct h2_out *o)
{
	struct h2_chunk *k, *next;

	if (zc_agg_len(o->agg))
		return;
	for (k = o->first; k; k = next) {
		next = k->next;
		free(k);
	}
	free(o->spare);
	o->first = o->last = o->spare = NULL;
}

int h2_out_pin_reserve(struct h2_out *o)
{
	if (o->npins + o->reserved == o->cap) {
		unsigned cap = o->cap ? 2 * o->cap : 8;
		struct h2_pin *p = realloc(o->pins, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		o->pins = p;
		o->cap = cap;
	}
	o->reserved++;
	return 0;
}

void h2_out_pin(struct h2_out *o, struct cache_entry *e)
{
	o->reserved--;
	o->pins[o->npins++] = (struct h2_pin){ e, h2_out_end(o) };
}

/* Append the first n bytes of src to dst as the same slices (references
 * taken), then drop them from src: pointer work only. */
static int move_front(zc_agg *dst, zc_agg *src, size_t n)
{
	size_t left = n;

	for (size_t i = 0; left; i++) {
		struct zc_slice sl;
		size_t k;
		int err;

		if (zc_agg_slice(src, i, &sl))
			return -EINVAL;
		k = sl.len < left ? sl.len : left;
		switch (sl.kind) {
		case ZC_SLICE_BUF:
			err = zc_agg_append_buf(dst, sl.buf, sl.off, k);
			break;
		case ZC_SLICE_FILE:
			err = zc_agg_append_file(dst, sl.file, sl.off, k);
			break;
		case ZC_SLICE_MEM:
			err = zc_agg_append_mem(dst, (const char *)sl.mem +
							  sl.off, k);
			break;
		default:
			/* A pipe's bytes leave only by iol_write, in order:
			 * never on a stream (request_takes_pipes). */
			err = -EINVAL;
			break;
		}
		if (err)
			return err;
		left -= k;
	}
	return zc_agg_trim_front(src, n);
}

/* ------------------------------------------------------------ nghttp2 */

/* Every frame but DATA, as nghttp2 serialized it: copied (heads and
 * control frames are small).  A full queue makes nghttp2 wait. */
static ssize_t on_send(nghttp2_session *session, const uint8_t *data,
		       size_t len, int flags, void *user_data)
{
	struct h2_conn *h = user_data;

	(void)session;
	(void)flags;
	if (zc_agg_len(h->out.agg) >= H2_OUT_HIGH)
		return NGHTTP2_ERR_WOULDBLOCK;
	if (h2_out_bytes(&h->out, data, len))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	return (ssize_t)len;
}

/* The body of s: as much as there is, by reference (on_send_data frames
 * it); deferred while the handler has not produced more. */
static ssize_t on_read_body(nghttp2_session *session, int32_t stream_id,
			    uint8_t *buf, size_t length, uint32_t *data_flags,
			    nghttp2_data_source *source, void *user_data)
{
	struct h2_stream *s = source->ptr;
	size_t have = zc_agg_len(s->out);

	(void)session;
	(void)stream_id;
	(void)buf;
	(void)user_data;
	if (!have) {
		if (s->done) {
			*data_flags |= NGHTTP2_DATA_FLAG_EOF;
			s->eof = true;
			return 0;
		}
		s->deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (have > length)
		have = length;
	*data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
	if (s->done && have == zc_agg_len(s->out)) {
		*data_flags |= NGHTTP2_DATA_FLAG_EOF;
		s->eof = true;
	}
	return (ssize_t)have;
}

/* One DATA frame of `length` body bytes: its header copied, the payload
 * moved from the stream's aggregate into the output. */
static int on_send_data(nghttp2_session *session, nghttp2_frame *frame,
			const uint8_t *framehd, size_t length,
			nghttp2_data_source *source, void *user_data)
{
	static const uint8_t zeros[256];
	struct h2_conn *h = user_data;
	struct h2_stream *s = source->ptr;
	size_t pad = frame->data.padlen;

	(void)session;
	if (zc_agg_len(h->out.agg) >= H2_OUT_HIGH)
		return NGHTTP2_ERR_WOULDBLOCK;
	if (h2_out_bytes(&h->out, framehd, 9))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (pad) {
		/* We never ask for padding; nghttp2 might, in principle. */
		uint8_t padlen = (uint8_t)(pad - 1);

		if (h2_out_bytes(&h->out, &padlen, 1))
			return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	if (move_front(h->out.agg, s->out, length))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (pad > 1 && h2_out_bytes(&h->out, zeros, pad - 1))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->framed += length;
	/* A streaming handler that was told to stop may go on. */
	if (s->paused && zc_agg_len(s->out) < H2_STREAM_HIGH / 2)
		h2_stream_news(s);
	return 0;
}

/*
 * How long a DATA frame may be: what the client allows (its
 * SETTINGS_MAX_FRAME_SIZE; nghttp2 alone would stop at 16 KiB) up to
 * H2_FRAME_MAX, within the windows.  Clients that ask for frames of at
 * least H2_REF_FRAME_MIN get a file's pages by reference, a sendfile per
 * frame (choose_data_path in h2_conn.c).  nghttp2 grows its frame buffer
 * to the length even though the payload never goes into it (NO_COPY):
 * the cap bounds that too, and the pages it does not touch stay virtual.
 */
static ssize_t on_read_length(nghttp2_session *session, uint8_t type,
			      int32_t stream_id, int32_t conn_window,
			      int32_t stream_window, uint32_t max_frame,
			      void *user_data)
{
	int32_t n = (int32_t)(max_frame < H2_FRAME_MAX ? max_frame
						       : H2_FRAME_MAX);

	(void)session;
	(void)type;
	(void)stream_id;
	(void)user_data;
	if (conn_window < n)
		n = conn_window;
	if (stream_window < n)
		n = stream_window;
	return n > 0 ? n : 1;	/* nghttp2 defers a stream with no window */
}

nghttp2_data_provider h2_data_provider(struct h2_stream *s)
{
	return (nghttp2_data_provider){
		.source.ptr = s,
		.read_callback = on_read_body,
	};
}

void h2_data_callbacks(nghttp2_session_callbacks *cbs)
{
	nghttp2_session_callbacks_set_send_callback(cbs, on_send);
	nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
	nghttp2_session_callbacks_set_data_source_read_length_callback(
		cbs, on_read_length);
}
