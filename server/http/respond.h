/*
 * respond.h - building response heads.
 *
 * A head is formatted once, straight into memory the connection owns (its
 * head arena, request.h), and goes out from there as a borrowed slice of
 * the response aggregate, gathered into the same sendmsg as a small body
 * or followed by the body's sendfile.  When the arena is full (many
 * pipelined responses queued) the head is built in the struct's own room
 * and copied into a pool buffer instead.
 */
#ifndef ZC_RESPOND_H
#define ZC_RESPOND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zc.h"

#define RESP_HEAD_MAX 1024

struct resp_head {
	char *buf;		/* where the head is built */
	size_t cap, len;
	bool overflow;		/* a header did not fit: answer 500 */
	char local[RESP_HEAD_MAX];	/* buf when no arena room was given */
};

/* An empty head to be built into buf (cap bytes) of the caller's. */
static inline void resp_head_over(struct resp_head *h, char *buf, size_t cap)
{
	h->buf = buf;
	h->cap = cap;
	h->len = 0;
	h->overflow = false;
}

/* "HTTP/1.1 200 OK", Date and Server, into h->buf (set by the caller:
 * request_head_begin, or memory of its own with h->cap; or NULL for
 * h->local). */
void resp_begin(struct resp_head *h, int status);
/* The same with a reason phrase of the caller's (a FastCGI application's
 * Status: line); NULL: the standard one. */
void resp_begin_reason(struct resp_head *h, int status, const char *reason,
		       size_t reason_len);
void resp_add(struct resp_head *h, const char *name, const char *value);
/* A field given by lengths (not NUL-terminated). */
void resp_field(struct resp_head *h, const char *name, size_t name_len,
		const char *value, size_t value_len);
void resp_addf(struct resp_head *h, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A field whose value is a number in decimal (Content-Length): without
 * printf's cost, which a per-request head feels. */
void resp_add_num(struct resp_head *h, const char *name, size_t name_len,
		  uint64_t v);
/* Header lines already formatted ("Name: value\r\n"...), e.g. prebuilt. */
void resp_add_raw(struct resp_head *h, const char *lines, size_t n);
/* Connection header + the empty line. */
void resp_end(struct resp_head *h, bool keep_alive);

/* The reason phrase for a status code ("Not Found"). */
const char *resp_reason(int status);

/* Append a complete small error response (status line, headers and a short
 * HTML body; no body for HEAD) to out. */
int resp_error(zc_agg *out, int status, bool head_only, bool keep_alive,
	       const char *extra_header);
/* The same, telling the size of the page's body (the access log's bytes
 * field: the body, as Combined Log Format means it). */
int resp_error_sized(zc_agg *out, int status, bool head_only,
		     bool keep_alive, const char *extra_header,
		     uint64_t *body_len);

/* The Date value, now: formatted again only when the second changed. */
const char *resp_date(void);

#endif
