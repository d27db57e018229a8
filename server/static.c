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
 * race.  Without openat2 (ENOSYS) the path is walked a component at a
 * time with O_NOFOLLOW, which refuses every symlink.
 * --follow-symlinks-outside turns the second check off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "http_accept.h"
#include "http_parser.h"
#include "cache.h"
#include "diskio.h"
#include "handlers.h"
#include "respond.h"
#include "uri.h"
#include "zchttpd.h"

#define PATH_MAX_LEN ZH_PATH_MAX

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

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/*
 * Where openat2 is missing (kernels before 5.6, seccomp filters that do not
 * know it, valgrind), walk the normalized path one component at a time with
 * O_NOFOLLOW: no symlink is followed at all, which is stricter than
 * RESOLVE_BENEATH (a link inside the root is refused too) but never looser.
 */
static int open_nofollow_walk(int dirfd, const char *rel)
{
	char comp[NAME_MAX + 1];
	int dfd = dirfd, fd;

	for (;;) {
		const char *slash = strchr(rel, '/');
		size_t n = slash ? (size_t)(slash - rel) : strlen(rel);

		if (n > NAME_MAX) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		if (!slash) {
			fd = openat(dfd, comp, OPEN_FLAGS | O_NOFOLLOW);
			fd = fd < 0 ? -errno : fd;
			break;
		}
		fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0) {
			struct stat st;

			/* A symlink fails with ENOTDIR here; it is a refusal
			 * (403) as with openat2, not a missing file (404). */
			fd = -errno;
			if (fd == -ENOTDIR &&
			    fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				fd = -ELOOP;
			break;
		}
		if (dfd != dirfd)
			close(dfd);
		dfd = fd;
		rel = slash + 1;
	}
	if (dfd != dirfd)
		close(dfd);
	return fd;
}

/* Open `rel` (relative, normalized) below the root; -errno on failure. */
static int open_beneath(const struct zh_worker *w, int dirfd, const char *rel)
{
	static bool no_openat2;
	struct open_how how = {
		.flags = OPEN_FLAGS,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (w->cfg->follow_symlinks_outside) {
		fd = openat(dirfd, rel, OPEN_FLAGS);
		return fd < 0 ? -errno : fd;
	}
	if (no_openat2)
		return open_nofollow_walk(dirfd, rel);
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	if (errno != ENOSYS)
		return -errno;
	no_openat2 = true;
	return open_nofollow_walk(dirfd, rel);
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
static int redirect_slash(struct zh_request *r, const struct uri_path *up)
{
	const struct http_request *req = &r->http;
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
	r->status = 301;
	return resp_error(request_out(r), 301, r->head_only, r->keep_alive,
			  loc) ? 500 : 0;
}

/* Build the response for a cached (or private) entry.  The body is the
 * entry's buffer for small files, a file extent otherwise. */
static int serve_entry(struct zh_request *r, struct cache_entry *e)
{
	const struct http_request *req = &r->http;
	zc_agg *out = request_out(r);
	uint64_t start = 0, len = (uint64_t)e->v.size;
	struct resp_head h;
	int status = 200, err;

	request_head_begin(r, &h);
	if (not_modified(req, e->etag, e->v.mtime_ns / 1000000000)) {
		resp_begin(&h, 304);
		resp_add(&h, "ETag", e->etag);
		resp_add(&h, "Last-Modified", e->lastmod);
		if (e->coding || e->variants)	/* as the 200 would */
			resp_add(&h, "Vary", "Accept-Encoding");
		resp_end(&h, r->keep_alive);
		r->status = 304;
		return request_head_end(r, &h);
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
			r->status = 416;
			return resp_error(out, 416, r->head_only, r->keep_alive,
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
		if (e->coding)
			resp_add(&h, "Content-Encoding",
				 cache_codings[e->coding].name);
	}
	/* Caches must key on Accept-Encoding wherever a variant exists. */
	if (e->coding || e->variants)
		resp_add(&h, "Vary", "Accept-Encoding");
	if (status == 206)
		resp_addf(&h, "Content-Range", "bytes %llu-%llu/%llu",
			  (unsigned long long)start,
			  (unsigned long long)(start + len - 1),
			  (unsigned long long)e->v.size);
	resp_end(&h, r->keep_alive);
	err = request_head_end(r, &h);
	if (err)
		return err;
	if (!r->head_only && len) {
		err = e->body ? zc_agg_append_buf(out, e->body, start, len)
			      : zc_agg_append_file(out, e->file, start, len);
		/* The response uses it: the request keeps our reference
		 * (request.h) until it is pinned for the send. */
		r->entry = e;
	}
	if (err)
		return 503;
	r->status = status;
	r->body_bytes = r->head_only ? 0 : len;
	return 0;
}

/* Open the file a request names (normalized `path`), following a directory
 * to its index.html, and fstat it (the one stat of a miss: the cache entry
 * takes both).  Fills fs_path.  Returns the fd, or -1 with *status set to
 * the status to answer (301: a directory named without its slash).
 * Blocking: runs on a helper thread when there are some; touches only
 * w->cfg and the site's root, rootfd. */
static int open_target(const struct zh_worker *w, int rootfd,
		       const char *path,
		       size_t path_len, bool trailing_slash, char *fs_path,
		       size_t fs_size, struct stat *st, int *status)
{
	int fd, dfd, err;

	fd = open_beneath(w, rootfd, path_len ? path : ".");
	if (fd < 0) {
		*status = status_for_errno(-fd);
		return -1;
	}
	if (fstat(fd, st) < 0)
		goto fail;
	if (S_ISDIR(st->st_mode)) {
		if (!trailing_slash) {
			close(fd);
			*status = 301;
			return -1;
		}
		dfd = fd;
		fd = open_beneath(w, dfd, "index.html");
		close(dfd);
		if (fd < 0) {
			/* No listing of directories. */
			*status = fd == -ENOENT ? 403 : status_for_errno(-fd);
			return -1;
		}
		if (fstat(fd, st) < 0)
			goto fail;
		snprintf(fs_path, fs_size, "%s%sindex.html", path,
			 path_len ? "/" : "");
	} else if (trailing_slash) {
		/* "/file.txt/" names no directory: 404, as nginx says. */
		close(fd);
		*status = 404;
		return -1;
	} else {
		snprintf(fs_path, fs_size, "%s", path);
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		*status = 403;
		return -1;
	}
	return fd;
fail:
	err = errno;
	close(fd);
	*status = status_for_errno(err);
	return -1;
}

/* Readahead for files sent from the page cache: done here, on a helper
 * thread, the loop's sendfile later finds the pages in memory. */
#define READAHEAD_MAX ((size_t)4 << 20)

/* A cache miss: everything it needs, kept while it waits (diskio.h). */
struct static_job {
	struct disk_job dj;		/* first: diskio hands this back */
	struct zh_request *r;		/* NULL: the request went away */
	struct zh_worker *w;
	/* The request's site (vhost.h), copied: the job outlives the
	 * request when the client goes away. */
	unsigned site;
	int rootfd;
	struct uri_path up;		/* its query points into the request
					 * head, which a waiting request keeps */
	uint64_t now;
	int status;			/* 0: entry ready; else the status */
	struct cache_entry *entry;	/* prepared, not admitted */
	/* Precompressed files (--precompressed): */
	uint8_t pref[CACHE_NCODINGS];	/* codings the client takes, best first */
	unsigned npref;
	struct cache_entry *ident;	/* the identity entry when it was a hit
					 * (a reference), to look next to */
	unsigned variants;		/* found next to the identity file */
	bool looked;			/* variants looked for in this job */
	struct cache_entry *ventry;	/* the variant prepared, not admitted */
	enum cache_coding vcoding;	/* the one tried (0: none) */
	char key[PATH_MAX_LEN + 2];
	char path[PATH_MAX_LEN];
};

/* The precompressed files next to fs_path, as a mask of 1 << coding:
 * regular files that open below the root like any request would. */
static unsigned find_variants(const struct zh_worker *w, int rootfd,
			      const char *fs_path)
{
	unsigned mask = 0;

	for (unsigned c = 1; c < CACHE_NCODINGS; c++) {
		char p[PATH_MAX_LEN + 32];
		struct stat st;
		int fd;

		if ((size_t)snprintf(p, sizeof(p), "%s%s", fs_path,
				     cache_codings[c].suffix) >= sizeof(p))
			continue;
		fd = open_beneath(w, rootfd, p);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			mask |= 1u << c;
		close(fd);
	}
	return mask;
}

/* The best coding the client takes among `variants` (0: identity). */
static enum cache_coding pick(const struct static_job *j, unsigned variants)
{
	for (unsigned i = 0; i < j->npref; i++)
		if (variants & (1u << j->pref[i]))
			return (enum cache_coding)j->pref[i];
	return CACHE_IDENTITY;
}

/* Open and prepare the variant of `fs_path` in `coding`; a file that is
 * gone or not regular any more leaves ventry NULL (identity is served). */
static void prepare_variant(struct static_job *j, const char *fs_path,
			    enum cache_coding coding)
{
	char p[PATH_MAX_LEN + 32], key[PATH_MAX_LEN + 16];
	struct stat st;
	int fd;

	j->vcoding = coding;
	if ((size_t)snprintf(p, sizeof(p), "%s%s", fs_path,
			     cache_codings[coding].suffix) >= sizeof(p) ||
	    (size_t)snprintf(key, sizeof(key), "%s%s", j->key,
			     cache_codings[coding].key) >= sizeof(key))
		return;
	fd = open_beneath(j->w, j->rootfd, p);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	j->ventry = cache_prepare(j->w->cache, j->site, key, j->rootfd, p, fd,
				  &st, j->now, coding, 0);
	if (!j->ventry)
		close(fd);
}

/* Open and prepare: the blocking half of a miss (of the file, or of its
 * precompressed variant next to a cached identity entry). */
static void prepare(struct static_job *j)
{
	char fs_path[PATH_MAX_LEN + 16];
	struct stat st;
	unsigned variants;
	int fd;

	if (j->ident) {
		/* Look again (new or deleted variants), then prepare the
		 * best one the client takes. */
		j->variants = find_variants(j->w, j->rootfd,
					    j->ident->fs_path);
		j->looked = true;
		if (pick(j, j->variants))
			prepare_variant(j, j->ident->fs_path,
					pick(j, j->variants));
		return;
	}
	fd = open_target(j->w, j->rootfd, j->path, j->up.len, j->up.trailing_slash,
			 fs_path, sizeof(fs_path), &st, &j->status);
	if (fd < 0)
		return;
	if (j->w->diskio && (uint64_t)st.st_size > j->w->cfg->cache_small_max)
		readahead(fd, 0, (size_t)st.st_size < READAHEAD_MAX ?
				 (size_t)st.st_size : READAHEAD_MAX);
	variants = j->w->cfg->precompressed ?
		   find_variants(j->w, j->rootfd, fs_path) : 0;
	/* The entry takes the descriptor and its stat. */
	j->entry = cache_prepare(j->w->cache, j->site, j->key, j->rootfd,
				 fs_path, fd, &st, j->now, CACHE_IDENTITY,
				 variants);
	if (!j->entry) {
		close(fd);
		j->status = 503;
		return;
	}
	if (pick(j, variants))
		prepare_variant(j, fs_path, pick(j, variants));
}

/* The loop half of a miss: admit what was prepared and answer with the
 * variant if there is one, else the identity. */
static int answer_prepared(struct zh_request *r, struct static_job *j)
{
	struct cache_entry *e = j->ident, *v = NULL, *serve;
	int err;

	if (j->status == 301)
		return redirect_slash(r, &j->up);
	if (j->status)
		return j->status;
	if (!e) {
		e = cache_admit(r->w->cache, j->entry);
		j->entry = NULL;
	} else {
		j->ident = NULL;	/* its reference is ours now */
	}
	if (j->looked) {
		e->variants = (uint8_t)j->variants;
		e->variants_checked_ms = j->now;
	}
	if (j->ventry) {
		v = cache_admit(r->w->cache, j->ventry);
		j->ventry = NULL;
	} else if (j->vcoding) {
		e->variants &= (uint8_t)~(1u << j->vcoding);	/* gone */
	}
	serve = v ? v : e;
	err = serve_entry(r, serve);
	if (r->entry != e)
		cache_put(r->w->cache, e);
	if (v && r->entry != v)
		cache_put(r->w->cache, v);
	return err;
}

static void job_free(struct static_job *j)
{
	cache_put(j->w->cache, j->entry);
	cache_put(j->w->cache, j->ventry);
	cache_put(j->w->cache, j->ident);
	free(j);
}

static void job_work(struct disk_job *dj)
{
	prepare((struct static_job *)dj);
}

/* On the loop, when the helper is done (or the worker stops). */
static void job_done(struct disk_job *dj)
{
	struct static_job *j = (struct static_job *)dj;

	if (j->r)
		request_finish(j->r, zh_status(answer_prepared(j->r, j)));
	job_free(j);
}

/* The connection goes away while its file is being opened: the helper
 * finishes anyway, and job_done frees what it made. */
static void job_abandon(struct zh_request *r)
{
	struct static_job *j = r->wait;

	j->r = NULL;
}

static const struct zh_handler static_handler = {
	.name = "static",
	.abort = job_abandon,
};

/* The codings the client takes that we could serve precompressed, best
 * first (brotli before gzip at equal q: smaller). */
static unsigned preferences(const struct zh_request *r, uint8_t *pref)
{
	const struct http_header *h;
	struct http_codings q;
	unsigned n = 0;

	if (!r->w->cfg->precompressed ||
	    !(h = http_find_header(&r->http, "Accept-Encoding")))
		return 0;
	http_accept_encoding(h->value.p, h->value.len, &q);
	if (q.br && q.br >= q.gzip)
		pref[n++] = CACHE_BR;
	if (q.gzip)
		pref[n++] = CACHE_GZIP;
	if (q.br && q.br < q.gzip)
		pref[n++] = CACHE_BR;
	return n;
}

/* The cached variant for identity entry e that this client takes best, if
 * it is cached (a reference), else NULL with *want the coding to load (0:
 * none, or time to look for variants again: *recheck). */
static struct cache_entry *cached_variant(struct zh_request *r,
					  const struct cache_entry *e,
					  const uint8_t *pref, unsigned npref,
					  const char *key, size_t klen,
					  bool *load)
{
	struct zh_worker *w = r->w;
	uint64_t now = ev_now_ms(w->loop);
	char vkey[PATH_MAX_LEN + 16];

	*load = false;
	if (!npref)
		return NULL;
	if (now - e->variants_checked_ms >= w->cfg->cache_ttl_ms) {
		*load = true;	/* new or deleted .br/.gz: look again */
		return NULL;
	}
	for (unsigned i = 0; i < npref; i++) {
		const struct cache_coding_info *ci = &cache_codings[pref[i]];
		struct cache_entry *v;

		if (!(e->variants & (1u << pref[i])))
			continue;
		if (klen + strlen(ci->key) + 1 > sizeof(vkey))
			return NULL;
		memcpy(vkey, key, klen);
		strcpy(vkey + klen, ci->key);
		v = cache_lookup(w->cache, r->vhost->index, vkey, now);
		if (!v)
			*load = true;
		return v;
	}
	return NULL;
}

zh_answer static_serve(struct zh_request *r)
{
	struct zh_worker *w = r->w;
	const struct uri_path *up = &r->up;
	char key[PATH_MAX_LEN + 2];
	struct static_job *j, local;
	struct cache_entry *e, *v = NULL;
	uint8_t pref[CACHE_NCODINGS];
	unsigned npref = preferences(r, pref);
	size_t klen = r->uri_len;
	bool load = false;
	int err;

	/* The key is the normalized path with its trailing slash: "/dir"
	 * redirects, "/dir/" is the index. */
	if (klen + 2 > sizeof(key))
		return zh_status(414);
	memcpy(key, r->uri, klen);
	if (up->trailing_slash && up->len)
		key[klen++] = '/';
	key[klen] = 0;
	e = cache_lookup(w->cache, r->vhost->index, key, ev_now_ms(w->loop));
	if (e)
		v = cached_variant(r, e, pref, npref, key, klen, &load);
	if (e && !load) {
		struct cache_entry *serve = v ? v : e;

		err = serve_entry(r, serve);
		if (r->entry != e)
			cache_put(w->cache, e);
		if (v && r->entry != v)
			cache_put(w->cache, v);
		return zh_status(err);
	}
	/* A miss (of the file, or of the variant this client takes):
	 * prepare off the loop if we have helpers. */
	j = w->diskio ? malloc(sizeof(*j)) : &local;
	if (!j) {
		cache_put(w->cache, e);
		return zh_status(503);
	}
	memset(j, 0, offsetof(struct static_job, key));
	j->r = r;
	j->w = w;
	j->site = r->vhost->index;
	j->rootfd = r->vhost->rootfd;
	j->up = *up;
	j->now = ev_now_ms(w->loop);
	j->ident = e;		/* our reference goes with it */
	memcpy(j->pref, pref, sizeof(pref));
	j->npref = npref;
	memcpy(j->key, key, klen + 1);
	memcpy(j->path, r->uri + 1, up->len);
	j->path[up->len] = 0;
	if (!w->diskio) {
		prepare(j);
		err = answer_prepared(r, j);
		cache_put(w->cache, j->entry);
		cache_put(w->cache, j->ventry);
		cache_put(w->cache, j->ident);
		return zh_status(err);
	}
	err = request_wait(r, &static_handler, j);
	if (err) {
		job_free(j);
		return zh_status(err);
	}
	j->dj.work = job_work;
	j->dj.done = job_done;
	diskio_submit(w->diskio, &j->dj);
	return ZH_WAITING;
}
