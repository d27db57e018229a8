/*
 * mime.c - extension -> Content-Type.  A sorted table searched with
 * bsearch: small, fixed, and no allocation.  The list follows the common
 * subset of nginx's mime.types.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mime.h"

struct mime {
	const char *ext;
	const char *type;
};

/* Sorted by extension (lower case, strcmp order). */
static const struct mime table[] = {
	{ "7z", "application/x-7z-compressed" },
	{ "avif", "image/avif" },
	{ "bin", "application/octet-stream" },
	{ "bmp", "image/bmp" },
	{ "css", "text/css; charset=utf-8" },
	{ "csv", "text/csv; charset=utf-8" },
	{ "gif", "image/gif" },
	{ "gz", "application/gzip" },
	{ "htm", "text/html; charset=utf-8" },
	{ "html", "text/html; charset=utf-8" },
	{ "ico", "image/x-icon" },
	{ "jpeg", "image/jpeg" },
	{ "jpg", "image/jpeg" },
	{ "js", "text/javascript; charset=utf-8" },
	{ "json", "application/json" },
	{ "m4a", "audio/mp4" },
	{ "md", "text/markdown; charset=utf-8" },
	{ "mjs", "text/javascript; charset=utf-8" },
	{ "mp3", "audio/mpeg" },
	{ "mp4", "video/mp4" },
	{ "oga", "audio/ogg" },
	{ "ogg", "audio/ogg" },
	{ "ogv", "video/ogg" },
	{ "otf", "font/otf" },
	{ "pdf", "application/pdf" },
	{ "png", "image/png" },
	{ "svg", "image/svg+xml" },
	{ "tar", "application/x-tar" },
	{ "tgz", "application/gzip" },
	{ "ttf", "font/ttf" },
	{ "txt", "text/plain; charset=utf-8" },
	{ "wasm", "application/wasm" },
	{ "wav", "audio/wav" },
	{ "webm", "video/webm" },
	{ "webmanifest", "application/manifest+json" },
	{ "webp", "image/webp" },
	{ "woff", "font/woff" },
	{ "woff2", "font/woff2" },
	{ "xhtml", "application/xhtml+xml" },
	{ "xml", "application/xml" },
	{ "zip", "application/zip" },
};

static int cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct mime *)elem)->ext);
}

const char *mime_type(const char *name, size_t len)
{
	char ext[16];
	const struct mime *m;
	size_t i = len, n;

	while (i > 0 && name[i - 1] != '.' && name[i - 1] != '/')
		i--;
	if (i == 0 || name[i - 1] != '.')
		return "application/octet-stream";
	n = len - i;
	if (n == 0 || n >= sizeof(ext))
		return "application/octet-stream";
	for (size_t j = 0; j < n; j++) {
		char c = name[i + j];

		ext[j] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
	}
	ext[n] = 0;
	m = bsearch(ext, table, sizeof(table) / sizeof(table[0]),
		    sizeof(table[0]), cmp);
	return m ? m->type : "application/octet-stream";
}
