/* test_event.c - the event loop: readiness callbacks, deadline lists
 * (order, re-arming, disarming), and stopping from a callback. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <cmocka.h>

#include "../event.h"

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

static void test_timers_fire_in_order(void **state)
{
	struct ev_timer_list fast, slow;
	struct probe p[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
	struct ev_loop *loop;

	(void)state;
	nfired = 0;
	assert_int_equal(ev_loop_create(&loop), 0);
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

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(ev_loop_create(&loop), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_fire_in_order),
		cmocka_unit_test(test_readiness),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
