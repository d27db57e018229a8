/*
 * zcfloor - the floor of `zcbench static` and `zcbench replay`: the least any
 * epoll web server can do per request, as a reference "server"
 * (docs/bench-static.md).
 *
 *   zcfloor --root DIR [--listen 127.0.0.1:8080] [--workers N]
 *           [--event epoll|io_uring]
 *
 * At start every regular file in DIR and in its subfolders (one level:
 * /NAME and /DIR/NAME; a trace replay's root is /o/ID files) is read into
 * memory once, as two canned responses: "HTTP/1.1 200 OK", Content-Length,
 * an empty line and the file's bytes, contiguous (one with "Connection:
 * close"), in a table sorted by target.  Then per request it does only
 * this:
 *
 *   accept4          (the listener has TCP_DEFER_ACCEPT and TCP_NODELAY,
 *                     so the request is there when the connection is
 *                     accepted, and no setsockopt per connection)
 *   recv             one, right after accept4 for a new connection
 *   find "\r\n\r\n"  the end of the request head; the target (between the
 *                     first two spaces) picks the canned response by a
 *                     binary search of the sorted table (exact match); a
 *                     head that contains "Connection: close" gets the
 *                     closing one
 *   send             one, of the canned response from memory (a copy into
 *                     the socket: no sendfile, no file, no header built)
 *   close            after a closing response; a keep-alive connection is
 *                     added to epoll only when it first has to wait
 *
 * No parsing beyond that, no logging, no timeouts, no files after start.
 * A send the socket cannot take whole (large responses) is finished when
 * epoll says the socket is writable.  Anything that is not a known target
 * gets a canned 404.  --workers N forks N-1 more processes that share the
 * listener (EPOLLEXCLUSIVE); SIGTERM ends them all.  --event io_uring does
 * the same work on io_uring (floor_uring.c); epoll is the default.
 *
 * --open-first: besides, the first request for each target opens its file,
 * fstats it and closes it (a file gone by then is a 404 from then on);
 * the bytes still come from memory.  That is the least a real server
 * pays to find a file when it is first asked for, which this floor
 * otherwise did at start, unmeasured: on a trace whose requests are a
 * quarter first requests the difference between the two is the part of
 * the floor no server that opens files can reach (docs/bench-replay.md).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "floor.h"

struct canned {
	char *target;		/* "/file-1k.bin" */
	size_t target_len;
	char *path;		/* --open-first: the file, until first asked for */
	char *keep, *close;	/* whole responses */
	size_t keep_len, close_len;
};

#define MAX_EVENTS 256
#define ACCEPT_BATCH 64

struct conn {
	int fd;
	int in_epoll;
	int want_out;		/* registered for EPOLLOUT */
	int close_after;	/* close once out is sent */
	const char *out;	/* unsent part of the current response */
	size_t out_len;
	size_t in_len;
	char in[IN_CAP];
};

static struct canned *files;
static size_t nfiles, files_cap;
static struct canned notfound;
static struct conn **conns;
static size_t nconns_max;
static int epfd;
static int open_first;		/* --open-first */

static char *response(const char *status, const char *body, size_t len, int close, size_t *out_len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Length: %zu\r\n%s\r\n", status, len,
			 close ? "Connection: close\r\n" : "");
	char *r = malloc((size_t)n + len);

	if (!r)
		die("malloc");
	memcpy(r, head, (size_t)n);
	memcpy(r + n, body, len);
	*out_len = (size_t)n + len;
	return r;
}

static void canned_init(struct canned *c, const char *target, const char *status,
			const char *body, size_t len)
{
	c->target = strdup(target);
	c->target_len = strlen(target);
	c->keep = response(status, body, len, 0, &c->keep_len);
	c->close = response(status, body, len, 1, &c->close_len);
}

/* Read the regular file at path into a canned response for target. */
static void load_file(const char *path, const char *target, const struct stat *st)
{
	char *body = malloc(st->st_size ? (size_t)st->st_size : 1);
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die(path);
	if (!body)
		die("malloc");
	for (size_t got = 0; got < (size_t)st->st_size;) {
		ssize_t r = read(fd, body + got, (size_t)st->st_size - got);

		if (r <= 0)
			die(path);
		got += (size_t)r;
	}
	close(fd);
	if (nfiles == files_cap) {
		files_cap = files_cap ? 2 * files_cap : 64;
		files = realloc(files, files_cap * sizeof(*files));
		if (!files)
			die("realloc");
	}
	canned_init(&files[nfiles], target, "200 OK", body, (size_t)st->st_size);
	files[nfiles++].path = open_first ? strdup(path) : NULL;
	free(body);
}

/* Every regular file of dir (the root when prefix is "", else one of its
 * subfolders, prefix "/NAME"), as target prefix + "/" + file name; with
 * subfolders, the regular files of each subfolder too (one level only: a
 * trace's root is /o/ID files). */
static void load_dir(const char *dir, const char *prefix, int subfolders)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		die(dir);
	while ((e = readdir(d))) {
		char path[4096], target[1024];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path) ||
		    (size_t)snprintf(target, sizeof(target), "%s/%s", prefix, e->d_name) >= sizeof(target)) {
			fprintf(stderr, "zcfloor: name too long, skipped: %s/%s\n", dir, e->d_name);
			continue;
		}
		if (stat(path, &st) < 0)
			continue;
		if (S_ISREG(st.st_mode))
			load_file(path, target, &st);
		else if (S_ISDIR(st.st_mode) && subfolders)
			load_dir(path, target, 0);
	}
	closedir(d);
}

/* The order of the table: by length, then bytes (any total order that
 * lookup() searches the same way). */
static int target_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return memcmp(a, b, alen);
}

static int canned_cmp(const void *x, const void *y)
{
	const struct canned *a = x, *b = y;

	return target_cmp(a->target, a->target_len, b->target, b->target_len);
}

static void load_root(const char *root)
{
	load_dir(root, "", 1);
	qsort(files, nfiles, sizeof(*files), canned_cmp);
	canned_init(&notfound, "", "404 Not Found", "not found\n", 10);
}

/* f, or with --open-first at f's first request the 404 if its file cannot
 * be opened and stat'ed (then and on every later request). */
static const struct canned *found(struct canned *f)
{
	struct stat st;
	int fd;

	if (!f->path)
		return f->keep ? f : &notfound;
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(f->keep);
		free(f->close);
		f->keep = f->close = NULL;
	}
	if (fd >= 0)
		close(fd);
	free(f->path);
	f->path = NULL;
	return f->keep ? f : &notfound;
}

/* The canned response for the request's target: a binary search of the
 * sorted table (a trace's root has tens of thousands of names). */
static const struct canned *lookup(const char *in, size_t len)
{
	const char *sp = memchr(in, ' ', len), *end;
	size_t lo = 0, hi = nfiles, tlen;

	if (!sp)
		return &notfound;
	sp++;
	end = memchr(sp, ' ', len - (size_t)(sp - in));
	if (!end)
		return &notfound;
	tlen = (size_t)(end - sp);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = target_cmp(files[mid].target, files[mid].target_len, sp, tlen);

		if (c == 0)
			return found(&files[mid]);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &notfound;
}

int next_response(const char *in, size_t in_len, size_t *head_len,
		  const char **out, size_t *out_len, int *close_after)
{
	const char *end = memmem(in, in_len, "\r\n\r\n", 4);
	const struct canned *r;

	if (!end)
		return 0;
	*head_len = (size_t)(end - in) + 4;
	r = lookup(in, *head_len);
	*close_after = memmem(in, *head_len, "Connection: close", 17) != NULL;
	*out = *close_after ? r->close : r->keep;
	*out_len = *close_after ? r->close_len : r->keep_len;
	return 1;
}

static void conn_close(struct conn *c)
{
	close(c->fd);		/* also leaves epoll */
	conns[c->fd] = NULL;
	free(c);
}

static int set_events(struct conn *c, unsigned ev)
{
	struct epoll_event e = { .events = ev, .data.fd = c->fd };

	if (epoll_ctl(epfd, c->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &e) < 0)
		return -1;
	c->in_epoll = 1;
	return 0;
}

/* Send what is pending; 1 all sent, 0 must wait, -1 closed. */
static int flush(struct conn *c)
{
	while (c->out_len) {
		ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!c->want_out && set_events(c, EPOLLOUT) < 0)
					break;
				c->want_out = 1;
				return 0;
			}
			break;
		}
		c->out += n;
		c->out_len -= (size_t)n;
	}
	if (c->out_len || c->close_after) {
		conn_close(c);
		return -1;
	}
	return 1;
}

/* Answer every complete head in the input; then wait for more input. */
static void answer(struct conn *c)
{
	for (;;) {
		size_t head;
		int rc;

		if (!next_response(c->in, c->in_len, &head, &c->out, &c->out_len,
				   &c->close_after))
			break;
		memmove(c->in, c->in + head, c->in_len - head);
		c->in_len -= head;
		rc = flush(c);
		if (rc <= 0)
			return;
	}
	if (c->in_len == IN_CAP) {	/* a head larger than the buffer */
		conn_close(c);
		return;
	}
	if (c->want_out || !c->in_epoll) {
		if (set_events(c, EPOLLIN) < 0) {
			conn_close(c);
			return;
		}
		c->want_out = 0;
	}
}

static void on_readable(struct conn *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		if (!c->in_epoll && set_events(c, EPOLLIN) < 0)
			conn_close(c);
		return;
	}
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->in_len += (size_t)n;
	answer(c);
}

static void accept_some(int lfd)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if ((size_t)fd >= nconns_max || !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		c->fd = fd;
		conns[fd] = c;
		on_readable(c);
	}
}

static void serve(int lfd)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = lfd };
	struct epoll_event evs[MAX_EVENTS];

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &e) < 0)
		die("epoll");
	for (;;) {
		int n = epoll_wait(epfd, evs, MAX_EVENTS, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			struct conn *c;

			if (fd == lfd) {
				accept_some(lfd);
				continue;
			}
			c = conns[fd];
			if (!c)
				continue;
			if (c->want_out) {
				if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
					if (flush(c) > 0)
						answer(c);
				}
			} else if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
				on_readable(c);
			}
		}
	}
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: zcfloor --root DIR [--listen 127.0.0.1:8080] [--workers N]\n"
		"               [--event epoll|io_uring] [--open-first]\n"
		"The least an epoll server does per request (accept4, recv, one send of a\n"
		"canned response read from DIR at start): zcbench's reference \"server\".\n"
		"--event io_uring: the same work on io_uring (bench/floor/floor_uring.c).\n"
		"--open-first: each file also opened and stat'ed at its first request.\n");
	exit(code);
}

int main(int argc, char **argv)
{
	const char *root = NULL, *addr = "127.0.0.1:8080", *event = "epoll";
	int workers = 1, lfd;
	struct rlimit rl;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			usage(0);
		if (!strcmp(argv[i], "--open-first")) {
			open_first = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage(2);
		if (!strcmp(argv[i], "--root"))
			root = argv[++i];
		else if (!strcmp(argv[i], "--listen"))
			addr = argv[++i];
		else if (!strcmp(argv[i], "--event"))
			event = argv[++i];
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[++i]);
		else
			usage(2);
	}
	if (!root || workers < 1)
		usage(2);
	if (strcmp(event, "epoll") && strcmp(event, "io_uring")) {
		fprintf(stderr, "zcfloor: --event wants epoll or io_uring, got %s\n", event);
		exit(2);
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	nconns_max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		     rl.rlim_cur < (1u << 20) ? rl.rlim_cur : (1u << 20);
	conns = calloc(nconns_max, sizeof(*conns));
	if (!conns)
		die("calloc");
	load_root(root);
	lfd = floor_listen(addr);
	fprintf(stderr, "zcfloor: %zu files from %s on %s, %d worker(s)\n", nfiles, root, addr,
		workers);
	floor_run(workers, strcmp(event, "epoll") ? serve_uring : serve, lfd);
	return 0;
}
