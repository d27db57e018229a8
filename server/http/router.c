/*
 * router.c - which handler answers a request (router.h).
 *
 * The table is built once per worker from the configuration: the status
 * endpoint (if --status-path) on the path as sent, then per site its
 * FastCGI routes and its document root.  A lookup is a walk of a few
 * entries -- a site has a handful of routes -- with the path normalized
 * once on the way (uri.h), into the worker's scratch: a request that has to
 * wait takes a copy (request_wait).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "fastcgi.h"
#include "handlers.h"
#include "proxy.h"
#include "router.h"
#include "uri.h"
#include "zchttpd.h"

/* ------------------------------------------------------------ handlers */

static bool status_match(const struct zh_request *r, const void *arg)
{
	(void)arg;
	return status_matches(r->w, &r->http);
}

static zh_answer status_run(struct zh_request *r, const void *arg)
{
	(void)arg;
	return status_serve(r);
}

static const struct zh_content status_content = {
	.name = "status",
	.raw_path = true,
	.match = status_match,
	.serve = status_run,
};

/* A FastCGI application reads the body and answers any method (CGI's
 * REQUEST_METHOD); its route's prefix or suffix chooses it. */
static bool fastcgi_match(const struct zh_request *r, const void *arg)
{
	return fastcgi_route_matches(arg, r->uri, r->uri_len);
}

static zh_answer fastcgi_run(struct zh_request *r, const void *arg)
{
	return fastcgi_serve(r, arg);
}

static const struct zh_content fastcgi_content = {
	.name = "fastcgi",
	.any_method = true,
	.reads_body = true,
	.match = fastcgi_match,
	.serve = fastcgi_run,
};

/* An HTTP upstream reads the body and answers any method; its route's
 * prefix chooses it. */
static bool proxy_match(const struct zh_request *r, const void *arg)
{
	return proxy_route_matches(arg, r->uri, r->uri_len);
}

static zh_answer proxy_run(struct zh_request *r, const void *arg)
{
	return proxy_serve(r, arg);
}

static const struct zh_content proxy_content = {
	.name = "proxy",
	.any_method = true,
	.reads_body = true,
	.match = proxy_match,
	.serve = proxy_run,
};

static zh_answer static_run(struct zh_request *r, const void *arg)
{
	(void)arg;
	return static_serve(r);
}

/* The document root: GET and HEAD of every path. */
static const struct zh_content static_content = {
	.name = "static",
	.serve = static_run,
};

/* ------------------------------------------------------------ table */

int router_init(struct zh_router *rt, const struct zh_config *cfg)
{
	*rt = (struct zh_router){ 0 };
	if (cfg->status_path) {
		rt->raw = calloc(1, sizeof(*rt->raw));
		if (!rt->raw)
			return -ENOMEM;
		rt->raw[rt->nraw++] = (struct zh_location){ &status_content,
							    NULL };
	}
	rt->sites = calloc(cfg->nsites, sizeof(*rt->sites));
	if (!rt->sites) {
		router_fini(rt);
		return -ENOMEM;
	}
	rt->nsites = cfg->nsites;
	for (unsigned s = 0; s < cfg->nsites; s++) {
		struct zh_site_locations *sl = &rt->sites[s];

		const struct zh_proxy_config *pc = &cfg->proxy;
		unsigned f = 0, p = 0;

		sl->loc = calloc(cfg->nfcgi + pc->nroutes + 1,
				 sizeof(*sl->loc));
		if (!sl->loc) {
			router_fini(rt);
			return -ENOMEM;
		}
		/* One route list for every site (the upstreams and spawned
		 * processes are per route): each site takes its own, in the
		 * order written, FastCGI and proxy routes merged by it; the
		 * first that matches wins. */
		while (f < cfg->nfcgi || p < pc->nroutes) {
			bool fcgi = p == pc->nroutes ||
				    (f < cfg->nfcgi &&
				     cfg->fcgi[f].seq < pc->routes[p].seq);

			if (fcgi && cfg->fcgi[f].site == s)
				sl->loc[sl->n++] = (struct zh_location){
					&fastcgi_content, &cfg->fcgi[f] };
			else if (!fcgi && pc->routes[p].site == s)
				sl->loc[sl->n++] = (struct zh_location){
					&proxy_content, &pc->routes[p] };
			if (fcgi)
				f++;
			else
				p++;
		}
		sl->loc[sl->n++] = (struct zh_location){ &static_content,
							 NULL };
	}
	for (unsigned s = 0; s < rt->nsites; s++)
		for (unsigned i = 0; i < rt->sites[s].n; i++)
			rt->other_methods |=
				rt->sites[s].loc[i].content->any_method;
	return 0;
}

void router_fini(struct zh_router *rt)
{
	for (unsigned s = 0; rt->sites && s < rt->nsites; s++)
		free(rt->sites[s].loc);
	free(rt->sites);
	free(rt->raw);
	*rt = (struct zh_router){ 0 };
}

/* ------------------------------------------------------------ lookup */

static bool takes_path(const struct zh_location *l, const struct zh_request *r)
{
	return !l->content->match || l->content->match(r, l->arg);
}

static bool get_or_head(const struct http_request *req)
{
	return req->method == HTTP_M_GET || req->method == HTTP_M_HEAD;
}

/* A method the location does not take: 405, or 501 for one we do not
 * know at all. */
static zh_answer refused_method(const struct http_request *req)
{
	return zh_status(req->method == HTTP_M_OTHER ? 501 : 405);
}

/* What every location's entry says before its handler runs. */
static zh_answer dispatch(const struct zh_location *l, struct zh_request *r)
{
	const struct zh_content *h = l->content;
	const struct http_request *req = &r->http;

	/* A body it does not read would have to be read and thrown away:
	 * the handler answers and the connection closes (its head must say
	 * so; conn.c lingers: body_read stays false). */
	if (!h->reads_body && ((req->flags & HTTP_F_CHUNKED) ||
			       ((req->flags & HTTP_F_CONTENT_LENGTH) &&
				req->content_length)))
		r->keep_alive = false;
	if (!h->any_method && !get_or_head(req))
		return refused_method(req);
	return h->serve(r, l->arg);
}

/* The location that takes r, normalizing its path on the way; NULL with
 * *refused set when the request is answered before any (the checks every
 * request gets). */
static const struct zh_location *find(const struct zh_router *rt,
				      struct zh_request *r, zh_answer *refused)
{
	struct zh_worker *w = r->w;
	const struct http_request *req = &r->http;
	const struct zh_site_locations *sl;
	enum uri_error ue;

	if ((req->flags & HTTP_F_CONTENT_LENGTH) &&
	    req->content_length > w->cfg->max_body_bytes) {
		*refused = zh_status(413);	/* before anything else */
		return NULL;
	}
	for (unsigned i = 0; i < rt->nraw; i++)
		if (takes_path(&rt->raw[i], r))
			return &rt->raw[i];
	w->uri[0] = '/';
	ue = uri_normalize_path(req->path.p, req->path.len, w->uri + 1,
				sizeof(w->uri) - 1, &r->up);
	if (ue != URI_OK) {
		/* A method nothing here takes is refused as such, whatever
		 * its path. */
		*refused = !get_or_head(req) && !rt->other_methods
			   ? refused_method(req)
			   : zh_status(ue == URI_E_TOO_LONG ? 414 : 400);
		return NULL;
	}
	r->uri = w->uri;
	r->uri_len = r->up.len + 1;
	sl = &rt->sites[r->vhost->index];
	for (unsigned i = 0; i < sl->n; i++)
		if (takes_path(&sl->loc[i], r))
			return &sl->loc[i];
	*refused = zh_status(404);	/* not reached: the root takes all */
	return NULL;
}

zh_answer router_route(const struct zh_router *rt, struct zh_request *r)
{
	zh_answer refused = ZH_ANSWERED;
	const struct zh_location *l = find(rt, r, &refused);

	return l ? dispatch(l, r) : refused;
}
