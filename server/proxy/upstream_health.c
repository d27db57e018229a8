/*
 * upstream_health.c - active health checks of upstream servers
 * (upstream.h).
 *
 * For every server of a group with `health PATH`, each worker sends
 * "GET PATH" on a connection of its own every health_ms, with
 * Connection: close, and reads the status line: the group's health_status
 * (or any 2xx or 3xx) passes; anything else, a refused or reset
 * connection, or no answer before the next check is due, fails.
 * health_fall failures in a row take the server out of service for this
 * worker, health_rise passes bring it back (a server starts in service:
 * the passive checks look after it until the first verdict).  Each worker
 * checks for itself, so that a worker never trusts a verdict it cannot see
 * change; the cost is one small request per server per worker per
 * interval.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errlog.h"
#include "proxy_int.h"
#include "upstream.h"
#include "zchttpd.h"

#define CHECK_BUF 512		/* the status line is all we read */

struct check {
	struct zh_worker *w;
	struct up_server *srv;
	unsigned index;			/* cfg->proxy.servers */
	int fd;				/* -1: no check in progress */
	struct ev_timer timer;		/* the next check */
	struct ev_timer_list *every;	/* its group's interval */
	char req[512];
	size_t req_len, sent;
	char buf[CHECK_BUF];
	size_t got;
	unsigned passes, fails;		/* in a row */
};

struct up_health {
	struct check *checks;
	unsigned n;
};

#define check_of_timer(t) \
	((struct check *)((char *)(t) - offsetof(struct check, timer)))

static void verdict(struct check *c, bool pass, const char *why)
{
	const struct zh_upstream_group *g = c->srv->g->conf;

	if (c->fd >= 0) {
		ev_forget(c->w->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (pass) {
		c->fails = 0;
		if (++c->passes >= g->health_rise)
			up_set_checked(c->w, c->index, true);
	} else {
		c->passes = 0;
		if (++c->fails >= g->health_fall) {
			if (!c->srv->checked_down)
				zh_log(ZL_WARN, "upstream %s: health check "
				       "failed %u times: %s", c->srv->conf->spec,
				       c->fails, why);
			up_set_checked(c->w, c->index, false);
		}
	}
}

/* "HTTP/1.x NNN": the status, or 0 when the line is not one. */
static int status_of(const char *b, size_t n)
{
	if (n < 12 || memcmp(b, "HTTP/1.", 7) || b[8] != ' ')
		return 0;
	for (int i = 9; i < 12; i++)
		if (b[i] < '0' || b[i] > '9')
			return 0;
	return (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
}

static void on_check_io(struct ev_loop *loop, int fd, uint32_t ev,
			void *data)
{
	struct check *c = data;
	int want = c->srv->g->conf->health_status;

	(void)loop;
	if (ev & EPOLLERR) {
		verdict(c, false, "connection failed");
		return;
	}
	while (c->sent < c->req_len) {
		ssize_t k = send(fd, c->req + c->sent, c->req_len - c->sent,
				 MSG_NOSIGNAL);

		if (k < 0 && errno == EAGAIN)
			return;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			verdict(c, false, strerror(errno));
			return;
		}
		c->sent += (size_t)k;
	}
	for (;;) {
		ssize_t k = recv(fd, c->buf + c->got, sizeof(c->buf) - c->got,
				 0);
		int st;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		if (k > 0)
			c->got += (size_t)k;
		st = status_of(c->buf, c->got);
		if (st) {
			bool pass = want ? st == want : st >= 200 && st < 400;
			char why[64];

			snprintf(why, sizeof(why), "status %d", st);
			verdict(c, pass, why);
			return;
		}
		if (k <= 0 || c->got >= 12) {
			verdict(c, false, k < 0 ? strerror(errno)
						: "no status line");
			return;
		}
	}
}

static void on_check_timer(struct ev_loop *loop, struct ev_timer *t);

static void start(struct check *c)
{
	const struct zh_upstream_server *s = c->srv->conf;
	int fd;

	ev_timer_arm(c->w->loop, c->every, &c->timer, on_check_timer);
	if (c->fd >= 0)
		verdict(c, false, "no answer within the interval");
	if (c->w->stopping)
		return;
	fd = socket(s->addr.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;		/* out of descriptors: no verdict */
	if ((connect(fd, (const struct sockaddr *)&s->addr, s->addr_len) &&
	     errno != EINPROGRESS && errno != EAGAIN) ||
	    ev_add(c->w->loop, fd, EPOLLIN | EPOLLOUT | EPOLLET,
		   on_check_io, c)) {
		close(fd);
		verdict(c, false, "connect failed");
		return;
	}
	c->fd = fd;
	c->sent = c->got = 0;
}

static void on_check_timer(struct ev_loop *loop, struct ev_timer *t)
{
	struct check *c = check_of_timer(t);

	(void)loop;
	(void)t;
	start(c);
}

int up_health_init(struct zh_worker *w)
{
	const struct zh_proxy_config *pc = &w->cfg->proxy;
	struct proxy_worker *pw = w->proxy;
	struct up_health *h;
	unsigned n = 0;

	for (unsigned i = 0; i < pw->ngroups; i++)
		if (pw->groups[i].conf->health_path)
			n += pw->groups[i].conf->n;
	if (!n)
		return 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pw->health = h;
	h->checks = calloc(n, sizeof(*h->checks));
	if (!h->checks)
		return -ENOMEM;
	for (unsigned i = 0; i < pw->ngroups; i++) {
		struct up_group *g = &pw->groups[i];

		struct ev_timer_list *every;

		if (!g->conf->health_path)
			continue;
		every = up_timer_list(w, g->conf->health_ms);
		if (!every)
			return -ENOSPC;
		for (unsigned k = 0; k < g->conf->n; k++) {
			struct check *c = &h->checks[h->n++];
			const char *host = pc->host == ZH_HOST_SET
					   ? pc->host_name
					   : g->s[k].conf->authority;
			int len;

			c->w = w;
			c->srv = &g->s[k];
			c->index = g->s[k].conf->index;
			c->fd = -1;
			c->every = every;
			len = snprintf(c->req, sizeof(c->req),
				       "GET %s HTTP/1.1\r\nHost: %s\r\n"
				       "User-Agent: zchttpd-health-check\r\n"
				       "Connection: close\r\n\r\n",
				       g->conf->health_path, host);
			if (len < 0 || (size_t)len >= sizeof(c->req))
				return -ENAMETOOLONG;
			c->req_len = (size_t)len;
			/* The first checks go at once. */
			start(c);
		}
	}
	return 0;
}

void up_health_fini(struct zh_worker *w)
{
	struct up_health *h = w->proxy ? w->proxy->health : NULL;

	if (!h)
		return;
	for (unsigned i = 0; i < h->n; i++) {
		struct check *c = &h->checks[i];

		ev_timer_disarm(&c->timer);
		if (c->fd >= 0) {
			ev_forget(w->loop, c->fd);
			close(c->fd);
		}
	}
	free(h->checks);
	free(h);
	w->proxy->health = NULL;
}
