/*
 * h2_none.c - h2.h for a build without libnghttp2 (the static musl image:
 * Debian has no musl libnghttp2).  No connection is ever taken for HTTP/2
 * and --http2 on is refused with this reason; nothing else here is
 * reachable, since no stream can exist.
 */
#include <errno.h>
#include <stdlib.h>

#include "h2.h"

const char *h2_unavailable(void)
{
	return "this zchttpd was built without libnghttp2 (the static "
	       "image); HTTP/2 needs the regular build";
}

enum h2_choice h2_detect(const struct zh_sock *s, const struct zh_config *cfg)
{
	(void)s;
	(void)cfg;
	return H2_NO;
}

int h2_conn_start(struct zh_conn *c)
{
	(void)c;
	return -ENOTSUP;
}

void h2_conn_free(struct h2_conn *h)
{
	(void)h;
}

void h2_conn_shutdown(struct h2_conn *h)
{
	(void)h;
}

/* request.c calls these only for a request a stream carries. */
zc_agg *h2_req_out(struct zh_request *r)
{
	(void)r;
	abort();
}

bool h2_req_copies_mapped(const struct zh_request *r)
{
	(void)r;
	abort();
}

void h2_req_head_begin(struct zh_request *r, struct resp_head *h)
{
	(void)r;
	(void)h;
	abort();
}

int h2_req_head_end(struct zh_request *r, struct resp_head *h)
{
	(void)r;
	(void)h;
	abort();
}

int h2_req_head_append(struct zh_request *r, const char *p, size_t len)
{
	(void)r;
	(void)p;
	(void)len;
	abort();
}

void h2_req_waits(struct zh_request *r)
{
	(void)r;
	abort();
}

void h2_req_post(struct zh_request *r)
{
	(void)r;
	abort();
}

bool h2_req_send(struct zh_request *r)
{
	(void)r;
	abort();
}

void h2_req_send_wait(struct zh_request *r)
{
	(void)r;
	abort();
}

bool h2_req_secure(const struct zh_request *r)
{
	(void)r;
	abort();
}

void h2_req_input(struct zh_request *r, const char **p, size_t *len)
{
	(void)r;
	(void)p;
	(void)len;
	abort();
}

void h2_req_input_consume(struct zh_request *r, size_t n)
{
	(void)r;
	(void)n;
	abort();
}

bool h2_req_input_buffered(struct zh_request *r)
{
	(void)r;
	abort();
}

ssize_t h2_req_read_body(struct zh_request *r, zc_agg **body, size_t want)
{
	(void)r;
	(void)body;
	(void)want;
	abort();
}

ssize_t h2_req_read(struct zh_request *r)
{
	(void)r;
	abort();
}

int h2_req_continue(struct zh_request *r)
{
	(void)r;
	abort();
}
