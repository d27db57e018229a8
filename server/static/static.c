/*
 * static.c - answering GET and HEAD from the document root, through the
 * unified cache (cache.h).
 *
 * The response is an aggregate: the head, then the body as the cache's
 * memory (small files asked for before) or a file extent, which iol_write
 * turns into sendfile, so the file's bytes go from the page cache to the
 * socket without passing through user space.
 *
 * What may block is done where it costs least (Flash's AMPED, with
 * today's kernel telling us what is in memory): a miss opens and stats its
 * file in line when the kernel can resolve the path from the dentry cache
 * (static_open.h), a large file is sent in line when its pages are all in
 * the page cache, and a body is copied into the cache in line when
 * preadv2(RWF_NOWAIT) finds it all there.  Only what would wait for the
 * disk goes to a helper thread (diskio.h), and the request resumes when
 * the helper is done.  Path safety: static_open.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_accept.h"
#include "http_parser.h"
#include "cache.h"
#include "diskio.h"
#include "errlog.h"
#include "h2.h"
#include "handlers.h"
#include "respond.h"
#include "static_open.h"
#include "uri.h"
#include "zchttpd.h"

#define PATH_MAX_LEN ZH_PATH_MAX

/* Readahead for files sent from the page cache: done on a helper thread,
 * so the loop's sendfile later finds the pages in memory. */
#define READAHEAD_MAX ((size_t)4 << 20)

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
	return resp_error_sized(request_out(r), 301, r->head_only,
				r->keep_alive, loc, &r->body_bytes) ? 500 : 0;
}


/* What a helper thread does for a request, and what the loop does next. */
enum job_op {
	J_MISS,		/* open the file (and its variants), then insert */
	J_OPEN,		/* open the file of a cached entry for this worker */
	J_LOAD,		/* copy a cached entry's body into memory */
};

struct static_job {
	struct disk_job dj;		/* first: diskio hands this back */
	struct zh_request *r;		/* NULL: the request went away */
	struct zh_worker *w;
	enum job_op op;
	/* The request's site (vhost.h), copied: the job outlives the
	 * request when the client goes away. */
	unsigned site;
	int rootfd;
	struct uri_path up;		/* its query points into the request
					 * head, which a waiting request keeps */
	uint64_t now;
	int status;			/* 0: done; else the status */
	/* J_OPEN, J_LOAD: the entry (a reference), the result. */
	struct cache_entry *e;
	int fd;				/* J_MISS, J_OPEN: opened, or -1 */
	struct stat st;
	int err;			/* J_LOAD's fill */
	/* J_MISS, precompressed files (--precompressed): */
	uint8_t pref[CACHE_NCODINGS];	/* codings the client takes, best first */
	unsigned npref;
	struct cache_entry *ident;	/* the identity entry when it was a hit
					 * (a reference), to look next to */
	unsigned variants;		/* found next to the identity file */
	bool looked;			/* variants looked for in this job */
	enum cache_coding vcoding;	/* the variant tried (0: none) */
	int vfd;			/* ... opened, or -1 */
	struct stat vst;
	char vpath[PATH_MAX_LEN + 32];
	char fs_path[PATH_MAX_LEN + 16];
	char key[PATH_MAX_LEN + 2];
	char path[PATH_MAX_LEN];
};

static zh_answer submit(struct zh_request *r, struct static_job *j);

/* The best coding the client takes among `variants` (0: identity). */
static enum cache_coding pick(const struct static_job *j, unsigned variants)
{
	for (unsigned i = 0; i < j->npref; i++)
		if (variants & (1u << j->pref[i]))
			return (enum cache_coding)j->pref[i];
	return CACHE_IDENTITY;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Has the file behind fd (size bytes) to be read ahead on a helper before
 * the loop may sendfile it?  Only a file larger than what the cache holds
 * in memory, whose pages are not all in the page cache. */
static bool wants_readahead(const struct zh_worker *w, int fd, uint64_t size)
{
	return size > w->cfg->cache_small_max && !static_resident(fd, size);
}

static void read_ahead(int fd, uint64_t size)
{
	readahead(fd, 0, size < READAHEAD_MAX ? (size_t)size : READAHEAD_MAX);
}

/* Open the variant of `fs_path` in `coding` into j->vfd; a file that is
 * gone or not regular any more leaves it -1 (identity is served).
 * -EAGAIN: cached_only and it would block. */
static int open_variant(struct static_job *j, const char *fs_path,
			enum cache_coding coding, bool cached_only)
{
	int fd;

	j->vcoding = coding;
	if ((size_t)snprintf(j->vpath, sizeof(j->vpath), "%s%s", fs_path,
			     cache_codings[coding].suffix) >= sizeof(j->vpath))
		return 0;
	fd = static_open_beneath(j->w, j->rootfd, j->vpath, cached_only);
	if (fd == -EAGAIN)
		return -EAGAIN;
	if (fd < 0)
		return 0;
	if (fstat(fd, &j->vst) < 0 || !S_ISREG(j->vst.st_mode)) {
		close(fd);
		return 0;
	}
	j->vfd = fd;
	return 0;
}

/*
 * The opening half of a miss (of the file, or of its precompressed
 * variant next to a cached identity entry): descriptors and stats, no
 * cache state.  In line (`cached_only`) it gives up with -EAGAIN, having
 * kept nothing, at the first step that would wait for the disk; on a
 * helper it does them all.
 */
static int prepare(struct static_job *j, bool cached_only)
{
	const struct zh_worker *w = j->w;
	int err, v;

	if (j->ident) {
		/* Look again (new or deleted variants), then open the best
		 * one the client takes. */
		v = static_find_variants(w, j->rootfd, j->ident->fs_path,
					 cached_only);
		if (v == -EAGAIN)
			return -EAGAIN;
		j->variants = (unsigned)v;
		j->looked = true;
		if (pick(j, j->variants))
			return open_variant(j, j->ident->fs_path,
					    pick(j, j->variants), cached_only);
		return 0;
	}
	j->fd = static_open_target(w, j->rootfd, j->path, j->up.len,
				   j->up.trailing_slash, j->fs_path,
				   sizeof(j->fs_path), &j->st, cached_only,
				   &j->status);
	if (j->fd == -EAGAIN)
		return -EAGAIN;
	if (j->fd < 0)
		return 0;
	if ((uint64_t)j->st.st_size > w->cfg->cache_small_max && w->diskio) {
		if (cached_only && wants_readahead(w, j->fd, (uint64_t)j->st.st_size))
			goto would_block;
		if (!cached_only)
			read_ahead(j->fd, (uint64_t)j->st.st_size);
	}
	v = w->cfg->precompressed ?
	    static_find_variants(w, j->rootfd, j->fs_path, cached_only) : 0;
	if (v == -EAGAIN)
		goto would_block;
	j->variants = (unsigned)v;
	if (pick(j, j->variants)) {
		err = open_variant(j, j->fs_path, pick(j, j->variants),
				   cached_only);
		if (err)
			goto would_block;
	}
	return 0;
would_block:
	close_fd(&j->fd);
	return -EAGAIN;
}

/* e's reference goes to the request if its response uses e's body (the
 * request keeps it until the connection pins e for the send), else back. */
static void settle(struct zh_request *r, struct cache_entry *e)
{
	if (e && r->entry != e)
		cache_put(r->w->cache, e);
}

static struct static_job *job_new(struct zh_request *r, enum job_op op)
{
	struct static_job *j = malloc(sizeof(*j));

	if (!j)
		return NULL;
	memset(j, 0, offsetof(struct static_job, vpath));
	j->r = r;
	j->w = r->w;
	j->op = op;
	j->site = r->vhost->index;
	j->rootfd = r->vhost->rootfd;
	j->up = r->up;
	j->now = ev_now_ms(r->w->loop);
	j->fd = j->vfd = -1;
	return j;
}

/*
 * The body of a response from e must be at hand before its head is
 * built: this worker's descriptor of e's file, unless the body is in
 * memory, and -- `load`: e was asked for before -- the body copied into
 * memory if the cache wants it there.  ZH_ANSWERED: ready; ZH_WAITING: a
 * helper is on it (the request resumes in job_done); a status; or
 * *stale: the file changed since e was made (e is dropped: answer as a
 * miss).
 */
static zh_answer body_ready(struct zh_request *r, struct cache_entry *e,
			    bool load, bool *stale)
{
	struct zh_worker *w = r->w;
	struct cache *c = w->cache;
	bool helpers = w->diskio != NULL;
	struct static_job *j;
	struct stat st;
	int fd, err;

	if (cache_body_in_memory(c, e))
		return ZH_ANSWERED;
	if (!cache_file(c, e)) {
		fd = static_open_beneath(w, e->dirfd, e->fs_path, helpers);
		if (fd >= 0 && fstat(fd, &st) < 0) {
			close(fd);
			fd = -errno;
		}
		if (fd >= 0 && helpers &&
		    wants_readahead(w, fd, (uint64_t)st.st_size)) {
			close(fd);
			fd = -EAGAIN;
		}
		if (fd == -EAGAIN) {
			j = job_new(r, J_OPEN);
			if (!j)
				return zh_status(503);
			j->e = e;
			cache_pin(c, e);
			return submit(r, j);
		}
		if (fd < 0)
			return zh_status(static_status_for_errno(-fd));
		err = cache_adopt_fd(c, e, fd, &st);
		*stale = err == -ESTALE;
		if (err && !*stale)
			return zh_status(503);
		if (*stale)
			return ZH_ANSWERED;
	}
	if (load && cache_load_begin(c, e)) {
		err = cache_load_fill(c, e, helpers);
		if (err == -EAGAIN) {
			j = job_new(r, J_LOAD);
			if (!j) {
				cache_load_end(c, e, -ENOMEM);
				return zh_status(503);
			}
			j->e = e;
			cache_pin(c, e);
			return submit(r, j);
		}
		cache_load_end(c, e, err);
	}
	return ZH_ANSWERED;
}

/* Build the response for a cached (or private) entry: ZH_ANSWERED, a
 * status, ZH_WAITING (its body is being made ready), or *stale
 * (body_ready's). */
static zh_answer serve_entry(struct zh_request *r, struct cache_entry *e,
			     bool load, bool *stale)
{
	const struct http_request *req = &r->http;
	zc_agg *out = request_out(r);
	uint64_t start = 0, len = (uint64_t)e->v.size;
	struct resp_head h;
	zh_answer a;
	int status = 200, failed;

	*stale = false;
	if (not_modified(req, e->etag, e->v.mtime_ns / 1000000000)) {
		request_head_begin(r, &h);
		resp_begin(&h, 304);
		resp_add(&h, "ETag", e->etag);
		resp_add(&h, "Last-Modified", e->lastmod);
		if (e->coding || e->variants)	/* as the 200 would */
			resp_add(&h, "Vary", "Accept-Encoding");
		resp_end(&h, r->keep_alive);
		r->status = 304;
		return zh_status(request_head_end(r, &h));
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
			return zh_status(resp_error_sized(out, 416,
						r->head_only, r->keep_alive,
						cr, &r->body_bytes) ? 500 : 0);
		}
		case HTTP_RANGE_IGNORE:
			start = 0;
			len = (uint64_t)e->v.size;
			break;
		}
	}
	if (!r->head_only && len) {
		a = body_ready(r, e, load, stale);
		if (*stale || zh_waits(a) || zh_error_status(a))
			return a;
	}
	request_head_begin(r, &h);
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
	failed = request_head_end(r, &h);
	if (failed)
		return zh_status(failed);
	if (!r->head_only && len) {
		/* HTTP/2 cuts it into DATA frames (cache.h). */
		unsigned how = !r->stream ? 0
			       : h2_req_copies_mapped(r) ? CACHE_FRAMED | CACHE_MAPPED
						       : CACHE_FRAMED;
		int err = cache_append_body(r->w->cache, e, out, start, len,
					    how);

		if (err) {
			/* The head is queued: the response is cut. */
			zh_log(ZL_ERROR, "%s: body unavailable after its head "
			       "(%s): response cut", e->fs_path, strerror(-err));
			return zh_status(503);
		}
		/* The response uses it: the request keeps our reference
		 * (request.h) until it is pinned for the send. */
		r->entry = e;
	}
	r->status = status;
	r->body_bytes = r->head_only ? 0 : len;
	return ZH_ANSWERED;
}

/* The loop half of a miss: insert what was opened and answer with the
 * variant if there is one, else the identity. */
static zh_answer answer_miss(struct zh_request *r, struct static_job *j)
{
	struct cache *c = r->w->cache;
	struct cache_entry *e = j->ident, *v = NULL, *serve;
	char vkey[PATH_MAX_LEN + 16];
	zh_answer a;
	bool stale;

	if (j->status == 301)
		return zh_status(redirect_slash(r, &j->up));
	if (j->status)
		return zh_status(j->status);
	if (!e) {
		e = cache_insert(c, j->site, j->key, j->rootfd, j->fs_path,
				 j->fd, &j->st, j->now, CACHE_IDENTITY,
				 j->variants);
		if (!e)
			return zh_status(503);
		j->fd = -1;		/* the entry's now */
	} else {
		j->ident = NULL;	/* its reference is ours now */
	}
	if (j->looked) {
		e->variants = (uint8_t)j->variants;
		e->variants_checked_ms = j->now;
	}
	if (j->vfd >= 0 &&
	    (size_t)snprintf(vkey, sizeof(vkey), "%s%s", j->key,
			     cache_codings[j->vcoding].key) < sizeof(vkey)) {
		v = cache_insert(c, j->site, vkey, j->rootfd, j->vpath, j->vfd,
				 &j->vst, j->now, j->vcoding, 0);
		if (v)
			j->vfd = -1;
	} else if (j->vcoding) {
		e->variants &= (uint8_t)~(1u << j->vcoding);	/* gone */
	}
	serve = v ? v : e;
	/* Just opened: its descriptor is this worker's, nothing is stale. */
	a = serve_entry(r, serve, false, &stale);
	settle(r, e);
	settle(r, v);
	return stale ? zh_status(503) : a;
}

static void job_free(struct static_job *j)
{
	cache_put(j->w->cache, j->ident);
	cache_put(j->w->cache, j->e);
	close_fd(&j->fd);
	close_fd(&j->vfd);
	free(j);
}

/* On a helper thread: whatever blocks, blocking. */
static void job_work(struct disk_job *dj)
{
	struct static_job *j = (struct static_job *)dj;

	switch (j->op) {
	case J_MISS:
		prepare(j, false);
		break;
	case J_OPEN:
		j->fd = static_open_beneath(j->w, j->e->dirfd, j->e->fs_path,
					    false);
		if (j->fd >= 0 && fstat(j->fd, &j->st) < 0) {
			int err = -errno;

			close_fd(&j->fd);
			j->fd = err;
		} else if (j->fd >= 0 &&
			   (uint64_t)j->st.st_size > j->w->cfg->cache_small_max) {
			read_ahead(j->fd, (uint64_t)j->st.st_size);
		}
		break;
	case J_LOAD:
		j->err = cache_load_fill(j->w->cache, j->e, false);
		break;
	}
}

/* The loop half of J_OPEN and J_LOAD: the entry is ready now (or changed:
 * answer as a fresh miss). */
static zh_answer resume(struct zh_request *r, struct static_job *j)
{
	struct cache *c = r->w->cache;
	struct cache_entry *e = j->e;
	zh_answer a;
	bool stale;
	int err;

	if (j->op == J_LOAD) {
		cache_load_end(c, e, j->err);
	} else if (j->fd < 0) {
		return zh_status(static_status_for_errno(-j->fd));
	} else {
		err = cache_adopt_fd(c, e, j->fd, &j->st);
		j->fd = -1;		/* adopted or closed */
		if (err == -ESTALE)
			return static_serve(r);	/* dropped: a miss now */
		if (err)
			return zh_status(503);
	}
	j->e = NULL;			/* the reference goes with it */
	a = serve_entry(r, e, false, &stale);
	settle(r, e);
	return stale ? static_serve(r) : a;
}

/* On the loop, when the helper is done (or the worker stops). */
static void job_done(struct disk_job *dj)
{
	struct static_job *j = (struct static_job *)dj;
	struct zh_request *r = j->r;
	zh_answer a;

	if (r) {
		r->wait = NULL;
		a = j->op == J_MISS ? answer_miss(r, j) : resume(r, j);
		if (!zh_waits(a))
			request_finish(r, a);
	}
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

/* Hand j to a helper thread; the request waits for it. */
static zh_answer submit(struct zh_request *r, struct static_job *j)
{
	int err = request_wait(r, &static_handler, j);

	if (err) {
		job_free(j);
		return zh_status(err);
	}
	j->dj.work = job_work;
	j->dj.done = job_done;
	diskio_submit(r->w->diskio, &j->dj);
	return ZH_WAITING;
}

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
	struct static_job *j;
	struct cache_entry *e, *v = NULL;
	uint8_t pref[CACHE_NCODINGS];
	unsigned npref = preferences(r, pref);
	size_t klen = r->uri_len;
	bool load = false, stale;
	zh_answer a;

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
		/* A hit: its body may come into memory now (the second time
		 * it is asked for, cache.h). */
		a = serve_entry(r, v ? v : e, true, &stale);
		settle(r, e);
		settle(r, v);
		if (!stale)
			return a;
		e = v = NULL;		/* changed: a miss after all */
	}
	/* A miss (of the file, or of the variant this client takes):
	 * opened in line when the kernel can do it from memory, else on a
	 * helper. */
	j = job_new(r, J_MISS);
	if (!j) {
		cache_put(w->cache, e);
		return zh_status(503);
	}
	j->ident = e;		/* our reference goes with it */
	memcpy(j->pref, pref, sizeof(pref));
	j->npref = npref;
	memcpy(j->key, key, klen + 1);
	memcpy(j->path, r->uri + 1, up->len);
	j->path[up->len] = 0;
	if (!w->diskio || prepare(j, true) == 0) {
		if (!w->diskio)
			prepare(j, false);
		a = answer_miss(r, j);
		job_free(j);
		return a;
	}
	return submit(r, j);
}
