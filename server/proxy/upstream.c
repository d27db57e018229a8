/*
 * upstream.c - connections to HTTP upstream servers (upstream.h).
 *
 * The life of a connection:
 *
 *   CONNECTING  non-blocking connect(2) in progress, bounded by the
 *               group's connect timeout; a failure counts against the
 *               server and the request tries the next one
 *   ACTIVE      serving one request: its events go to that request
 *   IDLE        in its server's idle list (most recently used first), at
 *               most `keepalive` of them, closed after `idle` ms or as soon
 *               as the server closes it
 *
 * Nothing here reads or writes HTTP: the request that holds a connection
 * does (proxy.c).  What this file decides is which server, which
 * connection, and when a server is out of service.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errlog.h"
#include "proxy_int.h"
#include "upstream.h"
#include "zchttpd.h"

#define RING_POINTS 160			/* per unit of weight (ketama's) */

enum uc_state { UC_CONNECTING, UC_ACTIVE, UC_IDLE };

struct up_conn {
	struct up_server *srv;
	struct up_conn *next;		/* idle list */
	int fd;
	enum uc_state state;
	struct up_client *cl;		/* CONNECTING, ACTIVE */
	zc_sink sink;
	struct ev_timer timer;		/* connect, timeout or idle */
	unsigned served;		/* requests completed on it */
	bool rdhup;			/* the server shut its side */
};

#define uc_of_timer(t) \
	((struct up_conn *)((char *)(t) - offsetof(struct up_conn, timer)))
#define cl_of_qtimer(t) \
	((struct up_client *)((char *)(t) - offsetof(struct up_client, qt)))

static void serve_queue(struct up_group *g);

/* ------------------------------------------------------------ helpers */

uint32_t up_hash(const void *p, size_t n, uint32_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

static void gauges(struct up_server *s)
{
	s->st->active = s->nconns - s->nidle;
	s->st->idle = s->nidle;
	s->st->down = !up_in_service(s, ev_now_ms(s->g->w->loop));
}

bool up_in_service(const struct up_server *s, uint64_t now)
{
	return !s->checked_down && now >= s->down_until;
}

static void close_conn(struct up_conn *uc)
{
	struct up_server *s = uc->srv;

	if (uc->state == UC_IDLE) {
		struct up_conn **pp = &s->idle;

		while (*pp != uc)
			pp = &(*pp)->next;
		*pp = uc->next;
		s->nidle--;
	}
	ev_timer_disarm(&uc->timer);
	ev_forget(s->g->w->loop, uc->fd);
	close(uc->fd);
	s->nconns--;
	gauges(s);
	free(uc);
}

/* A failure that is the server's: max_fails in a row take it out. */
static void count_failure(struct up_server *s, const char *why)
{
	const struct zh_upstream_group *gc = s->g->conf;
	uint64_t now = ev_now_ms(s->g->w->loop);

	s->st->failures++;
	s->fails++;
	if (gc->max_fails && s->fails >= gc->max_fails &&
	    now >= s->down_until) {
		s->down_until = now + gc->fail_ms;
		zh_log(ZL_ERROR, "upstream %s: out of service for %u ms "
		       "after %u failure%s in a row (last: %s)",
		       s->conf->spec, gc->fail_ms, s->fails,
		       s->fails > 1 ? "s" : "", why);
	}
	gauges(s);
}

/* ------------------------------------------------------------ choosing */

/* Can this request use s now: in service, not tried, and a connection
 * free or room for one?  *full: in service and untried but at its bound. */
static bool usable(const struct up_server *s, const struct up_client *cl,
		   unsigned i, uint64_t now, bool *full)
{
	if ((cl->tried >> i) & 1 || !up_in_service(s, now))
		return false;
	if (s->nidle || !s->g->conf->max_conns ||
	    s->nconns < s->g->conf->max_conns)
		return true;
	*full = true;
	return false;
}

/* Smooth weighted round robin (nginx's): every usable server gains its
 * weight, the richest is chosen and pays the total.  dry: whether any
 * would do, the weights untouched. */
static struct up_server *pick_rr(struct up_group *g, struct up_client *cl,
				 bool backup, uint64_t now, bool *full, bool dry)
{
	struct up_server *best = NULL;
	int total = 0;

	for (unsigned i = 0; i < g->conf->n; i++) {
		struct up_server *s = &g->s[i];

		if (s->conf->backup != backup || !usable(s, cl, i, now, full))
			continue;
		if (dry)
			return s;
		s->cw += (int)s->conf->weight;
		total += (int)s->conf->weight;
		if (!best || s->cw > best->cw)
			best = s;
	}
	if (best)
		best->cw -= total;
	return best;
}

/* Fewest connections serving, relative to weight; ties by round robin. */
static struct up_server *pick_least(struct up_group *g, struct up_client *cl,
				    bool backup, uint64_t now, bool *full,
				    bool dry)
{
	struct up_server *best = NULL;
	unsigned n = g->conf->n;

	for (unsigned k = 0; k < n; k++) {
		unsigned i = (g->rr + k) % n;
		struct up_server *s = &g->s[i];

		if (s->conf->backup != backup || !usable(s, cl, i, now, full))
			continue;
		if (!best || (uint64_t)(s->nconns - s->nidle) *
				     best->conf->weight <
			     (uint64_t)(best->nconns - best->nidle) *
				     s->conf->weight)
			best = s;
	}
	if (!dry)
		g->rr = (g->rr + 1) % n;
	return best;
}

/* Consistent hashing: the first point of the ring at or after the key's
 * hash whose server can be used; a full one there means wait for it (the
 * key's affinity is the point of hashing). */
static struct up_server *pick_hash(struct up_group *g, struct up_client *cl,
				   bool backup, uint64_t now, bool *full)
{
	unsigned lo = 0, hi = g->nring;

	if (!g->nring)
		return NULL;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (g->ring[mid].hash < cl->hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (unsigned k = 0; k < g->nring; k++) {
		const struct up_point *pt = &g->ring[(lo + k) % g->nring];
		struct up_server *s = &g->s[pt->server];
		bool f = false;

		if (s->conf->backup != backup)
			continue;
		if (usable(s, cl, pt->server, now, &f))
			return s;
		if (f) {
			*full = true;
			return NULL;
		}
	}
	return NULL;
}

/* The server for cl, or NULL (*full: because those it may use are at
 * their bound).  dry: only whether there is one -- the balancing's state
 * (round robin's weights, least-conn's tie breaker) stays as it was. */
static struct up_server *pick(struct up_group *g, struct up_client *cl,
			      uint64_t now, bool *full, bool dry)
{
	struct up_server *s = NULL;

	for (int backup = 0; backup < 2 && !s && !*full; backup++) {
		switch (g->conf->balance) {
		case ZH_BALANCE_RR:
			s = pick_rr(g, cl, backup, now, full, dry);
			break;
		case ZH_BALANCE_LEAST_CONN:
			s = pick_least(g, cl, backup, now, full, dry);
			break;
		case ZH_BALANCE_HASH:
			s = pick_hash(g, cl, backup, now, full);
			break;
		}
	}
	return s;
}

/* ------------------------------------------------------------ connecting */

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data);

static void on_timer(struct ev_loop *loop, struct ev_timer *t)
{
	struct up_conn *uc = uc_of_timer(t);

	(void)loop;
	switch (uc->state) {
	case UC_IDLE:
		close_conn(uc);
		break;
	case UC_ACTIVE:
		uc->cl->timeout(uc->cl);
		break;
	case UC_CONNECTING:
		up_connect_failed(uc, ETIMEDOUT);
		break;
	}
}

static void attach(struct up_conn *uc, struct up_client *cl)
{
	uc->state = UC_ACTIVE;
	uc->cl = cl;
	cl->opening = NULL;
	ev_timer_disarm(&uc->timer);
	uc->srv->st->requests++;
	gauges(uc->srv);
	cl->attached(cl, uc);
}

/* A new connection to s for cl: 0 (connecting; or connected and attached
 * at once), or a negative errno (nothing is left of it). */
static int open_conn(struct up_server *s, struct up_client *cl)
{
	const struct zh_upstream_server *sc = s->conf;
	struct zh_worker *w = s->g->w;
	struct up_conn *uc = calloc(1, sizeof(*uc));
	int one = 1, err;

	if (!uc)
		return -ENOMEM;
	uc->srv = s;
	uc->fd = socket(sc->addr.ss_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (uc->fd < 0) {
		err = -errno;
		free(uc);
		return err;
	}
	if (sc->addr.ss_family != AF_UNIX)
		setsockopt(uc->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	zc_sink_init_tcp(&uc->sink, uc->fd, 1);
	/* What goes to the server once is not lent (zc.h). */
	zc_sink_copy_first_trip(&uc->sink, 1);
	if (connect(uc->fd, (const struct sockaddr *)&sc->addr,
		    sc->addr_len) < 0 && errno != EINPROGRESS &&
	    errno != EAGAIN) {
		err = -errno;
		close(uc->fd);
		free(uc);
		return err;
	}
	/* Once, edge-triggered, for everything (upstream.h). */
	err = ev_add(w->loop, uc->fd,
		     EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, on_io, uc);
	if (err) {
		close(uc->fd);
		free(uc);
		return err;
	}
	s->nconns++;
	uc->state = UC_CONNECTING;
	uc->cl = cl;
	cl->opening = uc;
	ev_timer_arm(w->loop, s->g->t_connect, &uc->timer, on_timer);
	gauges(s);
	return 0;
}

/*
 * Find cl a connection: an idle one (attached now), a new one (attached
 * when connect completes), or a place in the queue.  Servers that refuse
 * at once are counted and the next is tried.  Returns 0, or the status to
 * answer when nothing can be had: 503 (queue full, nothing in service),
 * 502 (every server tried failed).
 */
static int find(struct up_group *g, struct up_client *cl)
{
	uint64_t now = ev_now_ms(g->w->loop);

	for (;;) {
		bool full = false;
		struct up_server *s = pick(g, cl, now, &full, false);
		int err;

		if (!s && full) {
			if (g->nqueued >= g->conf->queue)
				return 503;
			up_enqueue(g, cl);
			return 0;
		}
		if (!s)
			return cl->tried ? 502 : 503;
		if (s->idle) {
			struct up_conn *uc = s->idle;

			s->idle = uc->next;
			s->nidle--;
			attach(uc, cl);
			return 0;
		}
		err = open_conn(s, cl);
		if (!err)
			return 0;
		cl->tried |= 1ull << (s - g->s);
		if (err != -ENOMEM && err != -EMFILE && err != -ENFILE)
			count_failure(s, strerror(-err));
		zh_log(ZL_ERROR, "upstream %s: connect: %s", s->conf->spec,
		       strerror(-err));
	}
}

/* The connection cl was waiting for failed (err) or timed out: count it,
 * try the next server, or tell cl. */
void up_connect_failed(struct up_conn *uc, int err)
{
	struct up_server *s = uc->srv;
	struct up_group *g = s->g;
	struct up_client *cl = uc->cl;
	int status;

	zh_log(ZL_ERROR, "upstream %s: connect: %s", s->conf->spec,
	       err == ETIMEDOUT ? "timed out" : strerror(err));
	count_failure(s, err == ETIMEDOUT ? "connect timed out"
					  : strerror(err));
	close_conn(uc);
	cl->opening = NULL;
	cl->tried |= 1ull << (s - g->s);
	status = find(g, cl);
	if (status)
		cl->failed(cl, status == 502 && err == ETIMEDOUT ? 504 : status,
			   err == ETIMEDOUT ? "connect timed out"
					    : "connection refused or failed");
	serve_queue(g);
}

static void on_io(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	struct up_conn *uc = data;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)loop;
	if (ev & (EPOLLRDHUP | EPOLLHUP))
		uc->rdhup = true;
	switch (uc->state) {
	case UC_CONNECTING:
		if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (!err && (ev & (EPOLLERR | EPOLLHUP)))
			err = ECONNRESET;
		if (err) {
			up_connect_failed(uc, err);
			return;
		}
		uc->rdhup = false;
		attach(uc, uc->cl);
		return;
	case UC_IDLE:
		/* Closed by the server, or bytes nobody asked for. */
		if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			close_conn(uc);
		return;
	case UC_ACTIVE:
		uc->cl->io(uc->cl, ev);
		return;
	}
}

/* ------------------------------------------------------------ queue */

static void on_queue_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct up_client *cl = cl_of_qtimer(t);

	(void)loop;
	up_dequeue(cl->group, cl);
	cl->failed(cl, 503, "no connection free within the timeout");
}

void up_enqueue(struct up_group *g, struct up_client *cl)
{
	cl->queued = true;
	cl->group = g;
	cl->qnext = NULL;
	cl->qprev = g->qtail;
	if (g->qtail)
		g->qtail->qnext = cl;
	else
		g->qhead = cl;
	g->qtail = cl;
	g->nqueued++;
	ev_timer_arm(g->w->loop, g->t_timeout, &cl->qt, on_queue_timeout);
}

void up_dequeue(struct up_group *g, struct up_client *cl)
{
	if (cl->qprev)
		cl->qprev->qnext = cl->qnext;
	else
		g->qhead = cl->qnext;
	if (cl->qnext)
		cl->qnext->qprev = cl->qprev;
	else
		g->qtail = cl->qprev;
	cl->queued = false;
	g->nqueued--;
	ev_timer_disarm(&cl->qt);
}

/* Room came up (a connection idle or closed): the queue's head goes
 * first, for as long as a server takes it. */
static void serve_queue(struct up_group *g)
{
	while (g->qhead) {
		struct up_client *cl = g->qhead;
		bool full = false;
		struct up_server *s = pick(g, cl, ev_now_ms(g->w->loop), &full,
					   true);
		int status;

		/* find() chooses for real: a second choice here would have
		 * paid round robin's weights twice for one request. */
		if (!s && full)
			return;		/* still everything busy */
		up_dequeue(g, cl);
		status = find(g, cl);
		if (status)
			cl->failed(cl, status, "no server in service");
	}
}

/* ------------------------------------------------------------ api */

int up_acquire(struct zh_worker *w, unsigned group, struct up_client *cl)
{
	struct up_group *g = &w->proxy->groups[group];

	cl->opening = NULL;
	cl->queued = false;
	cl->group = g;
	if (g->nqueued && g->nqueued >= g->conf->queue)
		return 503;
	if (g->qhead) {
		/* Others wait already: behind them. */
		up_enqueue(g, cl);
		return 0;
	}
	return find(g, cl);
}

void up_cancel(struct zh_worker *w, struct up_client *cl)
{
	(void)w;
	if (cl->queued) {
		up_dequeue(cl->group, cl);
	} else if (cl->opening) {
		struct up_conn *uc = cl->opening;
		struct up_group *g = uc->srv->g;

		cl->opening = NULL;
		close_conn(uc);
		serve_queue(g);
	}
}

void up_release(struct up_conn *uc, bool reusable)
{
	struct up_server *s = uc->srv;
	struct up_group *g = s->g;

	uc->cl = NULL;
	uc->served++;
	ev_timer_disarm(&uc->timer);
	if (!reusable || uc->rdhup || g->w->stopping ||
	    s->nidle >= g->conf->keepalive) {
		close_conn(uc);
	} else {
		uc->state = UC_IDLE;
		uc->next = s->idle;
		s->idle = uc;
		s->nidle++;
		ev_timer_arm(g->w->loop, g->t_idle, &uc->timer, on_timer);
		gauges(s);
	}
	serve_queue(g);
}

void up_fail(struct up_conn *uc, const char *why)
{
	struct up_server *s = uc->srv;
	struct up_group *g = s->g;

	count_failure(s, why);
	uc->cl = NULL;
	close_conn(uc);
	serve_queue(g);
}

void up_answered(struct up_conn *uc)
{
	uc->srv->fails = 0;
}

int up_fd(const struct up_conn *uc)
{
	return uc->fd;
}

zc_sink *up_sink(struct up_conn *uc)
{
	return &uc->sink;
}

const struct zh_upstream_server *up_server(const struct up_conn *uc)
{
	return uc->srv->conf;
}

const struct zh_upstream_group *up_group(const struct up_conn *uc)
{
	return uc->srv->g->conf;
}

bool up_reused(const struct up_conn *uc)
{
	return uc->served > 0;
}

bool up_hung_up(const struct up_conn *uc)
{
	return uc->rdhup;
}

void up_arm(struct up_conn *uc)
{
	ev_timer_arm(uc->srv->g->w->loop, uc->srv->g->t_timeout, &uc->timer,
		     on_timer);
}

void up_disarm(struct up_conn *uc)
{
	ev_timer_disarm(&uc->timer);
}

struct proxy_server_stats *up_stats(struct up_conn *uc)
{
	return uc->srv->st;
}

/* ------------------------------------------------------------ worker */

static int ring_cmp(const void *a, const void *b)
{
	const struct up_point *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* The consistent-hash ring: RING_POINTS points per unit of weight, each
 * the hash of "spec#k", so a server's points do not move when another is
 * added or removed. */
static int build_ring(struct up_group *g)
{
	unsigned n = 0;

	for (unsigned i = 0; i < g->conf->n; i++)
		n += g->s[i].conf->weight * RING_POINTS;
	g->ring = malloc(n * sizeof(*g->ring));
	if (!g->ring)
		return -ENOMEM;
	for (unsigned i = 0; i < g->conf->n; i++) {
		const char *spec = g->s[i].conf->spec;

		for (unsigned k = 0; k < g->s[i].conf->weight * RING_POINTS;
		     k++) {
			uint32_t h = up_hash(spec, strlen(spec), UP_HASH_INIT);

			h = up_hash("#", 1, h);
			h = up_hash(&k, sizeof(k), h);
			g->ring[g->nring++] = (struct up_point){ h, i };
		}
	}
	qsort(g->ring, g->nring, sizeof(*g->ring), ring_cmp);
	return 0;
}

struct ev_timer_list *up_timer_list(struct zh_worker *w, unsigned ms)
{
	struct proxy_worker *pw = w->proxy;
	struct ev_timer_list *l, **v;

	for (unsigned i = 0; i < pw->nlists; i++)
		if (pw->lists[i]->duration_ms == ms)
			return pw->lists[i];
	v = realloc(pw->lists, (pw->nlists + 1) * sizeof(*v));
	if (!v)
		return NULL;
	pw->lists = v;
	l = malloc(sizeof(*l));
	if (!l)
		return NULL;
	ev_timer_list_init(l, ms);
	if (ev_timer_list_register(w->loop, l)) {
		free(l);
		return NULL;
	}
	pw->lists[pw->nlists++] = l;
	return l;
}

int up_worker_init(struct zh_worker *w)
{
	const struct zh_proxy_config *pc = &w->cfg->proxy;
	struct proxy_worker *pw;

	if (!pc->nroutes)
		return 0;
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	w->proxy = pw;
	pw->groups = calloc(pc->ngroups, sizeof(*pw->groups));
	pw->servers = calloc(pc->nservers, sizeof(*pw->servers));
	if (!pw->groups || !pw->servers)
		return -ENOMEM;
	pw->ngroups = pc->ngroups;
	for (unsigned i = 0; i < pc->ngroups; i++) {
		struct up_group *g = &pw->groups[i];

		g->conf = &pc->groups[i];
		g->w = w;
		g->s = calloc(g->conf->n, sizeof(*g->s));
		if (!g->s)
			return -ENOMEM;
		for (unsigned k = 0; k < g->conf->n; k++) {
			struct up_server *s = &g->s[k];

			s->conf = &pc->servers[g->conf->first + k];
			s->g = g;
			s->st = &w->stats->proxy.server[s->conf->index];
			pw->servers[s->conf->index] = s;
		}
		g->t_connect = up_timer_list(w, g->conf->connect_ms);
		g->t_timeout = up_timer_list(w, g->conf->timeout_ms);
		g->t_idle = up_timer_list(w, g->conf->idle_ms);
		if (!g->t_connect || !g->t_timeout || !g->t_idle)
			return -ENOSPC;
		if (g->conf->balance == ZH_BALANCE_HASH && build_ring(g))
			return -ENOMEM;
	}
	return up_health_init(w);
}

void up_worker_stop(struct zh_worker *w)
{
	struct proxy_worker *pw = w->proxy;

	if (!pw)
		return;
	for (unsigned i = 0; i < pw->ngroups; i++)
		for (unsigned k = 0; k < pw->groups[i].conf->n; k++)
			while (pw->groups[i].s[k].idle)
				close_conn(pw->groups[i].s[k].idle);
	up_health_fini(w);
}

void up_worker_fini(struct zh_worker *w)
{
	struct proxy_worker *pw = w->proxy;

	if (!pw)
		return;
	up_worker_stop(w);
	/* Requests are gone (their connections closed or released by their
	 * aborts); what is left connects for nobody. */
	for (unsigned i = 0; pw->groups && i < pw->ngroups; i++) {
		free(pw->groups[i].s);
		free(pw->groups[i].ring);
	}
	free(pw->groups);
	free(pw->servers);
	/* The lists: the loop is not run again (worker.c destroys it). */
	for (unsigned i = 0; i < pw->nlists; i++)
		free(pw->lists[i]);
	free(pw->lists);
	free(pw);
	w->proxy = NULL;
}

void up_set_checked(struct zh_worker *w, unsigned server, bool healthy)
{
	struct up_server *s = w->proxy->servers[server];

	if (s->checked_down == !healthy)
		return;
	s->checked_down = !healthy;
	if (healthy)
		s->fails = 0, s->down_until = 0;
	zh_log(healthy ? ZL_NOTICE : ZL_ERROR, "upstream %s: %s by health "
	       "checks", s->conf->spec, healthy ? "back in service" :
	       "out of service");
	gauges(s);
	if (healthy)
		serve_queue(s->g);
}
