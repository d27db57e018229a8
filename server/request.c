/*
 * request.c - what a handler may ask of the connection that carries its
 * request (request.h).  Everything here records the request's state in
 * the connection and, where the connection has to act (send, finish,
 * route again), posts it: conn.c then does the work from its own loop.
 * So a handler never re-enters conn.c, and conn.c never finds its state
 * changed under its feet.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_int.h"
#include "request.h"
#include "respond.h"

zc_agg *request_out(struct zh_request *r)
{
	return r->conn->out;
}

void request_head_begin(struct zh_request *r, struct resp_head *h)
{
	struct zh_conn *c = r->conn;

	h->buf = c->in + IN_CAP + c->arena_used;
	h->cap = HEAD_ARENA - c->arena_used;
	if (h->cap < 256) {	/* nearly full: the struct's own room */
		h->buf = h->local;
		h->cap = sizeof(h->local);
	}
}

int request_head_end(struct zh_request *r, struct resp_head *h)
{
	struct zh_conn *c = r->conn;

	if (h->overflow)
		return 500;
	if (h->buf == h->local)
		return zc_agg_append_bytes(c->out, NULL, h->buf, h->len) ? 503
									 : 0;
	if (zc_agg_append_mem(c->out, h->buf, h->len))
		return 503;
	c->arena_used += h->len;
	return 0;
}

int request_head_append(struct zh_request *r, const char *p, size_t len)
{
	struct zh_conn *c = r->conn;

	if (len > HEAD_ARENA - c->arena_used)
		return zc_agg_append_bytes(c->out, NULL, p, len) ? 503 : 0;
	memcpy(c->in + IN_CAP + c->arena_used, p, len);
	if (zc_agg_append_mem(c->out, c->in + IN_CAP + c->arena_used, len))
		return 503;
	c->arena_used += len;
	return 0;
}

int request_wait(struct zh_request *r, const struct zh_handler *h,
		 void *wait)
{
	struct zh_conn *c = r->conn;
	size_t n = r->http.num_headers;

	/* The worker's header slots and path scratch belong to the next
	 * request parsed on any connection: a waiting request keeps copies
	 * of its own (once: a redirected request has them already). */
	if (r->uri && !r->own_uri) {
		r->own_uri = strndup(r->uri, r->uri_len);
		if (!r->own_uri)
			return 503;
		r->uri = r->own_uri;
	}
	if (n && !r->own_headers) {
		r->own_headers = malloc(n * sizeof(*r->own_headers));
		if (!r->own_headers)
			return 503;
		memcpy(r->own_headers, r->http.headers,
		       n * sizeof(*r->own_headers));
		r->http.headers = r->own_headers;
	}
	r->handler = h;
	r->wait = wait;
	c->active = true;
	return 0;
}

void request_finish(struct zh_request *r, int err)
{
	/* conn.c settles it (error page, log, what follows) from its loop;
	 * until then nothing may reach the handler's state, which is gone. */
	r->finished = true;
	r->finish_err = err;
	r->wait = NULL;
	r->want_input = false;
	conn_post(r->conn);
}

bool request_send(struct zh_request *r)
{
	struct zh_conn *c = r->conn;

	conn_post(c);
	if (zc_agg_len(c->out) < OUT_HIGH_WATER)
		return true;
	c->paused = true;
	return false;
}

void request_want_input(struct zh_request *r, bool on)
{
	r->want_input = on;
	conn_post(r->conn);
}

void request_input(struct zh_request *r, const char **p, size_t *len)
{
	struct zh_conn *c = r->conn;

	*p = c->in + r->head_len;
	*len = c->in_len - r->head_len;
}

void request_input_consume(struct zh_request *r, size_t n)
{
	struct zh_conn *c = r->conn;
	char *body = c->in + r->head_len;

	memmove(body, body + n, c->in_len - r->head_len - n);
	c->in_len -= n;
}

bool request_input_buffered(struct zh_request *r)
{
	struct zh_conn *c = r->conn;

	conn_refill(c);
	return c->in_len > r->head_len;
}

ssize_t request_read_body(struct zh_request *r, zc_agg **body, size_t want)
{
	struct zh_conn *c = r->conn;
	ssize_t n;

	if (!c->tls)
		return iol_read(c->fd, body, want);
	/* The bounce buffer is free between tls_send calls. */
	n = tls_recv(c->tls, c->w->tls_bounce,
		     want < TLS_BOUNCE ? want : TLS_BOUNCE);
	if (n > 0 && ((!*body && zc_agg_create(body)) ||
		      zc_agg_append_bytes(*body, NULL, c->w->tls_bounce,
					  (size_t)n)))
		return -ENOMEM;
	return n;
}

ssize_t request_read(struct zh_request *r)
{
	struct zh_conn *c = r->conn;
	ssize_t n;

	if (c->in_len == IN_CAP)
		return -ENOBUFS;	/* the handler must take some first */
	if (c->spill_len) {	/* the ring's bytes come first (conn_ring.c) */
		size_t before = c->in_len;

		conn_refill(c);
		return (ssize_t)(c->in_len - before);
	}
	n = conn_recv(c, c->in + c->in_len, IN_CAP - c->in_len);
	if (n > 0)
		c->in_len += (size_t)n;
	return n;
}

int request_continue(struct zh_request *r)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct zh_conn *c = r->conn;
	int err;

	if (r->http.minor < 1)
		return 0;	/* HTTP/1.0 knows no interim responses */
	err = zc_agg_append_bytes(c->out, NULL, cont, sizeof(cont) - 1);
	if (err)
		return err;
	/* Not part of the final response (error pages, the log). */
	c->req_start += sizeof(cont) - 1;
	conn_post(c);
	return 0;
}

void request_redirect(struct zh_request *r, const char *path, size_t len)
{
	char *to = strndup(path, len);

	if (!to || ++r->redirects > 10) {
		free(to);
		request_finish(r, 500);
		return;
	}
	free(r->redirect);
	r->redirect = to;
	r->redirect_len = len;
	r->redirect_pending = true;	/* conn.c routes it again */
	r->wait = NULL;
	r->want_input = false;
	conn_post(r->conn);
}

const struct sockaddr_storage *request_peer(const struct zh_request *r)
{
	return &r->conn->peer;
}

const struct sockaddr_storage *request_local(struct zh_request *r)
{
	struct zh_conn *c = r->conn;
	socklen_t len = sizeof(c->local);

	if (!c->have_local &&
	    getsockname(c->fd, (struct sockaddr *)&c->local, &len) == 0)
		c->have_local = true;
	return &c->local;
}

