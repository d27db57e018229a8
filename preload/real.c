/*
 * real.c - the real functions behind the hooks: one table for the whole
 * preload, filled once with dlsym(RTLD_NEXT) (zcp_init(), preload.c).
 *
 * A hook must never call the function it defines by name (that would be
 * itself), so every part of the preload reaches the real one through
 * zcp_real.  A symbol the C library lacks (musl has no execveat, no
 * fcloseall; older glibc no close_range) stays NULL, and the hooks that
 * use it say so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "preload.h"

struct zcp_real zcp_real;

void zcp_real_resolve(void)
{
#define NEXT(f) (zcp_real.f = dlsym(RTLD_NEXT, #f))
	NEXT(read);
	NEXT(write);
	NEXT(writev);
	NEXT(send);
	NEXT(sendto);
	NEXT(sendmsg);
	NEXT(pipe);
	NEXT(pipe2);
	NEXT(mmap);
	NEXT(munmap);
	NEXT(mprotect);
	NEXT(mremap);
	NEXT(close);
	NEXT(close_range);
	NEXT(closefrom);
	NEXT(dup2);
	NEXT(dup3);
	NEXT(execve);
	NEXT(execv);
	NEXT(execvp);
	NEXT(execvpe);
	NEXT(fexecve);
	NEXT(execveat);
	NEXT(_exit);
	NEXT(_Exit);
	NEXT(fopen);
	NEXT(fopen64);
	NEXT(fdopen);
	NEXT(freopen);
	NEXT(freopen64);
	NEXT(fclose);
	NEXT(fcloseall);
	NEXT(fflush);
	NEXT(fflush_unlocked);
	NEXT(fseek);
	NEXT(fseeko);
	NEXT(fseeko64);
	NEXT(sigaction);
	NEXT(signal);
#undef NEXT
}
