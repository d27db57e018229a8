/*
 * respond.c - response heads, reason phrases, small error pages, and the
 * Date header (formatted once per second, not per response).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http_lex.h"
#include "http_parser.h"
#include "respond.h"

static char date_buf[HTTP_DATE_LEN + 1];
static time_t date_sec = -1;

/* time() per response, not a value refreshed once per loop iteration: the
 * loop refreshed it before sleeping, so the first responses after an idle
 * spell carried the time it fell asleep -- a Date in the past, which
 * caches take as age (REDbot: "already been cached for N seconds").
 * time() is a vDSO read; the formatting stays once per second. */
const char *resp_date(void)
{
	time_t now = time(NULL);

	if (now != date_sec) {
		date_sec = now;
		http_date_format((int64_t)now, date_buf);
	}
	return date_buf;
}

const char *resp_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

static void append(struct resp_head *h, const char *s, size_t n)
{
	if (h->overflow || n > h->cap - h->len) {
		h->overflow = true;
		return;
	}
	memcpy(h->buf + h->len, s, n);
	h->len += n;
}

/* A string literal, its length counted by the compiler. */
#define append_lit(h, lit) append((h), (lit), sizeof(lit) - 1)

/* Status line, Server and Date: the lines every head starts with. */
static void start_lines(struct resp_head *h, int status, const char *reason,
			size_t reason_len)
{
	/* Every response starts here: no printf on this path. */
	char code[4] = {
		(char)('0' + status / 100 % 10), (char)('0' + status / 10 % 10),
		(char)('0' + status % 10), ' '
	};

	append_lit(h, "HTTP/1.1 ");
	append(h, code, sizeof(code));
	append(h, reason, reason_len);
	append_lit(h, "\r\nServer: zchttpd\r\nDate: ");
	append(h, resp_date(), HTTP_DATE_LEN);
	append_lit(h, "\r\n");
}

/* The start lines of the last head begun with its status's own reason.
 * Nearly every response starts with the same bytes (one status, within
 * one second), so they are formatted when the status or the second
 * changes and copied in one piece. */
static struct {
	int status;
	time_t sec;
	size_t len;
	char buf[128];		/* the longest reason phrase fits */
} start = { .status = -1, .sec = -1 };

void resp_begin_reason(struct resp_head *h, int status, const char *reason,
		       size_t reason_len)
{
	if (!h->buf) {
		h->buf = h->local;
		h->cap = sizeof(h->local);
	}
	h->len = 0;
	h->overflow = false;
	if (reason) {
		start_lines(h, status, reason, reason_len);
		return;
	}
	resp_date();		/* date_sec: this second */
	if (status != start.status || date_sec != start.sec) {
		struct resp_head s;	/* its local room unused, not cleared */
		const char *why = resp_reason(status);

		resp_head_over(&s, start.buf, sizeof(start.buf));
		start_lines(&s, status, why, strlen(why));
		start.status = status;
		start.sec = date_sec;
		start.len = s.len;
	}
	append(h, start.buf, start.len);
}

void resp_begin(struct resp_head *h, int status)
{
	resp_begin_reason(h, status, NULL, 0);
}

void resp_add_raw(struct resp_head *h, const char *lines, size_t n)
{
	append(h, lines, n);
}

void resp_field(struct resp_head *h, const char *name, size_t name_len,
		const char *value, size_t value_len)
{
	append(h, name, name_len);
	append(h, ": ", 2);
	append(h, value, value_len);
	append(h, "\r\n", 2);
}

void resp_add_num(struct resp_head *h, const char *name, size_t name_len,
		  uint64_t v)
{
	char num[HTTP_DEC_MAX], *d = http_dec(num, v);

	resp_field(h, name, name_len, d, (size_t)(num + sizeof(num) - d));
}

void resp_add(struct resp_head *h, const char *name, const char *value)
{
	resp_field(h, name, strlen(name), value, strlen(value));
}

void resp_addf(struct resp_head *h, const char *name, const char *fmt, ...)
{
	char v[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(v)) {
		h->overflow = true;
		return;
	}
	resp_add(h, name, v);
}

void resp_end(struct resp_head *h, bool keep_alive)
{
	if (keep_alive)
		append_lit(h, "Connection: keep-alive\r\n\r\n");
	else
		append_lit(h, "Connection: close\r\n\r\n");
}

int resp_error(zc_agg *out, int status, bool head_only, bool keep_alive,
	       const char *extra_header)
{
	return resp_error_sized(out, status, head_only, keep_alive,
				extra_header, NULL);
}

int resp_error_sized(zc_agg *out, int status, bool head_only,
		     bool keep_alive, const char *extra_header,
		     uint64_t *body_len)
{
	struct resp_head h = { .buf = NULL };
	char body[256];
	int n;

	n = snprintf(body, sizeof(body),
		     "<!DOCTYPE html>\n<html><head><title>%d %s</title></head>"
		     "<body><h1>%d %s</h1></body></html>\n",
		     status, resp_reason(status), status, resp_reason(status));
	resp_begin(&h, status);
	resp_add(&h, "Content-Type", "text/html; charset=utf-8");
	resp_addf(&h, "Content-Length", "%d", n);
	if (extra_header)
		append(&h, extra_header, strlen(extra_header));
	resp_end(&h, keep_alive);
	if (!head_only)
		append(&h, body, (size_t)n);
	if (h.overflow)
		return -1;
	if (body_len)
		*body_len = head_only ? 0 : (uint64_t)n;
	return zc_agg_append_bytes(out, NULL, h.buf, h.len);
}
