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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "http_parser.h"
#include "cache.h"
#include "diskio.h"
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
	if (status == 200 && e->head_len) {
		resp_add_raw(&h, e->head, e->head_len);
	} else {
		resp_add(&h, "Content-Type", e->mime);
		resp_addf(&h, "Content-Length", "%llu",
			  (unsigned long long)len);
		resp_add(&h, "Last-Modified", e->lastmod);
		resp_add(&h, "ETag", e->etag);
		resp_add(&h, "Accept-Ranges", "bytes");
	}
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
 * to its index.html; fills fs_path.  Returns an fd, or minus the status to
 * answer (-301: a directory named without its slash).  Blocking: runs on a
 * helper thread when there are some; touches only w->cfg and w->rootfd. */
static int open_target(const struct worker *w, const char *path,
		       size_t path_len, bool trailing_slash, char *fs_path,
		       size_t fs_size)
{
	struct stat st;
	int fd, dfd, err;

	fd = open_beneath(w, w->rootfd, path_len ? path : ".");
	if (fd < 0)
		return -status_for_errno(-fd);
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return -status_for_errno(err);
	}
	if (S_ISDIR(st.st_mode)) {
		if (!trailing_slash) {
			close(fd);
			return -301;
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
			 path_len ? "/" : "");
	} else if (trailing_slash) {
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

/* Readahead for files sent from the page cache: done here, on a helper
 * thread, the loop's sendfile later finds the pages in memory. */
#define READAHEAD_MAX ((size_t)4 << 20)

/* Everything a cache miss needs, done off the loop (see diskio.h). */
struct static_job {
	struct disk_job dj;		/* first: diskio hands this back */
	struct worker *w;
	uint64_t now;
	bool trailing_slash;
	size_t path_len;
	int status;			/* 0: entry ready; else the status */
	struct cache_entry *entry;	/* prepared, not admitted */
	char key[PATH_MAX_LEN + 2];
	char path[PATH_MAX_LEN];
};

/* Open and prepare: the blocking half of a miss. */
static void prepare(struct static_job *j)
{
	char fs_path[PATH_MAX_LEN + 16];
	int fd = open_target(j->w, j->path, j->path_len, j->trailing_slash,
			     fs_path, sizeof(fs_path));
	struct stat st;

	if (fd < 0) {
		j->status = -fd;
		return;
	}
	if (j->w->diskio && fstat(fd, &st) == 0 &&
	    (uint64_t)st.st_size > j->w->cfg->cache_small_max)
		readahead(fd, 0, (size_t)st.st_size < READAHEAD_MAX ?
				 (size_t)st.st_size : READAHEAD_MAX);
	j->entry = cache_prepare(j->w->cache, j->key, fs_path, fd, j->now);
	close(fd);
	if (!j->entry)
		j->status = 503;
}

static void job_work(struct disk_job *dj)
{
	prepare((struct static_job *)dj);
}

void static_job_release(struct disk_job *dj)
{
	struct static_job *j = (struct static_job *)dj;

	if (j->entry)
		cache_put(j->w->cache, j->entry);
	free(j);
}

int static_serve(struct worker *w, struct request_ctx *rc, zc_agg *out)
{
	const struct http_request *req = rc->req;
	char path[PATH_MAX_LEN], key[PATH_MAX_LEN + 2];
	uint64_t now = ev_now_ms(w->loop);
	struct static_job *j = (struct static_job *)rc->done, local;
	struct cache_entry *e;
	struct uri_path up;
	enum uri_error ue;
	int err;

	ue = uri_normalize_path(req->path.p, req->path.len, path, sizeof(path),
				&up);
	if (ue != URI_OK)
		return (int)ue;
	/* The key keeps the trailing slash: "/dir" redirects, "/dir/" is
	 * the index. */
	snprintf(key, sizeof(key), "/%s%s", path,
		 up.trailing_slash && up.len ? "/" : "");
	e = cache_lookup(w->cache, key, now);
	if (!e && !(j && strcmp(j->key, key) == 0)) {
		/* A miss: prepare off the loop if we have helpers. */
		j = w->diskio ? calloc(1, sizeof(*j)) : &local;
		if (!j)
			return 503;
		memset(j, 0, sizeof(*j));
		j->w = w;
		j->now = now;
		j->trailing_slash = up.trailing_slash;
		j->path_len = up.len;
		memcpy(j->key, key, sizeof(key));
		memcpy(j->path, path, up.len + 1);
		if (w->diskio) {
			j->dj.work = job_work;
			rc->pending = &j->dj;
			diskio_submit(w->diskio, &j->dj);
			return 0;
		}
		prepare(j);
	}
	if (!e) {
		/* The prepared result for this request (sync or async). */
		if (j->status == 301)
			return redirect_slash(rc, out, &up);
		if (j->status)
			return j->status;
		e = cache_admit(w->cache, j->entry);
		j->entry = NULL;
	}
	err = serve_entry(rc, out, e);
	cache_put(w->cache, e);	/* rc->entry is pinned by the caller */
	return err;
}
