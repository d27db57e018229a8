/*
 * upstream.h - connections to HTTP upstream servers, per worker.
 *
 * Each group (proxy.h) has, in each worker, per server a pool of idle
 * keep-alive connections and a count of all its connections (bounded by
 * the group's `conns`), and one bounded queue of requests waiting for a
 * connection when every usable server is at its bound.  A request asks
 * for a connection with up_acquire(): an idle one at once, a new one once
 * connect(2) completes, or a place in the queue.  The server is chosen by
 * the group's balancing (weighted round robin, least connections, or a
 * consistent hash of the request's key), among the servers that are in
 * service and that this request has not tried yet; backups only when no
 * primary is usable.
 *
 * Health.  Passively: a failure (refused, reset or timed out before a
 * response head, a head that does not parse) counts against the server,
 * and max_fails in a row take it out of service for fail_ms; a response
 * head puts the count back to zero.  Actively (upstream_health.c): a GET
 * every health_ms, health_fall failures in a row take it out, health_rise
 * passes bring it back.
 *
 * Connections are non-blocking and registered once, edge-triggered, for
 * input, output and hang-up: a keep-alive request costs no epoll_ctl.  So
 * the rule for the request that holds one: after any pause of its own
 * (back-pressure), it reads or writes again at once rather than waiting
 * for an event -- no new edge comes for bytes that were already there.
 * An idle connection that becomes readable (the server closed it, or sent
 * what nobody asked for) is closed; one whose server hung up while it
 * served (EPOLLRDHUP) is never pooled.
 */
#ifndef ZC_UPSTREAM_H
#define ZC_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "proxy.h"
#include "zc.h"

struct zh_worker;
struct up_conn;
struct up_group;

/* A request, as the pool sees it: embedded in the proxied request. */
struct up_client {
	/* A connection is ready: connected (or idle and reused); send. */
	void (*attached)(struct up_client *cl, struct up_conn *uc);
	/* None can be had: 502 (refused, failed), 503 (queue full, no
	 * server in service, no connection free in time), 504 (connect
	 * timed out).  why: for the error log. */
	void (*failed)(struct up_client *cl, int status, const char *why);
	/* The attached connection's epoll events (EPOLLIN, EPOLLOUT,
	 * EPOLLRDHUP, EPOLLERR, EPOLLHUP). */
	void (*io)(struct up_client *cl, uint32_t events);
	/* The attached connection's timer ran out (up_arm). */
	void (*timeout)(struct up_client *cl);
	uint32_t hash;			/* the key's hash (ZH_BALANCE_HASH) */
	uint64_t tried;			/* servers tried, by index in the
					 * group (bit i) */
	/* Private: the queue (bounded in time by the group's timeout), or
	 * the connection being opened. */
	struct up_group *group;
	struct up_client *qnext, *qprev;
	struct ev_timer qt;
	bool queued;
	struct up_conn *opening;
};

/* Ask for a connection to the group's servers.  Returns 0 (attached, or
 * failed, will be called -- never from inside this call), or 503 when the
 * queue is full or no server is in service. */
int up_acquire(struct zh_worker *w, unsigned group, struct up_client *cl);
/* cl gives up before it was attached (its request went away). */
void up_cancel(struct zh_worker *w, struct up_client *cl);

/* The request is done with uc.  reusable: the response was read to its
 * end and the connection may carry another request; else it is closed. */
void up_release(struct up_conn *uc, bool reusable);
/* uc failed in a way that is the server's fault (reset or timeout before
 * a response head, a head that does not parse): counted against its
 * health, and closed. */
void up_fail(struct up_conn *uc, const char *why);
/* The server answered with a head: its failures in a row are forgotten. */
void up_answered(struct up_conn *uc);

int up_fd(const struct up_conn *uc);
zc_sink *up_sink(struct up_conn *uc);
const struct zh_upstream_server *up_server(const struct up_conn *uc);
/* It served a request before this one (a keep-alive connection the
 * server may have closed meanwhile: failing at once is no sign against
 * the server, and an idempotent request may go again). */
bool up_reused(const struct up_conn *uc);
/* The server hung up its side (EPOLLRDHUP seen). */
bool up_hung_up(const struct up_conn *uc);
/* The group's timeout (first byte, between reads) from now; or off. */
void up_arm(struct up_conn *uc);
void up_disarm(struct up_conn *uc);
/* Counters of uc's server (stats.h). */
struct proxy_server_stats *up_stats(struct up_conn *uc);
/* The group's settings. */
const struct zh_upstream_group *up_group(const struct up_conn *uc);

/* 32-bit FNV-1a, for the hash key and the ring. */
uint32_t up_hash(const void *p, size_t n, uint32_t h);
#define UP_HASH_INIT 2166136261u

/* Per worker (proxy.h's proxy_worker_init/fini call these). */
int up_worker_init(struct zh_worker *w);
void up_worker_fini(struct zh_worker *w);
/* The worker stops: idle connections close, checks end. */
void up_worker_stop(struct zh_worker *w);

/* upstream_health.c, for upstream.c: a server's state as the checks see
 * it, changed by them (up_set_checked). */
struct up_server;
void up_set_checked(struct zh_worker *w, unsigned server, bool healthy);
int up_health_init(struct zh_worker *w);
void up_health_fini(struct zh_worker *w);

#endif
