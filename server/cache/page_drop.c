/*
 * page_drop.c - see page_drop.h.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "page_drop.h"

/* After the first drop: when to try again.  A client reading a response at
 * loopback speed has it all within the first; a slow one, mostly within
 * the later ones (an ASan build under load was seen still holding some
 * pages after a second). */
static const unsigned retry_ms[] = { 100, 1000, 5000 };
#define TRIES (sizeof(retry_ms) / sizeof(retry_ms[0]))

static void drop_now(zc_file *f)
{
	posix_fadvise(zc_file_fd(f), 0, 0, POSIX_FADV_DONTNEED);
}

void page_drop(struct page_drop_queue *q, zc_file *f, uint64_t now_ms)
{
	struct zc_file_version v;

	drop_now(f);
	if (q->n == PAGE_DROP_MAX)
		return;
	zc_file_version(f, &v);
	q->q[q->n++] = (struct page_drop){
		.f = zc_file_ref(f), .dev = v.dev, .ino = v.ino,
		.due_ms = now_ms + retry_ms[0],
	};
}

void page_drop_cancel(struct page_drop_queue *q, uint64_t dev, uint64_t ino)
{
	for (unsigned i = 0; i < q->n;) {
		if (q->q[i].dev == dev && q->q[i].ino == ino) {
			zc_file_release(q->q[i].f);
			q->q[i] = q->q[--q->n];
			continue;
		}
		i++;
	}
}

int page_drop_run(struct page_drop_queue *q, uint64_t now_ms)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < q->n;) {
		struct page_drop *d = &q->q[i];

		if (d->due_ms <= now_ms) {
			drop_now(d->f);
			if (++d->tries == TRIES) {
				zc_file_release(d->f);
				*d = q->q[--q->n];	/* look at i again */
				continue;
			}
			d->due_ms = now_ms + retry_ms[d->tries];
		}
		if (d->due_ms < next)
			next = d->due_ms;
		i++;
	}
	if (next == UINT64_MAX)
		return -1;
	return (int)(next - now_ms);
}

void page_drop_clear(struct page_drop_queue *q)
{
	while (q->n)
		zc_file_release(q->q[--q->n].f);
}
