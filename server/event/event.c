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
#include "event_int.h"

/* ------------------------------------------------------------ lists */

static void node_append(struct ev_node *head, struct ev_node *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static void node_unlink(struct ev_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = NULL;
}

/* A timer from its node (the node is its first member). */
#define timer_of(n) ((struct ev_timer *)(n))

uint64_t ev_clock_ms(void)
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
	l->now_ms = ev_clock_ms();
	l->posted.prev = l->posted.next = &l->posted;
	*out = l;
	return 0;
}

int ev_loop_create_ring(struct ev_loop **out)
{
	int err = ev_loop_create(out);

	if (err)
		return err;
	err = ev_ring_create(*out);
	if (err) {
		ev_loop_destroy(*out);
		*out = NULL;
	}
	return err;
}

bool ev_has_ring(const struct ev_loop *loop)
{
	return loop->ring != NULL;
}

void ev_loop_destroy(struct ev_loop *loop)
{
	if (!loop)
		return;
	ev_ring_destroy(loop);
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
	l->head.node.prev = l->head.node.next = &l->head.node;
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
	node_unlink(&t->node);
	t->list = NULL;
}

void ev_timer_arm(struct ev_loop *loop, struct ev_timer_list *l,
		  struct ev_timer *t, ev_timer_fn *fn)
{
	ev_timer_disarm(t);
	t->fn = fn;
	t->deadline_ms = loop->now_ms + l->duration_ms;
	/* Same duration for all: the tail always has the latest deadline. */
	node_append(&l->head.node, &t->node);
	t->list = l;
	if (t->deadline_ms < loop->expire_from)
		loop->expire_from = t->deadline_ms;
}

void ev_expire(struct ev_loop *loop)
{
	if (loop->now_ms < loop->expire_from)
		return;
	/* Timers the callbacks arm lower it again (ev_timer_arm). */
	loop->expire_from = UINT64_MAX;
	for (unsigned i = 0; i < loop->nlists; i++) {
		struct ev_timer_list *l = loop->lists[i];

		while (l->head.node.next != &l->head.node &&
		       timer_of(l->head.node.next)->deadline_ms <=
		       loop->now_ms) {
			struct ev_timer *t = timer_of(l->head.node.next);

			ev_timer_disarm(t);
			t->fn(loop, t);
		}
		if (l->head.node.next != &l->head.node &&
		    timer_of(l->head.node.next)->deadline_ms <
		    loop->expire_from)
			loop->expire_from =
				timer_of(l->head.node.next)->deadline_ms;
	}
}

/* Milliseconds until the earliest deadline, -1 if none; ev_expire's
 * expire_from made exact. */
int ev_next_timeout(struct ev_loop *loop)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < loop->nlists; i++) {
		const struct ev_timer_list *l = loop->lists[i];
		const struct ev_timer *first =
			(const struct ev_timer *)l->head.node.next;

		if (first != &l->head && first->deadline_ms < best)
			best = first->deadline_ms;
	}
	loop->expire_from = best;
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

/* ------------------------------------------------------------ posted */

void ev_post(struct ev_loop *loop, struct ev_post *p)
{
	if (!ev_posted(p))
		node_append(&loop->posted, &p->node);
}

void ev_unpost(struct ev_post *p)
{
	if (ev_posted(p))
		node_unlink(&p->node);
}

void ev_before_sleep(struct ev_loop *loop)
{
	while (loop->posted.next != &loop->posted) {
		struct ev_post *p = (struct ev_post *)loop->posted.next;

		ev_unpost(p);
		p->fn(p);
	}
	if (loop->before_sleep)
		loop->before_sleep(loop, loop->before_sleep_data);
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

/* Wait at most timeout_ms for epoll's events and call their handlers;
 * 0 or a negative errno from epoll_wait (EINTR is 0). */
int ev_dispatch_epoll(struct ev_loop *loop, int timeout_ms)
{
	struct epoll_event evs[EV_BATCH];
	int n = epoll_wait(loop->epfd, evs, EV_BATCH, timeout_ms);

	loop->now_ms = ev_clock_ms();
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		int fd = evs[i].data.fd;
		struct ev_handler *h;

		/* A handler earlier in this batch may have closed fd: its
		 * slot is then cleared. */
		if ((size_t)fd >= loop->nh || !loop->h[fd].fn)
			continue;
		h = &loop->h[fd];
		h->fn(loop, fd, evs[i].events, h->data);
	}
	return 0;
}

int ev_run(struct ev_loop *loop)
{
	if (loop->ring)
		return ev_ring_run(loop);
	loop->stop = false;
	while (!loop->stop) {
		int err;

		ev_before_sleep(loop);
		if (loop->stop)
			break;
		err = ev_dispatch_epoll(loop, ev_next_timeout(loop));
		if (err)
			return err;
		ev_expire(loop);
	}
	return 0;
}
