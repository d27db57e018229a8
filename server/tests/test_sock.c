/* test_sock.c - the socket layer (sock.h) on a loopback TCP pair, on the
 * epoll loop and on the io_uring loop: a first read before waiting, reads
 * into the buffer by itself, sending an aggregate, the end of the stream,
 * draining, readiness and a body read into an aggregate -- and on the
 * io_uring loop the order of a stream when the owner stops reading while
 * a ring receive still has bytes to deliver (they come first, the socket
 * is not read before them, more than the buffer holds waits behind it).
 * The socket is plain (HTTPS: tests/tls.bats). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "event.h"
#include "event_ring.h"
#include "sock.h"

#define STREAM (256u << 10)

typedef int loop_ctor(struct ev_loop **);

struct pair {
	int client;			/* the test's end, blocking */
	int server;			/* accepted, non-blocking */
};

static struct pair tcp_pair(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct pair p;

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	p.client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p.client >= 0);
	assert_int_equal(connect(p.client, (struct sockaddr *)&a, sizeof(a)),
			 0);
	p.server = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(p.server >= 0);
	close(l);
	return p;
}

static char byte_at(size_t i)
{
	return (char)(i * 131 + (i >> 9));
}

static void send_stream(int fd, size_t from, size_t n)
{
	char buf[4096];

	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);
		ssize_t w;

		for (size_t i = 0; i < k; i++)
			buf[i] = byte_at(from + i);
		w = write(fd, buf, k);
		assert_true(w > 0);
		from += (size_t)w;
		n -= (size_t)w;
	}
}

/* What the owner saw. */
struct owner {
	struct ev_loop *loop;
	size_t got;			/* stream bytes taken, checked */
	ssize_t last;			/* the read hook's last result */
	int reads, readies, ends;
	size_t want;			/* stop the loop once this many */
	bool wait_after_first;		/* then wait for readiness instead */
	bool reads_while_arriving;	/* a read was tried then: -EAGAIN */
};

static void take_window(struct zh_sock *s, struct owner *o)
{
	for (size_t i = 0; i < s->in.len; i++)
		assert_int_equal(s->in.buf[i], byte_at(o->got + i));
	o->got += s->in.len;
	sock_in_consume(&s->in, 0, s->in.len);
}

static void on_read(struct zh_sock *s, ssize_t n)
{
	struct owner *o = s->data;

	o->reads++;
	o->last = n;
	if (n <= 0) {
		o->ends++;
		ev_stop(o->loop);
		return;
	}
	take_window(s, o);
	if (o->wait_after_first) {
		/* A connection whose handler took the request: the ring
		 * receive is cancelled, bytes it has still come. */
		o->wait_after_first = false;
		assert_int_equal(sock_wait(s, SOCK_IN | SOCK_HUP), 0);
		if (s->in.arriving && !s->in.over_len) {
			o->reads_while_arriving = true;
			assert_int_equal(sock_read(s), -EAGAIN);
		}
	}
	if (o->got >= o->want)
		ev_stop(o->loop);
}

static void on_ready(struct zh_sock *s, unsigned ev)
{
	struct owner *o = s->data;
	ssize_t n;

	o->readies++;
	assert_true(ev & (SOCK_IN | SOCK_HUP | SOCK_ERR | SOCK_OUT));
	do {
		take_window(s, o);
		n = sock_read(s);
	} while (n > 0 || n == -ENOBUFS);
	take_window(s, o);
	if (n == 0)
		o->ends++;
	if (o->got >= o->want || n == 0)
		ev_stop(o->loop);
}

static const struct sock_hooks hooks = { on_read, on_ready };

static void stop_soon(struct ev_loop *loop, struct ev_timer *t)
{
	(void)t;
	ev_stop(loop);
}

static struct ev_timer_list deadline_list;
static struct ev_timer deadline;

static struct ev_loop *make_loop(void **state)
{
	struct ev_loop *loop;

	assert_int_equal(((loop_ctor *)*state)(&loop), 0);
	ev_timer_list_init(&deadline_list, 5000);
	assert_int_equal(ev_timer_list_register(loop, &deadline_list), 0);
	return loop;
}

/* Run until a hook stops the loop; a test that hangs fails instead. */
static void run(struct ev_loop *loop)
{
	ev_timer_arm(loop, &deadline_list, &deadline, stop_soon);
	assert_int_equal(ev_run(loop), 0);
	assert_true(ev_timer_armed(&deadline));
	ev_timer_disarm(&deadline);
}

/* A socket on the server's end of a loopback pair, owned by o. */
struct fixture {
	struct ev_loop *loop;
	struct pair p;
	struct sock_env env;
	struct zh_sock s;
};

static void open_fixture(void **state, struct fixture *f, struct owner *o)
{
	f->loop = make_loop(state);
	f->p = tcp_pair();
	o->loop = f->loop;
	assert_int_equal(sock_env_init(&f->env, f->loop, 4096, 64, NULL, NULL),
			 0);
	assert_int_equal(sock_init(&f->s, &f->env, f->p.server, 0, &hooks, o),
			 0);
}

static void close_fixture(struct fixture *f)
{
	sock_close(&f->s);
	if (f->p.client >= 0)
		close(f->p.client);
	sock_env_fini(&f->env);
	ev_loop_destroy(f->loop);
}

/* The first request is read at once; later input arrives by itself; an
 * aggregate goes out; the peer's close is the end. */
static void test_read_send_end(void **state)
{
	struct owner o = { .want = 100 };
	struct fixture f;
	zc_agg *out;
	char reply[6];

	open_fixture(state, &f, &o);
	assert_false(sock_handshaking(&f.s));
	send_stream(f.p.client, 0, 100);
	sock_try_read(&f.s);		/* loopback: it is there already */
	assert_int_equal(o.reads, 1);
	assert_int_equal(o.got, 100);
	o.want = 300;
	assert_int_equal(sock_read_start(&f.s), 0);
	send_stream(f.p.client, 100, 200);
	run(f.loop);
	assert_int_equal(o.got, 300);
	assert_true(o.last > 0);

	assert_int_equal(zc_agg_create(&out), 0);
	assert_int_equal(zc_agg_append_bytes(out, NULL, "reply!", 6), 0);
	assert_int_equal(sock_send(&f.s, out), 6);
	assert_int_equal(zc_agg_len(out), 0);
	zc_agg_release(out);
	assert_int_equal(read(f.p.client, reply, sizeof(reply)), 6);
	assert_memory_equal(reply, "reply!", 6);

	close(f.p.client);
	f.p.client = -1;
	run(f.loop);
	assert_int_equal(o.ends, 1);
	assert_int_equal(o.last, 0);
	close_fixture(&f);
}

/* Draining drops what comes and reports only the end. */
static void test_drain(void **state)
{
	struct owner o = { .want = 1 };
	struct fixture f;

	open_fixture(state, &f, &o);
	assert_int_equal(sock_drain_start(&f.s), 0);
	send_stream(f.p.client, 0, 50000);
	shutdown(f.p.client, SHUT_WR);
	run(f.loop);
	assert_int_equal(o.reads, 1);
	assert_int_equal(o.ends, 1);
	assert_int_equal(o.got, 0);
	assert_int_equal(f.s.in.len, 0);
	close_fixture(&f);
}

/* A request body read past the buffer, into an aggregate. */
static void test_read_agg(void **state)
{
	struct owner o = { 0 };
	struct fixture f;
	zc_agg *body = NULL;
	size_t have = 0;
	char buf[4096];

	open_fixture(state, &f, &o);
	send_stream(f.p.client, 0, 20000);
	while (have < 20000) {
		struct pollfd pfd = { .fd = f.p.server, .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&pfd, 1, 5000), 1);
		n = sock_read_agg(&f.s, &body, 20000 - have);
		assert_true(n > 0 || n == -EAGAIN);
		if (n > 0)
			have += (size_t)n;
	}
	assert_int_equal(zc_agg_len(body), 20000);
	for (size_t off = 0; off < 20000; off += sizeof(buf)) {
		size_t k = 20000 - off < sizeof(buf) ? 20000 - off
						      : sizeof(buf);

		assert_int_equal(zc_agg_copyout(body, off, buf, k), (ssize_t)k);
		for (size_t i = 0; i < k; i++)
			assert_int_equal(buf[i], byte_at(off + i));
	}
	zc_agg_release(body);
	close_fixture(&f);
}

struct sender {
	int fd;
	size_t n;
};

static void *send_all(void *arg)
{
	struct sender *sd = arg;

	send_stream(sd->fd, 0, sd->n);
	return NULL;
}

/* The owner stops reading after the first bytes (a handler has the
 * request) while the peer floods: on the io_uring loop the ring receive
 * is cancelled with bytes still to deliver; they arrive in order, behind
 * a small buffer, and the socket is read only after them.  On epoll the
 * same owner sees the same stream. */
static void test_stream_order_across_wait(void **state)
{
	struct owner o = { .want = STREAM, .wait_after_first = true };
	struct fixture f;
	struct sender sd;
	pthread_t t;

	open_fixture(state, &f, &o);
	sd = (struct sender){ f.p.client, STREAM };
	assert_int_equal(sock_read_start(&f.s), 0);
	assert_int_equal(pthread_create(&t, NULL, send_all, &sd), 0);
	run(f.loop);			/* until the whole stream is in */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(o.got, STREAM);
	assert_true(o.reads >= 1);
	assert_true(o.readies >= 1);
	/* On the io_uring loop the cancelled receive was still to end when
	 * the owner tried to read: refused. */
	if (ev_has_ring(f.loop))
		assert_true(o.reads_while_arriving);
	close_fixture(&f);
}

int main(void)
{
	loop_ctor *epoll_loop = ev_loop_create, *ring_loop = ev_loop_create_ring;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_read_send_end, epoll_loop),
		cmocka_unit_test_prestate(test_read_send_end, ring_loop),
		cmocka_unit_test_prestate(test_drain, epoll_loop),
		cmocka_unit_test_prestate(test_drain, ring_loop),
		cmocka_unit_test_prestate(test_read_agg, epoll_loop),
		cmocka_unit_test_prestate(test_read_agg, ring_loop),
		cmocka_unit_test_prestate(test_stream_order_across_wait,
					  epoll_loop),
		cmocka_unit_test_prestate(test_stream_order_across_wait,
					  ring_loop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
