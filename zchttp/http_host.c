/*
 * http_host.c - the site name of a Host value (http_host.h).
 *
 * RFC 3986 3.2.2: host = IP-literal / IPv4address / reg-name, compared
 * case-insensitively; RFC 9110 7.2: Host = uri-host [ ":" port ].  We do
 * not decode percent-escapes in reg-names: no site name has one, so such
 * a host simply matches none.
 */
#include <string.h>

#include "http_host.h"

/* reg-name: unreserved / pct-encoded / sub-delims. */
static const unsigned char regname[256] = {
	['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['%'] = 1,
	['!'] = 1, ['$'] = 1, ['&'] = 1, ['\''] = 1, ['('] = 1, [')'] = 1,
	['*'] = 1, ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1,
};

/* Inside [ ]: IPv6address or IPvFuture ("v1.x"), loosely. */
static const unsigned char literal[256] = {
	['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
	[':'] = 1, ['.'] = 1, ['-'] = 1, ['_'] = 1, ['~'] = 1, ['%'] = 1,
	['!'] = 1, ['$'] = 1, ['&'] = 1, ['\''] = 1, ['('] = 1, [')'] = 1,
	['*'] = 1, ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1,
};

ssize_t http_host_name(const char *p, size_t n, char *out, size_t cap)
{
	size_t end, i;

	if (!cap)
		return -1;
	out[0] = 0;
	if (n && p[0] == '[') {
		const char *rb = memchr(p, ']', n);

		if (!rb || rb == p + 1)
			return -1;
		end = (size_t)(rb - p) + 1;
		for (i = 1; i + 1 < end; i++)
			if (!literal[(unsigned char)p[i]])
				return -1;
	} else {
		for (end = 0; end < n && p[end] != ':'; end++)
			if (!regname[(unsigned char)p[end]])
				return -1;
	}
	/* ":" port, the port possibly empty (RFC 3986 3.2.3). */
	if (end < n) {
		if (p[end] != ':')
			return -1;
		for (i = end + 1; i < n; i++)
			if (p[i] < '0' || p[i] > '9')
				return -1;
	}
	if (end && p[end - 1] == '.' && p[0] != '[')
		end--;
	if (end > HTTP_HOST_MAX || end >= cap)
		return -1;
	for (i = 0; i < end; i++) {
		unsigned char c = (unsigned char)p[i];

		out[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	out[end] = 0;
	return (ssize_t)end;
}
