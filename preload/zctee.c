/* zctee: tee(1) that fans a pipe out without copying through user space.
 *
 * Options and messages follow GNU coreutils tee 9.1 (-a, -i, -p,
 * --output-error[=warn|warn-nopipe|exit|exit-nopipe]); messages are
 * "zctee: FILE: strerror" where GNU prints "tee: ...", and file names are
 * printed as given (GNU quotes names with special characters).
 *
 * Data path, per chunk:
 *   1. the chunk is moved into an internal pipe `hold` (splice from stdin:
 *      pages move by reference; a source splice refuses, e.g. a tty, is
 *      read() + write() instead);
 *   2. every live output but the last gets its own reference to the pages:
 *      tee(2) hold -> output when the output is a pipe; otherwise
 *      tee(2) hold -> `scratch` and splice scratch -> output (files,
 *      sockets);
 *   3. the last live output takes the pages themselves: splice hold -> out.
 * tee(2) cannot start at an offset, so an output that accepted only part
 * of a chunk gets the rest through `scratch` (a full duplicate whose head
 * is dropped into /dev/null).  Outputs splice cannot write (ttys, files
 * opened O_APPEND: the kernel refuses splice into them) get read() from
 * scratch + write(): one copy, the same as GNU tee's.
 *
 * Differences from GNU tee: a non-blocking output that is full is waited
 * for with poll(2) instead of failing with EAGAIN. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "zctee"
#define HOLD_SIZE (1 << 20) /* the unprivileged pipe-max-size default */

enum oe_mode { OE_SIGPIPE, OE_WARN, OE_WARN_NOPIPE, OE_EXIT, OE_EXIT_NOPIPE };

struct out {
	int fd;
	const char *name;
	bool live;
	bool is_pipe;
	bool copy; /* splice refused: read()+write() from scratch */
};

static enum oe_mode oe = OE_SIGPIPE;
static int hold[2], scratch[2], devnull = -1;
static size_t hold_bytes; /* bytes of the current chunk still in hold */
static bool ok = true;

static void usage(int status)
{
	if (status != 0) {
		fprintf(stderr, "Try '" PROG " --help' for more information.\n");
		exit(status);
	}
	printf("Usage: " PROG " [OPTION]... [FILE]...\n"
	       "Copy standard input to each FILE, and also to standard output,\n"
	       "moving pipe pages with tee(2)/splice(2) instead of copying.\n\n"
	       "  -a, --append              append to the given FILEs, do not overwrite\n"
	       "  -i, --ignore-interrupts   ignore interrupt signals\n"
	       "  -p                        diagnose errors writing to non pipes\n"
	       "      --output-error[=MODE]   set behavior on write error.  See MODE below\n"
	       "      --help     display this help and exit\n"
	       "      --version  output version information and exit\n\n"
	       "MODE determines behavior with write errors on the outputs:\n"
	       "  warn           diagnose errors writing to any output\n"
	       "  warn-nopipe    diagnose errors writing to any output not a pipe\n"
	       "  exit           exit on error writing to any output\n"
	       "  exit-nopipe    exit on error writing to any output not a pipe\n"
	       "The default MODE for the -p option is 'warn-nopipe'.\n"
	       "The default operation when --output-error is not specified, is to\n"
	       "exit immediately on error writing to a pipe, and diagnose errors\n"
	       "writing to non pipe outputs.\n");
	exit(0);
}

static void die_errno(int err, const char *what)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(err));
	exit(1);
}

/* GNU tee's rule (tee.c): EPIPE is an error only in the warn and exit
 * modes; any other errno always is.  The output is dropped either way. */
static void output_failed(struct out *o, int err)
{
	bool fail = err != EPIPE || oe == OE_EXIT || oe == OE_WARN;
	if (fail) {
		fprintf(stderr, PROG ": %s: %s\n", o->name, strerror(err));
		if (oe == OE_EXIT || oe == OE_EXIT_NOPIPE)
			exit(1);
		ok = false;
	}
	o->live = false;
}

/* Wait until fd is ready for `events` (non-blocking descriptors). */
static void wait_fd(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
}

/* A call to retry: interrupted, or fd not ready yet (waited for). */
static bool again(ssize_t r, int fd, short events)
{
	if (r >= 0 || (errno != EINTR && errno != EAGAIN))
		return false;
	if (errno == EAGAIN)
		wait_fd(fd, events);
	return true;
}

/* Drop n bytes from the head of pipe fd. */
static void discard(int fd, size_t n)
{
	while (n > 0) {
		ssize_t r = splice(fd, NULL, devnull, NULL, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die_errno(r < 0 ? errno : EIO, "internal pipe");
		n -= (size_t)r;
	}
}

/* Write n bytes from the head of pipe `src` to o, consuming them.  On an
 * output error the unwritten rest is dropped from src.  Returns false if
 * the output failed. */
static bool drain_to(int src, struct out *o, size_t n)
{
	char buf[65536];
	while (n > 0) {
		ssize_t r;
		if (!o->copy) {
			r = splice(src, NULL, o->fd, NULL, n, 0);
			if (r < 0 && errno == EINVAL) {
				o->copy = true; /* tty, O_APPEND file, ... */
				continue;
			}
		} else {
			/* Copy path: take at most what we can write now. */
			size_t want = n < sizeof buf ? n : sizeof buf;
			ssize_t got = read(src, buf, want);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				die_errno(got < 0 ? errno : EIO, "internal pipe");
			n -= (size_t)got;
			for (ssize_t off = 0; off < got;) {
				r = write(o->fd, buf + off, (size_t)(got - off));
				if (again(r, o->fd, POLLOUT))
					continue;
				if (r < 0) {
					discard(src, n);
					output_failed(o, errno);
					return false;
				}
				off += r;
			}
			continue;
		}
		if (again(r, o->fd, POLLOUT))
			continue;
		if (r <= 0) {
			int err = r < 0 ? errno : EIO;
			discard(src, n);
			output_failed(o, err);
			return false;
		}
		n -= (size_t)r;
	}
	return true;
}

/* A duplicate of the whole chunk in scratch, its first `skip` bytes dropped. */
static void dup_to_scratch(size_t skip)
{
	size_t got = 0;
	while (got < hold_bytes) {
		ssize_t r = tee(hold[0], scratch[1], hold_bytes, 0);
		if (r < 0 && errno == EINTR)
			continue;
		/* scratch is empty and as large as hold, so tee takes the whole
		 * chunk at once; anything else is a kernel we do not understand. */
		if (r != (ssize_t)hold_bytes)
			die_errno(r < 0 ? errno : EIO, "internal pipe: short tee");
		got = (size_t)r;
	}
	discard(scratch[0], skip);
}

/* Give o its own reference to the chunk in hold, leaving hold intact. */
static void share_chunk(struct out *o)
{
	size_t done = 0;
	if (o->is_pipe) {
		for (;;) {
			ssize_t r = tee(hold[0], o->fd, hold_bytes, 0);
			if (again(r, o->fd, POLLOUT))
				continue;
			if (r < 0) {
				output_failed(o, errno);
				return;
			}
			done = (size_t)r;
			break;
		}
		if (done == hold_bytes)
			return;
		/* The pipe took part of the chunk: the rest from an offset. */
	}
	dup_to_scratch(done);
	drain_to(scratch[0], o, hold_bytes - done);
}

/* Fill hold with the next chunk of stdin; false at EOF. */
static bool next_chunk(bool *src_copy)
{
	char buf[65536];
	for (;;) {
		ssize_t r;
		if (!*src_copy) {
			r = splice(STDIN_FILENO, NULL, hold[1], NULL, HOLD_SIZE, 0);
			if (r < 0 && errno == EINVAL) {
				*src_copy = true; /* a source splice cannot read */
				continue;
			}
		} else {
			r = read(STDIN_FILENO, buf, sizeof buf);
		}
		if (again(r, STDIN_FILENO, POLLIN))
			continue;
		if (r < 0) {
			fprintf(stderr, PROG ": read error: %s\n", strerror(errno));
			ok = false;
			return false;
		}
		if (r == 0)
			return false;
		if (*src_copy) {
			for (ssize_t off = 0; off < r;) {
				ssize_t w = write(hold[1], buf + off, (size_t)(r - off));
				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0)
					die_errno(errno, "internal pipe");
				off += w;
			}
		}
		hold_bytes = (size_t)r;
		return true;
	}
}

static bool fd_is_pipe(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

static void make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		die_errno(errno, "pipe");
	(void)fcntl(p[1], F_SETPIPE_SZ, HOLD_SIZE); /* best effort */
}

static enum oe_mode parse_mode(const char *arg)
{
	static const struct { const char *name; enum oe_mode m; } modes[] = {
		{ "warn", OE_WARN }, { "warn-nopipe", OE_WARN_NOPIPE },
		{ "exit", OE_EXIT }, { "exit-nopipe", OE_EXIT_NOPIPE },
	};
	if (!arg)
		return OE_WARN_NOPIPE;
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(arg, modes[i].name) == 0)
			return modes[i].m;
	fprintf(stderr, PROG ": invalid argument '%s' for '--output-error'\n"
		"Valid arguments are:\n  - 'warn'\n  - 'warn-nopipe'\n"
		"  - 'exit'\n  - 'exit-nopipe'\n", arg);
	usage(1);
	return OE_SIGPIPE;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "append", no_argument, NULL, 'a' },
		{ "ignore-interrupts", no_argument, NULL, 'i' },
		{ "output-error", optional_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool append = false, ignore_int = false;
	int c;
	while ((c = getopt_long(argc, argv, "aip", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': append = true; break;
		case 'i': ignore_int = true; break;
		case 'p': oe = OE_WARN_NOPIPE; break;
		case 'O': oe = parse_mode(optarg); break;
		case 'h': usage(0); break;
		case 'V':
			printf(PROG " (zcstack) 0.1\nOptions and messages of GNU coreutils tee 9.1.\n");
			return 0;
		default: usage(1);
		}
	}
	if (ignore_int)
		signal(SIGINT, SIG_IGN);
	/* As GNU tee: with an output-error mode EPIPE is an errno, not a death. */
	if (oe != OE_SIGPIPE)
		signal(SIGPIPE, SIG_IGN);

	size_t nfiles = (size_t)(argc - optind);
	struct out *outs = calloc(nfiles + 1, sizeof *outs);
	if (!outs)
		die_errno(ENOMEM, "malloc");
	outs[0] = (struct out){ STDOUT_FILENO, "standard output", true, false, false };
	size_t live = 1;
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
	for (size_t i = 1; i <= nfiles; i++) {
		outs[i].name = argv[optind + (int)i - 1];
		outs[i].fd = open(outs[i].name, flags, 0666);
		if (outs[i].fd < 0) {
			fprintf(stderr, PROG ": %s: %s\n", outs[i].name, strerror(errno));
			if (oe == OE_EXIT || oe == OE_EXIT_NOPIPE)
				return 1;
			ok = false;
			continue;
		}
		outs[i].live = true;
		live++;
	}
	for (size_t i = 0; i <= nfiles; i++)
		if (outs[i].live)
			outs[i].is_pipe = fd_is_pipe(outs[i].fd);

	make_pipe(hold);
	make_pipe(scratch);
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0)
		die_errno(errno, "/dev/null");
	if (fcntl(scratch[1], F_GETPIPE_SZ) < fcntl(hold[1], F_GETPIPE_SZ))
		die_errno(ENOSPC, "internal pipe");

	bool src_copy = false;
	/* As GNU tee: stop reading once every output is gone. */
	while (live > 0 && next_chunk(&src_copy)) {
		size_t last = nfiles + 1;
		for (size_t i = 0; i <= nfiles; i++)
			if (outs[i].live)
				last = i;
		for (size_t i = 0; i <= nfiles; i++) {
			if (!outs[i].live)
				continue;
			if (i == last) {
				/* The last output takes the pages themselves. */
				drain_to(hold[0], &outs[i], hold_bytes);
				hold_bytes = 0;
			} else {
				share_chunk(&outs[i]);
			}
			if (!outs[i].live)
				live--;
		}
		if (hold_bytes > 0) { /* the last output failed before its turn */
			discard(hold[0], hold_bytes);
			hold_bytes = 0;
		}
	}

	for (size_t i = 1; i <= nfiles; i++)
		if (outs[i].fd >= 0 && close(outs[i].fd) != 0 && outs[i].live) {
			fprintf(stderr, PROG ": %s: %s\n", outs[i].name, strerror(errno));
			ok = false;
		}
	free(outs);
	return ok ? 0 : 1;
}
