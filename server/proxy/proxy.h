/*
 * proxy.h - zchttpd as a reverse proxy in front of HTTP/1.1 applications
 * (docs/proxy.md).
 *
 * A route (`--proxy MATCH=URL[,URL...]`, or `proxy MATCH @GROUP` with an
 * `upstream GROUP { }` block in --config) sends the requests whose path
 * starts with MATCH to a group of upstream servers: TCP (http://host:port)
 * or UNIX sockets (unix:/path).  Each worker keeps, per server, a pool of
 * keep-alive connections and a bounded queue of requests waiting for one.
 * The request is forwarded as an intermediary does (RFC 9110 7.6): the
 * hop-by-hop fields dropped, Via and X-Forwarded-For/-Proto/-Host and
 * Forwarded set; the response is streamed back with back-pressure both
 * ways.  A body the proxy does not change goes from the upstream socket to
 * the client socket by splice through a pipe (libzc's pipe slices), never
 * through user memory, where the client's socket takes bytes by reference
 * and the body is large enough for that to pay (proxy_relay.c).
 *
 * Modules:
 *   proxy_conf.c     the options: routes, groups, servers, settings
 *   proxy.c          a proxied request: the upstream, the request body, the
 *                    response head and body, faults and retries
 *   proxy_head.c     the heads as the intermediary rewrites them
 *   proxy_relay.c    the response body: by splice or by copy, reframed
 *   proxy_tunnel.c   Upgrade (WebSocket): the two sockets joined both ways
 *   upstream.c       per worker: servers, connections, queue, balancing,
 *                    passive health
 *   upstream_health.c  active health checks
 */
#ifndef ZC_PROXY_H
#define ZC_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "request.h"

#define ZH_PROXY_MAX_SERVERS 64		/* every group's, together (status
					 * counters live in shared memory) */
#define ZH_PROXY_MAX_TRUST 32		/* --proxy-trust networks */

enum zh_balance {
	ZH_BALANCE_RR,			/* smooth weighted round robin */
	ZH_BALANCE_LEAST_CONN,		/* fewest active, by weight */
	ZH_BALANCE_HASH,		/* consistent hash of a key */
};

enum zh_hash_key {
	ZH_HASH_URI,			/* the request target */
	ZH_HASH_HEADER,			/* a request field's value */
	ZH_HASH_CLIENT,			/* the client's address */
};

/* One upstream server of a group. */
struct zh_upstream_server {
	const char *spec;		/* as written, for messages */
	unsigned index;			/* in cfg->proxy.servers (counters) */
	unsigned group;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	const char *authority;		/* "host:port" as written (Host when
					 * the route sets the upstream's) */
	unsigned weight;		/* 1..1000 */
	bool backup;			/* only when no primary is usable */
};

/* A group of servers and how they are used.  Settings not written in the
 * group's block take the command line's --proxy-* values. */
struct zh_upstream_group {
	const char *name;		/* "@name", or the route's spec */
	const char *where;		/* "FILE:LINE" of its block; NULL */
	unsigned first, n;		/* its servers in cfg->proxy.servers */
	enum zh_balance balance;
	enum zh_hash_key hash_key;
	const char *hash_header;	/* ZH_HASH_HEADER's field name */
	unsigned keepalive;		/* idle connections per server per
					 * worker */
	unsigned max_conns;		/* connections per server per worker
					 * (0: no limit) */
	unsigned queue;			/* requests waiting for a connection
					 * per worker (then 503) */
	unsigned connect_ms;		/* connect: else try the next, 502/504 */
	unsigned timeout_ms;		/* first byte, and between reads */
	unsigned idle_ms;		/* an idle connection closes */
	unsigned max_fails;		/* failures in a row that take a server
					 * out ... */
	unsigned fail_ms;		/* ... for this long */
	const char *health_path;	/* active checks: GET this (NULL: off) */
	unsigned health_ms;		/* every this long */
	int health_status;		/* the status that means healthy (0:
					 * any 2xx or 3xx) */
	unsigned health_rise, health_fall;	/* checks in a row to change */
};

/* One route: requests whose normalized path starts with `match`. */
struct zh_proxy_route {
	const char *spec;		/* as written */
	unsigned site;			/* the site it serves (vhost.h) */
	unsigned seq;			/* its place among every route of the
					 * site (FastCGI's too): first wins */
	const char *match;
	size_t match_len;
	unsigned group;			/* in cfg->proxy.groups */
	const char *group_name;		/* "@name" until the groups are
					 * known (proxy_conf_finish) */
	const char *path;		/* the upstream URL's path: replaces
					 * `match` in the target (NULL: the
					 * target as sent) */
	size_t path_len;
};

/* An address range whose X-Forwarded-* and Forwarded fields are believed
 * (and extended) rather than replaced. */
struct zh_trusted_net {
	struct sockaddr_storage addr;
	unsigned prefix;		/* bits */
};

enum zh_proxy_host {
	ZH_HOST_PASS,			/* the client's Host (default) */
	ZH_HOST_UPSTREAM,		/* the server's host:port */
	ZH_HOST_SET,			/* a fixed name */
};

struct zh_proxy_config {
	struct zh_proxy_route *routes;
	unsigned nroutes;
	struct zh_upstream_group *groups;
	unsigned ngroups;
	struct zh_upstream_server *servers;
	unsigned nservers;
	struct zh_upstream_group defaults;	/* the --proxy-* values */
	enum zh_proxy_host host;
	const char *host_name;		/* ZH_HOST_SET */
	bool via;			/* add Via (default on) */
	struct zh_trusted_net trust[ZH_PROXY_MAX_TRUST];
	unsigned ntrust;
	uint64_t splice_min;		/* bodies from this size on go by
					 * splice where the client allows */
	unsigned pipe_size;		/* a splice pipe's capacity */
};

/* Counters of one server, per worker in shared memory (stats.h). */
struct proxy_server_stats {
	uint64_t requests;		/* sent to it */
	uint64_t failures;		/* connect, reset, timeout, bad head */
	uint64_t bytes_spliced;		/* response body bytes by splice */
	uint64_t bytes_copied;		/* ... through user memory */
	uint64_t active;		/* gauge: connections serving */
	uint64_t idle;			/* gauge: kept for reuse */
	uint64_t down;			/* gauge: 1 while out of service */
};

struct proxy_stats {
	uint64_t requests;		/* proxied requests */
	uint64_t retries;		/* sent again to another server */
	uint64_t spliced;		/* responses whose body went by splice */
	uint64_t tunnels;		/* Upgrade tunnels opened */
	struct proxy_server_stats server[ZH_PROXY_MAX_SERVERS];
};

struct options;
struct zh_worker;

/* proxy_conf.c: the options of the proxy (proxy, proxy-*, and in a
 * configuration file `upstream NAME {` blocks): 0 taken, 1 not ours, -1
 * bad (reported). */
void proxy_conf_defaults(struct zh_proxy_config *pc);
int proxy_option(struct options *o, const char *name, const char *val);
/* A line of the configuration file inside or opening an upstream block:
 * 0 taken, 1 not ours, -1 bad. */
int proxy_config_line(struct options *o, const char *name, const char *val);
/* After every option: groups settle their defaults, routes find their
 * groups.  0 or -1 (reported). */
int proxy_conf_finish(struct options *o);
void proxy_conf_free(struct zh_proxy_config *pc);

/* Whether the route takes a request path (normalized, "/..."). */
bool proxy_route_matches(const struct zh_proxy_route *rt, const char *path,
			 size_t len);

/* Answer r through the route's upstreams: ZH_WAITING, or an error page. */
zh_answer proxy_serve(struct zh_request *r, const struct zh_proxy_route *rt);

/* Per worker: the groups' pools and health checks (after the loop
 * exists); their end. */
int proxy_worker_init(struct zh_worker *w);
void proxy_worker_fini(struct zh_worker *w);
/* The worker stops (SIGTERM): idle connections close, checks end;
 * requests in flight go on. */
void proxy_worker_stop(struct zh_worker *w);

#endif
