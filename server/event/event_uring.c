/*
 * event_uring.c - the event loop on io_uring (--event io_uring; event.h).
 *
 * The loop waits in one io_uring_enter per turn, which also submits
 * everything queued in that turn, for all connections at once.  What it
 * waits for:
 *
 *   - epoll's descriptor, with a one-shot poll re-armed after each batch
 *     (a one-shot poll completes at once if epoll is still ready, so epoll's
 *     level-triggered registrations keep their meaning: listeners, FastCGI
 *     links, the helper threads' eventfd, the signalfd, sockets waiting to
 *     be writable -- everything ev_add knows);
 *   - ring receives (ev_recv_start): one multishot receive per socket, into
 *     buffers the kernel takes from a provided-buffer ring shared by all of
 *     them, so that a connection waiting for its next request costs no
 *     epoll registration and no recv system call per request, and an idle
 *     one holds no buffer;
 *   - the earliest timer, as the wait's timeout.
 *
 * SINGLE_ISSUER|DEFER_TASKRUN (6.1+) lets the kernel do the receives' work
 * inside our io_uring_enter instead of interrupting whatever we are doing;
 * older kernels get a plain ring.
 *
 * A receive is named in its user_data by fd and a generation: forgetting
 * a receive (the socket is about to close) bumps the generation, so that
 * completions still on their way for it -- and the fd number's next owner
 * -- never meet.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "event_int.h"

#define RING_SQ 1024
#define RING_CQ 8192
#define NBUFS 1024			/* provided buffers (power of two) */
#define BGID 0

enum { T_EPOLL = 1, T_RECV = 2, T_CANCEL = 3 };
#define T_BITS 4
#define FD_BITS 32
#define GEN_MASK ((1u << (64 - T_BITS - FD_BITS)) - 1)

struct ev_rslot {
	ev_recv_fn *fn;
	void *data;
	uint32_t gen;
	bool armed;			/* its last completion is to come */
	bool cancelled;			/* a cancel is on its way */
};

struct ev_ring {
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	char *bufs;
	bool epoll_armed;
	struct ev_rslot *rs;		/* indexed by fd */
	size_t nrs;
};

static struct io_uring_sqe *get_sqe(struct ev_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	if (!sqe) {	/* full: hand what is queued to the kernel first */
		io_uring_submit(&r->ring);
		sqe = io_uring_get_sqe(&r->ring);
	}
	return sqe;
}

static uint64_t recv_ud(int fd, uint32_t gen)
{
	return (uint64_t)(gen & GEN_MASK) << (T_BITS + FD_BITS) |
	       (uint64_t)(uint32_t)fd << T_BITS | T_RECV;
}

static void give_back(struct ev_ring *r, unsigned bid)
{
	io_uring_buf_ring_add(r->br, r->bufs + (size_t)bid * EV_RECV_MAX,
			      EV_RECV_MAX, (unsigned short)bid,
			      io_uring_buf_ring_mask(NBUFS), 0);
	io_uring_buf_ring_advance(r->br, 1);
}

static int setup_ring(struct ev_ring *r)
{
	static const unsigned flag_sets[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int err = -EINVAL;

	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = RING_CQ;
		err = io_uring_queue_init_params(RING_SQ, &r->ring, &p);
		if (err != -EINVAL)
			break;
	}
	return err;
}

static int setup_buffers(struct ev_ring *r)
{
	struct io_uring_buf_reg reg = { 0 };
	int err;

	r->br = mmap(NULL, NBUFS * sizeof(struct io_uring_buf),
		     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->br == MAP_FAILED) {
		r->br = NULL;
		return -ENOMEM;
	}
	r->bufs = malloc((size_t)NBUFS * EV_RECV_MAX);
	if (!r->bufs)
		return -ENOMEM;
	reg.ring_addr = (uint64_t)(uintptr_t)r->br;
	reg.ring_entries = NBUFS;
	reg.bgid = BGID;
	err = io_uring_register_buf_ring(&r->ring, &reg, 0);
	if (err)
		return err;
	io_uring_buf_ring_init(r->br);
	for (unsigned i = 0; i < NBUFS; i++)
		io_uring_buf_ring_add(r->br, r->bufs + (size_t)i * EV_RECV_MAX,
				      EV_RECV_MAX, (unsigned short)i,
				      io_uring_buf_ring_mask(NBUFS), (int)i);
	io_uring_buf_ring_advance(r->br, NBUFS);
	return 0;
}

int ev_ring_create(struct ev_loop *loop)
{
	struct ev_ring *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	err = setup_ring(r);
	if (err) {
		free(r);
		return err;
	}
	loop->ring = r;
	err = setup_buffers(r);
	if (err)
		ev_ring_destroy(loop);
	return err;
}

void ev_ring_destroy(struct ev_loop *loop)
{
	struct ev_ring *r = loop->ring;

	if (!r)
		return;
	io_uring_queue_exit(&r->ring);
	if (r->br)
		munmap(r->br, NBUFS * sizeof(struct io_uring_buf));
	free(r->bufs);
	free(r->rs);
	free(r);
	loop->ring = NULL;
}

/* ------------------------------------------------------------ receives */

static struct ev_rslot *slot(struct ev_ring *r, int fd, bool grow)
{
	if (fd < 0)
		return NULL;
	if ((size_t)fd >= r->nrs) {
		size_t n = r->nrs ? r->nrs : 64;
		struct ev_rslot *rs;

		if (!grow)
			return NULL;
		while (n <= (size_t)fd)
			n *= 2;
		rs = realloc(r->rs, n * sizeof(*rs));
		if (!rs)
			return NULL;
		memset(rs + r->nrs, 0, (n - r->nrs) * sizeof(*rs));
		r->rs = rs;
		r->nrs = n;
	}
	return &r->rs[fd];
}

int ev_recv_start(struct ev_loop *loop, int fd, ev_recv_fn *fn, void *data)
{
	struct ev_ring *r = loop->ring;
	struct io_uring_sqe *sqe;
	struct ev_rslot *s;

	if (!r)
		return -EOPNOTSUPP;
	s = slot(r, fd, true);
	if (!s)
		return fd < 0 ? -EBADF : -ENOMEM;
	if (s->armed)
		return -EBUSY;
	sqe = get_sqe(r);
	if (!sqe)
		return -EAGAIN;
	io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	io_uring_sqe_set_data64(sqe, recv_ud(fd, s->gen));
	s->fn = fn;
	s->data = data;
	s->armed = true;
	s->cancelled = false;
	return 0;
}

static void send_cancel(struct ev_ring *r, int fd, struct ev_rslot *s)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	/* With no room even after submitting (the kernel has not taken
	 * our entries: it cannot happen with a ring this size), the
	 * receive runs on until its socket is closed and reset. */
	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, recv_ud(fd, s->gen), 0);
	io_uring_sqe_set_data64(sqe, T_CANCEL);
	s->cancelled = true;
}

void ev_recv_cancel(struct ev_loop *loop, int fd)
{
	struct ev_ring *r = loop->ring;
	struct ev_rslot *s = r ? slot(r, fd, false) : NULL;

	if (s && s->armed && !s->cancelled)
		send_cancel(r, fd, s);
}

void ev_recv_forget(struct ev_loop *loop, int fd)
{
	struct ev_ring *r = loop->ring;
	struct ev_rslot *s = r ? slot(r, fd, false) : NULL;

	if (!s || !s->armed)
		return;
	if (!s->cancelled)
		send_cancel(r, fd, s);
	/* Its completions still to come carry the old generation. */
	s->gen++;
	s->armed = false;
	s->fn = NULL;
	s->data = NULL;
}

static void on_recv(struct ev_loop *loop, const struct io_uring_cqe *cqe)
{
	struct ev_ring *r = loop->ring;
	int fd = (int)(uint32_t)(cqe->user_data >> T_BITS);
	uint32_t gen = (uint32_t)(cqe->user_data >> (T_BITS + FD_BITS));
	bool has_buf = cqe->flags & IORING_CQE_F_BUFFER;
	unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
	bool more = cqe->flags & IORING_CQE_F_MORE;
	struct ev_rslot *s = slot(r, fd, false);

	if (s && s->armed && (s->gen & GEN_MASK) == gen) {
		if (!more)
			s->armed = false;	/* fn may start another */
		s->fn(loop, fd, has_buf ? r->bufs + (size_t)bid * EV_RECV_MAX
					: NULL,
		      cqe->res, more, s->data);
	}
	if (has_buf)
		give_back(r, bid);
}

/* ------------------------------------------------------------ the loop */

static void arm_epoll(struct ev_loop *loop)
{
	struct ev_ring *r = loop->ring;
	struct io_uring_sqe *sqe = get_sqe(r);

	if (!sqe)
		return;		/* next turn */
	io_uring_prep_poll_add(sqe, loop->epfd, POLLIN);
	io_uring_sqe_set_data64(sqe, T_EPOLL);
	r->epoll_armed = true;
}

/* Everything that has completed, in order; 0 or a negative errno. */
static int reap(struct ev_loop *loop)
{
	struct ev_ring *r = loop->ring;
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&r->ring, &cqe) == 0) {
		struct io_uring_cqe c = *cqe;
		int err;

		io_uring_cqe_seen(&r->ring, cqe);
		switch (c.user_data & ((1u << T_BITS) - 1)) {
		case T_EPOLL:
			r->epoll_armed = false;
			err = ev_dispatch_epoll(loop, 0);
			if (err)
				return err;
			break;
		case T_RECV:
			on_recv(loop, &c);
			break;
		default:	/* T_CANCEL: its receive reports */
			break;
		}
	}
	return 0;
}

int ev_ring_run(struct ev_loop *loop)
{
	struct ev_ring *r = loop->ring;

	loop->stop = false;
	while (!loop->stop) {
		struct __kernel_timespec ts;
		struct io_uring_cqe *cqe;
		int timeout, err;

		ev_before_sleep(loop);
		if (loop->stop)
			break;
		if (!r->epoll_armed)
			arm_epoll(loop);
		timeout = ev_next_timeout(loop);
		ts.tv_sec = timeout / 1000;
		ts.tv_nsec = (long long)(timeout % 1000) * 1000000;
		err = io_uring_submit_and_wait_timeout(&r->ring, &cqe, 1,
						       timeout < 0 ? NULL : &ts,
						       NULL);
		loop->now_ms = ev_clock_ms();
		if (err < 0 && err != -ETIME && err != -EINTR &&
		    err != -EAGAIN && err != -EBUSY)
			return err;
		err = reap(loop);
		if (err)
			return err;
		ev_expire(loop);
	}
	return 0;
}
