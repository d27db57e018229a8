/*
 * proxy_relay.c - a proxied response's body, from the upstream socket to
 * the client (proxy_req.h).
 *
 * Two ways, chosen per response when its head is in:
 *
 *   splice  the bytes go upstream socket -> pipe -> client socket with
 *           splice(2) (libzc's pipe slices, appended to the client's
 *           output like any other slice and written by iol_write): they
 *           never enter user memory.  For bodies of --proxy-splice-min
 *           bytes or more, delimited by length or by close, to a client
 *           whose socket takes bytes by reference (plain TCP, or kernel
 *           TLS) over HTTP/1.x.  The pipe is the window: when it holds
 *           bytes the client has not taken, the upstream is not read
 *           until the client's output drained.
 *   copy    read into pool buffers, appended by reference (the one copy
 *           is the kernel's, into our memory; the client's socket copies
 *           out, or lends them on a second trip).  For small bodies (where
 *           one sendmsg with the head beats splicing: docs/proxy.md),
 *           chunked ones (their framing must be read to know where they
 *           end), HTTPS in user space and HTTP/2.  The client's output is
 *           the window: above its high-water mark the upstream is not read
 *           until it drained.
 *
 * Framing.  A length goes on as the upstream gave it; a chunked body to an
 * HTTP/1.1 client goes on as the upstream chunked it (every byte checked
 * by the decoder first, trailers included); to HTTP/2 or HTTP/1.0 only its
 * data.  A body delimited by the upstream's close is chunked by us for an
 * HTTP/1.1 client, so the client's connection can stay.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy_req.h"
#include "request.h"
#include "zchttpd.h"

#define READ_MAX (256u << 10)		/* one copy read, at most */
#define READ_UNKNOWN (64u << 10)	/* ... when the length is unknown */

static bool complete(const struct px_req *p)
{
	switch (p->kind) {
	case HTTP_BODY_NONE:
		return true;
	case HTTP_BODY_LENGTH:
		return !p->resp_left;
	case HTTP_BODY_CHUNKED:
		return http_chunked_done(&p->rdec);
	case HTTP_BODY_CLOSE:
		return false;		/* until the upstream closes */
	}
	return true;
}

/* Append body data for the client, framed by us when we chunk. */
static int emit(struct px_req *p, zc_buf *b, size_t off, size_t len)
{
	zc_agg *out = request_out(p->r);
	bool frame = p->out == PH_CHUNKED && !p->passthrough;
	int err = 0;

	if (!len)
		return 0;
	if (frame)
		err = px_chunk_line(out, len);
	if (!err)
		err = zc_agg_append_buf(out, b, off, len);
	if (!err && frame)
		err = zc_agg_append_bytes(out, NULL, "\r\n", 2);
	return err ? -ENOMEM : 0;
}

/* Bytes [off, off+len) of buffer b came from the upstream: the body's,
 * or past its end (then the connection is not kept). */
static int feed(struct px_req *p, zc_buf *b, size_t off, size_t len)
{
	const char *d = zc_buf_data(b);
	size_t used = 0, take;
	int err = 0;

	up_stats(p->uc)->bytes_copied += len;
	switch (p->kind) {
	case HTTP_BODY_NONE:
		break;
	case HTTP_BODY_LENGTH:
		take = len > p->resp_left ? (size_t)p->resp_left : len;
		err = emit(p, b, off, take);
		p->resp_left -= take;
		p->body_sent += take;
		used = take;
		break;
	case HTTP_BODY_CLOSE:
		err = emit(p, b, off, len);
		p->body_sent += len;
		used = len;
		break;
	case HTTP_BODY_CHUNKED:
		while (!err && used < len && !http_chunked_done(&p->rdec)) {
			size_t doff, dlen;
			ssize_t k = http_chunked_step(&p->rdec, d + off + used,
						      len - used, &doff, &dlen);

			if (k < 0)
				return -EPROTO;
			if (p->passthrough)
				err = zc_agg_append_buf(request_out(p->r), b,
							off + used, (size_t)k);
			else if (dlen)
				err = emit(p, b, off + used + doff, dlen);
			p->body_sent += dlen;
			used += (size_t)k;
		}
		if (err)
			err = -ENOMEM;
		break;
	}
	if (used < len)
		p->reusable = false;	/* more than the response: the
					 * upstream is confused */
	p->r->body_bytes = p->body_sent;
	return err;
}

/* The body is whole: the client's framing ends, the rest is proxy.c's. */
static void end(struct px_req *p)
{
	if (p->out == PH_CHUNKED && !p->passthrough &&
	    zc_agg_append_bytes(request_out(p->r), NULL, "0\r\n\r\n", 5)) {
		px_cut(p, "out of memory");
		return;
	}
	request_send(p->r);
	px_done(p);
}

/* One read by copy into a new pool buffer: bytes, 0, -EAGAIN, -errno. */
static ssize_t read_copy(struct px_req *p)
{
	size_t want = p->kind == HTTP_BODY_LENGTH
		      ? (p->resp_left < READ_MAX ? (size_t)p->resp_left
						 : READ_MAX)
		      : READ_UNKNOWN;
	zc_buf *b;
	ssize_t k = px_read(p, want, &b);
	int err;

	if (k <= 0)
		return k;
	err = feed(p, b, 0, (size_t)k);
	zc_buf_release(b);
	return err ? err : k;
}

/* One splice into the pipe, appended to the client's output: framed as a
 * chunk of its own when we chunk (a body the upstream delimits by
 * closing, to an HTTP/1.1 client). */
static ssize_t read_splice(struct px_req *p)
{
	size_t want = p->kind == HTTP_BODY_LENGTH
		      ? (p->resp_left < (1u << 30) ? (size_t)p->resp_left
						   : (1u << 30))
		      : (1u << 30);
	bool frame = p->out == PH_CHUNKED;
	zc_agg *out = request_out(p->r), *piece = NULL;
	ssize_t k = iol_splice_in(up_fd(p->uc), p->pipe,
				  frame ? &piece : &out, want);

	if (k > 0 && frame) {
		if (px_chunk_line(out, (size_t)k) ||
		    zc_agg_concat(out, piece) ||
		    zc_agg_append_bytes(out, NULL, "\r\n", 2))
			k = -ENOMEM;
	}
	zc_agg_release(piece);
	if (k > 0) {
		up_stats(p->uc)->bytes_spliced += (uint64_t)k;
		p->body_sent += (uint64_t)k;
		if (p->kind == HTTP_BODY_LENGTH)
			p->resp_left -= (uint64_t)k;
		p->r->body_bytes = p->body_sent;
	}
	return k;
}

int px_relay_more(struct px_req *p)
{
	for (;;) {
		ssize_t k;

		if (complete(p)) {
			end(p);
			return 0;
		}
		k = p->splice ? read_splice(p) : read_copy(p);
		if (k == -EAGAIN) {
			if (p->splice && zc_pipe_held(p->pipe)) {
				/* The pipe may be full: nothing more until
				 * the client took what it holds. */
				p->paused = true;
				up_disarm(p->uc);
				request_send_wait(p->r);
				return 0;
			}
			request_send(p->r);
			up_arm(p->uc);	/* EPOLLIN calls us back */
			return 0;
		}
		if (k == 0) {
			if (p->kind == HTTP_BODY_CLOSE) {
				p->reusable = false;
				end(p);
				return 0;
			}
			px_cut(p, "the upstream closed in the body");
			return 0;
		}
		if (k == -EPROTO) {
			px_cut(p, "bad chunked framing from the upstream");
			return 0;
		}
		if (k < 0) {
			px_cut(p, strerror((int)-k));
			return 0;
		}
		if (!p->splice && !request_send(p->r)) {
			/* The client's output is full: the drained hook
			 * resumes us. */
			p->paused = true;
			up_disarm(p->uc);
			return 0;
		}
	}
}

int px_relay_start(struct px_req *p, size_t at)
{
	struct zh_request *r = p->r;
	const struct zh_proxy_config *pc = &p->w->cfg->proxy;
	size_t extra = p->rx_len - at;
	zc_buf *rx = p->rx;
	int err = 0;

	p->rx = NULL;
	zc_buf_publish(rx, p->rx_len);
	p->splice = !r->stream && request_takes_pipes(r) &&
		    (p->kind == HTTP_BODY_CLOSE ||
		     (p->kind == HTTP_BODY_LENGTH &&
		      p->resp_left - (extra < p->resp_left ? extra
							   : p->resp_left) >=
		      pc->splice_min));
	if (p->splice) {
		p->pipe = px_pipe_get(p->w);
		p->splice = p->pipe != NULL;
		if (p->splice)
			p->w->stats->proxy.spliced++;
	}
	if (extra)
		err = feed(p, rx, at, extra);
	zc_buf_release(rx);
	if (err)
		return err;
	return px_relay_more(p);
}
