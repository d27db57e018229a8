/* policies.c - the replacement policies gdssim compares.
 *
 * The GDS family and LRU (GDS with cost = size) run through libgds itself,
 * what zchttpd runs, not a copy of it.  The other yardsticks are written
 * here, byte-budgeted, over intrusive doubly-linked queues on per-object
 * arrays:
 *
 *   SIEVE   (Zhang et al., NSDI'24) one FIFO queue and a "visited" bit; a
 *           hand sweeps from the oldest end toward the newest, clearing
 *           visited bits and evicting the first unvisited object.  Hits
 *           only set the bit: nothing moves.
 *   S3-FIFO (Yang et al., SOSP'23) a small FIFO (10% of the bytes) that
 *           filters one-hit wonders, a main FIFO with reinsertion (2-bit
 *           frequency), and a ghost FIFO of recently filtered ids whose
 *           return goes straight to main.  An object leaves the small queue
 *           for main if it was hit at least once while there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "gds.h"
#include "sim.h"

#define NIL UINT32_MAX

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- GDS family */

int sim_gds(const struct sim_trace *t, uint64_t cap,
	    const struct gds_policy *p, struct sim_result *r)
{
	struct gds_config cfg = {
		.budget = cap, .max_entries = t->nobj ? t->nobj : 1,
	};
	struct gds_entry *e = malloc((t->nobj ? t->nobj : 1) * sizeof(*e));
	struct gds c;
	double t0;

	gds_policy_apply(p, &cfg);
	if (!e || gds_init(&c, &cfg) < 0) {
		free(e);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nobj; i++)
		gds_entry_init(&e[i]);
	t0 = now();
	for (size_t i = 0; i < t->n; i++)
		gds_access(&c, &e[t->obj[i]], t->size[i], 1.0, 0);
	r->seconds = now() - t0;
	r->hits = c.st.hits;
	r->bytes_hit = c.st.bytes_hit;
	r->evictions = c.st.evictions;
	gds_destroy(&c);
	free(e);
	return 0;
}

/* ---------------------------------------------------- queues over arrays */

/* Per-object state shared by the list policies. */
struct objs {
	uint32_t *newer, *older;	/* links within the object's queue */
	uint64_t *csize;		/* cached (or ghost) size; 0 = none */
	uint8_t *where;			/* which queue, Q_NONE if none */
	uint8_t *bits;			/* visited bit / frequency */
};

enum { Q_NONE = 0, Q_MAIN = 1, Q_SMALL = 2, Q_GHOST = 3 };

struct queue {
	uint32_t head, tail;	/* newest, oldest */
	uint32_t n;
	uint64_t bytes;
};

static int objs_alloc(struct objs *o, uint32_t n)
{
	size_t k = n ? n : 1;

	o->newer = malloc(k * sizeof(*o->newer));
	o->older = malloc(k * sizeof(*o->older));
	o->csize = calloc(k, sizeof(*o->csize));
	o->where = calloc(k, 1);
	o->bits = calloc(k, 1);
	if (!o->newer || !o->older || !o->csize || !o->where || !o->bits)
		return -ENOMEM;
	return 0;
}

static void objs_free(struct objs *o)
{
	free(o->newer);
	free(o->older);
	free(o->csize);
	free(o->where);
	free(o->bits);
}

static void q_init(struct queue *q)
{
	*q = (struct queue){ .head = NIL, .tail = NIL };
}

static void q_push_head(struct queue *q, struct objs *o, uint32_t x,
			uint64_t size, uint8_t where)
{
	o->older[x] = q->head;
	o->newer[x] = NIL;
	if (q->head != NIL)
		o->newer[q->head] = x;
	else
		q->tail = x;
	q->head = x;
	q->n++;
	q->bytes += size;
	o->csize[x] = size;
	o->where[x] = where;
}

static void q_unlink(struct queue *q, struct objs *o, uint32_t x)
{
	if (o->newer[x] != NIL)
		o->older[o->newer[x]] = o->older[x];
	else
		q->head = o->older[x];
	if (o->older[x] != NIL)
		o->newer[o->older[x]] = o->newer[x];
	else
		q->tail = o->newer[x];
	q->n--;
	q->bytes -= o->csize[x];
	o->csize[x] = 0;
	o->where[x] = Q_NONE;
}

/* ----------------------------------------------------------------- SIEVE */

int sim_sieve(const struct sim_trace *t, uint64_t cap, struct sim_result *r)
{
	struct objs o;
	struct queue q;
	uint32_t hand = NIL;
	double t0;

	if (objs_alloc(&o, t->nobj) < 0) {
		objs_free(&o);
		return -ENOMEM;
	}
	q_init(&q);
	*r = (struct sim_result){ 0 };
	t0 = now();
	for (size_t i = 0; i < t->n; i++) {
		uint32_t x = t->obj[i];
		uint64_t s = t->size[i];

		if (o.where[x] != Q_NONE) {
			if (o.csize[x] == s) {
				r->hits++;
				r->bytes_hit += s;
				o.bits[x] = 1;
				continue;
			}
			if (hand == x)
				hand = o.newer[x];
			q_unlink(&q, &o, x);
		}
		if (s > cap)
			continue;
		while (q.bytes + s > cap) {
			uint32_t v = hand != NIL ? hand : q.tail;

			while (o.bits[v]) {
				o.bits[v] = 0;
				v = o.newer[v] != NIL ? o.newer[v] : q.tail;
			}
			hand = o.newer[v];
			q_unlink(&q, &o, v);
			r->evictions++;
		}
		o.bits[x] = 0;
		q_push_head(&q, &o, x, s, Q_MAIN);
	}
	r->seconds = now() - t0;
	objs_free(&o);
	return 0;
}

/* --------------------------------------------------------------- S3-FIFO */

struct s3 {
	struct objs o;
	struct queue small, main, ghost;
	uint64_t small_cap, main_cap;
	struct sim_result *r;
};

static void s3_ghost_add(struct s3 *c, uint32_t x, uint64_t size)
{
	q_push_head(&c->ghost, &c->o, x, size, Q_GHOST);
	while (c->ghost.bytes > c->main_cap)
		q_unlink(&c->ghost, &c->o, c->ghost.tail);
}

static void s3_evict_main(struct s3 *c)
{
	for (;;) {
		uint32_t v = c->main.tail;
		uint64_t s = c->o.csize[v];

		q_unlink(&c->main, &c->o, v);
		if (c->o.bits[v] > 0) {	/* reinsert, one chance used */
			c->o.bits[v]--;
			q_push_head(&c->main, &c->o, v, s, Q_MAIN);
			continue;
		}
		c->r->evictions++;
		return;
	}
}

static void s3_evict_small(struct s3 *c)
{
	uint32_t v = c->small.tail;
	uint64_t s = c->o.csize[v];

	q_unlink(&c->small, &c->o, v);
	if (c->o.bits[v] > 0) {		/* hit while in small: promote */
		c->o.bits[v] = 0;
		q_push_head(&c->main, &c->o, v, s, Q_MAIN);
		return;
	}
	c->r->evictions++;
	s3_ghost_add(c, v, s);
}

int sim_s3fifo(const struct sim_trace *t, uint64_t cap, struct sim_result *r)
{
	struct s3 c = { .r = r };
	double t0;

	if (objs_alloc(&c.o, t->nobj) < 0) {
		objs_free(&c.o);
		return -ENOMEM;
	}
	q_init(&c.small);
	q_init(&c.main);
	q_init(&c.ghost);
	c.small_cap = cap / 10;
	c.main_cap = cap - c.small_cap;
	*r = (struct sim_result){ 0 };
	t0 = now();
	for (size_t i = 0; i < t->n; i++) {
		uint32_t x = t->obj[i];
		uint64_t s = t->size[i];
		bool ghost = false;

		switch (c.o.where[x]) {
		case Q_SMALL:
		case Q_MAIN:
			if (c.o.csize[x] == s) {
				r->hits++;
				r->bytes_hit += s;
				if (c.o.bits[x] < 3)
					c.o.bits[x]++;
				continue;
			}
			q_unlink(c.o.where[x] == Q_SMALL ? &c.small : &c.main,
				 &c.o, x);
			break;
		case Q_GHOST:
			q_unlink(&c.ghost, &c.o, x);
			ghost = true;
			break;
		}
		if (s > cap)
			continue;
		while (c.small.bytes + c.main.bytes + s > cap) {
			if (c.main.n == 0 ||
			    (c.small.n > 0 && c.small.bytes >= c.small_cap))
				s3_evict_small(&c);
			else
				s3_evict_main(&c);
		}
		c.o.bits[x] = 0;
		if (ghost)
			q_push_head(&c.main, &c.o, x, s, Q_MAIN);
		else
			q_push_head(&c.small, &c.o, x, s, Q_SMALL);
	}
	r->seconds = now() - t0;
	objs_free(&c.o);
	return 0;
}

/* -------------------------------------------------------------- infinite */

int sim_infinite(const struct sim_trace *t, uint64_t cap, struct sim_result *r)
{
	uint64_t *last = calloc(t->nobj ? t->nobj : 1, sizeof(*last));
	double t0;

	(void)cap;
	if (!last)
		return -ENOMEM;
	*r = (struct sim_result){ 0 };
	t0 = now();
	for (size_t i = 0; i < t->n; i++) {
		uint32_t x = t->obj[i];

		if (last[x] == t->size[i]) {
			r->hits++;
			r->bytes_hit += t->size[i];
		}
		last[x] = t->size[i];
	}
	r->seconds = now() - t0;
	free(last);
	return 0;
}
