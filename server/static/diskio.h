/*
 * diskio.h - helper threads for work that can block on the disk.
 *
 * Flash's AMPED design: the event loop never waits for a disk.  Opening a
 * file (path lookup), stat, reading a small body into the cache and
 * starting readahead of a large one can all sleep on I/O when the data is
 * not in memory, so a worker hands them to a few helper threads and goes on
 * serving other connections; a finished job comes back through an eventfd
 * in the loop, which calls the job's completion callback.  diskio knows
 * nothing of what a job is for: whoever submits it decides in `done` what
 * its result means (and what it means that its requester went away).
 */
#ifndef ZC_DISKIO_H
#define ZC_DISKIO_H

#include <stdbool.h>

struct diskio;

struct disk_job {
	struct disk_job *next;
	void (*work)(struct disk_job *job);	/* runs on a helper thread */
	void (*done)(struct disk_job *job);	/* then on the loop thread;
						 * frees the job */
};

/* Start n helper threads.  Returns 0 or a negative errno. */
int diskio_start(int nthreads, struct diskio **out);
/* The eventfd to poll: readable when finished jobs are waiting. */
int diskio_fd(const struct diskio *d);
void diskio_submit(struct diskio *d, struct disk_job *job);
/* Call `done` for every finished job (in completion order); clears the
 * eventfd.  The loop calls this when diskio_fd() is readable. */
void diskio_complete(struct diskio *d);
/* Finish the queued jobs, stop the threads, call `done` for every
 * finished job, and free d. */
void diskio_stop(struct diskio *d);

#endif
