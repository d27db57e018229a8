/*
 * http_chunked.h - decoding a chunked request body (RFC 9112 section 7.1).
 *
 * Part of the protocol library `zchttp`: no I/O, no allocation.  A state
 * machine fed any number of byte segments in order (a body read into
 * several pool buffers is decoded where it lies): each call consumes a
 * prefix of its segment and reports at most one span of body data inside
 * that prefix, so the caller can forward the data as slices of its own
 * buffers without copying, and the chunk framing simply disappears.
 *
 *	struct http_chunked d;
 *	http_chunked_init(&d, &lim);
 *	while (!http_chunked_done(&d)) {
 *		ssize_t n = http_chunked_step(&d, p, len, &off, &dlen);
 *		if (n < 0) -> 400 (or 413 for -E2BIG past max_body), close;
 *		if (dlen) body data is p[off .. off + dlen);
 *		p += n; len -= n; if (!len) read more;
 *	}
 *	bytes after the body (the next pipelined request) start at p.
 *
 * Strict: chunk-size is 1*HEXDIG (at most 16 digits, leading zeros
 * included; no sign, "0x" or space before it); chunk extensions
 * (BWS ";name[=value]", RFC 9112 7.1.1) are skipped but bounded in total
 * (max_ext counts every byte between a chunk-size and its line end);
 * their bytes must be field-value characters (no CTL but HTAB), and
 * whitespace after the size must lead to a ';'; every chunk's data must be
 * followed by CRLF; the trailer section is parsed as header lines (token
 * ":" value, no obs-fold) and dropped, bounded (max_trailer counts every
 * byte of the trailer fields, their line ends included, not the final
 * empty line: 0 allows no trailer field); a bare LF line end is accepted as
 * in the request head, a bare CR is not.  A body larger than max_body is
 * -E2BIG, found from the chunk-size before its data arrives.
 */
#ifndef ZC_HTTP_CHUNKED_H
#define ZC_HTTP_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct http_chunked_limits {
	uint64_t max_body;	/* sum of the chunk sizes */
	size_t max_ext;		/* bytes of chunk extensions, all chunks */
	size_t max_trailer;	/* bytes of the trailer section */
};

struct http_chunked {
	struct http_chunked_limits lim;
	int state;		/* private; a negative errno once broken */
	uint64_t chunk_left;	/* data bytes left in the current chunk */
	uint64_t body;		/* data bytes so far */
	size_t ext;		/* extension bytes so far */
	size_t trailer;		/* trailer bytes so far */
	unsigned digits;	/* hex digits of the current size */
};

void http_chunked_init(struct http_chunked *d,
		       const struct http_chunked_limits *lim);
/*
 * Consume a prefix of buf[0..len).  Returns the bytes consumed (0 only
 * for len 0 or a finished body), -EPROTO for malformed framing, -E2BIG
 * past max_body, max_ext or max_trailer.  On success *data_off and
 * *data_len give the body data inside the consumed prefix (*data_len may
 * be 0).  A call stops before a second span of data: it consumes framing,
 * at most one span, and the framing after it up to the next chunk's data
 * (or the end of buf, or the end of the body).  The body is complete when
 * http_chunked_done(): the bytes after the last one consumed are no longer
 * the body's.  Never reads outside buf[0..len).  Errors are final: every
 * later call returns the same one (and *data_len 0); data reported by
 * earlier calls was the body's, whatever the error.  The data, the total
 * consumed and the result never depend on how the body is cut into
 * segments; only the slicing of the data into spans does.
 */
ssize_t http_chunked_step(struct http_chunked *d, const char *buf,
			  size_t len, size_t *data_off, size_t *data_len);
bool http_chunked_done(const struct http_chunked *d);

#endif /* ZC_HTTP_CHUNKED_H */
