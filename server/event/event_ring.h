/*
 * event_ring.h - the io_uring loop's ring receives (event_uring.c), for the
 * socket layer (sock.c), which is their one user: a connection's code
 * above it never sees how its input arrives.
 */
#ifndef ZC_EVENT_RING_H
#define ZC_EVENT_RING_H

#include <stdbool.h>
#include <sys/types.h>

#include "event.h"

/* Whether loop is the io_uring one. */
bool ev_has_ring(const struct ev_loop *loop);

/*
 * Ring receives (a loop from ev_loop_create_ring only: ev_has_ring says).
 * ev_recv_start arms one multishot receive on the socket fd: the kernel
 * receives into a buffer it takes from the loop's pool of provided buffers
 * whenever data arrives, and fn gets it as (buf, n > 0), valid only during
 * the call; the buffer goes back to the pool when fn returns.  n == 0 is the end of the stream,
 * n < 0 a negative errno (-ENOBUFS: the pool ran dry; -ECANCELED).  `more`
 * false is the receive's last call: it ended (end of stream, error,
 * ev_recv_cancel) and the socket is no longer received on.
 *
 * ev_recv_cancel asks the receive to end; data the kernel already took
 * still reaches fn, in order, before its last call -- so a caller that
 * must read the socket itself afterwards waits for that last call.
 * ev_recv_forget ends it with no further call at all (before closing fd).
 * One ring receive per fd; at most EV_RECV_MAX bytes per call.
 */
#define EV_RECV_MAX 2048u
typedef void ev_recv_fn(struct ev_loop *loop, int fd, const char *buf,
			ssize_t n, bool more, void *data);
int ev_recv_start(struct ev_loop *loop, int fd, ev_recv_fn *fn, void *data);
void ev_recv_cancel(struct ev_loop *loop, int fd);
void ev_recv_forget(struct ev_loop *loop, int fd);

#endif
