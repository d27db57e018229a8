/*
 * http_accept.c - Accept-Encoding (see http_accept.h).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "http_accept.h"
#include "http_lex.h"

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); -1 if not. */
static int qvalue(const char *p, size_t n)
{
	int q, scale = 100;

	if (n == 0 || (p[0] != '0' && p[0] != '1'))
		return -1;
	q = p[0] == '1' ? 1000 : 0;
	if (n == 1)
		return q;
	if (p[1] != '.' || n > 5)
		return -1;
	for (size_t i = 2; i < n; i++, scale /= 10) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		q += (p[i] - '0') * scale;
	}
	return q > 1000 ? -1 : q;
}

/* One element "coding *( OWS ; OWS param )": its name and q (1000 if none);
 * false if it is not well formed. */
static bool element(const char *p, size_t n, const char **name, size_t *nlen,
		    int *q)
{
	size_t i = 0;

	while (i < n && http_tchar[(unsigned char)p[i]])
		i++;
	if (i == 0)
		return false;
	*name = p;
	*nlen = i;
	*q = 1000;
	for (;;) {
		size_t k, v;

		while (i < n && http_is_ows(p[i]))
			i++;
		if (i == n)
			return true;
		if (p[i++] != ';')
			return false;
		while (i < n && http_is_ows(p[i]))
			i++;
		k = i;
		while (i < n && http_tchar[(unsigned char)p[i]])
			i++;
		if (i == k || i == n || p[i] != '=')
			return false;
		v = ++i;
		if (i < n && p[i] == '"') {	/* quoted-string: skip it */
			for (i++; i < n && p[i] != '"'; i++)
				if (p[i] == '\\' && i + 1 < n)
					i++;
			if (i == n)
				return false;
			i++;
			continue;
		}
		while (i < n && http_tchar[(unsigned char)p[i]])
			i++;
		if (v - 1 - k == 1 && (p[k] == 'q' || p[k] == 'Q')) {
			*q = qvalue(p + v, i - v);
			if (*q < 0)
				return false;
		}
	}
}

void http_accept_encoding(const char *p, size_t len, struct http_codings *out)
{
	int br = -1, gzip = -1, star = -1;
	size_t i = 0;

	while (i < len) {
		size_t start, end, nlen;
		const char *name;
		int q;

		while (i < len && (http_is_ows(p[i]) || p[i] == ','))
			i++;
		start = i;
		while (i < len && p[i] != ',')
			i++;
		end = i;
		while (end > start && http_is_ows(p[end - 1]))
			end--;
		if (end == start || !element(p + start, end - start, &name,
					     &nlen, &q))
			continue;
		if (nlen == 2 && !strncasecmp(name, "br", 2))
			br = q;
		else if ((nlen == 4 && !strncasecmp(name, "gzip", 4)) ||
			 (nlen == 6 && !strncasecmp(name, "x-gzip", 6)))
			gzip = q;
		else if (nlen == 1 && name[0] == '*')
			star = q;
	}
	out->br = (uint16_t)(br >= 0 ? br : star > 0 ? star : 0);
	out->gzip = (uint16_t)(gzip >= 0 ? gzip : star > 0 ? star : 0);
}
