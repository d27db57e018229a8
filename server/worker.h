/* worker.h - a worker process's main loop. */
#ifndef ZC_WORKER_H
#define ZC_WORKER_H

#include <signal.h>

#include "zchttpd.h"

/* Run until stopped; w->cfg, lfd, rootfd, logfd, stats, all_stats,
 * nworkers and index are set by the master.  Returns 0 or a negative errno. */
int worker_run(struct zh_worker *w);

/* Publish the counters kept inside libzc and the cache to this worker's
 * slot (the loop does before it sleeps; the status page before it sums
 * the slots, so that its own worker's counts are current). */
void worker_publish_stats(struct zh_worker *w);

/* The signals master and workers take synchronously (sigwaitinfo,
 * signalfd) rather than by handler: stop (TERM, INT, QUIT), reload (HUP),
 * reopen the logs (USR1).  Fills set with them and blocks them. */
void block_control_signals(sigset_t *set);

#endif
