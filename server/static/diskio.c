/*
 * diskio.c - a small pool of helper threads (see diskio.h).  One mutex
 * guards both queues; the work itself runs unlocked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "diskio.h"

#define DISKIO_MAX_THREADS 64

struct diskio {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct disk_job *todo, *todo_tail;
	struct disk_job *done, *done_tail;
	bool stop;
	int efd;
	int n;
	pthread_t th[DISKIO_MAX_THREADS];
};

static void *helper(void *arg)
{
	struct diskio *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct disk_job *j;
		bool was_empty;

		while (!d->todo && !d->stop)
			pthread_cond_wait(&d->cv, &d->mu);
		if (!d->todo)
			break;
		j = d->todo;
		d->todo = j->next;
		if (!d->todo)
			d->todo_tail = NULL;
		pthread_mutex_unlock(&d->mu);

		j->work(j);

		pthread_mutex_lock(&d->mu);
		j->next = NULL;
		was_empty = !d->done;
		if (d->done_tail)
			d->done_tail->next = j;
		else
			d->done = j;
		d->done_tail = j;
		if (was_empty) {
			/* One wake-up per batch: the loop takes them all. */
			uint64_t one = 1;
			ssize_t r = write(d->efd, &one, sizeof(one));

			(void)r;	/* counter full: already readable */
		}
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int diskio_start(int nthreads, struct diskio **out)
{
	struct diskio *d;
	int err;

	*out = NULL;
	if (nthreads < 1 || nthreads > DISKIO_MAX_THREADS)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->efd < 0) {
		err = -errno;
		free(d);
		return err;
	}
	for (d->n = 0; d->n < nthreads; d->n++) {
		err = pthread_create(&d->th[d->n], NULL, helper, d);
		if (err) {
			diskio_stop(d);	/* no job was ever queued */
			return -err;
		}
	}
	*out = d;
	return 0;
}

int diskio_fd(const struct diskio *d)
{
	return d->efd;
}

void diskio_submit(struct diskio *d, struct disk_job *job)
{
	job->next = NULL;
	pthread_mutex_lock(&d->mu);
	if (d->todo_tail)
		d->todo_tail->next = job;
	else
		d->todo = job;
	d->todo_tail = job;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
}

static void run_done(struct disk_job *j)
{
	struct disk_job *next;

	for (; j; j = next) {
		next = j->next;
		j->done(j);
	}
}

void diskio_complete(struct diskio *d)
{
	struct disk_job *list;
	uint64_t v;
	ssize_t r;

	pthread_mutex_lock(&d->mu);
	r = read(d->efd, &v, sizeof(v));
	(void)r;
	list = d->done;
	d->done = d->done_tail = NULL;
	pthread_mutex_unlock(&d->mu);
	run_done(list);
}

void diskio_stop(struct diskio *d)
{
	struct disk_job *left;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	for (int i = 0; i < d->n; i++)
		pthread_join(d->th[i], NULL);
	left = d->done;
	close(d->efd);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d);
	run_done(left);
}
