/*
 * http_lex.h - the lexical pieces the header-line parsers of `zchttp`
 * share: HTTP request and response heads (http_parser.c, http_response.c),
 * CGI response heads and chunk trailers (fcgi_proto.c, http_chunked.c).  Internal to the library, not
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

/* v in decimal, written backwards into buf[0..HTTP_DEC_MAX): its first
 * digit (the digits run to the end of buf).  Heads, logs and CGI
 * parameters format numbers per request: no printf. */
#define HTTP_DEC_MAX 20
static inline char *http_dec(char buf[HTTP_DEC_MAX], uint64_t v)
{
	char *p = buf + HTTP_DEC_MAX;

	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

static inline unsigned char http_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/*
 * Scanning a class of characters.  A request head is mostly names, paths
 * and field values, each checked byte for byte against its class; these
 * do it several bytes per step and return the first byte of [p, e)
 * outside the class, or e.  The irregular classes (tchar, host
 * characters) go by their table, four bytes per bound check.  The ranges
 * (VCHAR and obs-text, with or without SP/HTAB) go eight bytes per step,
 * word at a time (as musl's strlen does), with a per-byte flag for the
 * bytes outside the range, from which the first such byte is found
 * directly.
 */
static inline const char *http_skip_in(const unsigned char cls[256],
				       const char *p, const char *e)
{
	while (e - p >= 4 && cls[(unsigned char)p[0]] &&
	       cls[(unsigned char)p[1]] && cls[(unsigned char)p[2]] &&
	       cls[(unsigned char)p[3]])
		p += 4;
	while (p < e && cls[(unsigned char)*p])
		p++;
	return p;
}

#define HTTP_ONES 0x0101010101010101ull
#define HTTP_HIGHS 0x8080808080808080ull

static inline uint64_t http_load8(const char *p)
{
	uint64_t x;

	memcpy(&x, p, sizeof(x));	/* unaligned: one load where allowed */
	return x;
}

/*
 * The bytes of x that are below n (n <= 0x80) or DEL, each flagged by
 * its high bit.  Exact per byte: the sums stay below 0x100 in every byte
 * (the high bits are masked off first), so nothing carries into the next
 * byte and a flag never stands for a neighbour.  Bytes 0x80-0xFF
 * (obs-text) are never flagged.
 */
static inline uint64_t http_flag_below_or_del(uint64_t x, unsigned n)
{
	uint64_t low7 = x & ~HTTP_HIGHS;
	uint64_t at_least_n = low7 + HTTP_ONES * (0x80 - n);
	uint64_t del = low7 + HTTP_ONES;	/* 0x7F becomes 0x80 */

	return (~at_least_n | del) & ~x & HTTP_HIGHS;
}

/* The position in its word of the first (lowest-addressed) flagged byte;
 * m != 0. */
static inline unsigned http_first_flagged(uint64_t m)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (unsigned)__builtin_clzll(m) / 8;
#else
	return (unsigned)__builtin_ctzll(m) / 8;
#endif
}

/* m without the flag of its first flagged byte; m != 0. */
static inline uint64_t http_clear_first(uint64_t m)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return m & ~(0x8000000000000000ull >> __builtin_clzll(m));
#else
	return m & (m - 1);
#endif
}

/* The flags of the bytes of a word from its k-th byte on (k < 8). */
static inline uint64_t http_from_byte(unsigned k)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return ~0ull >> (8 * k);
#else
	return ~0ull << (8 * k);
#endif
}

/* ws: SP and HTAB are in the class too (field values).  A word flags the
 * bytes below SP (below '!' without ws) and DEL; a flagged HTAB is passed.
 * A range of 8 bytes or more ends with a word that overlaps bytes already
 * passed (their flags cleared); shorter ones go byte by byte. */
static inline const char *http_skip_text(const char *p, const char *e,
					 bool ws)
{
	unsigned below = ws ? 0x20 : 0x21;
	const char *w = p;
	uint64_t m;

	if (e - p < 8) {
		while (p < e && (http_is_vchar((unsigned char)*p) ||
				 (ws && http_is_ows(*p))))
			p++;
		return p;
	}
	for (;;) {
		if (e - w > 8) {
			m = http_flag_below_or_del(http_load8(w), below);
		} else {
			m = http_flag_below_or_del(http_load8(e - 8), below) &
			    http_from_byte((unsigned)(8 - (e - w)));
			w = e - 8;
		}
		for (; m; m = http_clear_first(m)) {
			p = w + http_first_flagged(m);
			if (!ws || *p != '\t')
				return p;
		}
		if (w == e - 8)
			return e;
		w += 8;
	}
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

/* ASCII case-insensitive equality of s[0..n) with the lower-case `lc`.
 * Inline: its callers pass constant names, which it then unrolls. */
static inline int http_lc_eq(const char *s, size_t n, const char *lc)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lc[i] == '\0' ||
		    http_lower((unsigned char)s[i]) != (unsigned char)lc[i])
			return 0;
	return lc[n] == '\0';
}

/* ASCII case-insensitive equality of a[0..an) and b[0..bn), both as
 * sent (field names, list elements). */
static inline bool http_case_eq(const char *a, size_t an, const char *b,
				size_t bn)
{
	size_t i;

	if (an != bn)
		return false;
	for (i = 0; i < an; i++)
		if (http_lower((unsigned char)a[i]) !=
		    http_lower((unsigned char)b[i]))
			return false;
	return true;
}

/*
 * Walk a comma-separated list (#rule, RFC 9110 5.6.1): the next element,
 * OWS trimmed and possibly empty (recipients skip those), from *pos on;
 * false at the end of the value.  Start with *pos = 0.
 */
static inline bool http_list_next(struct http_str v, size_t *pos,
				  struct http_str *el)
{
	size_t i = *pos, s, e;

	if (i > v.len)
		return false;
	while (i < v.len && http_is_ows(v.p[i]))
		i++;
	s = i;
	while (i < v.len && v.p[i] != ',')
		i++;
	for (e = i; e > s && http_is_ows(v.p[e - 1]); e--)
		;
	*el = (struct http_str){ v.p + s, e - s };
	*pos = i + 1;
	return true;
}

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
