/*
 * zchttpd.h - the server's shared types: configuration, per-worker state,
 * connections and counters.
 *
 * Process model (Flash's AMPED, nginx's master/worker): a master process
 * forks one worker per core; each worker binds its own SO_REUSEPORT socket
 * and runs one event loop (event.h: epoll, or io_uring with epoll inside it
 * under --event io_uring).  No thread per connection, no shared accept
 * lock.  The workers of a generation share one cache (cache.h) in a
 * mapping the master made before forking them; counters live in another
 * shared mapping so any worker can answer the status endpoint for all of
 * them.
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
#include "proxy.h"
#include "router.h"
#include "sock.h"
#include "tls_config.h"
#include "zc.h"

#define ZCHTTPD_MAX_WORKERS 64
#define ZH_PATH_MAX 4096		/* a normalized request path */
#define ZH_FCGI_PIPELINE_MAX 32	/* --fastcgi-pipeline: a link's fixed FIFO */
#define ZH_MAX_SITES 64			/* virtual hosts (status counters) */
#define ZH_BY_WORKERS UINT64_MAX	/* a default set by the worker count */

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
	uint64_t cache_bytes;		/* unified cache budget (all workers) */
	unsigned cache_entries;		/* files it describes at most */
	unsigned cache_ttl_ms;		/* revalidate entries older than this */
	uint64_t cache_small_max;	/* bodies up to this live in memory */
	uint64_t cache_copy_max;	/* ... and up to this leave by copy
					 * (both ZH_BY_WORKERS until
					 * options_for_workers) */
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
	unsigned fcgi_pipeline;		/* requests in flight per zero-copy link */
	unsigned fcgi_idle_ms;		/* an unused connection is closed */
	struct zh_proxy_config proxy;	/* reverse proxy routes (proxy.h) */
	struct zh_tls_config tls;	/* HTTPS (tls.h); tls.listen NULL: off */
	struct zh_tls *tls_ctx;		/* built by the master from tls */
	struct zh_h2_config {		/* HTTP/2 (h2.h) */
		bool on;		/* --http2: h2 by ALPN, h2c by preface */
		bool c_only;		/* --h2c-only: the plain port is h2c's */
		unsigned max_streams;	/* concurrent streams per connection */
		unsigned max_header_list;	/* a request head's fields, as
						 * RFC 9113 counts them */
		unsigned idle_timeout_ms;	/* no stream: GOAWAY, close */
		unsigned settings_timeout_ms;	/* our SETTINGS unacknowledged */
	} h2;
};

/* HTTP/2 on one worker (h2.h): what the status endpoint tells of it. */
struct h2_stats {
	uint64_t conns;			/* connections that spoke HTTP/2 */
	uint64_t conns_tls;		/* ... h2 over TLS (the rest h2c) */
	uint64_t requests;		/* streams answered as requests */
	uint64_t resets_received;	/* RST_STREAM from clients */
	uint64_t goaways_sent;
	uint64_t refused;		/* connections ended for a flood */
	uint64_t bytes_by_reference;	/* sent on HTTP/2 connections by */
	uint64_t bytes_copied;		/* reference or by copy (libzc's
					 * account of their sends) */
};

struct fcgi_stats {
	uint64_t requests;		/* sent to FastCGI applications */
	uint64_t pipelined;		/* ... behind another in flight on
					 * their connection */
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
	struct h2_stats h2;		/* HTTP/2 connections */
	struct fcgi_stats fcgi;		/* FastCGI (fcgi_upstream.c) */
	struct proxy_stats proxy;	/* reverse proxy (proxy.h) */
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
	int sigfd;
	bool stopping;			/* SIGTERM: finish and exit */
	uint64_t stop_deadline_ms;
	struct ev_timer_list t_header, t_idle, t_send, t_linger, t_fcgi;
	struct ev_timer_list t_fcgi_idle;
	struct ev_timer_list t_h2_idle, t_h2_settings;
	struct ev_timer_list t_cache;	/* wakes the loop for cache_maintain */
	struct ev_timer cache_timer;
	struct zh_conn *conns;		/* list of open connections */
	unsigned nconns;
	struct sock_env socks;		/* what its connections' sockets
					 * share: buffers, TLS (sock.h) */
	struct worker_stats *stats;	/* this worker's slot */
	struct stats_area *all_stats;	/* every process's slot (stats.h) */
	int nworkers;
	struct zh_vhost *vhosts;	/* cfg->sites as this worker serves them */
	struct zh_router router;	/* which handler answers (router.h) */
	const int *site_rootfds;	/* from the master, one per site */
	const int *site_logfds;		/* one per site, -1: no log */
	struct cache_zone *cache_zone;	/* the generation's, from the master */
	struct cache *cache;		/* this worker's handle on it */
	struct diskio *diskio;		/* helper threads, or NULL */
	struct fcgi_upstream *upstreams;	/* one per FastCGI route */
	struct proxy_worker *proxy;	/* upstream groups (proxy_int.h) */
	char uri[ZH_PATH_MAX + 1];	/* the request path being routed
					 * (router.c normalizes into it) */
	/* Requests are parsed one at a time: header slots are per worker
	 * (a request that has to wait takes a copy, request.h). */
	struct http_header slots[256];
};

/* A request parsed (HTTP/1.1) or its head received (HTTP/2), on site v. */
static inline void zh_count_request(struct zh_worker *w,
				    const struct zh_vhost *v)
{
	w->stats->requests++;
	if (v->site->stat_slot >= 0)
		w->stats->site_requests[v->site->stat_slot]++;
}

/* A response of this status sent (or begun). */
static inline void zh_count_status(struct zh_worker *w, int status)
{
	int cls = status / 100;

	if (cls >= 1 && cls <= 5)
		w->stats->responses[cls]++;
}

#endif
