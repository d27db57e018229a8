/*
 * static.c - answering GET and HEAD from the document root.
 *
 * The response is an aggregate: one small head buffer, then the body as a
 * file extent.  iol_write turns the extent into sendfile, so the file's
 * bytes go from the page cache to the socket without passing through user
 * space.
 *
 * Path safety is layered: uri_normalize_path() removes dot-segments and
 * refuses anything that climbs above the root; then the kernel resolves the
 * name with openat2(RESOLVE_BENEATH), which also refuses symlinks (and
 * "magic" /proc links) that lead outside the root, without a check-then-use
 * race.  --follow-symlinks-outside turns the second check off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "http_parser.h"
#include "cache.h"
#include "respond.h"
#include "uri.h"
#include "zchttpd.h"

#define PATH_MAX_LEN 4096

static int status_for_errno(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return 404;
	case EACCES:
	case EPERM:
	case EXDEV:	/* RESOLVE_BENEATH: would leave the root */
	case ELOOP:
		return 403;
	case ENAMETOOLONG:
		return 414;
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return 503;
	default:
		return 500;
	}
}

/* Open `rel` (relative, normalized) below the root; -errno on failure. */
static int open_beneath(const struct worker *w, int dirfd, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (w->cfg->follow_symlinks_outside)
		how.resolve = 0;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* Does the If-None-Match list contain our ETag (weak comparison)? */
static bool etag_matches(const struct http_str *inm, const char *etag)
{
	size_t elen = strlen(etag);
	const char *p = inm->p, *end = inm->p + inm->len;

	while (p < end) {
		const char *q;

		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		if (p < end && *p == '*')
			return true;
		if (end - p >= 2 && p[0] == 'W' && p[1] == '/')
			p += 2;
		q = p;
		while (q < end && *q != ',')
			q++;
		while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
			q--;
		if ((size_t)(q - p) == elen && memcmp(p, etag, elen) == 0)
			return true;
		p = q;
		while (p < end && *p != ',')
			p++;
	}
	return false;
}

static bool not_modified(const struct http_request *req, const char *etag,
			 int64_t mtime)
{
	int64_t since;

	/* RFC 9110 13.2.2: If-None-Match wins over If-Modified-Since. */
	if (req->if_none_match.p)
		return etag_matches(&req->if_none_match, etag);
	if (req->if_modified_since.p &&
	    http_date_parse(req->if_modified_since.p,
			    req->if_modified_since.len, &since) == 0)
		return mtime <= since;
	return false;
}

/* If-Range: the range applies only if the validator is still current. */
static bool range_applies(const struct http_request *req, const char *etag,
			  const char *lastmod)
{
	const struct http_header *h = http_find_header(req, "If-Range");

	if (!h)
		return true;
	return (h->value.len == strlen(etag) &&
		memcmp(h->value.p, etag, h->value.len) == 0) ||
	       (h->value.len == strlen(lastmod) &&
		memcmp(h->value.p, lastmod, h->value.len) == 0);
}

/* 301 to the same path with a slash (and the query, if any). */
static int redirect_slash(struct request_ctx *rc, zc_agg *out,
			  const struct uri_path *up)
{
	const struct http_request *req = rc->req;
	const char *p = req->path.p;
	size_t plen = up->query ? (size_t)(up->query - 1 - p) : req->path.len;
	char loc[PATH_MAX_LEN + 64];
	int n;

	/* Strip a fragment if any (never valid, but harmless). */
	for (size_t i = 0; i < plen; i++)
		if (p[i] == '#')
			plen = i;
	if (plen == 0) {
		p = "/";
		plen = 1;
	}
	n = snprintf(loc, sizeof(loc), "Location: %.*s/%s%.*s\r\n", (int)plen,
		     p, up->query ? "?" : "", up->query ? (int)up->query_len : 0,
		     up->query ? up->query : "");
	if (n < 0 || (size_t)n >= sizeof(loc))
		return 414;
	rc->status = 301;
	return resp_error(out, 301, rc->head, rc->keep_alive, loc) ? 500 : 0;
}

/* Build the response for a cached (or private) entry.  The body is the
 * entry's buffer for small files, a file extent otherwise. */
static int serve_entry(struct request_ctx *rc, zc_agg *out,
		       struct cache_entry *e)
{
	const struct http_request *req = rc->req;
	uint64_t start = 0, len = (uint64_t)e->v.size;
	struct resp_head h;
	int status = 200, err;

	if (not_modified(req, e->etag, e->v.mtime_ns / 1000000000)) {
		resp_begin(&h, 304);
		resp_add(&h, "ETag", e->etag);
		resp_add(&h, "Last-Modified", e->lastmod);
		resp_end(&h, rc->keep_alive);
		rc->status = 304;
		return h.overflow ? 500 :
		       zc_agg_append_bytes(out, NULL, h.buf, h.len) ? 503 : 0;
	}
	if (req->range.p && range_applies(req, e->etag, e->lastmod)) {
		switch (http_range_parse(req->range.p, req->range.len,
					 (uint64_t)e->v.size, &start, &len)) {
		case HTTP_RANGE_OK:
			status = 206;
			break;
		case HTTP_RANGE_UNSATISFIABLE: {
			char cr[64];

			snprintf(cr, sizeof(cr), "Content-Range: bytes */%llu\r\n",
				 (unsigned long long)e->v.size);
			rc->status = 416;
			return resp_error(out, 416, rc->head, rc->keep_alive,
					  cr) ? 500 : 0;
		}
		case HTTP_RANGE_IGNORE:
			start = 0;
			len = (uint64_t)e->v.size;
			break;
		}
	}
	resp_begin(&h, status);
	resp_add(&h, "Content-Type", e->mime);
	resp_addf(&h, "Content-Length", "%llu", (unsigned long long)len);
	resp_add(&h, "Last-Modified", e->lastmod);
	resp_add(&h, "ETag", e->etag);
	resp_add(&h, "Accept-Ranges", "bytes");
	if (status == 206)
		resp_addf(&h, "Content-Range", "bytes %llu-%llu/%llu",
			  (unsigned long long)start,
			  (unsigned long long)(start + len - 1),
			  (unsigned long long)e->v.size);
	resp_end(&h, rc->keep_alive);
	if (h.overflow)
		return 500;
	err = zc_agg_append_bytes(out, NULL, h.buf, h.len);
	if (!err && !rc->head && len) {
		err = e->body ? zc_agg_append_buf(out, e->body, start, len)
			      : zc_agg_append_file(out, e->file, start, len);
		rc->entry = e;	/* the response uses it: pin while sent */
	}
	if (err)
		return 503;
	rc->status = status;
	rc->body_bytes = rc->head ? 0 : len;
	return 0;
}

/* Open the file a request names (normalized `path`), following a directory
 * to its index.html; fills fs_path.  Returns an fd or a negative status. */
static int open_target(struct worker *w, struct request_ctx *rc, zc_agg *out,
		       const char *path, const struct uri_path *up,
		       char *fs_path, size_t fs_size)
{
	struct stat st;
	int fd, dfd, err;

	fd = open_beneath(w, w->rootfd, up->len ? path : ".");
	if (fd < 0)
		return -status_for_errno(-fd);
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return -status_for_errno(err);
	}
	if (S_ISDIR(st.st_mode)) {
		if (!up->trailing_slash) {
			close(fd);
			err = redirect_slash(rc, out, up);
			return err ? -err : -301;
		}
		dfd = fd;
		fd = open_beneath(w, dfd, "index.html");
		close(dfd);
		if (fd < 0)	/* no listing of directories */
			return fd == -ENOENT ? -403 : -status_for_errno(-fd);
		if (fstat(fd, &st) < 0) {
			err = errno;
			close(fd);
			return -status_for_errno(err);
		}
		snprintf(fs_path, fs_size, "%s%sindex.html", path,
			 up->len ? "/" : "");
	} else if (up->trailing_slash) {
		/* "/file.txt/" names no directory: 404, as nginx says. */
		close(fd);
		return -404;
	} else {
		snprintf(fs_path, fs_size, "%s", path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -403;
	}
	return fd;
}

int static_serve(struct worker *w, struct request_ctx *rc, zc_agg *out)
{
	const struct http_request *req = rc->req;
	char path[PATH_MAX_LEN], key[PATH_MAX_LEN + 2];
	char fs_path[PATH_MAX_LEN + 16];
	uint64_t now = ev_now_ms(w->loop);
	struct cache_entry *e;
	struct uri_path up;
	enum uri_error ue;
	int fd, err;

	ue = uri_normalize_path(req->path.p, req->path.len, path, sizeof(path),
				&up);
	if (ue != URI_OK)
		return (int)ue;
	/* The key keeps the trailing slash: "/dir" redirects, "/dir/" is
	 * the index. */
	snprintf(key, sizeof(key), "/%s%s", path,
		 up.trailing_slash && up.len ? "/" : "");
	e = cache_lookup(w->cache, key, now);
	if (!e) {
		fd = open_target(w, rc, out, path, &up, fs_path,
				 sizeof(fs_path));
		if (fd == -301)
			return 0;	/* the redirect is in out */
		if (fd < 0)
			return -fd;
		e = cache_get_file(w->cache, key, fs_path, fd, now);
		close(fd);
		if (!e)
			return 503;
	}
	err = serve_entry(rc, out, e);
	cache_put(w->cache, e);	/* rc->entry is pinned by the caller */
	return err;
}
