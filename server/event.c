/*
 * event.c - epoll loop with O(1) deadline lists (see event.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "event.h"

#define EV_BATCH 256
#define EV_MAX_TIMER_LISTS 8

struct ev_handler {
	ev_io_fn *fn;
	void *data;
};

struct ev_loop {
	int epfd;
	bool stop;
	uint64_t now_ms;
	/* Handlers indexed by fd, grown on demand. */
	struct ev_handler *h;
	size_t nh;
	struct ev_timer_list *lists[EV_MAX_TIMER_LISTS];
	unsigned nlists;
	void (*before_sleep)(struct ev_loop *, void *);
	void *before_sleep_data;
};

static uint64_t clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int ev_loop_create(struct ev_loop **out)
{
	struct ev_loop *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int err = -errno;

		free(l);
		return err;
	}
	l->now_ms = clock_ms();
	*out = l;
	return 0;
}

void ev_loop_destroy(struct ev_loop *loop)
{
	if (!loop)
		return;
	close(loop->epfd);
	free(loop->h);
	free(loop);
}

static int set_handler(struct ev_loop *l, int fd, ev_io_fn *fn, void *data)
{
	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= l->nh) {
		size_t n = l->nh ? l->nh : 64;
		struct ev_handler *h;

		while (n <= (size_t)fd)
			n *= 2;
		h = realloc(l->h, n * sizeof(*h));
		if (!h)
			return -ENOMEM;
		memset(h + l->nh, 0, (n - l->nh) * sizeof(*h));
		l->h = h;
		l->nh = n;
	}
	l->h[fd].fn = fn;
	l->h[fd].data = data;
	return 0;
}

static int ctl(struct ev_loop *l, int op, int fd, uint32_t events,
	       ev_io_fn *fn, void *data)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };
	int err = set_handler(l, fd, fn, data);

	if (err)
		return err;
	if (epoll_ctl(l->epfd, op, fd, &ev) < 0)
		return -errno;
	return 0;
}

int ev_add(struct ev_loop *loop, int fd, uint32_t events, ev_io_fn *fn,
	   void *data)
{
	return ctl(loop, EPOLL_CTL_ADD, fd, events, fn, data);
}

int ev_mod(struct ev_loop *loop, int fd, uint32_t events, ev_io_fn *fn,
	   void *data)
{
	return ctl(loop, EPOLL_CTL_MOD, fd, events, fn, data);
}

void ev_forget(struct ev_loop *loop, int fd)
{
	if (fd >= 0 && (size_t)fd < loop->nh)
		loop->h[fd].fn = NULL;
}

int ev_del(struct ev_loop *loop, int fd)
{
	if (fd >= 0 && (size_t)fd < loop->nh)
		loop->h[fd].fn = NULL;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL) < 0)
		return -errno;
	return 0;
}

/* ------------------------------------------------------------ timers */

void ev_timer_list_init(struct ev_timer_list *l, uint64_t duration_ms)
{
	l->head.prev = l->head.next = &l->head;
	l->head.list = l;
	l->duration_ms = duration_ms;
}

int ev_timer_list_register(struct ev_loop *loop, struct ev_timer_list *l)
{
	if (loop->nlists == EV_MAX_TIMER_LISTS)
		return -ENOSPC;
	loop->lists[loop->nlists++] = l;
	return 0;
}

void ev_timer_disarm(struct ev_timer *t)
{
	if (!t->list)
		return;
	t->prev->next = t->next;
	t->next->prev = t->prev;
	t->prev = t->next = NULL;
	t->list = NULL;
}

void ev_timer_arm(struct ev_loop *loop, struct ev_timer_list *l,
		  struct ev_timer *t, ev_timer_fn *fn)
{
	ev_timer_disarm(t);
	t->fn = fn;
	t->deadline_ms = loop->now_ms + l->duration_ms;
	/* Same duration for all: the tail always has the latest deadline. */
	t->prev = l->head.prev;
	t->next = &l->head;
	l->head.prev->next = t;
	l->head.prev = t;
	t->list = l;
}

static void expire(struct ev_loop *loop)
{
	for (unsigned i = 0; i < loop->nlists; i++) {
		struct ev_timer_list *l = loop->lists[i];

		while (l->head.next != &l->head &&
		       l->head.next->deadline_ms <= loop->now_ms) {
			struct ev_timer *t = l->head.next;

			ev_timer_disarm(t);
			t->fn(loop, t);
		}
	}
}

/* Milliseconds until the earliest deadline, -1 if none. */
static int next_timeout(const struct ev_loop *loop)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < loop->nlists; i++) {
		const struct ev_timer_list *l = loop->lists[i];

		if (l->head.next != &l->head && l->head.next->deadline_ms < best)
			best = l->head.next->deadline_ms;
	}
	if (best == UINT64_MAX)
		return -1;
	if (best <= loop->now_ms)
		return 0;
	return best - loop->now_ms > 60000 ? 60000 : (int)(best - loop->now_ms);
}

uint64_t ev_now_ms(const struct ev_loop *loop)
{
	return loop->now_ms;
}

void ev_set_before_sleep(struct ev_loop *loop,
			 void (*fn)(struct ev_loop *, void *), void *data)
{
	loop->before_sleep = fn;
	loop->before_sleep_data = data;
}

void ev_stop(struct ev_loop *loop)
{
	loop->stop = true;
}

int ev_run(struct ev_loop *loop)
{
	struct epoll_event evs[EV_BATCH];

	loop->stop = false;
	while (!loop->stop) {
		int n;

		if (loop->before_sleep)
			loop->before_sleep(loop, loop->before_sleep_data);
		if (loop->stop)
			break;
		n = epoll_wait(loop->epfd, evs, EV_BATCH, next_timeout(loop));
		loop->now_ms = clock_ms();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			struct ev_handler *h;

			/* A handler earlier in this batch may have closed
			 * fd: its slot is then cleared. */
			if ((size_t)fd >= loop->nh || !loop->h[fd].fn)
				continue;
			h = &loop->h[fd];
			h->fn(loop, fd, evs[i].events, h->data);
		}
		expire(loop);
	}
	return 0;
}
