/*
 * proxy_tunnel.c - Upgrade (RFC 9110 7.8): once the upstream answered 101
 * Switching Protocols, the client's connection and the upstream's carry
 * another protocol (WebSocket, say) and the proxy relays bytes both ways
 * without looking at them, until either side ends.
 *
 * The client's side goes through the request object like a body does
 * (request.h: its input hook and request_read, its output and
 * request_send), so the tunnel works the same over plain TCP and HTTPS.
 * Each direction is bounded: the upstream is not read while the client's
 * output is above its high-water mark, the client not while what it sent
 * has not been taken by the upstream.  One side's end (EOF) is passed on as
 * a half close; the tunnel ends when both have ended, or either breaks, or
 * nothing moved for the group's timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "errlog.h"
#include "proxy_req.h"
#include "request.h"
#include "zchttpd.h"

#define TUNNEL_READ (64u << 10)
#define TUNNEL_TX_HIGH (256u << 10)

/* The tunnel is over: the client's connection closes after what is
 * queued for it. */
static void tunnel_end(struct px_req *p, const char *why)
{
	if (why)
		zh_log(ZL_INFO, "proxy %s: tunnel ends: %s",
		       up_server(p->uc)->spec, why);
	if (p->r) {
		p->r->keep_alive = false;
		request_want_input(p->r, false);
		request_send(p->r);
	}
	p->body_read = true;	/* every byte of input was the tunnel's */
	p->reusable = false;
	px_done(p);
}

/* Client -> upstream: what is queued. */
static int push_up(struct px_req *p)
{
	while (zc_agg_len(p->tx)) {
		ssize_t k = iol_write_sink(up_sink(p->uc), p->tx);

		if (k == -EINTR)
			continue;
		if (k == -EAGAIN)
			break;
		if (k < 0)
			return (int)k;
	}
	if (p->body_ended && !zc_agg_len(p->tx))
		shutdown(up_fd(p->uc), SHUT_WR);
	if (!p->body_ended)
		request_want_input(p->r, zc_agg_len(p->tx) < TUNNEL_TX_HIGH);
	return 0;
}

/* The client's bytes in the connection's input: to the upstream. */
static int take_client(struct px_req *p)
{
	const char *in;
	size_t n;

	request_input(p->r, &in, &n);
	if (!n)
		return 0;
	if (zc_agg_append_bytes(p->tx, NULL, in, n))
		return -ENOMEM;
	request_input_consume(p->r, n);
	up_arm(p->uc);
	return 0;
}

/* Upstream -> client, until the upstream has nothing or the client's
 * output is full.  1: the upstream ended. */
static int pull_down(struct px_req *p)
{
	for (;;) {
		zc_buf *b;
		ssize_t k = px_read(p, TUNNEL_READ, &b);
		int err;

		if (k <= 0) {
			request_send(p->r);
			return k == -EAGAIN ? 0 : k ? (int)k : 1;
		}
		err = zc_agg_append_buf(request_out(p->r), b, 0, (size_t)k);
		zc_buf_release(b);
		if (err)
			return -ENOMEM;
		p->body_sent += (uint64_t)k;
		up_arm(p->uc);
		if (!request_send(p->r)) {
			p->paused = true;
			return 0;
		}
	}
}

int px_tunnel_start(struct px_req *p, size_t hl)
{
	struct zh_request *r = p->r;
	char head[8192];
	struct ph_response in = {
		.resp = &p->resp,
		.pc = &p->w->cfg->proxy,
		.interim = true,
		.upgrade = true,
	};
	ssize_t n = ph_response_head(&in, head, sizeof(head));
	size_t extra = p->rx_len - hl;
	int err;

	up_answered(p->uc);
	if (n < 0)
		return 502;
	r->status = 101;
	err = request_head_append(r, head, (size_t)n);
	if (err)
		return err;
	if (extra &&
	    zc_agg_append_bytes(request_out(r), NULL,
				(char *)zc_buf_wptr(p->rx) + hl, extra))
		return 503;
	zc_buf_release(p->rx);
	p->rx = NULL;
	p->head_done = true;
	p->tunneling = true;
	p->body_ended = false;
	p->w->stats->proxy.tunnels++;
	zc_agg_truncate(p->tx, 0);
	err = take_client(p);
	if (!err)
		err = push_up(p);
	if (!err)
		err = pull_down(p);
	if (err) {
		tunnel_end(p, err == 1 ? NULL : strerror(-err));
		return 0;
	}
	up_arm(p->uc);
	return 0;
}

/* The upstream's events. */
void px_tunnel_io(struct px_req *p, uint32_t ev)
{
	int err = 0;

	if (ev & EPOLLOUT)
		err = push_up(p);
	if (!err && !p->paused &&
	    (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		err = pull_down(p);
	if (err)
		tunnel_end(p, err == 1 ? NULL : strerror(-err));
}

/* The client sent bytes, or ended. */
void px_tunnel_input(struct px_req *p)
{
	struct zh_request *r = p->r;
	int err = 0;

	if (!request_input_buffered(r)) {
		ssize_t n = request_read(r);

		if (n == -EAGAIN)
			return;
		if (n == 0) {
			/* The client is done sending: half close. */
			p->body_ended = true;
			request_want_input(r, false);
		} else if (n < 0) {
			tunnel_end(p, "the client broke");
			return;
		}
	}
	err = take_client(p);
	if (!err)
		err = push_up(p);
	if (err)
		tunnel_end(p, strerror(-err));
}

/* The client's output drained. */
void px_tunnel_more(struct px_req *p)
{
	int err;

	p->paused = false;
	err = pull_down(p);
	if (err)
		tunnel_end(p, err == 1 ? NULL : strerror(-err));
}

/* Nothing moved either way for the group's timeout. */
void px_tunnel_idle(struct px_req *p)
{
	tunnel_end(p, "idle");
}
