/*
 * event_int.h - the loop's state, shared by event.c (epoll, timers) and
 * event_uring.c (the io_uring loop, --event io_uring).
 */
#ifndef ZC_EVENT_INT_H
#define ZC_EVENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "event_ring.h"

#define EV_BATCH 256
#define EV_MAX_TIMER_LISTS 32

struct ev_handler {
	ev_io_fn *fn;
	void *data;
};

struct ev_loop {
	int epfd;
	bool stop;
	uint64_t now_ms;
	/* No armed timer's deadline is earlier: until now_ms reaches it,
	 * ev_expire has nothing to do and looks at no list (ev_next_timeout
	 * makes it exact before each wait, ev_timer_arm lowers it; a
	 * disarmed timer leaves it early, which costs one look). */
	uint64_t expire_from;
	/* Handlers indexed by fd, grown on demand. */
	struct ev_handler *h;
	size_t nh;
	struct ev_timer_list *lists[EV_MAX_TIMER_LISTS];
	unsigned nlists;
	struct ev_node posted;		/* sentinel of the posted queue */
	void (*before_sleep)(struct ev_loop *, void *);
	void *before_sleep_data;
	struct ev_ring *ring;		/* NULL: plain epoll (event_uring.c) */
};

/* What both loops do with their results (event.c). */
int ev_dispatch_epoll(struct ev_loop *loop, int timeout_ms);
void ev_expire(struct ev_loop *loop);
int ev_next_timeout(struct ev_loop *loop);
uint64_t ev_clock_ms(void);
/* The posted work, then the before_sleep hook: what both loops do before
 * they wait. */
void ev_before_sleep(struct ev_loop *loop);

/* The io_uring loop (event_uring.c). */
int ev_ring_create(struct ev_loop *loop);
void ev_ring_destroy(struct ev_loop *loop);
int ev_ring_run(struct ev_loop *loop);

#endif
