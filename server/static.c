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
#include "mime.h"
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

static int send_file(struct request_ctx *rc, zc_agg *out, int fd,
		     const char *name, size_t name_len)
{
	const struct http_request *req = rc->req;
	char etag[64], lastmod[HTTP_DATE_LEN + 1];
	uint64_t start = 0, len;
	struct zc_file_version v;
	struct resp_head h;
	zc_file *file;
	int status = 200, err;

	err = zc_file_from_fd(fd, &file);
	if (err)
		return status_for_errno(-err);
	zc_file_version(file, &v);
	len = (uint64_t)v.size;
	snprintf(etag, sizeof(etag), "\"%llx-%llx\"",
		 (unsigned long long)v.mtime_ns, (unsigned long long)v.size);
	http_date_format(v.mtime_ns / 1000000000, lastmod);

	if (not_modified(req, etag, v.mtime_ns / 1000000000)) {
		resp_begin(&h, 304);
		resp_add(&h, "ETag", etag);
		resp_add(&h, "Last-Modified", lastmod);
		resp_end(&h, rc->keep_alive);
		rc->status = 304;
		zc_file_release(file);
		return h.overflow ? 500 :
		       zc_agg_append_bytes(out, NULL, h.buf, h.len) ? 503 : 0;
	}
	if (req->range.p && range_applies(req, etag, lastmod)) {
		switch (http_range_parse(req->range.p, req->range.len,
					 (uint64_t)v.size, &start, &len)) {
		case HTTP_RANGE_OK:
			status = 206;
			break;
		case HTTP_RANGE_UNSATISFIABLE: {
			char cr[64];

			snprintf(cr, sizeof(cr), "Content-Range: bytes */%llu\r\n",
				 (unsigned long long)v.size);
			zc_file_release(file);
			rc->status = 416;
			return resp_error(out, 416, rc->head, rc->keep_alive,
					  cr) ? 500 : 0;
		}
		case HTTP_RANGE_IGNORE:
			start = 0;
			len = (uint64_t)v.size;
			break;
		}
	}
	resp_begin(&h, status);
	resp_add(&h, "Content-Type", mime_type(name, name_len));
	resp_addf(&h, "Content-Length", "%llu", (unsigned long long)len);
	resp_add(&h, "Last-Modified", lastmod);
	resp_add(&h, "ETag", etag);
	resp_add(&h, "Accept-Ranges", "bytes");
	if (status == 206)
		resp_addf(&h, "Content-Range", "bytes %llu-%llu/%llu",
			  (unsigned long long)start,
			  (unsigned long long)(start + len - 1),
			  (unsigned long long)v.size);
	resp_end(&h, rc->keep_alive);
	if (h.overflow) {
		zc_file_release(file);
		return 500;
	}
	err = zc_agg_append_bytes(out, NULL, h.buf, h.len);
	if (!err && !rc->head && len)
		err = zc_agg_append_file(out, file, start, (size_t)len);
	zc_file_release(file);	/* the aggregate holds its own reference */
	if (err)
		return 503;
	rc->status = status;
	rc->body_bytes = rc->head ? 0 : len;
	return 0;
}

int static_serve(struct worker *w, struct request_ctx *rc, zc_agg *out)
{
	const struct http_request *req = rc->req;
	char path[PATH_MAX_LEN];
	struct uri_path up;
	struct stat st;
	enum uri_error ue;
	const char *name;
	int fd, err;

	ue = uri_normalize_path(req->path.p, req->path.len, path, sizeof(path),
				&up);
	if (ue != URI_OK)
		return (int)ue;
	fd = open_beneath(w, w->rootfd, up.len ? path : ".");
	if (fd < 0)
		return status_for_errno(-fd);
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return status_for_errno(err);
	}
	name = path;
	if (!S_ISDIR(st.st_mode) && up.trailing_slash) {
		/* "/file.txt/" names no directory: 404, as nginx says. */
		close(fd);
		return 404;
	}
	if (S_ISDIR(st.st_mode)) {
		int dfd = fd;

		if (!up.trailing_slash) {
			close(dfd);
			return redirect_slash(rc, out, &up);
		}
		fd = open_beneath(w, dfd, "index.html");
		close(dfd);
		if (fd < 0)	/* no listing of directories */
			return fd == -ENOENT ? 403 : status_for_errno(-fd);
		if (fstat(fd, &st) < 0) {
			err = errno;
			close(fd);
			return status_for_errno(err);
		}
		name = "index.html";
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return 403;
	}
	err = send_file(rc, out, fd, name, strlen(name));
	close(fd);
	return err;
}
