/* fcgi_client.c - the tests' FastCGI client (fcgi_client.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fcgi_client.h"

void fcl_vec_put(struct fcl_vec *v, const void *p, size_t n)
{
	if (v->len + n > v->cap) {
		size_t cap = v->cap ? v->cap : 256;

		while (cap < v->len + n)
			cap *= 2;
		v->p = realloc(v->p, cap);
		if (!v->p)
			abort();
		v->cap = cap;
	}
	if (n && p)
		memcpy(v->p + v->len, p, n);
	v->len += n;
}

void fcl_vec_free(struct fcl_vec *v)
{
	free(v->p);
	memset(v, 0, sizeof(*v));
}

void fcl_rec(struct fcl_vec *v, uint8_t type, uint16_t id, const void *p,
	     size_t n)
{
	uint8_t h[FCGI_HEADER_LEN];

	fcgi_header_encode(h, type, id, (uint16_t)n, 0);
	fcl_vec_put(v, h, sizeof(h));
	fcl_vec_put(v, p, n);
}

void fcl_stream(struct fcl_vec *v, uint8_t type, uint16_t id, const void *p,
		size_t n, bool eos)
{
	const uint8_t *s = p;

	while (n) {
		size_t k = n > FCGI_MAX_CONTENT ? FCGI_MAX_CONTENT : n;

		fcl_rec(v, type, id, s, k);
		s += k;
		n -= k;
	}
	if (eos)
		fcl_rec(v, type, id, NULL, 0);
}

void fcl_begin(struct fcl_vec *v, uint16_t id, uint16_t role, bool keep)
{
	uint8_t b[16];

	fcgi_begin_encode(b, id, role, keep ? FCGI_KEEP_CONN : 0);
	fcl_vec_put(v, b, sizeof(b));
}

void fcl_params(struct fcl_vec *v, uint16_t id, const char *const *env)
{
	struct fcl_vec block = { 0 };

	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		size_t nl = eq ? (size_t)(eq - *env) : strlen(*env);
		const char *val = eq ? eq + 1 : "";
		size_t off = block.len;

		fcl_vec_put(&block, NULL, fcgi_nv_len(nl, strlen(val)));
		block.len = off;
		fcgi_nv_encode(block.p, block.cap, &block.len, *env, nl, val,
			       strlen(val));
	}
	fcl_stream(v, FCGI_PARAMS, id, block.p, block.len, true);
	fcl_vec_free(&block);
}

int fcl_connect(const char *path, bool zc, struct fcl *c)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	if (zc && (err = zc_channel_open(fd, &c->ch))) {
		close(fd);
		c->fd = -1;
		return err;
	}
	return 0;
}

void fcl_close(struct fcl *c)
{
	if (c->ch)
		zc_channel_close(c->ch);
	else if (c->fd >= 0)
		close(c->fd);
	c->ch = NULL;
	c->fd = -1;
	fcl_vec_free(&c->in);
	zc_agg_release(c->rin);
	c->rin = NULL;
}

int fcl_send(struct fcl *c, const void *p, size_t n)
{
	const uint8_t *s = p;

	if (c->ch) {
		zc_agg *a;
		int err;

		if (!n)
			return 0;
		if ((err = zc_agg_create(&a)))
			return err;
		err = zc_agg_append_bytes(a, NULL, p, n);
		while (!err && (err = zc_channel_send(c->ch, a)) == -EINTR)
			;
		zc_agg_release(a);
		return err;
	}
	while (n) {
		ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* At least n unparsed bytes (0), or -EPIPE at EOF. */
static int need(struct fcl *c, size_t n)
{
	if (c->ch) {
		while (!c->rin || zc_agg_len(c->rin) < n) {
			zc_agg *m;
			int err = zc_channel_recv(c->ch, &m);

			if (err == -EINTR)
				continue;
			if (err)
				return err == -EPIPE ? -EPIPE : err;
			if (!c->rin) {
				c->rin = m;
			} else {
				zc_agg_concat(c->rin, m);
				zc_agg_release(m);
			}
		}
		return 0;
	}
	while (c->in.len - c->in_off < n) {
		uint8_t buf[65536];
		ssize_t r = recv(c->fd, buf, sizeof(buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EPIPE;
		if (c->in_off) {
			memmove(c->in.p, c->in.p + c->in_off,
				c->in.len - c->in_off);
			c->in.len -= c->in_off;
			c->in_off = 0;
		}
		fcl_vec_put(&c->in, buf, (size_t)r);
	}
	return 0;
}

/* Take n bytes: copied into v (if not NULL), and on a channel as slices
 * into *agg (if not NULL). */
static void take(struct fcl *c, size_t n, struct fcl_vec *v, zc_agg **agg)
{
	if (!c->ch) {
		if (v)
			fcl_vec_put(v, c->in.p + c->in_off, n);
		c->in_off += n;
		return;
	}
	if (v) {
		size_t off = v->len;

		fcl_vec_put(v, NULL, n);
		zc_agg_copyout(c->rin, 0, v->p + off, n);
	}
	if (agg && n) {
		zc_agg *tail = NULL;

		zc_agg_split(c->rin, n, &tail);
		if (!*agg)
			*agg = c->rin;
		else {
			zc_agg_concat(*agg, c->rin);
			zc_agg_release(c->rin);
		}
		c->rin = tail;
		return;
	}
	zc_agg_trim_front(c->rin, n);
}

void fcl_resp_free(struct fcl_resp *r)
{
	fcl_vec_free(&r->out);
	fcl_vec_free(&r->err);
	fcl_vec_free(&r->mgmt);
	zc_agg_release(r->out_agg);
	memset(r, 0, sizeof(*r));
}

int fcl_read(struct fcl *c, uint16_t id, struct fcl_resp *r)
{
	for (;;) {
		uint8_t hb[FCGI_HEADER_LEN], body[8];
		struct fcgi_header h;
		struct fcgi_end e;
		struct fcl_vec tmp = { 0 };
		int err;

		if ((err = need(c, FCGI_HEADER_LEN)))
			return err;
		if (c->ch)
			zc_agg_copyout(c->rin, 0, hb, sizeof(hb));
		else
			memcpy(hb, c->in.p + c->in_off, sizeof(hb));
		if (fcgi_header_decode(hb, &h))
			return -EPROTO;
		if ((err = need(c, fcgi_record_len(&h))))
			return err;
		take(c, FCGI_HEADER_LEN, NULL, NULL);
		switch (h.type) {
		case FCGI_STDOUT:
			if (h.request_id != id || r->out_eos)
				return -EPROTO;
			if (!h.content_length)
				r->out_eos = true;
			else
				r->out_records++;
			take(c, h.content_length, &r->out, &r->out_agg);
			break;
		case FCGI_STDERR:
			if (h.request_id != id || r->err_eos)
				return -EPROTO;
			r->err_eos = !h.content_length;
			take(c, h.content_length, &r->err, NULL);
			break;
		case FCGI_END_REQUEST:
			take(c, h.content_length, &tmp, NULL);
			memcpy(body, tmp.p, 8);
			fcl_vec_free(&tmp);
			if (fcgi_end_decode(body, 8, &e))
				return -EPROTO;
			if (h.request_id != id) {
				/* An answer to another request (CANT_MPX). */
				r->mgmt_type = FCGI_END_REQUEST;
				r->other_id = h.request_id;
				r->other_status = e.protocol_status;
				if (id == 0)
					return 0;
				break;
			}
			r->ended = true;
			r->app_status = e.app_status;
			r->protocol_status = e.protocol_status;
			take(c, h.padding_length, NULL, NULL);
			return 0;
		default:
			r->mgmt_type = h.type;
			r->mgmt.len = 0;
			take(c, h.content_length, &r->mgmt, NULL);
			if (id == 0) {
				take(c, h.padding_length, NULL, NULL);
				return 0;
			}
		}
		take(c, h.padding_length, NULL, NULL);
	}
}

int fcl_expect_eof(struct fcl *c)
{
	int err = need(c, 1);

	return err == -EPIPE ? 0 : err ? err : -EPROTO;
}

#define PIECE ((size_t)1 << 20)

int fcl_request(struct fcl *c, uint16_t id, bool keep,
		const char *const *env, const void *body, size_t len,
		struct fcl_resp *r)
{
	struct fcl_vec v = { 0 };
	const uint8_t *b = body;
	int err;

	fcl_begin(&v, id, FCGI_RESPONDER, keep);
	fcl_params(&v, id, env);
	err = fcl_send(c, v.p, v.len);
	while (!err) {
		size_t k = len < PIECE ? len : PIECE;

		v.len = 0;
		fcl_stream(&v, FCGI_STDIN, id, b, k, k == len);
		err = fcl_send(c, v.p, v.len);
		b += k;
		len -= k;
		if (!len)
			break;
	}
	fcl_vec_free(&v);
	if (err)
		return err;
	return fcl_read(c, id, r);
}
