/*
 * uri.c - request-target path normalization (see uri.h for the rules).
 *
 * One pass over the path.  Each segment is decoded straight into the
 * output after a separator; once it is complete we look at what it
 * decoded to: "." is taken back out, ".." also takes back the segment
 * before it (found by the last '/' in the output: a decoded '/' is never
 * written, so every '/' in the output is a separator).
 */
#include <string.h>

#include "uri.h"

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static enum uri_error fail(struct uri_path *res, char *out, size_t outsz,
			   enum uri_error err, const char *why)
{
	if (outsz)
		out[0] = '\0';
	res->len = 0;
	res->why = why;
	return err;
}

enum uri_error uri_normalize_path(const char *target, size_t n, char *out,
				  size_t outsz, struct uri_path *res)
{
	const char *path = target, *end, *q;
	size_t i, o = 0;

	memset(res, 0, sizeof(*res));

	/* 1. path ? query # fragment */
	end = memchr(target, '#', n);
	if (!end)
		end = target + n;
	q = memchr(target, '?', end - target);
	if (q) {
		res->query = q + 1;
		res->query_len = end - q - 1;
		end = q;
	}
	n = end - path;

	if (outsz == 0)
		return fail(res, out, outsz, URI_E_TOO_LONG, "no room");
	if (n == 0) {			/* "http://host" means "/" */
		out[0] = '\0';
		res->trailing_slash = true;
		return URI_OK;
	}
	/* 2. */
	if (path[0] != '/')
		return fail(res, out, outsz, URI_E_BAD, "path does not start with /");

	for (i = 0; ; ) {
		size_t seg, start = o;	/* start: where the separator goes */
		size_t k;

		/* 5. collapse "//" */
		while (i < n && path[i] == '/')
			i++;
		if (i == n) {
			res->trailing_slash = true;
			break;
		}
		if (o > 0) {
			if (o + 1 >= outsz)
				return fail(res, out, outsz, URI_E_TOO_LONG, "path too long");
			out[o++] = '/';
		}
		seg = o;

		/* 3, 4. decode one segment */
		for (; i < n && path[i] != '/'; i++) {
			unsigned char c = (unsigned char)path[i];

			if (c == '%') {
				if (n - i < 3 || hexval(path[i + 1]) < 0 ||
				    hexval(path[i + 2]) < 0)
					return fail(res, out, outsz, URI_E_BAD,
						    "bad percent-encoding");
				c = (unsigned char)(hexval(path[i + 1]) << 4 |
						    hexval(path[i + 2]));
				i += 2;
				if (c == '/')
					return fail(res, out, outsz, URI_E_BAD,
						    "encoded slash in path");
			}
			if (c == '\0')
				return fail(res, out, outsz, URI_E_BAD, "NUL in path");
			if (c < 0x20 || c == 0x7f)
				return fail(res, out, outsz, URI_E_BAD,
					    "control character in path");
			if (o + 1 >= outsz)
				return fail(res, out, outsz, URI_E_TOO_LONG, "path too long");
			out[o++] = (char)c;
		}

		/* 5. dot-segments */
		res->trailing_slash = false;
		if (o - seg == 1 && out[seg] == '.') {
			o = start;
			res->trailing_slash = true;
		} else if (o - seg == 2 && out[seg] == '.' && out[seg + 1] == '.') {
			if (start == 0)
				return fail(res, out, outsz, URI_E_BAD,
					    "path escapes the root");
			/* drop the separator and the previous segment */
			for (k = start; k > 0 && out[k - 1] != '/'; k--)
				;
			o = k > 0 ? k - 1 : 0;
			res->trailing_slash = true;
		}
		if (i == n)
			break;
	}
	out[o] = '\0';
	res->len = o;
	return URI_OK;
}
