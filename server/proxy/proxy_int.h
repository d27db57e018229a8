/*
 * proxy_int.h - what the proxy's files share: a worker's upstream groups
 * and servers (upstream.c keeps them; upstream_health.c checks them).
 */
#ifndef ZC_PROXY_INT_H
#define ZC_PROXY_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "proxy.h"
#include "upstream.h"

struct up_conn;

/* A server as one worker uses it. */
struct up_server {
	const struct zh_upstream_server *conf;
	struct up_group *g;
	struct up_conn *idle;		/* most recently used first */
	unsigned nidle;
	unsigned nconns;		/* every connection, whatever state */
	unsigned fails;			/* failures in a row */
	uint64_t down_until;		/* out of service (passive) until */
	bool checked_down;		/* out of service (active checks) */
	int cw;				/* round robin's current weight */
	struct proxy_server_stats *st;	/* shared counters (stats.h) */
};

/* A point of the consistent-hash ring. */
struct up_point {
	uint32_t hash;
	unsigned server;		/* in the group */
};

struct up_group {
	const struct zh_upstream_group *conf;
	struct zh_worker *w;
	struct up_server *s;		/* conf->n */
	struct up_client *qhead, *qtail;
	unsigned nqueued;
	unsigned rr;			/* least-conn's tie breaker */
	struct up_point *ring;		/* ZH_BALANCE_HASH */
	unsigned nring;
	struct ev_timer_list *t_connect, *t_timeout, *t_idle;
};

struct up_health;

/* A worker's proxy state (w->proxy). */
struct proxy_worker {
	struct up_group *groups;
	unsigned ngroups;
	struct up_server **servers;	/* by cfg->proxy.servers index */
	struct up_health *health;	/* upstream_health.c */
	struct zc_pipe **pipes;		/* spare splice pipes (proxy.c) */
	unsigned npipes;
	bool pipes_taken;		/* one was taken since the last tick */
	struct ev_timer_list *t_pipes;	/* spares unused for a tick close */
	struct ev_timer pipe_timer;
	/* Timer lists by duration, shared by every group and check that
	 * times out after as long (the loop has room for a few only). */
	struct ev_timer_list **lists;
	unsigned nlists;
};

bool up_in_service(const struct up_server *s, uint64_t now);
/* The worker's timer list of this duration (made and registered with the
 * loop the first time); NULL when the loop has no room for another. */
struct ev_timer_list *up_timer_list(struct zh_worker *w, unsigned ms);
void up_enqueue(struct up_group *g, struct up_client *cl);
void up_dequeue(struct up_group *g, struct up_client *cl);
void up_connect_failed(struct up_conn *uc, int err);

#endif
