/*
 * parent_death.h - a child of the master that stops when the master dies.
 *
 * zchttpd's workers and the FastCGI applications it spawns are children
 * of the master.  A master that is killed outright (SIGKILL, the OOM
 * killer) runs no code, so it cannot stop them: without this they would go
 * on serving and hold the port.  Each child asks the kernel for SIGTERM at
 * its parent's death (PR_SET_PDEATHSIG), which the workers take as the
 * graceful stop they already know (worker.c's signalfd) and libfcgi
 * applications as theirs.
 *
 * Why the signal and not a pipe whose EOF each worker's loop watches: the
 * applications are programs of their own (php-fpm, any libfcgi binary)
 * that cannot watch a descriptor of ours, while the parent-death signal is
 * kept across execve; one mechanism serves both, and for a worker it ends
 * in the code path SIGTERM already takes.  Its known gap is the window
 * between fork and prctl: a master that dies there signals nobody, so the
 * child compares getppid() with the master's pid, taken before the fork,
 * once the request is in place.
 */
#ifndef ZC_PARENT_DEATH_H
#define ZC_PARENT_DEATH_H

#include <sys/types.h>

/* In a child just forked by `parent` (its getpid() before the fork):
 * SIGTERM when it dies.  0; -ESRCH if it is gone already (the child
 * should exit: nothing of its own has started yet); -errno if prctl
 * refused (the child runs on, unguarded). */
int stop_with_parent(pid_t parent);

#endif
