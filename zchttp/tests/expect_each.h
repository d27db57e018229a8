/* expect_each.h - run one of a test's expect_* checks over a list:
 *
 *	EXPECT_EACH(expect_error, -EPROTO, "bad 1", "bad 2", ...);
 */
#ifndef ZC_TEST_EXPECT_EACH_H
#define ZC_TEST_EXPECT_EACH_H

#include <stddef.h>
#include <sys/types.h>

static inline void expect_each(void (*expect)(const char *, ssize_t),
			       ssize_t want, const char *const *v)
{
	for (; *v; v++)
		expect(*v, want);
}

#define EXPECT_EACH(expect, want, ...) \
	expect_each((expect), (want), (const char *const[]){ __VA_ARGS__, NULL })

#endif
