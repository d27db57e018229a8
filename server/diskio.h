/*
 * diskio.h - helper threads for work that can block on the disk.
 *
 * Flash's AMPED design: the event loop never waits for a disk.  Opening a
 * file (path lookup), stat, reading a small body into the cache and
 * starting readahead of a large one can all sleep on I/O when the data is
 * not in memory, so a worker hands them to a few helper threads and goes on
 * serving other connections; a finished job comes back through an eventfd
 * in the loop.  Jobs carry no pointer into connection state: a connection
 * that goes away meanwhile just drops its claim (job->owner = NULL) and the
 * loop discards the result.
 */
#ifndef ZC_DISKIO_H
#define ZC_DISKIO_H

#include <stdbool.h>

struct diskio;

struct disk_job {
	struct disk_job *next;
	void (*work)(struct disk_job *job);	/* runs on a helper thread */
	void *owner;			/* loop thread only; NULL: abandoned */
};

/* Start n helper threads.  Returns 0 or a negative errno. */
int diskio_start(int nthreads, struct diskio **out);
/* The eventfd to poll: readable when finished jobs are waiting. */
int diskio_fd(const struct diskio *d);
void diskio_submit(struct diskio *d, struct disk_job *job);
/* Finished jobs (in completion order), and clears the eventfd. */
struct disk_job *diskio_take_done(struct diskio *d);
/* Finish the queued jobs, stop the threads, free d, and return the
 * finished jobs nobody took (for the caller to free). */
struct disk_job *diskio_stop(struct diskio *d);

#endif
