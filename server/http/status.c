/*
 * status.c - the status endpoint: counters of every worker (stats.h), summed,
 * as JSON (default) or Prometheus text (?format=prometheus).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "respond.h"
#include "stats.h"
#include "tls.h"
#include "worker.h"
#include "zchttpd.h"

bool status_matches(const struct zh_worker *w, const struct http_request *req)
{
	const char *sp = w->cfg->status_path;
	size_t n, plen = req->path.len;
	const char *q = memchr(req->path.p, '?', req->path.len);

	if (!sp)
		return false;
	if (q)
		plen = (size_t)(q - req->path.p);
	n = strlen(sp);
	return plen == n && memcmp(req->path.p, sp, n) == 0;
}

#define U(x) ((unsigned long long)(x))

/* HTTPS: how records are encrypted and what the handshakes did. */
static int render_tls_json(const struct zh_worker *w,
			   const struct worker_stats *t, char *b, size_t n)
{
	const struct zh_config *c = w->cfg;

	if (!c->tls.listen)
		return 0;
	return snprintf(b, n,
		",\"tls\":{\"listen\":\"%s\",\"records\":\"%s\","
		"\"handshakes\":%llu,\"resumed\":%llu,\"failed\":%llu,"
		"\"kernel_send\":%llu,\"user_send\":%llu,"
		"\"user_bytes\":%llu}",
		c->tls.listen, tls_record_layer(c->tls_ctx),
		U(t->tls.handshakes), U(t->tls.resumed), U(t->tls.failed),
		U(t->tls.kernel_send), U(t->tls.user_send),
		U(t->tls.user_bytes));
}

/* Requests and connections by protocol: HTTP/2's are counted as such,
 * HTTP/1.x's are the rest; requests sent to FastCGI applications, and
 * how many of them went pipelined (fcgi_upstream.h).  HTTP/2's bytes by reference and copied are
 * libzc's account of what its connections sent (zero_copy has every
 * connection's). */
static int render_protocols_json(const struct worker_stats *t, char *b,
				 size_t n)
{
	const struct h2_stats *h = &t->h2;

	return snprintf(b, n,
		",\"protocols\":{\"http/1.1\":{\"requests\":%llu,"
		"\"connections\":%llu},\"h2\":{\"requests\":%llu,"
		"\"connections\":%llu,\"tls\":%llu,\"h2c\":%llu,"
		"\"resets_received\":%llu,\"goaways_sent\":%llu,"
		"\"refused\":%llu,\"bytes_by_reference\":%llu,"
		"\"bytes_copied\":%llu}},"
		"\"fastcgi\":{\"requests\":%llu,\"pipelined\":%llu}",
		U(t->requests - h->requests), U(t->conns_total - h->conns),
		U(h->requests), U(h->conns), U(h->conns_tls),
		U(h->conns - h->conns_tls), U(h->resets_received),
		U(h->goaways_sent), U(h->refused), U(h->bytes_by_reference),
		U(h->bytes_copied), U(t->fcgi.requests), U(t->fcgi.pipelined));
}

/* The reverse proxy (proxy.h): its requests, and per upstream server what
 * it was sent, how it failed, whether it is in service, its connections
 * and the body bytes relayed from it by splice and by copy. */
static int render_proxy_json(const struct zh_worker *w,
			     const struct worker_stats *t, char *b, size_t n)
{
	const struct zh_proxy_config *pc = &w->cfg->proxy;
	const struct proxy_stats *p = &t->proxy;
	size_t k = 0;
	int m;

	if (!pc->nroutes)
		return 0;
	m = snprintf(b, n, ",\"proxy\":{\"requests\":%llu,\"retries\":%llu,"
		     "\"spliced\":%llu,\"tunnels\":%llu,\"servers\":[",
		     U(p->requests), U(p->retries), U(p->spliced),
		     U(p->tunnels));
	if (m < 0 || (size_t)m >= n)
		return -1;
	k = (size_t)m;
	for (unsigned i = 0; i < pc->nservers; i++) {
		const struct zh_upstream_server *s = &pc->servers[i];
		const struct proxy_server_stats *c = &p->server[i];

		m = snprintf(b + k, n - k,
			     "%s{\"server\":\"%s\",\"group\":\"%s\","
			     "\"requests\":%llu,\"failures\":%llu,"
			     "\"down\":%llu,\"active\":%llu,\"idle\":%llu,"
			     "\"bytes_spliced\":%llu,\"bytes_copied\":%llu}",
			     i ? "," : "", s->spec, pc->groups[s->group].name,
			     U(c->requests), U(c->failures), U(c->down),
			     U(c->active), U(c->idle), U(c->bytes_spliced),
			     U(c->bytes_copied));
		if (m < 0 || (size_t)m >= n - k)
			return -1;
		k += (size_t)m;
	}
	m = snprintf(b + k, n - k, "]}");
	return m < 0 || (size_t)m >= n - k ? -1 : (int)(k + (size_t)m);
}

/* ?audit: the shared cache checked against itself (cache.h). */
static int render_audit_json(const struct cache_audit *a, char *b, size_t n)
{
	return snprintf(b, n,
		",\"audit\":{\"ok\":%s,\"why\":\"%s\",\"ready\":%llu,"
		"\"dead\":%llu,\"limbo\":%llu,\"body_pages\":%llu,"
		"\"arena_pages\":%llu}",
		a->ok ? "true" : "false", a->why ? a->why : "",
		U(a->ready), U(a->dead), U(a->limbo), U(a->body_pages),
		U(a->arena_pages));
}

static int render_json(const struct zh_worker *w, const struct worker_stats *t,
		       const struct cache_audit *audit, char *b, size_t n)
{
	int m, k = snprintf(b, n,
		"{\"workers\":%d,\"requests\":%llu,"
		"\"responses\":{\"1xx\":%llu,\"2xx\":%llu,\"3xx\":%llu,"
		"\"4xx\":%llu,\"5xx\":%llu},"
		"\"bytes_sent\":%llu,\"connections\":{\"open\":%llu,"
		"\"total\":%llu,\"refused\":%llu,\"timeouts\":%llu},"
		"\"zero_copy\":{\"bytes_by_reference\":%llu,"
		"\"bytes_copied\":%llu},"
		"\"cache\":{\"policy\":\"%s\",\"page_cache\":\"%s\",\"hits\":%llu,\"misses\":%llu,"
		"\"revalidations\":%llu,\"stale\":%llu,\"evictions\":%llu,"
		"\"not_admitted\":%llu,\"dropped\":%llu,"
		"\"bodies_loaded\":%llu,\"rebuilds\":%llu,"
		"\"bytes\":%llu,\"entries\":%llu,\"pinned\":%llu,"
		"\"arena_bytes\":%llu,\"shared_by\":%d},"
		"\"backend\":\"%s\",\"event\":\"%s\"",
		w->nworkers, U(t->requests), U(t->responses[1]),
		U(t->responses[2]), U(t->responses[3]), U(t->responses[4]),
		U(t->responses[5]), U(t->bytes_sent), U(t->conns_open),
		U(t->conns_total), U(t->conns_refused), U(t->timeouts),
		U(t->zc_bytes_by_reference), U(t->zc_bytes_copied),
		w->cfg->cache_policy->name,
		w->cfg->cache_owns_pages ? "policy" : "kernel",
		U(t->cache.hits), U(t->cache.misses), U(t->cache.revalidations),
		U(t->cache.stale), U(t->cache.evictions),
		U(t->cache.not_admitted), U(t->cache.dropped),
		U(t->cache.bodies_loaded), U(t->cache.rebuilds), U(t->cache.bytes),
		U(t->cache.entries), U(t->cache.pinned_entries),
		U(t->cache.arena_bytes), w->nworkers,
		zc_backend_name(), w->cfg->io_uring ? "io_uring" : "epoll");

	if (k < 0 || (size_t)k >= n)
		return -1;
	m = render_protocols_json(t, b + k, n - (size_t)k);
	if (m < 0 || (size_t)m >= n - (size_t)k)
		return -1;
	k += m;
	m = render_tls_json(w, t, b + k, n - (size_t)k);
	if (m < 0 || (size_t)m >= n - (size_t)k)
		return -1;
	k += m;
	m = render_proxy_json(w, t, b + k, n - (size_t)k);
	if (m < 0 || (size_t)m >= n - (size_t)k)
		return -1;
	k += m;
	if (audit) {
		m = render_audit_json(audit, b + k, n - (size_t)k);
		if (m < 0 || (size_t)m >= n - (size_t)k)
			return -1;
		k += m;
	}
	/* render_sites fills it in and closes both objects. */
	m = snprintf(b + k, n - (size_t)k, ",\"sites\":{");
	return m < 0 || (size_t)m >= n - (size_t)k ? -1 : k + m;
}

/* Requests by site (vhost.h), keyed by the site's first name: the names
 * the master gave counters to (stats.h), so sites a reload removed still
 * show what they served.  Names are [a-z0-9._-] or an IP-literal's
 * [0-9a-f:.], nothing to escape. */
static int render_sites(const struct zh_worker *w,
			const struct worker_stats *t, char *b, size_t n,
			bool prom)
{
	size_t k = 0;
	bool first = true;

	for (int i = 0; i < ZH_MAX_SITES; i++) {
		const char *name = w->all_stats->site_names[i];
		int r;

		if (!name[0])
			break;
		r = prom ? snprintf(b + k, n - k, "%szchttpd_site_requests_total"
				    "{site=\"%s\"} %llu\n",
				    first ? "# TYPE zchttpd_site_requests_total "
					    "counter\n" : "",
				    name, U(t->site_requests[i]))
			 : snprintf(b + k, n - k, "%s\"%s\":%llu",
				    first ? "" : ",", name,
				    U(t->site_requests[i]));
		if (r < 0 || (size_t)r >= n - k)
			return -1;
		k += (size_t)r;
		first = false;
	}
	if (!prom) {
		if (k + 3 > n)
			return -1;
		memcpy(b + k, "}}\n", 3);
		k += 3;
	}
	return (int)k;
}

static int render_prometheus(const struct zh_worker *w,
			     const struct worker_stats *t, char *b, size_t n)
{
	size_t k = 0;

#define P(...) do { \
		int r = snprintf(b + k, n - k, __VA_ARGS__); \
		if (r < 0 || (size_t)r >= n - k) \
			return -1; \
		k += (size_t)r; \
	} while (0)
	P("# TYPE zchttpd_requests_total counter\n");
	P("zchttpd_requests_total %llu\n", U(t->requests));
	P("# TYPE zchttpd_responses_total counter\n");
	for (int c = 1; c <= 5; c++)
		P("zchttpd_responses_total{class=\"%dxx\"} %llu\n", c,
		  U(t->responses[c]));
	P("# TYPE zchttpd_sent_bytes_total counter\n");
	P("zchttpd_sent_bytes_total %llu\n", U(t->bytes_sent));
	P("# TYPE zchttpd_connections_open gauge\n");
	P("zchttpd_connections_open %llu\n", U(t->conns_open));
	P("# TYPE zchttpd_connections_total counter\n");
	P("zchttpd_connections_total %llu\n", U(t->conns_total));
	P("# TYPE zchttpd_connections_refused_total counter\n");
	P("zchttpd_connections_refused_total %llu\n", U(t->conns_refused));
	P("# TYPE zchttpd_timeouts_total counter\n");
	P("zchttpd_timeouts_total %llu\n", U(t->timeouts));
	P("# TYPE zchttpd_protocol_requests_total counter\n");
	P("zchttpd_protocol_requests_total{protocol=\"http/1.1\"} %llu\n",
	  U(t->requests - t->h2.requests));
	P("zchttpd_protocol_requests_total{protocol=\"h2\"} %llu\n",
	  U(t->h2.requests));
	P("# TYPE zchttpd_protocol_connections_total counter\n");
	P("zchttpd_protocol_connections_total{protocol=\"http/1.1\"} %llu\n",
	  U(t->conns_total - t->h2.conns));
	P("zchttpd_protocol_connections_total{protocol=\"h2\"} %llu\n",
	  U(t->h2.conns_tls));
	P("zchttpd_protocol_connections_total{protocol=\"h2c\"} %llu\n",
	  U(t->h2.conns - t->h2.conns_tls));
	P("# TYPE zchttpd_h2_resets_received_total counter\n");
	P("zchttpd_h2_resets_received_total %llu\n", U(t->h2.resets_received));
	P("# TYPE zchttpd_h2_goaways_sent_total counter\n");
	P("zchttpd_h2_goaways_sent_total %llu\n", U(t->h2.goaways_sent));
	P("# TYPE zchttpd_h2_refused_total counter\n");
	P("zchttpd_h2_refused_total %llu\n", U(t->h2.refused));
	P("# TYPE zchttpd_h2_zero_copy_bytes_total counter\n");
	P("zchttpd_h2_zero_copy_bytes_total{how=\"by_reference\"} %llu\n",
	  U(t->h2.bytes_by_reference));
	P("zchttpd_h2_zero_copy_bytes_total{how=\"copied\"} %llu\n",
	  U(t->h2.bytes_copied));
	P("# TYPE zchttpd_fastcgi_requests_total counter\n");
	P("zchttpd_fastcgi_requests_total{sent=\"alone\"} %llu\n",
	  U(t->fcgi.requests - t->fcgi.pipelined));
	P("zchttpd_fastcgi_requests_total{sent=\"pipelined\"} %llu\n",
	  U(t->fcgi.pipelined));
	P("# TYPE zchttpd_zero_copy_bytes_total counter\n");
	P("zchttpd_zero_copy_bytes_total{how=\"by_reference\"} %llu\n",
	  U(t->zc_bytes_by_reference));
	P("zchttpd_zero_copy_bytes_total{how=\"copied\"} %llu\n",
	  U(t->zc_bytes_copied));
	P("# TYPE zchttpd_cache_lookups_total counter\n");
	P("zchttpd_cache_lookups_total{result=\"hit\"} %llu\n",
	  U(t->cache.hits));
	P("zchttpd_cache_lookups_total{result=\"miss\"} %llu\n",
	  U(t->cache.misses));
	P("# TYPE zchttpd_cache_policy_info gauge\n");
	P("zchttpd_cache_policy_info{policy=\"%s\"} 1\n", w->cfg->cache_policy->name);
	P("# TYPE zchttpd_cache_not_admitted_total counter\n");
	P("zchttpd_cache_not_admitted_total %llu\n", U(t->cache.not_admitted));
	P("# TYPE zchttpd_cache_evictions_total counter\n");
	P("zchttpd_cache_evictions_total %llu\n", U(t->cache.evictions));
	P("# TYPE zchttpd_cache_bytes gauge\n");
	P("zchttpd_cache_bytes %llu\n", U(t->cache.bytes));
	P("# TYPE zchttpd_cache_entries gauge\n");
	P("zchttpd_cache_entries %llu\n", U(t->cache.entries));
	P("# TYPE zchttpd_cache_bodies_loaded_total counter\n");
	P("zchttpd_cache_bodies_loaded_total %llu\n", U(t->cache.bodies_loaded));
	P("# TYPE zchttpd_cache_arena_bytes gauge\n");
	P("zchttpd_cache_arena_bytes %llu\n", U(t->cache.arena_bytes));
	if (w->cfg->proxy.nroutes) {
		const struct zh_proxy_config *pc = &w->cfg->proxy;
		static const char *const names[] = {
			"requests_total", "failures_total", "down",
			"connections_active", "connections_idle",
		};

		P("# TYPE zchttpd_proxy_requests_total counter\n");
		P("zchttpd_proxy_requests_total %llu\n", U(t->proxy.requests));
		P("# TYPE zchttpd_proxy_retries_total counter\n");
		P("zchttpd_proxy_retries_total %llu\n", U(t->proxy.retries));
		P("# TYPE zchttpd_proxy_spliced_responses_total counter\n");
		P("zchttpd_proxy_spliced_responses_total %llu\n",
		  U(t->proxy.spliced));
		P("# TYPE zchttpd_proxy_tunnels_total counter\n");
		P("zchttpd_proxy_tunnels_total %llu\n", U(t->proxy.tunnels));
		for (unsigned f = 0; f < 5; f++) {
			P("# TYPE zchttpd_upstream_%s %s\n", names[f],
			  f < 2 ? "counter" : "gauge");
			for (unsigned i = 0; i < pc->nservers; i++) {
				const struct proxy_server_stats *c =
					&t->proxy.server[i];
				const uint64_t v[] = { c->requests, c->failures,
						       c->down, c->active,
						       c->idle };

				P("zchttpd_upstream_%s{server=\"%s\"} %llu\n",
				  names[f], pc->servers[i].spec, U(v[f]));
			}
		}
		P("# TYPE zchttpd_upstream_body_bytes_total counter\n");
		for (unsigned i = 0; i < pc->nservers; i++) {
			P("zchttpd_upstream_body_bytes_total{server=\"%s\","
			  "how=\"splice\"} %llu\n", pc->servers[i].spec,
			  U(t->proxy.server[i].bytes_spliced));
			P("zchttpd_upstream_body_bytes_total{server=\"%s\","
			  "how=\"copy\"} %llu\n", pc->servers[i].spec,
			  U(t->proxy.server[i].bytes_copied));
		}
	}
	if (w->cfg->tls.listen) {
		P("# TYPE zchttpd_tls_handshakes_total counter\n");
		P("zchttpd_tls_handshakes_total{result=\"full\"} %llu\n",
		  U(t->tls.handshakes - t->tls.resumed));
		P("zchttpd_tls_handshakes_total{result=\"resumed\"} %llu\n",
		  U(t->tls.resumed));
		P("zchttpd_tls_handshakes_total{result=\"failed\"} %llu\n",
		  U(t->tls.failed));
		P("# TYPE zchttpd_tls_connections_total counter\n");
		P("zchttpd_tls_connections_total{records=\"kernel\"} %llu\n",
		  U(t->tls.kernel_send));
		P("zchttpd_tls_connections_total{records=\"user\"} %llu\n",
		  U(t->tls.user_send));
	}
#undef P
	return (int)k;
}

zh_answer status_serve(struct zh_request *r)
{
	struct zh_worker *w = r->w;
	const struct http_request *req = &r->http;
	zc_agg *out = request_out(r);
	const char *q = memchr(req->path.p, '?', req->path.len);
	size_t qlen = q ? (size_t)(req->path.p + req->path.len - q) : 0;
	bool prom = qlen == 18 && memcmp(q, "?format=prometheus", 18) == 0;
	bool audit = qlen == 6 && memcmp(q, "?audit", 6) == 0;
	struct cache_audit a;
	struct worker_stats t;
	struct resp_head h;
	/* The fixed part, then a line per site name at most. */
	size_t cap = 4096 + ZH_MAX_SITES * (HTTP_HOST_MAX + 64) +
		     w->cfg->proxy.nservers * 2048;
	char *body;
	int n, m;

	/* This worker's counters are fresh; others' are as of their last
	 * loop iteration. */
	worker_publish_stats(w);
	stats_sum(w->all_stats, &t);
	/* The cache is one for the generation: its size is its own, not a
	 * sum over the workers' slots. */
	struct cache_stats own;
	cache_stats(w->cache, &own);
	t.cache.bytes = own.bytes;
	t.cache.entries = own.entries;
	t.cache.arena_bytes = own.arena_bytes;
	body = malloc(cap);
	if (!body)
		return zh_status(503);
	if (audit)
		cache_audit(w->cache, &a);
	n = prom ? render_prometheus(w, &t, body, cap)
		 : render_json(w, &t, audit ? &a : NULL, body, cap);
	m = n < 0 || (size_t)n >= cap ? -1 :
	    render_sites(w, &t, body + n, cap - (size_t)n, prom);
	if (m < 0) {
		free(body);
		return zh_status(500);
	}
	n += m;
	request_head_begin(r, &h);
	resp_begin(&h, 200);
	resp_add(&h, "Content-Type", prom ? "text/plain; version=0.0.4"
					  : "application/json");
	resp_add(&h, "Cache-Control", "no-store");
	resp_addf(&h, "Content-Length", "%d", n);
	resp_end(&h, r->keep_alive);
	if (request_head_end(r, &h) ||
	    (!r->head_only && zc_agg_append_bytes(out, NULL, body, (size_t)n))) {
		free(body);
		return zh_status(500);
	}
	free(body);
	r->status = 200;
	r->body_bytes = r->head_only ? 0 : (uint64_t)n;
	return ZH_ANSWERED;
}
