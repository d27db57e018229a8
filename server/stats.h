/*
 * stats.h - the counters every zchttpd process shares with the others.
 *
 * One anonymous shared mapping, created by the master before it forks.
 * Every worker process (current generation or one still draining after a
 * reload) writes only its own slot, so a reload never has two processes
 * adding to the same counters.  When the master reaps a worker it folds the
 * slot's counters into `retired` and frees the slot: totals stay monotonic
 * across reloads and worker restarts, as Prometheus counters must.  Gauges
 * (open connections, cache bytes/entries/pins) describe live processes and
 * are dropped with them.
 */
#ifndef ZCHTTPD_STATS_H
#define ZCHTTPD_STATS_H

#include <stdatomic.h>
#include <sys/types.h>

#include "http_host.h"
#include "zchttpd.h"

/* Current generation plus as many draining ones as the master tracks. */
#define ZCHTTPD_STATS_SLOTS (5 * ZCHTTPD_MAX_WORKERS)

struct stats_area {
	atomic_uint seq;		/* odd while the master folds a slot */
	struct worker_stats retired;	/* counters of reaped workers */
	struct worker_stats slot[ZCHTTPD_STATS_SLOTS];
	/* Which site each site_requests[] counter counts, by name: the
	 * master adds names, never removes or reorders one, so a counter
	 * keeps its meaning across reloads that add, drop or reorder
	 * sites.  "" : unused. */
	char site_names[ZH_MAX_SITES][HTTP_HOST_MAX + 1];
};

struct stats_area *stats_area_create(void);

/* Master, before fork: a free slot, marked taken (pid -1) until the fork
 * tells whose it is; NULL when every slot is in use. */
struct worker_stats *stats_claim(struct stats_area *a);

/* Master, after waitpid: fold the slot of `pid` (if any) into `retired`. */
void stats_retire(struct stats_area *a, pid_t pid);

/* Master: the site_requests[] index of the site called `name` (new names
 * take the next free one), or -1 when ZH_MAX_SITES names are taken. */
int stats_site_slot(struct stats_area *a, const char *name);

/* Anyone: the sum over retired and live slots, consistent with respect to
 * folding (a slot is never counted twice or missed while it moves). */
void stats_sum(const struct stats_area *a, struct worker_stats *total);

#endif
