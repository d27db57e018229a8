/*
 * conv.c - the conversions: one entry each, the only place that lists them.
 *
 * An entry gives the conversion's name (ZC_DISABLE, ZC_ENABLE, zcrun's
 * --disable/--enable and the statistics use it), whether it is on by
 * default, and its life-cycle hooks.  The life cycle reaches the
 * conversions only through this table: preload.c at fork and exit, hooks.c
 * when a descriptor number changes meaning, fdstate.c (through hooks.c)
 * when one of the preload's own descriptors moves.  Adding a conversion:
 * its enum zcp_conv value (preload.h) and its entry here; zcrun.c checks
 * the names it accepts against its own list.
 *
 * Not here: the per-call hand-offs (write, read, mmap, ...).  hooks.c calls
 * those directly, inline where it can, because they sit on every I/O call
 * of every program (preload.h, "Hand-offs").
 *
 * The walkers below see the table as a constant, so the compiler turns each
 * walk into direct calls of the hooks that exist: fd_forget on close() costs
 * one direct call more than the two calls by name it replaces.
 */
#define _GNU_SOURCE
#include "preload.h"

struct conversion {
	/*
	 * false: off unless ZC_ENABLE names it (zcrun's --enable list must
	 * then name it too).  ZC_DISABLE switches off either kind.
	 */
	bool on;

	/* Any hook may be NULL.  Each runs for every conversion, on or off
	 * (state it made while on, or before configuration, is still there). */

	/*
	 * fork: prepare in reverse table order, parent and child in table
	 * order (pthread_atfork's own convention), after preload.c's own
	 * child work (pid, statistics).  Order matters: stdio's prepare may
	 * unmap a stream's mapping, and munmap takes mapwrite's table lock,
	 * which mapwrite's prepare holds: stdio comes after mapwrite.
	 */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
	/* A program's descriptor number names something new from now on
	 * (close, dup2/dup3 onto it, pipe, close_range): forget what was
	 * cached about it. */
	void (*fd_forget)(int fd);
	/* One of the preload's own descriptors moved (fdstate.c). */
	zcp_fd_moved_fn *fd_moved;
	/* The process exits (the library's destructor; not _exit). */
	void (*exit)(void);
};

static const struct conversion convs[ZCP_NCONV] = {
	[ZCP_PIPE] = {
		.on = true,
		.fork_child = zcp_pipe_fork_child,
		.fd_forget = zcp_pipe_forget,
	},
	[ZCP_MAPWRITE] = {
		.on = true,
		.fork_prepare = zcp_map_fork_prepare,
		.fork_parent = zcp_map_fork_parent,
		.fork_child = zcp_map_fork_child,
		.fd_moved = zcp_map_fd_moved,
	},
	[ZCP_FORWARD] = {
		.on = true,
		.fd_forget = zcp_forward_forget,
	},
	[ZCP_STDIO] = {
		.on = true,
		.fork_prepare = zcp_stdio_fork_prepare,
		.fork_parent = zcp_stdio_fork_release,
		.fork_child = zcp_stdio_fork_release,
		.exit = zcp_stdio_exit,
	},
};

#define ZCP_CONV_NAME(e, name) [e] = name,
static const char *const names[ZCP_NCONV] = { ZCP_CONVERSIONS(ZCP_CONV_NAME) };
#undef ZCP_CONV_NAME

const char *zcp_conv_name(enum zcp_conv c)
{
	return c < ZCP_NCONV ? names[c] : "?";
}

bool zcp_conv_on_by_default(enum zcp_conv c)
{
	return c < ZCP_NCONV && convs[c].on;
}

/*
 * Call hook(args) of every entry that has one, in table order.  Unrolled,
 * the table's constant entries fold into direct calls (no pointer loads,
 * no tests of hooks that do not exist).
 */
#define EACH(hook, ...)                                                       \
	_Pragma("GCC unroll 16")                                              \
	for (int c_ = 0; c_ < ZCP_NCONV; c_++)                                \
		if (convs[c_].hook)                                           \
			convs[c_].hook(__VA_ARGS__)

void zcp_conv_fork_prepare(void)
{
#pragma GCC unroll 16
	for (int c = ZCP_NCONV - 1; c >= 0; c--)
		if (convs[c].fork_prepare)
			convs[c].fork_prepare();
}

void zcp_conv_fork_parent(void)
{
	EACH(fork_parent);
}

void zcp_conv_fork_child(void)
{
	EACH(fork_child);
}

void zcp_conv_fd_forget(int fd)
{
	EACH(fd_forget, fd);
}

void zcp_conv_fd_moved(int old, int new)
{
	EACH(fd_moved, old, new);
}

void zcp_conv_exit(void)
{
	EACH(exit);
}
