/*
 * floor_uring.c - zcfloor --event io_uring: the least a server built on
 * io_uring can do per request, the floor that zchttpd's io_uring loop is
 * measured against (docs/bench-static.md, "The method").
 *
 * The same work as the epoll floor (one receive, one send of a canned
 * response from memory), with the kernel entries io_uring can take away:
 *
 *   accept   one multishot accept for the life of the server
 *   receive  one multishot receive per connection, into buffers the
 *            kernel picks from a provided-buffer ring (an idle connection
 *            holds none); the bytes are copied into the connection's own
 *            buffer at once and the ring buffer is handed back
 *   send     one SEND per response (MSG_WAITALL: the kernel finishes a
 *            large one itself), queued, not issued
 *   enter    one io_uring_enter per loop turn submits every queued send
 *            and waits for the next completions, for all connections
 *
 * DEFER_TASKRUN makes the kernel run the completions' work in that one
 * enter rather than interrupting us.  A connection is closed by cancelling
 * its receive and closing the descriptor (the socket itself goes when the
 * cancelled receive lets go of it); its memory goes when the last of its
 * operations has completed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

#define RING_ENTRIES 4096
#define CQ_ENTRIES 16384
#define NBUFS 1024		/* provided receive buffers (power of two) */
#define BUF_SIZE 2048
#define BGID 0

/* user_data: a connection's address with the operation in its low bits
 * (malloc aligns to at least 8). */
enum op { OP_ACCEPT = 1, OP_RECV = 2, OP_SEND = 3, OP_CANCEL = 4 };
#define OP_MASK 7u

struct uconn {
	int fd;
	int recv_armed;		/* the multishot receive is live */
	int send_inflight;	/* a SEND is queued or running */
	int closing;
	int close_after;	/* close once this response is sent */
	const char *out;
	size_t out_len;
	size_t in_len;
	char in[IN_CAP];
};

static struct io_uring ring;
static struct io_uring_buf_ring *bufring;
static char *bufs;
static int lfd_global;

static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	if (!sqe) {	/* full: hand what is queued to the kernel */
		io_uring_submit(&ring);
		sqe = io_uring_get_sqe(&ring);
		if (!sqe)
			die("io_uring_get_sqe");
	}
	return sqe;
}

static uint64_t ud(struct uconn *c, enum op op)
{
	return (uint64_t)(uintptr_t)c | op;
}

static void arm_accept(void)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_multishot_accept(sqe, lfd_global, NULL, NULL,
				       SOCK_NONBLOCK | SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, OP_ACCEPT);
}

static void arm_recv(struct uconn *c)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	io_uring_sqe_set_data64(sqe, ud(c, OP_RECV));
	c->recv_armed = 1;
}

static void give_back(unsigned bid)
{
	io_uring_buf_ring_add(bufring, bufs + (size_t)bid * BUF_SIZE, BUF_SIZE,
			      (unsigned short)bid, io_uring_buf_ring_mask(NBUFS), 0);
	io_uring_buf_ring_advance(bufring, 1);
}

static void maybe_free(struct uconn *c)
{
	if (c->closing && !c->recv_armed && !c->send_inflight)
		free(c);
}

static void start_close(struct uconn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->recv_armed) {
		struct io_uring_sqe *sqe = get_sqe();

		io_uring_prep_cancel64(sqe, ud(c, OP_RECV), 0);
		io_uring_sqe_set_data64(sqe, OP_CANCEL);
	}
	close(c->fd);
}

/* Queue the response to the next whole head in the input, if any. */
static void answer(struct uconn *c)
{
	struct io_uring_sqe *sqe;
	size_t head;

	if (c->closing || c->send_inflight)
		return;
	if (!next_response(c->in, c->in_len, &head, &c->out, &c->out_len,
			   &c->close_after)) {
		if (c->in_len == IN_CAP)	/* a head larger than the buffer */
			start_close(c);
		return;
	}
	memmove(c->in, c->in + head, c->in_len - head);
	c->in_len -= head;
	sqe = get_sqe();
	io_uring_prep_send(sqe, c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_WAITALL);
	io_uring_sqe_set_data64(sqe, ud(c, OP_SEND));
	c->send_inflight = 1;
}

static void on_accept(const struct io_uring_cqe *cqe)
{
	struct uconn *c;

	if (!(cqe->flags & IORING_CQE_F_MORE))
		arm_accept();
	if (cqe->res < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(cqe->res);
		return;
	}
	c->fd = cqe->res;
	arm_recv(c);
}

static void on_recv(struct uconn *c, const struct io_uring_cqe *cqe)
{
	if (!(cqe->flags & IORING_CQE_F_MORE))
		c->recv_armed = 0;	/* this was its last completion */
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		size_t n = cqe->res > 0 ? (size_t)cqe->res : 0;

		if (n > IN_CAP - c->in_len)
			start_close(c);
		else if (!c->closing) {
			memcpy(c->in + c->in_len, bufs + (size_t)bid * BUF_SIZE, n);
			c->in_len += n;
		}
		give_back(bid);
	}
	if (cqe->res > 0)
		answer(c);
	else if (cqe->res != -ENOBUFS)
		start_close(c);		/* end of stream, reset, cancelled */
	if (!c->recv_armed && !c->closing)
		arm_recv(c);	/* out of buffers, or the kernel ended it */
	maybe_free(c);
}

static void on_send(struct uconn *c, const struct io_uring_cqe *cqe)
{
	c->send_inflight = 0;
	if (cqe->res < 0 || (size_t)cqe->res != c->out_len || c->close_after)
		start_close(c);
	else
		answer(c);	/* a pipelined request may be waiting */
	maybe_free(c);
}

static void setup_ring(void)
{
	struct io_uring_params p;
	static const unsigned flag_sets[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	struct io_uring_buf_reg reg = { 0 };
	int err = -EINVAL;

	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = CQ_ENTRIES;
		err = io_uring_queue_init_params(RING_ENTRIES, &ring, &p);
		if (err != -EINVAL)
			break;
	}
	if (err < 0) {
		errno = -err;
		die("io_uring_queue_init");
	}
	bufring = mmap(NULL, NBUFS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bufs = malloc((size_t)NBUFS * BUF_SIZE);
	if (bufring == MAP_FAILED || !bufs)
		die("buffers");
	reg.ring_addr = (uint64_t)(uintptr_t)bufring;
	reg.ring_entries = NBUFS;
	reg.bgid = BGID;
	err = io_uring_register_buf_ring(&ring, &reg, 0);
	if (err < 0) {
		errno = -err;
		die("io_uring_register_buf_ring");
	}
	io_uring_buf_ring_init(bufring);
	for (unsigned i = 0; i < NBUFS; i++)
		io_uring_buf_ring_add(bufring, bufs + (size_t)i * BUF_SIZE, BUF_SIZE,
				      (unsigned short)i, io_uring_buf_ring_mask(NBUFS), (int)i);
	io_uring_buf_ring_advance(bufring, NBUFS);
}

void serve_uring(int lfd)
{
	lfd_global = lfd;
	setup_ring();
	arm_accept();
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int err = io_uring_submit_and_wait(&ring, 1);

		if (err < 0 && err != -EINTR && err != -EAGAIN && err != -EBUSY) {
			errno = -err;
			die("io_uring_submit_and_wait");
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			struct uconn *c = (struct uconn *)(uintptr_t)(cqe->user_data & ~(uint64_t)OP_MASK);

			switch (cqe->user_data & OP_MASK) {
			case OP_ACCEPT:
				on_accept(cqe);
				break;
			case OP_RECV:
				on_recv(c, cqe);
				break;
			case OP_SEND:
				on_send(c, cqe);
				break;
			default:	/* OP_CANCEL: its target reports */
				break;
			}
			seen++;
		}
		io_uring_cq_advance(&ring, seen);
	}
}
