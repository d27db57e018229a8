/* worker.h - a worker process's main loop. */
#ifndef ZC_WORKER_H
#define ZC_WORKER_H

#include "zchttpd.h"

/* Run until stopped; w->cfg, lfd, rootfd, logfd, stats, all_stats,
 * nworkers and index are set by the master.  Returns 0 or a negative errno. */
int worker_run(struct zh_worker *w);

#endif
