/*
 * respond.h - building response heads.
 *
 * A head is formatted into a small fixed buffer on the stack and then
 * copied once into a pool buffer (the aggregate's first slice); the body
 * follows as file extents or cached buffers without any copy.
 */
#ifndef ZC_RESPOND_H
#define ZC_RESPOND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zc.h"

#define RESP_HEAD_MAX 1024

struct resp_head {
	char buf[RESP_HEAD_MAX];
	size_t len;
	bool overflow;		/* a header did not fit: answer 500 */
};

/* "HTTP/1.1 200 OK", Date and Server. */
void resp_begin(struct resp_head *h, int status);
void resp_add(struct resp_head *h, const char *name, const char *value);
void resp_addf(struct resp_head *h, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
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

/* Refresh the cached Date value (call once per loop iteration; formats only
 * when the second changed). */
void resp_clock_tick(void);
const char *resp_date(void);

#endif
