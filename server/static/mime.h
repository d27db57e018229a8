/* mime.h - Content-Type for a file name, from a fixed table. */
#ifndef ZC_MIME_H
#define ZC_MIME_H

#include <stddef.h>

/* The type for the file name's extension (case-insensitive), or
 * "application/octet-stream" when the extension is unknown.  Text types
 * carry "; charset=utf-8". */
const char *mime_type(const char *name, size_t len);

#endif
