/*
 * zchttpd.h - the server's shared types: configuration, per-worker state,
 * connections and counters.
 *
 * Process model (Flash's AMPED, nginx's master/worker): a master process
 * forks one worker per core; each worker has its own SO_REUSEPORT socket
 * and runs one event loop (epoll, or io_uring with --event io_uring).  No
 * thread per connection, no shared accept lock.  Counters live in a shared anonymous mapping so any worker can
 * answer the status endpoint for all of them.
 */
#ifndef ZC_ZCHTTPD_H
#define ZC_ZCHTTPD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cache.h"
#include "diskio.h"
#include "event.h"
#include "fastcgi.h"
#include "http_parser.h"
#include "tls.h"
#include "zc.h"

#define ZCHTTPD_MAX_WORKERS 64
#define ZH_PATH_MAX 4096		/* a normalized request path */
#define ZH_MAX_SITES 64			/* virtual hosts (status counters) */

/* One site (virtual host, vhost.h): the command line's --root, and each
 * `server { }` block of the configuration file. */
struct zh_site {
	const char *name;		/* its first name ("" for none: the
					 * command line's site), for messages
					 * and the status endpoint */
	const char *root;		/* document root */
	const char *access_log;		/* NULL: off; "-": stdout */
	const char *where;		/* "FILE:LINE" of its block; NULL: the
					 * command line */
	bool is_default;		/* `default`: for unknown hosts */
	int stat_slot;			/* its requests counter (stats.h), set
					 * by the master; -1: none */
};

/* A name a site answers to, normalized (http_host.h); sorted by name. */
struct zh_site_name {
	const char *name;
	unsigned site;
};

struct zh_config {
	const char *root;		/* --root: the command line's site */
	const char *listen;		/* "127.0.0.1:8080" */
	int workers;			/* 0: one per core */
	unsigned max_conns;		/* per worker */
	uint64_t max_body_bytes;	/* a larger Content-Length is 413 */
	unsigned header_timeout_ms;	/* whole request head (slowloris) */
	unsigned keepalive_timeout_ms;	/* idle between requests */
	unsigned send_timeout_ms;	/* client not reading our response */
	unsigned shutdown_timeout_ms;	/* graceful stop: in-flight deadline */
	const char *access_log;		/* --access-log: that site's, and every
					 * site's without one of its own */
	const char *error_log;		/* NULL or "-": stderr (errlog.h) */
	int log_level;			/* enum zh_level */
	struct zh_site *sites;		/* in order (vhost.h) */
	unsigned nsites;
	unsigned default_site;		/* for hosts no site names */
	struct zh_site_name *names;	/* every site's names, sorted */
	unsigned nnames;
	const char *status_path;	/* NULL: no status endpoint */
	bool follow_symlinks_outside;	/* allow symlinks leaving the root */
	struct http_limits limits;
	uint64_t cache_bytes;		/* unified cache budget per worker */
	unsigned cache_ttl_ms;		/* revalidate entries older than this */
	uint64_t cache_small_max;	/* bodies up to this live in memory */
	const struct gds_policy *cache_policy;	/* replacement (gds.h) */
	bool cache_owns_pages;		/* --page-cache policy (cache.c) */
	bool precompressed;		/* serve FILE.br / FILE.gz (static.c) */
	unsigned io_threads;		/* helper threads per worker (0: none) */
	bool io_uring;			/* --event io_uring (event_uring.c) */
	struct zh_fcgi_route *fcgi;	/* FastCGI routes (fastcgi.h), in order */
	unsigned nfcgi;
	unsigned fcgi_timeout_ms;	/* no progress from an app: 504 */
	unsigned fcgi_conns;		/* connections per backend per worker */
	unsigned fcgi_queue;		/* requests waiting for one: 503 beyond */
	unsigned fcgi_idle_ms;		/* an unused connection is closed */
	struct zh_tls_config tls;	/* HTTPS (tls.h); tls.listen NULL: off */
	struct zh_tls *tls_ctx;		/* built by the master from tls */
};

/* Counters of one worker, in shared memory (only its worker writes). */
struct worker_stats {
	uint64_t requests;
	uint64_t responses[6];		/* by class: [1]=1xx .. [5]=5xx */
	uint64_t bytes_sent;
	uint64_t conns_open;
	uint64_t conns_total;
	uint64_t conns_refused;		/* over max_conns */
	uint64_t timeouts;
	uint64_t site_requests[ZH_MAX_SITES];	/* by site (vhost.h) */
	uint64_t zc_bytes_by_reference;	/* copied from zc_io_stats() */
	uint64_t zc_bytes_copied;
	struct cache_stats cache;	/* copied from cache_stats() */
	struct tls_stats tls;		/* HTTPS connections (tls.h) */
	pid_t pid;
};

struct zh_conn;
struct stats_area;
struct access_log;

/* A site as a worker serves it. */
struct zh_vhost {
	const struct zh_site *site;
	unsigned index;			/* in cfg->sites (cache keys, counters) */
	int rootfd;			/* O_PATH, opened by the master */
	int logfd;			/* from the master; -1: no log */
	struct access_log *log;		/* NULL: off; may be another site's */
	bool log_owner;			/* this site closes it */
	char *root_abs;			/* the root as an absolute path (CGI) */
};

struct zh_worker {
	const struct zh_config *cfg;
	struct ev_loop *loop;
	int index;
	int lfd;			/* listening socket */
	int tls_lfd;			/* HTTPS listening socket, or -1 */
	char tls_bounce[TLS_BOUNCE];	/* tls_send's copy of a record */
	int sigfd;
	bool stopping;			/* SIGTERM: finish and exit */
	uint64_t stop_deadline_ms;
	struct ev_timer_list t_header, t_idle, t_send, t_linger, t_fcgi;
	struct ev_timer_list t_fcgi_idle;
	struct ev_timer_list t_cache;	/* wakes the loop for cache_maintain */
	struct ev_timer cache_timer;
	struct zh_conn *conns;		/* list of open connections */
	struct zh_conn *posted;		/* connections with handler work */
	unsigned nconns;
	/* Input buffers kept for the next request (conn.c's in_get). */
	char *spare_in[32];
	unsigned nspare_in;
	struct worker_stats *stats;	/* this worker's slot */
	struct stats_area *all_stats;	/* every process's slot (stats.h) */
	int nworkers;
	struct zh_vhost *vhosts;	/* cfg->sites as this worker serves them */
	const int *site_rootfds;	/* from the master, one per site */
	const int *site_logfds;		/* one per site, -1: no log */
	struct cache *cache;
	struct diskio *diskio;		/* helper threads, or NULL */
	struct fcgi_upstream *upstreams;	/* one per FastCGI route */
	struct fcgi_link *fcgi_posted;	/* links to pump before sleeping */
	char uri[ZH_PATH_MAX + 1];	/* the request path being routed */
	/* Requests are parsed one at a time: header slots are per worker
	 * (a request that has to wait takes a copy, request.h). */
	struct http_header slots[256];
};

#endif
