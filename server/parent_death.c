/* parent_death.c - a child of the master that stops when the master dies
 * (parent_death.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "parent_death.h"

int stop_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		return -errno;
	/* The master may have died before the request: then we were
	 * reparented already and no signal will come. */
	return getppid() == parent ? 0 : -ESRCH;
}
