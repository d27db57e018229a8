/*
 * vhost.c - virtual hosts (vhost.h): what a `server { }` block holds, the
 * table of names, a request's site, and a worker's per-site state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access_log.h"
#include "errlog.h"
#include "http_host.h"
#include "options.h"
#include "vhost.h"

/* Nameless sites (the command line's, a block without `name`) show as
 * this in the status endpoint; nginx's catch-all convention. */
#define NAMELESS "_"

int vhost_add(struct options *o, const char *where_file)
{
	struct zh_config *c = &o->cfg;
	struct zh_site *s;

	/* One more than the limit may be parsed: vhost_finish may drop
	 * site 0, and says so when there are still too many. */
	if (c->nsites > ZH_MAX_SITES) {
		options_error(o, NULL, "more than %d sites", ZH_MAX_SITES);
		return -1;
	}
	if (c->nsites == o->sites_cap) {
		unsigned cap = o->sites_cap ? 2 * o->sites_cap : 4;

		s = realloc(c->sites, cap * sizeof(*s));
		if (!s) {
			options_error(o, NULL, "out of memory");
			return -1;
		}
		c->sites = s;
		o->sites_cap = cap;
	}
	s = &c->sites[c->nsites];
	*s = (struct zh_site){ .name = NAMELESS, .stat_slot = -1 };
	if (where_file) {
		char where[4096 + 16];	/* FILE:LINE */

		snprintf(where, sizeof(where), "%s:%u", where_file, o->line);
		s->where = options_keep(o, where);
	}
	return (int)c->nsites++;
}

int vhost_begin(struct options *o)
{
	int i = vhost_add(o, o->file);

	if (i < 0)
		return -1;
	o->block = (unsigned)i;
	return 0;
}

int vhost_end(struct options *o)
{
	const struct zh_site *s = &o->cfg.sites[o->block];

	o->block = 0;
	if (!s->root) {
		options_error(o, s->where, "server block without a root");
		return -1;
	}
	return 0;
}

/* A name as a site is configured with: a host name or an IP address,
 * normalized as a request's host is (so "Example.COM." matches), without
 * a port.  Wildcards are refused rather than taken literally. */
static int add_name(struct options *o, const char *n, size_t len)
{
	struct zh_config *c = &o->cfg;
	char norm[HTTP_HOST_MAX + 1];
	ssize_t k = http_host_name(n, len, norm, sizeof(norm));

	/* Only a port or the root dot can make the name shorter. */
	bool port = k > 0 && (size_t)k != len &&
		    !((size_t)k + 1 == len && n[len - 1] == '.');

	if (k <= 0 || port || memchr(n, '*', len) ||
	    (norm[0] != '[' && strpbrk(norm, ":%!$&'()+,;=~"))) {
		options_error(o, NULL, "'%.*s' is not a site name (a host name "
			      "or address, no port, no wildcard)", (int)len, n);
		return -1;
	}
	if (c->nnames == o->names_cap) {
		unsigned cap = o->names_cap ? 2 * o->names_cap : 8;
		struct zh_site_name *v = realloc(c->names, cap * sizeof(*v));

		if (!v) {
			options_error(o, NULL, "out of memory");
			return -1;
		}
		c->names = v;
		o->names_cap = cap;
	}
	c->names[c->nnames].name = options_keep(o, norm);
	c->names[c->nnames].site = o->block;
	if (!strcmp(c->sites[o->block].name, NAMELESS))
		c->sites[o->block].name = c->names[c->nnames].name;
	c->nnames++;
	return 0;
}

int vhost_option(struct options *o, const char *name, const char *val)
{
	struct zh_site *s = &o->cfg.sites[o->block];

	if (!strcmp(name, "default")) {
		if (val) {
			options_error(o, NULL, "'default' takes no value");
			return -1;
		}
		s->is_default = true;
		return 0;
	}
	if (strcmp(name, "name") && strcmp(name, "root") &&
	    strcmp(name, "access-log"))
		return 1;
	if (!val) {
		options_error(o, NULL, "option '%s' needs a value", name);
		return -1;
	}
	if (!strcmp(name, "root")) {
		s->root = options_keep(o, val);
	} else if (!strcmp(name, "access-log")) {
		s->access_log = options_keep(o, val);
	} else {
		/* name N1 N2 ...: blanks separate names. */
		for (const char *p = val; *p;) {
			size_t n = strcspn(p, " \t");

			if (add_name(o, p, n))
				return -1;
			p += n;
			p += strspn(p, " \t");
		}
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	const struct zh_site_name *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Site 0 has no --root: it does not exist; every index moves down. */
static int drop_site0(struct options *o)
{
	struct zh_config *c = &o->cfg;

	for (unsigned i = 0; i < c->nfcgi; i++) {
		if (c->fcgi[i].site == 0) {
			options_error(o, NULL, "--fastcgi %s outside a server "
				      "block needs --root (or put it in a "
				      "block)", c->fcgi[i].spec);
			return -1;
		}
		c->fcgi[i].site--;
	}
	for (unsigned i = 0; i < c->nnames; i++)
		c->names[i].site--;
	memmove(c->sites, c->sites + 1, (c->nsites - 1) * sizeof(*c->sites));
	c->nsites--;
	return 0;
}

int vhost_finish(struct options *o)
{
	struct zh_config *c = &o->cfg;
	bool marked = false;

	if (c->root) {
		c->sites[0].root = c->root;
	} else if (c->nsites == 1) {
		options_error(o, NULL, "--root DIR is required (or a server "
			      "block in the --config file)");
		return -1;
	} else if (drop_site0(o)) {
		return -1;
	}
	if (c->nsites > ZH_MAX_SITES) {
		options_error(o, c->sites[ZH_MAX_SITES].where,
			      "more than %d sites", ZH_MAX_SITES);
		return -1;
	}
	c->default_site = 0;
	for (unsigned i = 0; i < c->nsites; i++) {
		struct zh_site *s = &c->sites[i];

		/* --access-log is every site's that names no log of its own. */
		if (!s->access_log)
			s->access_log = c->access_log;
		if (!s->is_default)
			continue;
		if (marked) {
			options_error(o, s->where, "a second default site "
				      "(the first: %s)",
				      c->sites[c->default_site].where);
			return -1;
		}
		marked = true;
		c->default_site = i;
	}
	if (c->nnames)
		qsort(c->names, c->nnames, sizeof(*c->names), by_name);
	for (unsigned i = 1; i < c->nnames; i++) {
		if (strcmp(c->names[i - 1].name, c->names[i].name))
			continue;
		options_error(o, c->sites[c->names[i].site].where,
			      "name %s is already a name of the site at %s",
			      c->names[i].name,
			      c->sites[c->names[i - 1].site].where);
		return -1;
	}
	return 0;
}

unsigned vhost_find(const struct zh_config *cfg,
		    const struct http_request *req)
{
	char host[HTTP_HOST_MAX + 1];
	struct zh_site_name key = { .name = host }, *hit;

	if (!cfg->nnames || !req->host.p ||
	    http_host_name(req->host.p, req->host.len, host, sizeof(host)) <= 0)
		return cfg->default_site;
	hit = bsearch(&key, cfg->names, cfg->nnames, sizeof(*cfg->names),
		      by_name);
	return hit ? hit->site : cfg->default_site;
}

int vhost_worker_init(struct zh_worker *w, const int *rootfds,
		      const int *logfds)
{
	const struct zh_config *c = w->cfg;
	int err;

	w->vhosts = calloc(c->nsites, sizeof(*w->vhosts));
	if (!w->vhosts)
		return -ENOMEM;
	for (unsigned i = 0; i < c->nsites; i++) {
		struct zh_vhost *v = &w->vhosts[i];

		v->site = &c->sites[i];
		v->index = i;
		v->rootfd = rootfds[i];
		v->logfd = logfds[i];
		v->root_abs = realpath(v->site->root, NULL);
		if (!v->root_abs)
			return -errno;
		/* Sites logging to the same file share one buffer. */
		for (unsigned j = 0; j < i && v->logfd >= 0; j++) {
			if (w->vhosts[j].logfd == v->logfd) {
				v->log = w->vhosts[j].log;
				break;
			}
		}
		if (v->logfd >= 0 && !v->log) {
			err = access_log_adopt(v->logfd, &v->log);
			if (err)
				return err;
			v->log_owner = true;
		}
	}
	return 0;
}

void vhost_worker_fini(struct zh_worker *w)
{
	for (unsigned i = 0; w->vhosts && i < w->cfg->nsites; i++) {
		if (w->vhosts[i].log_owner)
			access_log_close(w->vhosts[i].log);
		free(w->vhosts[i].root_abs);
	}
	free(w->vhosts);
	w->vhosts = NULL;
}

void vhost_flush_logs(struct zh_worker *w)
{
	for (unsigned i = 0; i < w->cfg->nsites; i++)
		if (w->vhosts[i].log_owner)
			access_log_flush(w->vhosts[i].log);
}

void vhost_reopen_logs(struct zh_worker *w)
{
	for (unsigned i = 0; i < w->cfg->nsites; i++) {
		const struct zh_vhost *v = &w->vhosts[i];
		int err;

		if (!v->log_owner)
			continue;
		err = access_log_reopen(v->log, v->site->access_log);
		if (err)
			zh_log(ZL_ERROR, "reopening %s: %s (still writing to "
			       "the old file)", v->site->access_log,
			       strerror(-err));
	}
}
