/*
 * request.c - what a handler may ask of the connection that carries its
 * request (request.h).  Everything here records the request's state in
 * the connection and, where the connection has to act (send, finish,
 * route again), posts it: conn.c then does the work from its own loop.
 * So a handler never re-enters conn.c, and conn.c never finds its state
 * changed under its feet.  A request an HTTP/2 stream carries (r->stream)
 * is the stream's business: h2_stream.c does the same for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_int.h"
#include "h2.h"
#include "request.h"
#include "respond.h"

/* Have whoever carries r look at it from its own loop. */
static void post(struct zh_request *r)
{
	if (r->stream)
		h2_req_post(r);
	else
		conn_post(r->conn);
}

zc_agg *request_out(struct zh_request *r)
{
	if (r->stream)
		return h2_req_out(r);
	return r->conn->out;
}

void request_head_begin(struct zh_request *r, struct resp_head *h)
{
	struct zh_conn *c = r->conn;

	if (r->stream) {
		h2_req_head_begin(r, h);
		return;
	}
	h->buf = sock_tail(&c->sock) + c->arena_used;
	h->cap = HEAD_ARENA - c->arena_used;
	if (h->cap < 256) {	/* nearly full: the struct's own room */
		h->buf = h->local;
		h->cap = sizeof(h->local);
	}
}

int request_head_end(struct zh_request *r, struct resp_head *h)
{
	struct zh_conn *c = r->conn;

	if (r->stream)
		return h2_req_head_end(r, h);
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
	char *at;

	if (r->stream)
		return h2_req_head_append(r, p, len);
	if (len > HEAD_ARENA - c->arena_used)
		return zc_agg_append_bytes(c->out, NULL, p, len) ? 503 : 0;
	at = sock_tail(&c->sock) + c->arena_used;
	memcpy(at, p, len);
	if (zc_agg_append_mem(c->out, at, len))
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
	if (r->stream)
		h2_req_waits(r);
	else
		c->active = true;
	return 0;
}

void request_finish(struct zh_request *r, zh_answer how)
{
	/* conn.c settles it (error page, log, what follows) from its loop;
	 * until then nothing may reach the handler's state, which is gone. */
	r->finished = true;
	r->finished_as = how;
	r->wait = NULL;
	r->want_input = false;
	post(r);
}

bool request_send(struct zh_request *r)
{
	struct zh_conn *c = r->conn;

	if (r->stream)
		return h2_req_send(r);
	conn_post(c);
	if (zc_agg_len(c->out) < OUT_HIGH_WATER)
		return true;
	c->paused = true;
	return false;
}

void request_want_input(struct zh_request *r, bool on)
{
	r->want_input = on;
	post(r);
}

void request_input(struct zh_request *r, const char **p, size_t *len)
{
	struct zh_conn *c = r->conn;

	if (r->stream) {
		h2_req_input(r, p, len);
		return;
	}
	*p = c->sock.in.buf + r->head_len;
	*len = c->sock.in.len - r->head_len;
}

void request_input_consume(struct zh_request *r, size_t n)
{
	if (r->stream)
		h2_req_input_consume(r, n);
	else
		sock_in_consume(&r->conn->sock.in, r->head_len, n);
}

bool request_input_buffered(struct zh_request *r)
{
	struct zh_conn *c = r->conn;

	if (r->stream)
		return h2_req_input_buffered(r);
	sock_fill(&c->sock);
	return c->sock.in.len > r->head_len;
}

ssize_t request_read_body(struct zh_request *r, zc_agg **body, size_t want)
{
	if (r->stream)
		return h2_req_read_body(r, body, want);
	return sock_read_agg(&r->conn->sock, body, want);
}

ssize_t request_read(struct zh_request *r)
{
	if (r->stream)
		return h2_req_read(r);
	/* -ENOBUFS when full: the handler must take some first. */
	return sock_read(&r->conn->sock);
}

int request_continue(struct zh_request *r)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	if (r->stream)
		return h2_req_continue(r);
	return request_interim(r, cont, sizeof(cont) - 1);
}

int request_interim(struct zh_request *r, const char *head, size_t len)
{
	struct zh_conn *c = r->conn;

	if (r->stream || r->http.minor < 1)
		return 0;	/* HTTP/1.0 knows no interim responses */
	if (zc_agg_append_bytes(c->out, NULL, head, len))
		return 503;
	/* Not part of the final response (error pages, the log). */
	c->req_start += len;
	conn_post(c);
	return 0;
}

void request_send_wait(struct zh_request *r)
{
	if (r->stream) {
		h2_req_send_wait(r);
		return;
	}
	/* conn.c calls the drained hook once its output is empty. */
	r->conn->paused = true;
	conn_post(r->conn);
}

bool request_takes_pipes(struct zh_request *r)
{
	return !r->stream && sock_sends_by_reference(&r->conn->sock);
}

bool request_secure(const struct zh_request *r)
{
	if (r->stream)
		return h2_req_secure(r);
	return sock_secure(&r->conn->sock);
}

void request_redirect(struct zh_request *r, const char *path, size_t len)
{
	char *to = strndup(path, len);

	if (!to || ++r->redirects > 10) {
		free(to);
		request_finish(r, zh_status(500));
		return;
	}
	free(r->redirect);
	r->redirect = to;
	r->redirect_len = len;
	r->redirect_pending = true;	/* conn.c routes it again */
	r->wait = NULL;
	r->want_input = false;
	post(r);
}

bool request_redirected(struct zh_request *r)
{
	bool unread = !r->body_read &&
		      (r->http.flags & (HTTP_F_CHUNKED |
					HTTP_F_CONTENT_LENGTH)) &&
		      (r->http.content_length ||
		       (r->http.flags & HTTP_F_CHUNKED));

	r->redirect_pending = false;
	r->handler = NULL;
	r->wait = NULL;
	r->want_input = false;
	r->http.method = HTTP_M_GET;
	r->http.method_str = (struct http_str){ "GET", 3 };
	r->http.target = r->http.path =
		(struct http_str){ r->redirect, r->redirect_len };
	r->http.flags &= ~(HTTP_F_CONTENT_LENGTH | HTTP_F_CHUNKED |
			   HTTP_F_EXPECT_CONTINUE);
	r->http.content_length = 0;
	r->body_to_end = false;
	free(r->own_uri);
	r->own_uri = NULL;
	r->uri = NULL;
	r->status = 0;
	r->body_bytes = 0;
	return unread;
}

const char *request_protocol(const struct zh_request *r)
{
	if (r->stream)
		return "HTTP/2.0";
	return r->http.minor ? "HTTP/1.1" : "HTTP/1.0";
}

const struct sockaddr_storage *request_peer(const struct zh_request *r)
{
	return &r->conn->peer;
}

struct zh_addr_memo *request_addr_memo(struct zh_request *r)
{
	return &r->conn->addr_memo;
}

const struct sockaddr_storage *request_local(struct zh_request *r)
{
	struct zh_conn *c = r->conn;
	socklen_t len = sizeof(c->local);

	if (!c->have_local &&
	    getsockname(c->sock.fd, (struct sockaddr *)&c->local, &len) == 0)
		c->have_local = true;
	return &c->local;
}

