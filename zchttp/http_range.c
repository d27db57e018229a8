/*
 * http_range.c - the Range request field, single byte range (http_parser.h).
 *
 * The rules follow nginx's range filter with max_ranges 1 (we do not send
 * multipart/byteranges): a syntax error or nothing satisfiable is 416,
 * several satisfiable ranges are ignored (200), one is served (206).  Where
 * nginx turns 64-bit overflow into 416 we apply RFC 9110 14.1.1 instead: a
 * last-pos or suffix-length beyond the file means "to the end".
 */
#include "http_parser.h"

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static int is_digit(const char *p, const char *e)
{
	return p < e && *p >= '0' && *p <= '9';
}

/* 1*DIGIT, saturating at UINT64_MAX (every such value is "past the end"). */
static uint64_t number(const char **pp, const char *e)
{
	const char *p = *pp;
	uint64_t x = 0;

	for (; is_digit(p, e); p++) {
		unsigned d = *p - '0';

		x = x > (UINT64_MAX - d) / 10 ? UINT64_MAX : x * 10 + d;
	}
	*pp = p;
	return x;
}

enum http_range_result http_range_parse(const char *v, size_t n,
					uint64_t size, uint64_t *start,
					uint64_t *len)
{
	const char *p = v, *e = v + n;
	static const char unit[] = "bytes=";
	uint64_t first = 0, end = 0, s0 = 0, l0 = 0;
	unsigned satisfiable = 0;
	size_t i;

	/* Range units are case-insensitive; one we do not know is ignored
	 * (RFC 9110 14.2 MUST). */
	if (n < 6)
		return HTTP_RANGE_IGNORE;
	for (i = 0; i < 6; i++)
		if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]) != unit[i])
			return HTTP_RANGE_IGNORE;
	p += 6;

	for (;;) {
		/* [first] "-" [last]: compute [first, end) clamped to the file */
		p = skip_ws(p, e);
		if (p < e && *p == '-') {	/* suffix: "-n" */
			uint64_t k;

			p = skip_ws(p + 1, e);
			if (!is_digit(p, e))
				return HTTP_RANGE_UNSATISFIABLE;
			k = number(&p, e);
			first = k >= size ? 0 : size - k;
			end = size;
		} else {
			if (!is_digit(p, e))
				return HTTP_RANGE_UNSATISFIABLE;
			first = number(&p, e);
			p = skip_ws(p, e);
			if (p >= e || *p != '-')
				return HTTP_RANGE_UNSATISFIABLE;
			p = skip_ws(p + 1, e);
			if (is_digit(p, e)) {
				uint64_t last = number(&p, e);

				end = last >= size ? size : last + 1;
			} else {
				end = size;
			}
		}
		p = skip_ws(p, e);
		if (p < e && *p != ',')
			return HTTP_RANGE_UNSATISFIABLE;

		if (first < end) {
			satisfiable++;
			s0 = first;
			l0 = end - first;
		} else if (first == 0) {
			/* only an empty file gets here: nginx sends it whole */
			return HTTP_RANGE_IGNORE;
		}
		if (p >= e)
			break;
		p++;	/* ',' */
	}
	if (satisfiable == 0)
		return HTTP_RANGE_UNSATISFIABLE;
	if (satisfiable > 1)
		return HTTP_RANGE_IGNORE;
	*start = s0;
	*len = l0;
	return HTTP_RANGE_OK;
}
