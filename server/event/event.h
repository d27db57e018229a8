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

/* A place in one of the loop's lists (a timer list, the posted queue):
 * doubly linked around a sentinel, so that leaving is O(1). */
struct ev_node {
	struct ev_node *prev, *next;	/* NULL when in no list */
};

struct ev_timer;
typedef void ev_timer_fn(struct ev_loop *loop, struct ev_timer *t);

/* Embedded in the object it times out (container_of to get back). */
struct ev_timer {
	struct ev_node node;		/* first: its list's order */
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
/* The same loop on io_uring (--event io_uring, event_uring.c): it waits in
 * io_uring_enter, with epoll's descriptor one of the things it waits for,
 * so every ev_add registration works as on the plain loop; and it can
 * receive on a socket without a system call per receive (event_ring.h).
 * A negative errno if this kernel has no io_uring (or not enough of it). */
int ev_loop_create_ring(struct ev_loop **out);
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

/*
 * Deferred work (nginx's posted events).  Work that must not run inside the
 * call that asked for it -- a handler's request to its connection, a
 * FastCGI link its client resumed -- is posted, and the loop runs what is
 * posted before it sleeps: in the order posted, until nothing is left, so
 * work posted meanwhile runs in the same pass and the loop never sleeps on
 * posted work.  A post is embedded in the object it runs for (container_of
 * to get back), its function set once; posting it again while it waits is a
 * no-op.  One queue per loop: modules that post for each other need no
 * loop of their own around it.
 */
struct ev_post;
typedef void ev_post_fn(struct ev_post *p);

struct ev_post {
	struct ev_node node;		/* first: the queue's order */
	ev_post_fn *fn;
};

static inline void ev_post_init(struct ev_post *p, ev_post_fn *fn)
{
	p->node.prev = p->node.next = 0;
	p->fn = fn;
}

static inline bool ev_posted(const struct ev_post *p)
{
	return p->node.next != 0;
}

void ev_post(struct ev_loop *loop, struct ev_post *p);
/* Take p off the queue (the object goes away); harmless if not posted. */
void ev_unpost(struct ev_post *p);

/* Called once per iteration before sleeping, after the posted work (flush
 * logs, housekeeping). */
void ev_set_before_sleep(struct ev_loop *loop, void (*fn)(struct ev_loop *,
							    void *), void *data);

#endif /* ZC_EVENT_H */
