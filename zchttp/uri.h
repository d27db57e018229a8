/*
 * uri.h - request-target path -> safe relative filesystem path.
 *
 * uri_normalize_path() turns the path part of a request-target (origin-form
 * "/a/b%20c/../d?x=1", or the part after the authority of an absolute-form
 * target) into a relative path below the document root ("a/d"), which the
 * server then opens with openat(root_fd, ...).  It allocates nothing: the
 * result is written into a caller buffer.
 *
 * What it does, in order:
 *   1. Splits off the query ("?..." up to any '#'; returned raw, not decoded)
 *      and drops a fragment ("#...": never valid in a request-target, but
 *      harmless to ignore).  An empty path means "/" (absolute-form
 *      "http://host" and "http://host?q" have one).
 *   2. Requires the path to start with '/' (else 400: "*", "a/b").
 *   3. Percent-decodes each segment.  A '%' not followed by two hex digits
 *      is 400.  Decoding happens BEFORE dot-segment removal, so "%2e%2e" is
 *      "..": the way it is spelled cannot smuggle a traversal past step 5.
 *      Decoding happens exactly once: "%252e" is the literal name "%2e".
 *   4. Rejects, raw or decoded, NUL (%00) and every other control character
 *      (0x01-0x1F, 0x7F): no file name we serve needs them and they break
 *      logs and C strings.  400.
 *      Rejects an encoded slash (%2F / %2f) inside a segment: 400.  nginx
 *      decodes it into a separator; Apache rejects it by default
 *      (AllowEncodedSlashes Off).  Rejecting is the only reading that
 *      cannot disagree with a proxy or a CGI about where segments end.
 *      Backslash ('\' or %5C) is an ordinary byte on Linux file systems and
 *      is kept as one (it is not a separator here; documented, not a bug).
 *   5. Resolves "." and ".." segments as RFC 3986 5.2.4 does, and collapses
 *      runs of '/' ("//etc" is "etc").  A ".." that would climb above the
 *      root is 400, as nginx answers: a client that sends one is malformed
 *      or hostile, not asking for a resource that might exist (403 would
 *      suggest there is something there).
 *   6. Writes the result without a leading '/', NUL-terminated: "" is the
 *      root itself, "a/b" a path below it.  It never contains a "." or ".."
 *      segment, an empty segment, or a byte < 0x20 or 0x7F.
 *   7. trailing_slash tells whether the resolved path ends in a separator:
 *      "/", "/dir/", "/dir/." and "/dir/x/.." all do.  The server needs it
 *      to answer a directory without one with a 301 to the slashed URL.
 *
 * Not here, on purpose:
 *   - Symlinks.  The normalized path can still name a symlink that points
 *     out of the root; only the kernel can resolve that race-free, so the
 *     server opens with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
 *     (or an equivalent component walk) unless symlinks are allowed.
 *   - Policy on which names may be served (dot files, index.html).
 */
#ifndef ZC_URI_H
#define ZC_URI_H

#include <stdbool.h>
#include <stddef.h>

/* Errors ARE the status codes to answer with. */
enum uri_error {
	URI_OK = 0,
	URI_E_BAD = 400,	/* malformed, control chars, escape above root */
	URI_E_TOO_LONG = 414,	/* the path does not fit the output buffer */
};

struct uri_path {
	size_t len;		/* bytes of the path in out, without the NUL */
	bool trailing_slash;	/* resolved path ends in '/' (see above) */
	const char *query;	/* after '?', up to '#' or the end; NULL: none */
	size_t query_len;
	const char *why;	/* on error: static reason for the error log */
};

/*
 * Normalize target[0..n) into out[0..outsz) (see the top of this file).
 * 414 when out cannot hold the path being resolved plus its NUL at any
 * step (so a path may be 414 even if ".." would later shorten it).
 * On error out holds an unspecified, NUL-terminated string (if outsz > 0).
 */
enum uri_error uri_normalize_path(const char *target, size_t n, char *out,
				  size_t outsz, struct uri_path *res);

#endif /* ZC_URI_H */
