/*
 * event.h - the event loop: epoll for descriptors, deadline lists for
 * timeouts.  One loop per worker process, never shared between threads.
 *
 * Timeouts: a server has a handful of timeout durations (reading headers,
 * idle keep-alive, a stalled send), and every connection in one class gets
 * the same duration.  So each class is a FIFO list ordered by deadline:
 * arming appends at the tail, re-arming moves to the tail, and expiry pops
 * from the head -- all O(1), with 10,000 idle connections as cheap as ten.
 */
#ifndef ZC_EVENT_H
#define ZC_EVENT_H

#include <stdbool.h>
#include <stdint.h>

struct ev_loop;

/* Called when fd is ready; `events` is the epoll mask (EPOLLIN, ...). */
typedef void ev_io_fn(struct ev_loop *loop, int fd, uint32_t events,
		      void *data);

struct ev_timer;
typedef void ev_timer_fn(struct ev_loop *loop, struct ev_timer *t);

/* Embedded in the object it times out (container_of to get back). */
struct ev_timer {
	struct ev_timer *prev, *next;
	struct ev_timer_list *list;	/* NULL when not armed */
	uint64_t deadline_ms;
	ev_timer_fn *fn;
};

/* All timers of one duration. */
struct ev_timer_list {
	struct ev_timer head;		/* sentinel */
	uint64_t duration_ms;
};

int ev_loop_create(struct ev_loop **out);
void ev_loop_destroy(struct ev_loop *loop);

/* Watch fd for `events` (EPOLLIN/EPOLLOUT/EPOLLRDHUP; edge-triggered if the
 * caller includes EPOLLET).  One registration per fd. */
int ev_add(struct ev_loop *loop, int fd, uint32_t events, ev_io_fn *fn,
	   void *data);
int ev_mod(struct ev_loop *loop, int fd, uint32_t events, ev_io_fn *fn,
	   void *data);
int ev_del(struct ev_loop *loop, int fd);
/* Forget fd's handler without a system call, for an fd about to be
 * closed (close removes it from epoll by itself). */
void ev_forget(struct ev_loop *loop, int fd);

void ev_timer_list_init(struct ev_timer_list *l, uint64_t duration_ms);
/* Arm (or re-arm) t to fire duration_ms from now. */
void ev_timer_arm(struct ev_loop *loop, struct ev_timer_list *l,
		  struct ev_timer *t, ev_timer_fn *fn);
void ev_timer_disarm(struct ev_timer *t);
static inline bool ev_timer_armed(const struct ev_timer *t)
{
	return t->list != 0;
}
/* Timer lists the loop expires (register each once). */
int ev_timer_list_register(struct ev_loop *loop, struct ev_timer_list *l);

/* Milliseconds on a monotonic clock, refreshed once per loop iteration. */
uint64_t ev_now_ms(const struct ev_loop *loop);

/* Run until ev_stop(); returns 0 or a negative errno from epoll. */
int ev_run(struct ev_loop *loop);
void ev_stop(struct ev_loop *loop);

/* Called once per iteration before sleeping (flush logs, accept backlog). */
void ev_set_before_sleep(struct ev_loop *loop, void (*fn)(struct ev_loop *,
							    void *), void *data);

#endif /* ZC_EVENT_H */
