/*
 * router.h - which handler answers a request (nginx's content phase, h2o's
 * handlers): a table of locations per site, each a handler and what it is
 * given, looked up in order -- the status endpoint on the path as sent, on
 * every site; then the site's FastCGI routes in the order configured; then
 * its document root, which takes every path.
 *
 * What a handler takes is said by its entry, not by the connection: the
 * methods (others get 405, unknown ones 501), whether it reads a request
 * body (for the others a body means the connection closes after the
 * answer, since the body cannot be told from a next request), and how a
 * path matches it.  The connection (conn.c) calls router_route() and
 * nothing else of routing.
 */
#ifndef ZC_ROUTER_H
#define ZC_ROUTER_H

#include <stdbool.h>

#include "request.h"

struct zh_config;

/* A handler as the router sees it. */
struct zh_content {
	const char *name;
	bool raw_path;			/* matched on the path as sent, before
					 * it is normalized, on every site */
	bool any_method;		/* takes methods other than GET, HEAD */
	bool reads_body;		/* reads a request body */
	/* Does the location take r's path (r->uri once normalized)?  NULL:
	 * every path. */
	bool (*match)(const struct zh_request *r, const void *arg);
	zh_answer (*serve)(struct zh_request *r, const void *arg);
};

struct zh_location {
	const struct zh_content *content;
	const void *arg;		/* the FastCGI route, ... */
};

struct zh_router {
	struct zh_location *raw;	/* on the path as sent */
	unsigned nraw;
	struct zh_site_locations {
		struct zh_location *loc;	/* the last takes every path */
		unsigned n;
	} *sites;			/* cfg->sites' order */
	unsigned nsites;
	bool other_methods;		/* some location takes methods other
					 * than GET and HEAD */
};

/* The table for cfg's sites and routes.  0 or -ENOMEM. */
int router_init(struct zh_router *rt, const struct zh_config *cfg);
void router_fini(struct zh_router *rt);

/* Answer r (its site, r->vhost, chosen): the checks every request gets
 * (a body over --max-body, a path that does not normalize), then the
 * first location that takes it. */
zh_answer router_route(const struct zh_router *rt, struct zh_request *r);

#endif
