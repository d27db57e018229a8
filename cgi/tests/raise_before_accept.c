/*
 * raise_before_accept.c - an LD_PRELOAD object for test_fcgi: the app's
 * first accept4 raises SIGTERM in the app just before the call goes on.
 *
 * That is the one moment a graceful stop can be lost: the library has
 * looked for a pending shutdown and found none, and has not yet gone to
 * sleep.  A signal there must still end the wait; raising it from inside
 * the call makes the moment certain instead of a race the test might win.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sys/socket.h>

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	static int (*next)(int, struct sockaddr *, socklen_t *, int);
	static int raised;

	if (!next)
		next = (int (*)(int, struct sockaddr *, socklen_t *, int))
			dlsym(RTLD_NEXT, "accept4");
	if (!raised) {
		raised = 1;
		raise(SIGTERM);
	}
	return next(fd, addr, len, flags);
}
