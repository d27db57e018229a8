/*
 * http_chunked.c - the chunked transfer coding, decoded in place (see
 * http_chunked.h).
 *
 *	chunked-body = *chunk last-chunk trailer-section CRLF
 *	chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *	last-chunk   = 1*("0") [ chunk-ext ] CRLF
 *	chunk-ext    = *( BWS ";" BWS name [ BWS "=" BWS value ] )
 *
 * A state machine over the framing bytes, one byte at a time (they are
 * few: a size line per chunk), and whole spans over the data.  Because the
 * state after a byte depends only on the state before it and the byte,
 * the outcome (the data, the bytes consumed in total, the error) cannot
 * depend on where the input was cut into segments; only how the data is
 * sliced into spans does.  The state is the machine's position, or a
 * negative errno once the body is broken (sticky: every later call
 * returns the same error).
 *
 * Extensions are checked for their bytes only (field-value characters),
 * not for their grammar: we do not interpret them, and a byte that could
 * end or fold the line (CR, LF, NUL, other controls) is refused.  Every
 * byte between the chunk-size and its line end counts against max_ext.
 * Trailer fields are checked as header lines (a token, a colon, a value
 * of field-value characters; no obs-fold) and dropped; every byte of the
 * trailer fields, line ends included, counts against max_trailer (the
 * empty line that ends the body does not).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "http_chunked.h"
#include "http_lex.h"

/* Longest chunk-size: 16 hex digits are 64 bits. */
#define MAX_DIGITS 16

enum {
	S_SIZE_START = 0,	/* the first digit of a chunk-size */
	S_SIZE,			/* more digits */
	S_SIZE_WS,		/* BWS after the size: a ';' must follow */
	S_EXT,			/* in the extensions, up to the line end */
	S_SIZE_LF,		/* the LF after the size line's CR */
	S_DATA,			/* chunk_left bytes of data */
	S_DATA_CR,		/* the line end after the data */
	S_DATA_LF,
	S_TR_START,		/* a trailer line, or the final empty line */
	S_TR_NAME,
	S_TR_VALUE,
	S_TR_LF,		/* the LF after a trailer line's CR */
	S_TR_END_LF,		/* the LF of the final empty line */
	S_DONE,
};

void http_chunked_init(struct http_chunked *d,
		       const struct http_chunked_limits *lim)
{
	memset(d, 0, sizeof(*d));
	d->lim = *lim;
	d->state = S_SIZE_START;
}

bool http_chunked_done(const struct http_chunked *d)
{
	return d->state == S_DONE;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = http_lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A field-value character: VCHAR, obs-text, SP, HTAB. */
static inline bool field_char(unsigned char c)
{
	return http_is_vchar(c) || http_is_ows(c);
}

static inline int to(struct http_chunked *d, int state)
{
	d->state = state;
	return 0;
}

static int ext_byte(struct http_chunked *d, int next)
{
	if (++d->ext > d->lim.max_ext)
		return -E2BIG;
	return to(d, next);
}

static int trailer_byte(struct http_chunked *d, int next)
{
	if (++d->trailer > d->lim.max_trailer)
		return -E2BIG;
	return to(d, next);
}

/* The size line is complete: data follows, or the trailer. */
static int size_line_done(struct http_chunked *d)
{
	return to(d, d->chunk_left ? S_DATA : S_TR_START);
}

/* One framing byte: 0 or a negative errno. */
static int framing_byte(struct http_chunked *d, unsigned char c)
{
	int h;

	switch (d->state) {
	case S_SIZE_START:
		if (hexval(c) < 0)
			return -EPROTO;
		d->chunk_left = 0;
		d->digits = 0;
		d->state = S_SIZE;
		/* fall through */
	case S_SIZE:
		if ((h = hexval(c)) >= 0) {
			if (++d->digits > MAX_DIGITS)
				return -EPROTO;
			d->chunk_left = d->chunk_left << 4 | (unsigned)h;
			/* the whole chunk must fit: refuse it before its
			 * data arrives */
			if (d->chunk_left > d->lim.max_body - d->body)
				return -E2BIG;
			return 0;
		}
		if (c == '\r')
			return to(d, S_SIZE_LF);
		if (c == '\n')
			return size_line_done(d);
		if (c == ';')
			return ext_byte(d, S_EXT);
		return http_is_ows(c) ? ext_byte(d, S_SIZE_WS) : -EPROTO;
	case S_SIZE_WS:
		if (c == ';')
			return ext_byte(d, S_EXT);
		return http_is_ows(c) ? ext_byte(d, S_SIZE_WS) : -EPROTO;
	case S_EXT:
		if (c == '\r')
			return to(d, S_SIZE_LF);
		if (c == '\n')
			return size_line_done(d);
		return field_char(c) ? ext_byte(d, S_EXT) : -EPROTO;
	case S_SIZE_LF:
		return c == '\n' ? size_line_done(d) : -EPROTO;
	case S_DATA_CR:		/* CRLF, or a bare LF */
		if (c == '\r')
			return to(d, S_DATA_LF);
		/* fall through */
	case S_DATA_LF:
		return c == '\n' ? to(d, S_SIZE_START) : -EPROTO;
	case S_TR_START:
		if (c == '\r')
			return to(d, S_TR_END_LF);
		if (c == '\n')
			return to(d, S_DONE);
		/* a token starts a field; SP/HTAB would be obs-fold */
		return http_tchar[c] ? trailer_byte(d, S_TR_NAME) : -EPROTO;
	case S_TR_NAME:
		if (c == ':')
			return trailer_byte(d, S_TR_VALUE);
		return http_tchar[c] ? trailer_byte(d, S_TR_NAME) : -EPROTO;
	case S_TR_VALUE:
		if (c == '\r')
			return trailer_byte(d, S_TR_LF);
		if (c == '\n')
			return trailer_byte(d, S_TR_START);
		return field_char(c) ? trailer_byte(d, S_TR_VALUE) : -EPROTO;
	case S_TR_LF:
		return c == '\n' ? trailer_byte(d, S_TR_START) : -EPROTO;
	case S_TR_END_LF:
		return c == '\n' ? to(d, S_DONE) : -EPROTO;
	}
	return -EPROTO;	/* S_DATA and S_DONE never get here */
}

ssize_t http_chunked_step(struct http_chunked *d, const char *buf,
			  size_t len, size_t *data_off, size_t *data_len)
{
	bool have_data = false;
	size_t i = 0;

	*data_off = 0;
	*data_len = 0;
	if (d->state < 0)
		return d->state;
	while (i < len && d->state != S_DONE) {
		int err;

		if (d->state == S_DATA) {
			size_t n = len - i;

			if (have_data)
				break;	/* one span per call */
			if (n > d->chunk_left)
				n = (size_t)d->chunk_left;
			*data_off = i;
			*data_len = n;
			have_data = true;
			d->chunk_left -= n;
			d->body += n;
			i += n;
			if (!d->chunk_left)
				d->state = S_DATA_CR;
			continue;
		}
		err = framing_byte(d, (unsigned char)buf[i]);
		if (err < 0) {
			d->state = err;
			*data_off = 0;
			*data_len = 0;
			return err;
		}
		i++;
	}
	return (ssize_t)i;
}
