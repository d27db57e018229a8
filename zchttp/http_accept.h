/*
 * http_accept.h - Accept-Encoding (RFC 9110 section 12.5.3): how much a
 * client wants each content coding zchttpd can serve precompressed.
 */
#ifndef ZC_HTTP_ACCEPT_H
#define ZC_HTTP_ACCEPT_H

#include <stddef.h>
#include <stdint.h>

/* Quality values in thousandths (0..1000); 0: not acceptable. */
struct http_codings {
	uint16_t br, gzip;
};

/*
 * Parse an Accept-Encoding field value: a comma-separated list of codings,
 * each with optional parameters of which only q counts ("gzip;q=0.5").
 * Names are case-insensitive; "x-gzip" is gzip; "*" gives its q to the
 * codings the list does not name.  An element that is not well formed (a
 * bad token or q-value) is ignored.  No header at all: call with len 0
 * (nothing acceptable but identity).  Never reads outside p[0..len).
 */
void http_accept_encoding(const char *p, size_t len, struct http_codings *out);

#endif
