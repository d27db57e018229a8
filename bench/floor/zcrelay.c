/*
 * zcrelay - the floor of `zcbench proxy`: the least a reverse proxy can do
 * per connection and per byte, as a reference "proxy"
 * (docs/bench-proxy.md).
 *
 *   zcrelay --listen 127.0.0.1:8080 --upstream 127.0.0.1:9000 [--workers N]
 *
 * A canned relay, no HTTP: every accepted client connection is paired with
 * a connection of its own to the upstream, and bytes are moved both ways
 * with splice(2) through one pipe per direction, never copied to user
 * space.  Per connection it does only this:
 *
 *   accept4        the listener has TCP_DEFER_ACCEPT and TCP_NODELAY (as
 *                  zcfloor's: the request is there when the connection is
 *                  accepted, and accepted sockets inherit TCP_NODELAY)
 *   socket,        a non-blocking connect to --upstream (TCP_NODELAY set on
 *   connect        it: one setsockopt per connection)
 *   epoll_ctl      both sockets, edge-triggered, EPOLLIN|EPOLLOUT|EPOLLRDHUP
 *   splice         src -> pipe, pipe -> dst, each direction, until EAGAIN
 *                  (the direction that reads the socket an event names;
 *                  the one that writes it only if it has bytes waiting)
 *
 * Pipes come from a pool: a pipe that was drained when its connection ended
 * is kept for the next one (as HAProxy keeps its splice pipes), so a
 * connection costs no pipe2 or fcntl once the pool is warm.  Each pipe is
 * grown to 1 MiB with F_SETPIPE_SZ where the system allows it (root, or
 * /proc/sys/fs/pipe-max-size), else keeps the default 64 KiB.
 *
 * Bounded: a direction reads its source only while its pipe is empty; a
 * pipe that holds bytes (its destination could not take them all) stops
 * reading that side until it drains, so a connection never holds more than
 * two pipes of data whatever the two peers do.  Partial splices and EAGAIN
 * on either end are the normal case, not an error: the direction stops and
 * the next edge on either socket (EPOLLIN at the source, EPOLLOUT at the
 * destination: the connect's completion is one) runs it again.
 *
 * Ends: a source's end of stream (splice returns 0) is passed on as a
 * half-close (shutdown(dst, SHUT_WR)) once its pipe has drained; when both
 * directions are half-closed, or either socket fails (reset, refused
 * upstream), both sockets are closed.  So "Connection: close" works the
 * way the two HTTP peers make it work: the origin closes, the client sees
 * the end, closes, and the relay closes the rest.
 *
 * --workers N forks N-1 more processes that share the listener
 * (EPOLLEXCLUSIVE, floor_proc.c as zcfloor); SIGTERM ends them all.  No
 * logging, no timeouts, no limits beyond the descriptor limit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

#define MAX_EVENTS 256
#define ACCEPT_BATCH 64
#define PIPE_WANT (1 << 20)	/* F_SETPIPE_SZ asked for */
#define POOL_MAX 1024		/* drained pipes kept for reuse */

struct pipe_pair {
	int r, w;
	size_t cap;		/* its size (F_GETPIPE_SZ) */
};

/* One direction: bytes from src go through the pipe to dst. */
struct dir {
	struct pipe_pair p;
	size_t pending;		/* bytes in the pipe */
	int src, dst;		/* the relay's sockets (copies of end[].fd) */
	int eof;		/* src ended (splice returned 0) */
	int shut;		/* dst half-closed after the pipe drained */
};

struct relay;

/* What epoll hands back: one per socket. */
struct end {
	struct relay *r;
	int fd;
};

struct relay {
	struct end end[2];	/* 0: client, 1: upstream */
	struct dir d[2];	/* 0: client -> upstream, 1: upstream -> client */
	int dead;		/* closed; freed after this batch of events */
	struct relay *next_dead;
};

static struct sockaddr_in upstream;
static struct pipe_pair pool[POOL_MAX];
static size_t npool;
static struct relay *dead;	/* closed during the current batch */
static int epfd;

/* -- pipes --------------------------------------------------------------- */

static int pipe_get(struct pipe_pair *p)
{
	int fds[2];
	int sz;

	if (npool) {
		*p = pool[--npool];
		return 0;
	}
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	fcntl(fds[1], F_SETPIPE_SZ, PIPE_WANT);	/* where allowed */
	sz = fcntl(fds[1], F_GETPIPE_SZ);
	p->r = fds[0];
	p->w = fds[1];
	p->cap = sz > 0 ? (size_t)sz : 65536;
	return 0;
}

/* A drained pipe goes back to the pool; one that still holds bytes (its
 * connection failed) is closed. */
static void pipe_put(struct pipe_pair *p, size_t pending)
{
	if (p->r < 0)
		return;
	if (!pending && npool < POOL_MAX) {
		pool[npool++] = *p;
	} else {
		close(p->r);
		close(p->w);
	}
	p->r = p->w = -1;
}

/* -- relays -------------------------------------------------------------- */

static void relay_close(struct relay *r)
{
	if (r->dead)
		return;
	r->dead = 1;
	close(r->end[0].fd);	/* also leaves epoll */
	close(r->end[1].fd);
	for (int i = 0; i < 2; i++)
		pipe_put(&r->d[i].p, r->d[i].pending);
	r->next_dead = dead;	/* later events of this batch may name it */
	dead = r;
}

/* Move what can be moved in one direction; 0 fine (done or must wait for
 * the next edge), -1 the connection failed. */
static int pump(struct dir *d)
{
	for (;;) {
		ssize_t n;

		if (d->pending) {		/* first drain the pipe */
			n = splice(d->p.r, NULL, d->dst, NULL, d->pending,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->pending -= (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return 0;	/* dst full (or still connecting): EPOLLOUT */
			return -1;
		}
		if (d->eof) {			/* drained: pass the end on, once */
			if (!d->shut) {
				d->shut = 1;
				if (shutdown(d->dst, SHUT_WR) < 0 && errno != ENOTCONN)
					return -1;
			}
			return 0;
		}
		/* The pipe is empty: read the source. */
		n = splice(d->src, NULL, d->p.w, NULL, d->p.cap,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			d->pending = (size_t)n;
			continue;
		}
		if (n == 0) {
			d->eof = 1;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;		/* nothing to read: EPOLLIN */
		return -1;
	}
}

static void relay_done(struct relay *r)
{
	if (r->d[0].shut && r->d[1].shut)
		relay_close(r);
}

/* An event on one socket of a relay.  epoll reports the socket's whole
 * readiness (a readable socket is nearly always writable too), so the
 * direction that writes to it is pumped only when its pipe holds bytes,
 * i.e. when it waits for this socket's room; the direction that reads it
 * whenever it is readable or failed.  Nothing else can have changed: a
 * direction waiting for its source learns of it from the source's own
 * edge. */
static void relay_event(struct end *e, unsigned ev)
{
	struct relay *r = e->r;
	int side = (int)(e - r->end);		/* 0 client, 1 upstream */
	struct dir *reads = &r->d[side], *writes = &r->d[1 - side];

	if (r->dead)
		return;
	if ((ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && pump(reads) < 0) {
		relay_close(r);
		return;
	}
	if ((ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && writes->pending && pump(writes) < 0) {
		relay_close(r);
		return;
	}
	relay_done(r);
}

static int watch(struct end *e)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
		.data.ptr = e,
	};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, e->fd, &ev);
}

/* Pair a new client connection with an upstream connection. */
static void relay_open(int cfd)
{
	struct relay *r = calloc(1, sizeof(*r));
	int one = 1, ufd = -1;

	if (!r)
		goto fail;
	r->d[0].p.r = r->d[0].p.w = r->d[1].p.r = r->d[1].p.w = -1;
	ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ufd < 0)
		goto fail;
	setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(ufd, (struct sockaddr *)&upstream, sizeof(upstream)) < 0 &&
	    errno != EINPROGRESS)
		goto fail;
	if (pipe_get(&r->d[0].p) < 0 || pipe_get(&r->d[1].p) < 0)
		goto fail;
	r->end[0] = (struct end){ r, cfd };
	r->end[1] = (struct end){ r, ufd };
	r->d[0].src = r->d[1].dst = cfd;
	r->d[0].dst = r->d[1].src = ufd;
	if (watch(&r->end[0]) < 0 || watch(&r->end[1]) < 0)
		goto fail;
	/* The request is usually there already (TCP_DEFER_ACCEPT); what the
	 * upstream cannot take yet (still connecting) waits in the pipe for
	 * its EPOLLOUT. */
	if (pump(&r->d[0]) < 0)
		relay_close(r);
	return;
fail:
	if (r) {
		pipe_put(&r->d[0].p, 0);
		pipe_put(&r->d[1].p, 0);
		free(r);
	}
	if (ufd >= 0)
		close(ufd);
	close(cfd);
}

static void accept_some(int lfd)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		relay_open(fd);
	}
}

static void serve(int lfd)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL };
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
			struct end *end = evs[i].data.ptr;

			if (!end)
				accept_some(lfd);
			else
				relay_event(end, evs[i].events);
		}
		while (dead) {
			struct relay *r = dead;

			dead = r->next_dead;
			free(r);
		}
	}
}

/* -- main ---------------------------------------------------------------- */

static void parse_addr(const char *addr, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(addr, ':');

	if (!colon || (size_t)(colon - addr) >= sizeof(host) || !colon[1]) {
		fprintf(stderr, "zcrelay: --upstream wants HOST:PORT, got %s\n", addr);
		exit(2);
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		fprintf(stderr, "zcrelay: bad IPv4 address %s\n", host);
		exit(2);
	}
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: zcrelay --listen HOST:PORT --upstream HOST:PORT [--workers N]\n"
		"The floor of a reverse proxy: each client connection paired with an\n"
		"upstream connection, bytes relayed both ways with splice through a pipe\n"
		"per direction, no HTTP (bench/floor/zcrelay.c, docs/bench-proxy.md).\n");
	exit(code);
}

int main(int argc, char **argv)
{
	const char *listen_addr = NULL, *up = NULL;
	int workers = 1, lfd;
	struct rlimit rl;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			usage(0);
		if (i + 1 >= argc)
			usage(2);
		if (!strcmp(argv[i], "--listen"))
			listen_addr = argv[++i];
		else if (!strcmp(argv[i], "--upstream"))
			up = argv[++i];
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[++i]);
		else
			usage(2);
	}
	if (!listen_addr || !up || workers < 1)
		usage(2);
	parse_addr(up, &upstream);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;	/* 6 descriptors per connection */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	lfd = floor_listen(listen_addr);
	fprintf(stderr, "zcrelay: %s -> %s, %d worker(s)\n", listen_addr, up, workers);
	floor_run(workers, serve, lfd);
	return 0;
}
