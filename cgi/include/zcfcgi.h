/*
 * zcfcgi.h - the native API of zcstack's FastCGI application library.
 *
 * The library is libfcgi.so.0 with libfcgi's API (fcgiapp.h,
 * fcgi_stdio.h); these calls add what libfcgi cannot express: output
 * handed over by reference.  On the zero-copy transport (a libzc channel
 * to zchttpd, docs/fastcgi.md) the content leaves as descriptors of pool
 * buffers and file extents -- the application never copies it and the
 * server sends it with sendfile.  On the standard transport the same
 * calls write the bytes (from the application's memory, or with sendfile
 * from the file), so a program need not know which transport a request
 * came on.  Everything written to a stream, by FCGX_PutStr and by these
 * calls, leaves in the order it was written.
 *
 * All calls return 0, or -1 (EOF) with FCGX_GetError(out) set as for a
 * failed FCGX_PutStr -- except for bad arguments, which return -1 with
 * errno EINVAL and leave the stream alone.
 *
 * A program that should also run on Debian's libfcgi declares the calls
 * weak and falls back when they resolve to NULL:
 *
 *	#define ZCFCGI_WEAK
 *	#include "zcfcgi.h"
 *	...
 *	if (zcfcgi_put_cached)
 *		zcfcgi_put_cached(out, &doc, page, len);
 *	else
 *		FCGX_PutStr(page, len, out);
 *
 * (cgi/apps/ do exactly this: one binary, either library.)
 */
#ifndef ZCFCGI_H
#define ZCFCGI_H

#include <stddef.h>
#include <sys/types.h>

#include <fcgiapp.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ZCFCGI_WEAK
#define ZCFCGI_DECL __attribute__((weak))
#else
#define ZCFCGI_DECL
#endif

/* libzc's aggregate (zc.h); only zcfcgi_put_agg needs it. */
typedef struct zc_agg zc_agg;

/* A document the application promises never to change while it lives:
 * its bytes are published into a pool buffer the first time it goes out
 * on the zero-copy transport, and that same buffer goes to every request
 * after (the server may hold several references at once).  Thread-safe. */
typedef struct zcfcgi_doc zcfcgi_doc;

/* Write the document *doc.  If *doc is NULL it is created first from
 * data/len (the memory stays the application's: it must not change or go
 * away while the document lives); afterwards data and len are ignored.
 * Concurrent first calls with the same *doc create it once. */
ZCFCGI_DECL int zcfcgi_put_cached(FCGX_Stream *out, zcfcgi_doc **doc,
				  const void *data, size_t len);
/* Free a document (a buffer still being sent lives on until it is back). */
ZCFCGI_DECL void zcfcgi_doc_free(zcfcgi_doc *doc);

/* Write len bytes of the regular file fd from offset off, by extent: the
 * application never reads them.  The file must have them now (-1, EINVAL
 * otherwise) and should not change before the response has left: a file
 * that changes is caught (the response is cut short), not sent torn.  fd
 * stays the caller's (the library keeps its own duplicate while needed). */
ZCFCGI_DECL int zcfcgi_put_file(FCGX_Stream *out, int fd, off_t off,
				size_t len);

/* Write the content of a libzc aggregate (buffer slices and file
 * extents); agg is left unchanged (its slices are shared, not copied). */
ZCFCGI_DECL int zcfcgi_put_agg(FCGX_Stream *out, zc_agg *agg);

/* The transport of a request's stream: 1 the zero-copy transport, 0 the
 * standard one, -1 not a request stream. */
ZCFCGI_DECL int zcfcgi_transport(FCGX_Stream *stream);

#ifdef __cplusplus
}
#endif
#endif /* ZCFCGI_H */
