/*
 * http_lex.h - the lexical pieces the header-line parsers of `zchttp`
 * share: HTTP request heads (http_parser.c), CGI response heads and chunk
 * trailers (fcgi_proto.c, http_chunked.c).  Internal to the library, not
 * an interface of it.
 */
#ifndef ZC_HTTP_LEX_H
#define ZC_HTTP_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http_parser.h"

/* tchar (RFC 9110 5.6.2): the characters of methods and field names. */
extern const unsigned char http_tchar[256];

/* VCHAR or obs-text: field-value characters other than SP/HTAB, and the
 * characters we accept in a request-target. */
static inline int http_is_vchar(unsigned char c)
{
	return c > 0x20 && c != 0x7f;
}

static inline int http_is_ows(char c)
{
	return c == ' ' || c == '\t';
}

static inline unsigned char http_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* End of the line whose LF is at buf[lf], a CR before it excluded. */
static inline size_t http_content_end(const char *buf, size_t start,
				      size_t lf)
{
	return lf > start && buf[lf - 1] == '\r' ? lf - 1 : lf;
}

/*
 * The line scanner of the incremental head parsers: the next line that
 * completes in buf[*scanned .. len), a line that started at *line_start
 * (no LF lies between *line_start and *scanned).  Returns true with the
 * line's content [*s, *e) (its line end excluded), *scanned and
 * *line_start just past its LF; false when no LF is left, with *scanned
 * at len.  Over any number of calls each byte is searched once.
 */
static inline bool http_next_line(const char *buf, size_t len,
				  size_t *scanned, size_t *line_start,
				  size_t *s, size_t *e)
{
	const char *nl = *scanned < len ?
		memchr(buf + *scanned, '\n', len - *scanned) : NULL;

	if (!nl) {
		*scanned = len;
		return false;
	}
	*s = *line_start;
	*e = http_content_end(buf, *s, (size_t)(nl - buf));
	*scanned = *line_start = (size_t)(nl - buf) + 1;
	return true;
}

/* ASCII case-insensitive equality of s[0..n) with the lower-case `lc`. */
int http_lc_eq(const char *s, size_t n, const char *lc);

/*
 * A header line s..e (line end excluded): field-name ":" OWS field-value
 * OWS.  No obs-fold, no whitespace before the colon, a token name, a value
 * of VCHAR, obs-text, SP and HTAB only.  Fills name and value (trimmed)
 * and returns NULL, or returns a static reason for the error.
 */
const char *http_field_split(const char *s, const char *e,
			     struct http_str *name, struct http_str *value);

/* 1*DIGIT, at most INT64_MAX (an off_t): 0, or -1. */
int http_parse_decimal(struct http_str v, uint64_t *out);

#endif /* ZC_HTTP_LEX_H */
