/*
 * fastcgi.h - zchttpd as a FastCGI client (docs/fastcgi.md).
 *
 * A route sends the requests whose path matches it to a backend: an
 * application listening on a UNIX socket or a TCP port (the standard
 * protocol), or on a UNIX socket that speaks zcstack's zero-copy transport
 * (a libzc channel: the response body arrives as descriptors of the
 * application's buffers and files and leaves through sendfile, never
 * copied).  Each worker keeps its own small pool of connections per
 * backend (FCGI_KEEP_CONN), one request at a time on each.
 *
 * Modules:
 *   fastcgi.c        the request: dispatch, request body, response, faults
 *   fcgi_upstream.c  backends: connections, their pool and queue, transport
 *   fcgi_params.c    the CGI/1.1 parameters of a request
 *   fcgi_reply.c     the application's CGI head turned into an HTTP head
 *   fcgi_spawn.c     application processes started and supervised by the
 *                    master (--fastcgi-spawn)
 */
#ifndef ZC_FASTCGI_H
#define ZC_FASTCGI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "request.h"

enum zh_fcgi_transport {
	ZH_FCGI_UNIX,		/* unix:PATH */
	ZH_FCGI_TCP,		/* HOST:PORT */
	ZH_FCGI_ZC,		/* zc:PATH */
};

/* One --fastcgi or --fastcgi-spawn route (options.c fills it; the master
 * fills `addr` of spawned ones before the workers start). */
struct zh_fcgi_route {
	const char *spec;		/* as written, for messages */
	unsigned site;			/* the site it serves (vhost.h) */
	unsigned seq;			/* its place among every route of the
					 * site (the proxy's too): first wins */
	const char *match;		/* "/app" prefix, or "*.php" suffix */
	size_t match_len;
	bool suffix;			/* match is "*.ext": the path's first
					 * segment ending in .ext */
	enum zh_fcgi_transport transport;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	unsigned spawn;			/* processes to start, 0: none */
	char **argv;			/* their program and arguments */
	/* Spawned: worker w connects to worker_addr[w] only, where
	 * per_worker processes accept (fcgi_spawn.c says why). */
	const struct sockaddr_storage *worker_addr;
	socklen_t worker_addr_len;
	unsigned per_worker;
};

struct zh_worker;
struct zh_request;
struct http_request;

/* Whether the route takes a request path (normalized, "/..."): its
 * prefix, or a segment ending in its suffix.  (The router, router.h,
 * asks the site's routes in order; the first that takes it wins.) */
bool fastcgi_route_matches(const struct zh_fcgi_route *rt, const char *path,
			   size_t len);

/* Answer r through the route's backend: ZH_WAITING, or an error page
 * (zh_answer, request.h). */
zh_answer fastcgi_serve(struct zh_request *r,
			const struct zh_fcgi_route *route);

/* Per worker: the backends' connection pools (after the loop exists),
 * and their end (connections closed, waiting requests already gone). */
int fastcgi_worker_init(struct zh_worker *w);
void fastcgi_worker_fini(struct zh_worker *w);

#endif
