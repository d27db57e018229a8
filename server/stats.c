/*
 * stats.c - shared counter slots, folded when their worker is reaped.
 * See stats.h for why each process has a slot of its own.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "stats.h"

struct stats_area *stats_area_create(void)
{
	struct stats_area *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return a == MAP_FAILED ? NULL : a;	/* zero-filled */
}

struct worker_stats *stats_claim(struct stats_area *a)
{
	for (int i = 0; i < ZCHTTPD_STATS_SLOTS; i++) {
		if (a->slot[i].pid == 0) {
			a->slot[i].pid = -1;
			return &a->slot[i];
		}
	}
	return NULL;
}

/* t += s; gauges too when `gauges` (live slots), counters only otherwise. */
static void add(struct worker_stats *t, const struct worker_stats *s,
		bool gauges)
{
	t->requests += s->requests;
	for (int c = 0; c < 6; c++)
		t->responses[c] += s->responses[c];
	t->bytes_sent += s->bytes_sent;
	t->conns_total += s->conns_total;
	t->conns_refused += s->conns_refused;
	t->timeouts += s->timeouts;
	for (int i = 0; i < ZH_MAX_SITES; i++)
		t->site_requests[i] += s->site_requests[i];
	t->zc_bytes_by_reference += s->zc_bytes_by_reference;
	t->zc_bytes_copied += s->zc_bytes_copied;
	t->cache.hits += s->cache.hits;
	t->cache.misses += s->cache.misses;
	t->cache.revalidations += s->cache.revalidations;
	t->cache.stale += s->cache.stale;
	t->cache.evictions += s->cache.evictions;
	t->cache.not_admitted += s->cache.not_admitted;
	t->cache.dropped += s->cache.dropped;
	t->cache.bodies_loaded += s->cache.bodies_loaded;
	t->cache.rebuilds += s->cache.rebuilds;
	t->tls.handshakes += s->tls.handshakes;
	t->tls.resumed += s->tls.resumed;
	t->tls.failed += s->tls.failed;
	t->tls.kernel_send += s->tls.kernel_send;
	t->tls.user_send += s->tls.user_send;
	t->tls.user_bytes += s->tls.user_bytes;
	t->h2.conns += s->h2.conns;
	t->h2.conns_tls += s->h2.conns_tls;
	t->h2.requests += s->h2.requests;
	t->h2.resets_received += s->h2.resets_received;
	t->h2.goaways_sent += s->h2.goaways_sent;
	t->h2.refused += s->h2.refused;
	t->h2.bytes_by_reference += s->h2.bytes_by_reference;
	t->h2.bytes_copied += s->h2.bytes_copied;
	t->fcgi.requests += s->fcgi.requests;
	t->fcgi.pipelined += s->fcgi.pipelined;
	t->proxy.requests += s->proxy.requests;
	t->proxy.retries += s->proxy.retries;
	t->proxy.spliced += s->proxy.spliced;
	t->proxy.tunnels += s->proxy.tunnels;
	for (int i = 0; i < ZH_PROXY_MAX_SERVERS; i++) {
		const struct proxy_server_stats *a = &s->proxy.server[i];
		struct proxy_server_stats *b = &t->proxy.server[i];

		b->requests += a->requests;
		b->failures += a->failures;
		b->bytes_spliced += a->bytes_spliced;
		b->bytes_copied += a->bytes_copied;
		if (gauges) {
			b->active += a->active;
			b->idle += a->idle;
			/* Out of service for any worker: down. */
			b->down |= a->down;
		}
	}
	if (!gauges)
		return;
	t->conns_open += s->conns_open;
	/* The cache's size is the zone's (status.c), not a sum: the
	 * workers share it.  Pins are each worker's own. */
	t->cache.pinned_entries += s->cache.pinned_entries;
}

int stats_site_slot(struct stats_area *a, const char *name)
{
	for (int i = 0; i < ZH_MAX_SITES; i++) {
		if (!strcmp(a->site_names[i], name))
			return i;
		if (!a->site_names[i][0]) {
			/* Workers read names only after we fork them. */
			snprintf(a->site_names[i], sizeof(a->site_names[i]),
				 "%s", name);
			return i;
		}
	}
	return -1;
}

void stats_retire(struct stats_area *a, pid_t pid)
{
	for (int i = 0; i < ZCHTTPD_STATS_SLOTS; i++) {
		struct worker_stats *s = &a->slot[i];

		if (s->pid != pid)
			continue;
		/* The worker is dead: nobody writes the slot any more.  The
		 * sequence count makes readers retry instead of seeing the
		 * counters both in `retired` and in the slot, or in neither. */
		atomic_fetch_add_explicit(&a->seq, 1, memory_order_acq_rel);
		atomic_thread_fence(memory_order_seq_cst);
		add(&a->retired, s, false);
		memset(s, 0, sizeof(*s));
		atomic_thread_fence(memory_order_seq_cst);
		atomic_fetch_add_explicit(&a->seq, 1, memory_order_release);
		return;
	}
}

void stats_sum(const struct stats_area *a, struct worker_stats *t)
{
	unsigned seq;

	do {
		while ((seq = atomic_load_explicit(&a->seq,
						   memory_order_acquire)) & 1)
			;
		memset(t, 0, sizeof(*t));
		add(t, &a->retired, false);
		for (int i = 0; i < ZCHTTPD_STATS_SLOTS; i++)
			if (a->slot[i].pid != 0)
				add(t, &a->slot[i], true);
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&a->seq, memory_order_relaxed) != seq);
}
