/* test_event.c - the event loop: readiness callbacks, deadline lists
 * (order, re-arming, disarming), stopping from a callback and the posted
 * work -- on the epoll loop and on the io_uring loop -- and the io_uring
 * loop's ring receives (order, end of stream, cancel, forget). */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "event.h"
#include "event_ring.h"

struct probe {
	struct ev_timer t;
	int id;
};

static int fired[16], nfired;

static void on_timer(struct ev_loop *loop, struct ev_timer *t)
{
	struct probe *p = (struct probe *)t;	/* t is the first member */

	fired[nfired++] = p->id;
	if (nfired == 3)
		ev_stop(loop);
}

/* Each loop test runs on both loops: the state is the constructor. */
typedef int loop_ctor(struct ev_loop **);

static int make_loop(void **state, struct ev_loop **loop)
{
	return ((loop_ctor *)*state)(loop);
}

static void test_timers_fire_in_order(void **state)
{
	struct ev_timer_list fast, slow;
	struct probe p[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
	struct ev_loop *loop;

	nfired = 0;
	assert_int_equal(make_loop(state, &loop), 0);
	ev_timer_list_init(&fast, 10);
	ev_timer_list_init(&slow, 40);
	assert_int_equal(ev_timer_list_register(loop, &fast), 0);
	assert_int_equal(ev_timer_list_register(loop, &slow), 0);
	ev_timer_arm(loop, &slow, &p[0].t, on_timer);
	ev_timer_arm(loop, &fast, &p[1].t, on_timer);
	ev_timer_arm(loop, &fast, &p[2].t, on_timer);
	ev_timer_arm(loop, &fast, &p[3].t, on_timer);
	/* Re-arming moves to the tail; disarming removes. */
	ev_timer_arm(loop, &fast, &p[1].t, on_timer);
	ev_timer_disarm(&p[3].t);
	assert_false(ev_timer_armed(&p[3].t));
	ev_timer_disarm(&p[3].t);	/* twice is harmless */
	assert_int_equal(ev_run(loop), 0);
	assert_int_equal(nfired, 3);
	assert_int_equal(fired[0], 2);
	assert_int_equal(fired[1], 1);
	assert_int_equal(fired[2], 0);
	ev_loop_destroy(loop);
}

static int reads;

static void on_read(struct ev_loop *loop, int fd, uint32_t events, void *data)
{
	char c;

	assert_true(events & EPOLLIN);
	assert_ptr_equal(data, &reads);
	assert_int_equal(read(fd, &c, 1), 1);
	if (++reads == 2)
		ev_stop(loop);
}

static void test_readiness(void **state)
{
	struct ev_loop *loop;
	int p[2];

	reads = 0;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(make_loop(state, &loop), 0);
	assert_int_equal(ev_add(loop, p[0], EPOLLIN, on_read, &reads), 0);
	assert_int_equal(ev_add(loop, p[0], EPOLLIN, on_read, &reads), -EEXIST);
	assert_int_equal(ev_add(loop, -1, EPOLLIN, on_read, NULL), -EBADF);
	assert_int_equal(write(p[1], "ab", 2), 2);
	assert_int_equal(ev_run(loop), 0);
	assert_int_equal(reads, 2);
	assert_int_equal(ev_del(loop, p[0]), 0);
	assert_int_equal(ev_del(loop, p[0]), -ENOENT);
	ev_loop_destroy(loop);
	close(p[0]);
	close(p[1]);
}

/* ------------------------------------------------------------ ring */

struct rx {
	char got[8192];
	size_t len;
	int calls, ends;
	ssize_t last;		/* n of the last call */
	bool stop_at_end;
};

static void on_rx(struct ev_loop *loop, int fd, const char *buf, ssize_t n,
		  bool more, void *data)
{
	struct rx *r = data;

	(void)fd;
	r->calls++;
	r->last = n;
	if (n > 0) {
		assert_non_null(buf);
		assert_true((size_t)n <= EV_RECV_MAX);
		assert_true(r->len + (size_t)n <= sizeof(r->got));
		memcpy(r->got + r->len, buf, (size_t)n);
		r->len += (size_t)n;
	}
	if (!more) {
		r->ends++;
		if (r->stop_at_end)
			ev_stop(loop);
	}
}

static void stop_soon(struct ev_loop *loop, struct ev_timer *t)
{
	(void)t;
	ev_stop(loop);
}

static struct ev_timer_list run_list;
static struct ev_timer run_timer;

/* A ring loop whose ev_run run_for can bound. */
static struct ev_loop *ring_loop_new(void)
{
	struct ev_loop *loop;

	assert_int_equal(ev_loop_create_ring(&loop), 0);
	assert_true(ev_has_ring(loop));
	ev_timer_list_init(&run_list, 0);
	assert_int_equal(ev_timer_list_register(loop, &run_list), 0);
	return loop;
}

/* Run the loop for about ms milliseconds (or until a callback stops it). */
static void run_for(struct ev_loop *loop, unsigned ms)
{
	run_list.duration_ms = ms;
	ev_timer_arm(loop, &run_list, &run_timer, stop_soon);
	assert_int_equal(ev_run(loop), 0);
	ev_timer_disarm(&run_timer);
}

static void fill(char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(seed + i * 7 + (i >> 8));
}

/* Everything written arrives once, in order, across many buffers; the
 * end of the stream is the last call. */
static void test_ring_receive_in_order(void **state)
{
	struct ev_loop *loop;
	struct rx r = { .stop_at_end = true };
	char data[6000];
	int sv[2];

	(void)state;
	loop = ring_loop_new();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fill(data, sizeof(data), 1);
	assert_int_equal(ev_recv_start(loop, sv[0], on_rx, &r), 0);
	assert_int_equal(ev_recv_start(loop, sv[0], on_rx, &r), -EBUSY);
	assert_int_equal(write(sv[1], data, 1000), 1000);
	run_for(loop, 100);
	assert_int_equal(r.len, 1000);
	assert_int_equal(r.ends, 0);	/* still armed: no re-arm needed */
	assert_int_equal(write(sv[1], data + 1000, 5000), 5000);
	close(sv[1]);
	run_for(loop, 2000);
	assert_int_equal(r.ends, 1);
	assert_int_equal(r.last, 0);	/* end of stream */
	assert_int_equal(r.len, sizeof(data));
	assert_memory_equal(r.got, data, sizeof(data));
	assert_true(r.calls >= 4);	/* 6000 bytes in 2048-byte buffers */
	close(sv[0]);
	ev_loop_destroy(loop);
}

/* A cancelled receive still hands over what it had taken, then ends;
 * what it had not taken is still in the socket, after those bytes. */
static void test_ring_cancel_keeps_order(void **state)
{
	struct ev_loop *loop;
	struct rx r = { .stop_at_end = true };
	char data[4000], rest[4000];
	ssize_t n;
	int sv[2];

	(void)state;
	loop = ring_loop_new();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fill(data, sizeof(data), 2);
	assert_int_equal(ev_recv_start(loop, sv[0], on_rx, &r), 0);
	assert_int_equal(write(sv[1], data, 1500), 1500);
	run_for(loop, 100);
	assert_int_equal(r.len, 1500);
	ev_recv_cancel(loop, sv[0]);
	ev_recv_cancel(loop, sv[0]);	/* twice is harmless */
	assert_int_equal(write(sv[1], data + 1500, 2500), 2500);
	run_for(loop, 2000);
	assert_int_equal(r.ends, 1);
	assert_true(r.len <= sizeof(data));
	assert_memory_equal(r.got, data, r.len);
	n = recv(sv[0], rest, sizeof(rest), MSG_DONTWAIT);
	if (n < 0)
		n = 0;
	assert_int_equal(r.len + (size_t)n, sizeof(data));
	assert_memory_equal(rest, data + r.len, (size_t)n);
	/* And it can be started again. */
	assert_int_equal(ev_recv_start(loop, sv[0], on_rx, &r), 0);
	close(sv[1]);
	run_for(loop, 2000);
	assert_int_equal(r.ends, 2);
	assert_int_equal(r.last, 0);
	close(sv[0]);
	ev_loop_destroy(loop);
}

/* A forgotten receive never calls again, even for completions on their
 * way; the fd number's next receive gets everything that follows. */
static void test_ring_forget(void **state)
{
	struct ev_loop *loop;
	struct rx old = { 0 }, fresh = { .stop_at_end = true };
	char data[3000];
	int sv[2];

	(void)state;
	loop = ring_loop_new();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fill(data, sizeof(data), 3);
	assert_int_equal(ev_recv_start(loop, sv[0], on_rx, &old), 0);
	run_for(loop, 50);		/* armed in the kernel */
	ev_recv_forget(loop, sv[0]);
	ev_recv_forget(loop, sv[0]);	/* harmless */
	assert_int_equal(ev_recv_start(loop, sv[0], on_rx, &fresh), 0);
	assert_int_equal(write(sv[1], data, sizeof(data)), (ssize_t)sizeof(data));
	close(sv[1]);
	run_for(loop, 2000);
	assert_int_equal(old.calls, 0);
	assert_int_equal(fresh.ends, 1);
	assert_int_equal(fresh.len, sizeof(data));
	assert_memory_equal(fresh.got, data, sizeof(data));
	close(sv[0]);
	ev_loop_destroy(loop);
}

static void test_ring_needs_ring(void **state)
{
	struct ev_loop *loop;
	struct rx r = { 0 };

	(void)state;
	assert_int_equal(ev_loop_create(&loop), 0);
	assert_false(ev_has_ring(loop));
	assert_int_equal(ev_recv_start(loop, 0, on_rx, &r), -EOPNOTSUPP);
	ev_recv_cancel(loop, 0);	/* no-ops */
	ev_recv_forget(loop, 0);
	ev_loop_destroy(loop);
	assert_int_equal(ev_loop_create_ring(&loop), 0);
	assert_int_equal(ev_recv_start(loop, -1, on_rx, &r), -EBADF);
	ev_loop_destroy(loop);
}

/* Posted work: run before the loop sleeps, in the order posted, work
 * posted meanwhile in the same pass; a second post and an unpost of what
 * is queued behave; the before_sleep hook comes after all of it. */
struct job {
	struct ev_post post;
	struct ev_loop *loop;
	int id;
	struct job *then;		/* posted when this one runs */
};

static int ran[16], nran;

static void on_job(struct ev_post *p)
{
	struct job *j = (struct job *)p;	/* post is the first member */

	ran[nran++] = j->id;
	if (j->then)
		ev_post(j->loop, &j->then->post);
}

static void after_posted(struct ev_loop *loop, void *data)
{
	(void)data;
	ran[nran++] = -1;
	ev_stop(loop);
}

static void test_posted_work(void **state)
{
	struct ev_loop *loop;
	struct job j[4];

	nran = 0;
	assert_int_equal(make_loop(state, &loop), 0);
	for (int i = 0; i < 4; i++) {
		j[i] = (struct job){ .loop = loop, .id = i };
		ev_post_init(&j[i].post, on_job);
		assert_false(ev_posted(&j[i].post));
	}
	j[1].then = &j[3];
	ev_post(loop, &j[2].post);
	ev_post(loop, &j[1].post);
	ev_post(loop, &j[0].post);
	ev_post(loop, &j[2].post);	/* queued already: stays where it is */
	assert_true(ev_posted(&j[2].post));
	ev_unpost(&j[0].post);
	assert_false(ev_posted(&j[0].post));
	ev_unpost(&j[0].post);		/* twice is harmless */
	ev_set_before_sleep(loop, after_posted, NULL);
	assert_int_equal(ev_run(loop), 0);
	assert_int_equal(nran, 4);
	assert_int_equal(ran[0], 2);
	assert_int_equal(ran[1], 1);
	assert_int_equal(ran[2], 3);	/* posted by 1, same pass */
	assert_int_equal(ran[3], -1);
	for (int i = 0; i < 4; i++)
		assert_false(ev_posted(&j[i].post));
	ev_loop_destroy(loop);
}

int main(void)
{
	loop_ctor *epoll_loop = ev_loop_create, *ring_loop = ev_loop_create_ring;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_timers_fire_in_order, epoll_loop),
		cmocka_unit_test_prestate(test_readiness, epoll_loop),
		cmocka_unit_test_prestate(test_timers_fire_in_order, ring_loop),
		cmocka_unit_test_prestate(test_readiness, ring_loop),
		cmocka_unit_test_prestate(test_posted_work, epoll_loop),
		cmocka_unit_test_prestate(test_posted_work, ring_loop),
		cmocka_unit_test(test_ring_receive_in_order),
		cmocka_unit_test(test_ring_cancel_keeps_order),
		cmocka_unit_test(test_ring_forget),
		cmocka_unit_test(test_ring_needs_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
