/*
 * h2_recv.c - what nghttp2 tells us it received (h2_int.h): a stream
 * begins, its fields, its head complete, its body bytes and end, its
 * close; acknowledgements of our SETTINGS; and the frames that cost work
 * without asking for any (h2_conn_cheap_frame counts them).
 *
 * nghttp2 has checked the framing, the stream states, HPACK and the
 * message rules (pseudo-fields, connection-specific fields, Content-Length
 * against the DATA that came) before any of these runs.
 */
#define _GNU_SOURCE
#include "h2_int.h"
#include "zchttpd.h"

static void mark_opened(struct h2_conn *h, int32_t id)
{
	if (id > h->last_opened) {
		int32_t shift = (id - h->last_opened) / 2;

		h->opened = shift >= 64 ? 0 : h->opened << shift;
		h->last_opened = id;
	}
	if ((h->last_opened - id) / 2 < 64)
		h->opened |= 1ull << ((h->last_opened - id) / 2);
}

/* A client stream id below the last one that began a stream, which never
 * began one itself (as far back as we remember). */
static bool never_opened(const struct h2_conn *h, int32_t id)
{
	int32_t i = (h->last_opened - id) / 2;

	return (id & 1) && id < h->last_opened && i < 64 &&
	       !(h->opened & (1ull << i));
}

/* nghttp2 ignores HEADERS on a stream id it does not hold below the
 * last, lest it take trailers sent after a reset for an error; a stream
 * that never began is one. */
static int on_begin_frame(nghttp2_session *session,
			  const nghttp2_frame_hd *hd, void *user_data)
{
	struct h2_conn *h = user_data;

	if (hd->type == NGHTTP2_HEADERS && never_opened(h, hd->stream_id))
		nghttp2_session_terminate_session(session,
						  NGHTTP2_PROTOCOL_ERROR);
	return 0;
}

static int on_begin_headers(nghttp2_session *session,
			    const nghttp2_frame *frame, void *user_data)
{
	struct h2_conn *h = user_data;

	(void)session;
	if (frame->hd.type != NGHTTP2_HEADERS ||
	    frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	mark_opened(h, frame->hd.stream_id);
	/* Found by h2_stream_find from now on, not by nghttp2's stream
	 * user data (a hash look-up to set and to get, per stream). */
	if (!h2_stream_new(h, frame->hd.stream_id))
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;	/* reset */
	return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame,
		     const uint8_t *name, size_t namelen, const uint8_t *value,
		     size_t valuelen, uint8_t flags, void *user_data)
{
	struct h2_stream *s;

	(void)flags;
	if (frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	(void)session;
	s = h2_stream_find(user_data, frame->hd.stream_id);
	return s ? h2_stream_field(s, name, namelen, value, valuelen) : 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
			 void *user_data)
{
	struct h2_conn *h = user_data;
	bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
	struct h2_stream *s;

	(void)session;
	switch (frame->hd.type) {
	case NGHTTP2_HEADERS:
		s = h2_stream_find(h, frame->hd.stream_id);
		if (!s)
			break;
		if (frame->headers.cat == NGHTTP2_HCAT_REQUEST)
			h2_stream_head_done(s, end);
		else if (end)
			h2_stream_body_end(s);	/* trailers end the body */
		break;
	case NGHTTP2_DATA:
		/* An empty DATA without END_STREAM moves nothing. */
		if (!frame->hd.length && !end)
			h2_conn_cheap_frame(h);
		s = h2_stream_find(h, frame->hd.stream_id);
		if (s && end)
			h2_stream_body_end(s);
		break;
	case NGHTTP2_SETTINGS:
		if (frame->hd.flags & NGHTTP2_FLAG_ACK) {
			ev_timer_disarm(&h->settings_timer);
			break;
		}
		/* nghttp2 has applied them: the frame size may be new. */
		h2_choose_data_path(h);
		h2_conn_cheap_frame(h);
		break;
	case NGHTTP2_PING:
		if (!(frame->hd.flags & NGHTTP2_FLAG_ACK))
			h2_conn_cheap_frame(h);
		break;
	case NGHTTP2_RST_STREAM:
		h->w->stats->h2.resets_received++;
		h2_conn_cheap_frame(h);
		break;
	case NGHTTP2_PRIORITY:
		h2_conn_cheap_frame(h);
		break;
	}
	return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags,
			      int32_t stream_id, const uint8_t *data,
			      size_t len, void *user_data)
{
	struct h2_stream *s = h2_stream_find(user_data, stream_id);

	(void)flags;
	if (s)
		h2_stream_body(s, data, len);
	else		/* a stream we do not hold: its window back */
		nghttp2_session_consume(session, stream_id, len);
	return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id,
			   uint32_t error_code, void *user_data)
{
	struct h2_stream *s = h2_stream_find(user_data, stream_id);

	(void)session;
	(void)error_code;
	if (s)
		h2_stream_close(s);
	return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame,
			 void *user_data)
{
	struct h2_conn *h = user_data;

	(void)session;
	if (frame->hd.type == NGHTTP2_GOAWAY)
		h->w->stats->h2.goaways_sent++;
	return 0;
}

void h2_recv_callbacks(nghttp2_session_callbacks *cbs)
{
	nghttp2_session_callbacks_set_on_begin_frame_callback(cbs,
							      on_begin_frame);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cbs,
							on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs,
							     on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs,
							on_data_chunk_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs,
							       on_stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cbs,
							     on_frame_send);
}
