/*
 * options.c - command line and configuration file.
 *
 * The configuration file uses the long option names without dashes, one
 * per line ("workers 2", "access-log /var/log/zchttpd.log"); '#' starts a
 * comment.  It is read where --config appears, so later flags override it.
 * A site of its own (a virtual host, vhost.h) is a block:
 *
 *   server {
 *       name example.com www.example.com
 *       root /srv/example
 *       fastcgi /app=unix:/run/example.sock
 *       access-log /var/log/example.log
 *       default
 *   }
 *
 * Every error names the file and line it was found at ("FILE:LINE: ...").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "errlog.h"
#include "gds.h"
#include "h2.h"
#include "http_host.h"
#include "listen.h"
#include "options.h"
#include "proxy.h"
#include "tls.h"
#include "vhost.h"

/* The best object hit ratio among the policies measured against
 * libCacheSim's (docs/gds-cache.md). */
#define DEFAULT_CACHE_POLICY "gdsf"

void options_usage(FILE *f)
{
	char names[128];

	fprintf(f,
"usage: zchttpd --root DIR [options]\n"
"\n"
"  --root DIR                 document root (required)\n"
"  --listen ADDR              127.0.0.1:8080, [::1]:8080, :8080 (default :8080)\n"
"  --workers N                worker processes (default: one per core)\n"
"  --config FILE              read options from FILE (\"name value\" lines, and\n"
"                             server { } blocks: virtual hosts, zchttpd(8))\n"
"  --access-log FILE          Combined Log Format log, '-' for stdout (default off)\n"
"  --error-log FILE           messages, '-' for stderr (the default)\n"
"  --log-level LEVEL          error|warn|notice|info|debug (default notice)\n"
"  --status-path PATH         status endpoint (default /.zc/status; 'off')\n"
"  --max-conns N              connections per worker (default 16384)\n"
"  --header-timeout MS        time to receive a request head (default 10000)\n"
"  --keepalive-timeout MS     idle time between requests (default 30000)\n"
"  --send-timeout MS          time a client may stop reading (default 60000)\n"
"  --shutdown-timeout MS      graceful stop deadline (default 10000)\n"
"  --max-request-line N       bytes (default 8192; more: 414)\n"
"  --max-headers N            header fields (default 100, at most 256; more: 431)\n"
"  --max-header-bytes N       bytes of header fields (default 16384; more: 431)\n"
"  --max-body SIZE            largest request body (default 1m; more: 413);\n"
"                             only FastCGI applications and proxied routes\n"
"                             take bodies\n"
"  --cache-size BYTES         unified cache budget, one cache shared by every\n"
"                             worker (default 256M)\n"
"  --cache-entries N          files the cache describes at most (default 16384)\n"
"  --cache-ttl MS             revalidate cached files after this (default 1000)\n"
"  --cache-small-max BYTES    keep bodies up to this in memory, from their second\n"
"                             request on (default: --cache-copy-max; 64k below 4\n"
"                             workers with --page-cache policy)\n"
"  --cache-copy-max BYTES     send bodies held in memory up to this by copy, larger\n"
"                             ones by sendfile (default 16k; 128k from 4 workers\n"
"                             on: docs/bench-static.md; HTTP/2: by copy at any\n"
"                             size)\n"
"  --cache-policy NAME        replacement policy: %s\n"
"                             (default " DEFAULT_CACHE_POLICY ": GDSF, newcomers compete;\n"
"                             docs/gds-cache.md)\n"
"  --event epoll|io_uring     event loop (default epoll; io_uring: requests are\n"
"                             received by multishot ring receives, docs/ARCHITECTURE.md)\n"
"  --precompressed on|off     serve FILE.br or FILE.gz in place of FILE to clients\n"
"                             that accept it (with Vary: Accept-Encoding; default off)\n"
"  --page-cache kernel|policy what decides which file data stays in memory:\n"
"                             kernel (default): Linux's page cache, for files above\n"
"                             --cache-small-max; policy: the cache's policy for\n"
"                             every size within --cache-size (large files charged\n"
"                             their size, pages of files it lets go dropped, small\n"
"                             bodies held once): for a --cache-size that is the\n"
"                             memory the server should use\n"
"  --io-threads N             helper threads per worker for disk work (default 2;\n"
"                             0: the loop opens and reads files itself)\n"
"  --fastcgi MATCH=ADDR       send requests whose path starts with MATCH (\"/app\"),\n"
"                             or has a segment ending in it (\"*.php\"), to the\n"
"                             FastCGI backend ADDR: unix:PATH, HOST:PORT, or\n"
"                             zc:PATH (zero-copy transport); repeatable\n"
"  --fastcgi-spawn MATCH=[zc:]N:PROGRAM [ARGS]\n"
"                             start N processes of PROGRAM on a socket of our\n"
"                             own (fd 0), restart them if they exit, stop them\n"
"                             with the server; repeatable\n"
"  --fastcgi-timeout MS       an application must make progress within this\n"
"                             (default 60000; else 504)\n"
"  --fastcgi-conns N          connections per backend per worker (default 16)\n"
"  --fastcgi-queue N          requests waiting for one (default 1024; then 503)\n"
"  --fastcgi-pipeline N       requests in flight per zero-copy connection, the\n"
"                             next sent while the app works (default 8; 1-32;\n"
"                             1: one at a time)\n"
"  --fastcgi-idle MS          close a backend connection unused this long\n"
"                             (default 2000; it holds an app process meanwhile)\n"
"  --proxy MATCH=URL[,URL...] send requests whose path starts with MATCH to the\n"
"                             HTTP/1.1 servers URL: http://HOST:PORT[/PATH] or\n"
"                             unix:PATH, each with weight=N, backup; or @NAME for\n"
"                             an upstream block of --config; repeatable\n"
"                             (docs/proxy.md)\n"
"  --proxy-balance WAY        round-robin (default), least-conn, hash-uri,\n"
"                             hash-client, hash-header:NAME\n"
"  --proxy-keepalive N        idle connections kept per server per worker (256)\n"
"  --proxy-conns N            connections per server per worker (0: no limit)\n"
"  --proxy-queue N            requests waiting for a connection (1024; then 503)\n"
"  --proxy-connect-timeout MS connecting to a server (5000; then the next, or 502)\n"
"  --proxy-timeout MS         for the response head, and between reads (60000;\n"
"                             then 504)\n"
"  --proxy-idle MS            close an unused upstream connection (30000)\n"
"  --proxy-max-fails N        failures in a row that take a server out (1) ...\n"
"  --proxy-fail-timeout MS    ... for this long (10000)\n"
"  --proxy-health PATH        check every server with GET PATH (default off)\n"
"  --proxy-health-interval MS every this long (5000)\n"
"  --proxy-health-status N    the status that passes (default: any 2xx, 3xx)\n"
"  --proxy-health-rise N, --proxy-health-fall N\n"
"                             checks in a row that bring a server back (2) or\n"
"                             take it out (3)\n"
"  --proxy-host pass|upstream|NAME\n"
"                             the Host sent upstream (default: the client's)\n"
"  --proxy-via on|off         add Via to requests and responses (default on)\n"
"  --proxy-trust NET[,NET]    clients whose X-Forwarded-* and Forwarded are\n"
"                             kept and extended (default: none, replaced)\n"
"  --proxy-splice-min SIZE    response bodies from this size on are relayed by\n"
"                             splice where the client allows (default 320k)\n"
"  --proxy-pipe-size SIZE     a splice pipe's capacity (default 256k)\n"
"  --follow-symlinks-outside  serve symlinks that lead out of the root\n"
"  --tls-listen ADDR          also serve HTTPS on ADDR (TLS 1.2 and 1.3)\n"
"  --tls-cert FILE            certificate chain (PEM); repeatable: SNI picks the\n"
"                             first whose names match, else the first\n"
"  --tls-key FILE             the key of the --tls-cert before it (default: in\n"
"                             the certificate's file)\n"
"  --tls-ciphers LIST         TLS 1.2 ciphers (default: ECDHE with AES-GCM or\n"
"                             ChaCha20-Poly1305)\n"
"  --tls-ktls on|off          let the kernel encrypt (kTLS, sendfile stays\n"
"                             zero-copy) where it can (default on)\n"
"  --http2 on|off             HTTP/2: h2 on --tls-listen when ALPN offers it,\n"
"                             h2c with prior knowledge on --listen (default on)\n"
"  --h2c-only                 the --listen port speaks HTTP/2 alone, with prior\n"
"                             knowledge (anything else is closed), as nginx's\n"
"                             'listen ... http2' without ssl\n"
"  --h2-max-streams N         concurrent streams per HTTP/2 connection (default 100)\n"
"  --h2-max-header-list BYTES a request head's fields as RFC 9113 counts them\n"
"                             (name + value + 32 each; default 32k; more: 431)\n"
"  --h2-idle-timeout MS       an HTTP/2 connection without streams is closed\n"
"                             (GOAWAY) after this (default 30000)\n"
"  --h2-settings-timeout MS   a client must acknowledge our SETTINGS within this\n"
"                             (default 10000)\n"
"  --user NAME                drop privileges to NAME after binding\n"
"  -t, --check-config         check the options (and --config file), the root,\n"
"                             the address and the log; print the verdict, exit\n"
"  --help, --version\n"
"zchttpd --probe http://HOST:PORT/PATH   one GET (3 s timeout): exit 0 on 200,\n"
"                             else 1 (container HEALTHCHECK)\n", gds_policy_names(names, sizeof(names), "|"));
}

void options_defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->cfg.listen = ":8080";
	o->cfg.max_conns = 16384;
	o->cfg.max_body_bytes = 1u << 20;
	o->cfg.header_timeout_ms = 10000;
	o->cfg.keepalive_timeout_ms = 30000;
	o->cfg.send_timeout_ms = 60000;
	o->cfg.shutdown_timeout_ms = 10000;
	o->cfg.status_path = "/.zc/status";
	o->cfg.limits = (struct http_limits)HTTP_LIMITS_DEFAULT;
	o->cfg.cache_bytes = 256ull << 20;
	o->cfg.cache_ttl_ms = 1000;
	o->cfg.cache_small_max = ZH_BY_WORKERS;	/* options_for_workers */
	o->cfg.cache_copy_max = ZH_BY_WORKERS;
	o->cfg.cache_entries = 16384;
	o->cfg.cache_owns_pages = false;
	o->cfg.cache_policy = gds_policy_find(DEFAULT_CACHE_POLICY);
	o->cfg.io_threads = 2;
	o->cfg.fcgi_timeout_ms = 60000;
	o->cfg.fcgi_conns = 16;
	o->cfg.fcgi_queue = 1024;
	o->cfg.fcgi_pipeline = 8;
	o->cfg.fcgi_idle_ms = 2000;
	o->cfg.tls.ktls = true;
	o->cfg.h2.on = h2_unavailable() == NULL;	/* not in the static image */
	o->cfg.h2.max_streams = 100;
	o->cfg.h2.max_header_list = 32u << 10;
	o->cfg.h2.idle_timeout_ms = 30000;
	o->cfg.h2.settings_timeout_ms = 10000;
	o->cfg.log_level = ZL_NOTICE;
	proxy_conf_defaults(&o->cfg.proxy);
}

void options_error(const struct options *o, const char *where,
		   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (where)
		zh_log(ZL_ERROR, "%s: %s", where, msg);
	else if (o->file)
		zh_log(ZL_ERROR, "%s:%u: %s", o->file, o->line, msg);
	else
		zh_log(ZL_ERROR, "%s", msg);
}

int options_uint(const char *v, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long x;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || x > max)
		return -1;
	*out = x;
	return 0;
}

int options_size(const char *v, unsigned long *out)
{
	char *end;
	unsigned long x;
	unsigned shift = 0;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || x > (ULONG_MAX >> shift) || (x << shift) > (1ul << 40))
		return -1;
	*out = x << shift;
	return 0;
}

/* A copy of a string value, owned by o until options_free(o): a reload
 * parses a new set and frees the old one. */
struct opt_str {
	struct opt_str *next;
	char s[];
};

const char *options_keep(struct options *o, const char *s)
{
	size_t n = strlen(s) + 1;
	struct opt_str *k = malloc(sizeof(*k) + n);

	if (!k) {
		zh_log(ZL_ERROR, "out of memory");
		exit(1);
	}
	memcpy(k->s, s, n);
	k->next = o->strings;
	o->strings = k;
	return k->s;
}

/*
 * How a hot body leaves depends on how many workers send it at once,
 * measured (docs/bench-static.md, "How a hot body is sent"): on one core
 * sendfile of a 100 KB body from the page cache cost 18.7 us against 22.8
 * for a copy from the cache's memory, at 4 workers the two were even
 * (23.8, 23.4), at 8 the copy cost 25.3 against 32.2 (the same file's
 * pages sent from 8 cores at once).  So unless the options say otherwise:
 * below 4 workers bodies up to 16 KiB are copied (one sendmsg with the
 * head), from 4 on bodies up to 128 KiB.
 *
 * A body is held in memory when it is sent by copy -- and, where the
 * cache's policy owns the pages (--page-cache policy), up to 64 KiB below
 * 4 workers, its memory being the policy's to give back.  Under Linux's
 * page cache a held body that leaves by sendfile anyway would be a second
 * copy of pages the kernel keeps, paid for by a copy into the cache and
 * its pages' first faults (docs/bench-replay.md, runs R6-R9: 2.7 of 25.5 us
 * per request on the trace).
 */
void options_for_workers(struct zh_config *c, int nworkers)
{
	bool many = nworkers >= 4;

	if (c->cache_copy_max == ZH_BY_WORKERS)
		c->cache_copy_max = many ? 128u << 10 : 16u << 10;
	if (c->cache_small_max == ZH_BY_WORKERS)
		c->cache_small_max = many ? 128u << 10 :
				     c->cache_owns_pages ? 64u << 10 :
				     c->cache_copy_max;
}

void options_free(struct options *o)
{
	struct opt_str *k, *next;

	for (k = o->strings; k; k = next) {
		next = k->next;
		free(k);
	}
	o->strings = NULL;
	for (unsigned i = 0; i < o->cfg.nfcgi; i++)
		free(o->cfg.fcgi[i].argv);
	free(o->cfg.fcgi);
	o->cfg.fcgi = NULL;
	o->cfg.nfcgi = o->fcgi_cap = 0;
	free(o->cfg.sites);
	free(o->cfg.names);
	o->cfg.sites = NULL;
	o->cfg.names = NULL;
	o->cfg.nsites = o->cfg.nnames = o->sites_cap = o->names_cap = 0;
	proxy_conf_free(&o->cfg.proxy);
	free(o->cfg.tls.certs);
	o->cfg.tls.certs = NULL;
	o->cfg.tls.ncerts = o->tls_cap = 0;
	tls_free(o->cfg.tls_ctx);
	o->cfg.tls_ctx = NULL;
}

/* --tls-cert FILE starts a certificate; --tls-key FILE gives the key of
 * the last one (without it the key is in the certificate's file). */
static int add_tls_cert(struct options *o, const char *file)
{
	struct zh_tls_config *t = &o->cfg.tls;

	if (t->ncerts == o->tls_cap) {
		unsigned cap = o->tls_cap ? 2 * o->tls_cap : 2;
		struct zh_tls_cert *v = realloc(t->certs, cap * sizeof(*v));

		if (!v)
			return -1;
		t->certs = v;
		o->tls_cap = cap;
	}
	t->certs[t->ncerts++] = (struct zh_tls_cert){ .cert = options_keep(o, file) };
	return 0;
}

/* MATCH of a FastCGI route: "/prefix" or "*.suffix". */
static int parse_match(struct zh_fcgi_route *rt, const char *m, size_t n)
{
	if (n >= 3 && m[0] == '*' && m[1] == '.') {
		for (size_t i = 2; i < n; i++)
			if (m[i] == '/' || m[i] == '*')
				return -1;
		rt->suffix = true;
	} else if (!n || m[0] != '/') {
		return -1;
	}
	rt->match_len = n;
	return 0;
}

/* ADDR of a FastCGI backend. */
static int parse_backend(struct zh_fcgi_route *rt, const char *a)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&rt->addr;
	const char *path = NULL;

	memset(&rt->addr, 0, sizeof(rt->addr));
	if (!strncmp(a, "unix:", 5)) {
		rt->transport = ZH_FCGI_UNIX;
		path = a + 5;
	} else if (!strncmp(a, "zc:", 3)) {
		rt->transport = ZH_FCGI_ZC;
		path = a + 3;
	} else {
		rt->transport = ZH_FCGI_TCP;
		return listen_parse(a, &rt->addr, &rt->addr_len) ? -1 : 0;
	}
	if (!*path || strlen(path) >= sizeof(un->sun_path))
		return -1;
	un->sun_family = AF_UNIX;
	strcpy(un->sun_path, path);
	rt->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				   strlen(path) + 1);
	return 0;
}

/* The program and arguments of a spawned backend, split at blanks. */
static char **split_argv(const char *s)
{
	size_t n = 0, len = strlen(s) + 1;
	char **v, *copy;

	for (const char *p = s; *p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		n++;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	if (!n)
		return NULL;
	/* One block: the pointer array, then the strings. */
	v = malloc((n + 1) * sizeof(*v) + len);
	if (!v)
		return NULL;
	copy = (char *)(v + n + 1);
	memcpy(copy, s, len);
	n = 0;
	for (char *p = copy; *p;) {
		while (*p == ' ' || *p == '\t')
			*p++ = 0;
		if (!*p)
			break;
		v[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	v[n] = NULL;
	return v;
}

/* --fastcgi MATCH=ADDR, --fastcgi-spawn MATCH=[zc:]N:PROGRAM [ARGS]. */
static int add_route(struct options *o, const char *val, bool spawn)
{
	struct zh_config *c = &o->cfg;
	const char *eq = strchr(val, '=');
	struct zh_fcgi_route rt = { 0 };
	unsigned long n;
	char *end;

	if (!eq)
		return -1;
	rt.spec = options_keep(o, val);
	rt.site = o->block;	/* 0: the command line's site */
	rt.seq = o->route_seq++;
	rt.match = rt.spec;
	if (parse_match(&rt, val, (size_t)(eq - val)))
		return -1;
	val = eq + 1;
	if (!spawn) {
		if (parse_backend(&rt, val))
			return -1;
	} else {
		rt.transport = ZH_FCGI_UNIX;
		if (!strncmp(val, "zc:", 3)) {
			rt.transport = ZH_FCGI_ZC;
			val += 3;
		}
		errno = 0;
		n = strtoul(val, &end, 10);
		if (errno || end == val || *end != ':' || n < 1 || n > 256)
			return -1;
		rt.spawn = (unsigned)n;
		rt.argv = split_argv(end + 1);
		if (!rt.argv)
			return -1;
		/* The address is the master's to choose (fcgi_spawn.c). */
		rt.addr.ss_family = AF_UNIX;
	}
	if (c->nfcgi == o->fcgi_cap) {
		unsigned cap = o->fcgi_cap ? 2 * o->fcgi_cap : 4;
		struct zh_fcgi_route *v = realloc(c->fcgi, cap * sizeof(*v));

		if (!v) {
			free(rt.argv);
			return -1;
		}
		c->fcgi = v;
		o->fcgi_cap = cap;
	}
	c->fcgi[c->nfcgi++] = rt;
	return 0;
}

static int read_config(struct options *o, const char *path, int depth);

/* A two-way option: *flag = true for `yes`, false for `no`; -1 for
 * anything else. */
static int choose(const char *val, const char *yes, const char *no, bool *flag)
{
	if (!strcmp(val, yes))
		*flag = true;
	else if (!strcmp(val, no))
		*flag = false;
	else
		return -1;
	return 0;
}

/* Apply one option; `name` has no leading dashes.  Returns 0, or -1 after
 * printing what is wrong. */
static int apply(struct options *o, const char *name, const char *val,
		 int depth)
{
	struct zh_config *c = &o->cfg;
	unsigned long n;

#define NEED_VAL() do { if (!val) goto missing; } while (0)
#define NUM(field, max) do { NEED_VAL(); \
		if (options_uint(val, (max), &n)) goto bad; \
		c->field = (typeof(c->field))n; } while (0)
#define NUM_NONZERO(field, max) do { NUM(field, max); \
		if (!c->field) goto bad; } while (0)

	if (o->block && strcmp(name, "fastcgi") &&
	    strcmp(name, "fastcgi-spawn") && strcmp(name, "proxy")) {
		/* Inside server { }: only what a site has of its own (its
		 * FastCGI and proxy routes are added below, to the site's
		 * block). */
		int err = vhost_option(o, name, val);

		if (err <= 0)
			return err;
		options_error(o, NULL, "'%s' is not a per-site option "
			      "(server blocks take name, root, access-log, "
			      "fastcgi, fastcgi-spawn, proxy, default)", name);
		return -1;
	}
	{
		int err = proxy_option(o, name, val);

		if (err <= 0)
			return err;
	}
	if (!strcmp(name, "root")) {
		NEED_VAL();
		c->root = options_keep(o, val);
	} else if (!strcmp(name, "listen")) {
		NEED_VAL();
		c->listen = options_keep(o, val);
	} else if (!strcmp(name, "workers")) {
		NUM(workers, ZCHTTPD_MAX_WORKERS);
	} else if (!strcmp(name, "config")) {
		NEED_VAL();
		if (depth > 0) {
			options_error(o, NULL, "config files do not nest");
			return -1;
		}
		o->config = options_keep(o, val);
		return read_config(o, val, depth + 1);
	} else if (!strcmp(name, "access-log")) {
		NEED_VAL();
		c->access_log = options_keep(o, val);
	} else if (!strcmp(name, "error-log")) {
		NEED_VAL();
		c->error_log = options_keep(o, val);
	} else if (!strcmp(name, "log-level")) {
		NEED_VAL();
		c->log_level = errlog_level_parse(val);
		if (c->log_level < 0)
			goto bad;
	} else if (!strcmp(name, "status-path")) {
		NEED_VAL();
		if (!strcmp(val, "off"))
			c->status_path = NULL;
		else if (val[0] != '/')
			goto bad;
		else
			c->status_path = options_keep(o, val);
	} else if (!strcmp(name, "max-conns")) {
		NUM_NONZERO(max_conns, 1000000);
	} else if (!strcmp(name, "header-timeout")) {
		NUM(header_timeout_ms, 3600000);
	} else if (!strcmp(name, "keepalive-timeout")) {
		NUM(keepalive_timeout_ms, 3600000);
	} else if (!strcmp(name, "send-timeout")) {
		NUM(send_timeout_ms, 3600000);
	} else if (!strcmp(name, "shutdown-timeout")) {
		NUM(shutdown_timeout_ms, 3600000);
	} else if (!strcmp(name, "max-request-line")) {
		NUM(limits.max_request_line, 16384);
		if (c->limits.max_request_line < 16)
			goto bad;
	} else if (!strcmp(name, "max-headers")) {
		NUM(limits.max_headers, 256);	/* worker slot array size */
	} else if (!strcmp(name, "max-body")) {
		NEED_VAL();
		if (options_size(val, &n))
			goto bad;
		c->max_body_bytes = n;
	} else if (!strcmp(name, "max-header-bytes")) {
		NUM(limits.max_head_bytes, 16384);
	} else if (!strcmp(name, "cache-size")) {
		NEED_VAL();
		if (options_size(val, &n) || n < 4096)
			goto bad;
		c->cache_bytes = n;
	} else if (!strcmp(name, "cache-ttl")) {
		NUM(cache_ttl_ms, 3600000);
	} else if (!strcmp(name, "cache-small-max")) {
		NEED_VAL();
		if (options_size(val, &n) || n > (64u << 20))
			goto bad;
		c->cache_small_max = n;
	} else if (!strcmp(name, "cache-copy-max")) {
		NEED_VAL();
		if (options_size(val, &n) || n > (64u << 20))
			goto bad;
		c->cache_copy_max = n;
	} else if (!strcmp(name, "cache-entries")) {
		NUM_NONZERO(cache_entries, 1u << 22);
	} else if (!strcmp(name, "cache-policy")) {
		NEED_VAL();
		c->cache_policy = gds_policy_find(val);
		if (!c->cache_policy) {
			char names[128];

			options_error(o, NULL, "unknown cache policy '%s' (known: %s)",
				val, gds_policy_names(names, sizeof(names), " "));
			return -1;
		}
	} else if (!strcmp(name, "precompressed")) {
		NEED_VAL();
		if (choose(val, "on", "off", &c->precompressed))
			goto bad;
	} else if (!strcmp(name, "page-cache")) {
		NEED_VAL();
		if (choose(val, "policy", "kernel", &c->cache_owns_pages))
			goto bad;
	} else if (!strcmp(name, "event")) {
		NEED_VAL();
		if (choose(val, "io_uring", "epoll", &c->io_uring))
			goto bad;
	} else if (!strcmp(name, "io-threads")) {
		NUM(io_threads, 64);
	} else if (!strcmp(name, "follow-symlinks-outside")) {
		if (val)
			goto bad;
		c->follow_symlinks_outside = true;
	} else if (!strcmp(name, "fastcgi") ||
		   !strcmp(name, "fastcgi-spawn")) {
		NEED_VAL();
		if (add_route(o, val, name[7] == '-'))
			goto bad;
	} else if (!strcmp(name, "fastcgi-timeout")) {
		NUM_NONZERO(fcgi_timeout_ms, 3600000);
	} else if (!strcmp(name, "fastcgi-conns")) {
		NUM_NONZERO(fcgi_conns, 4096);
	} else if (!strcmp(name, "fastcgi-queue")) {
		NUM(fcgi_queue, 1000000);
	} else if (!strcmp(name, "fastcgi-pipeline")) {
		NUM_NONZERO(fcgi_pipeline, ZH_FCGI_PIPELINE_MAX);
	} else if (!strcmp(name, "fastcgi-idle")) {
		NUM(fcgi_idle_ms, 3600000);
	} else if (!strcmp(name, "tls-listen")) {
		NEED_VAL();
		c->tls.listen = options_keep(o, val);
	} else if (!strcmp(name, "tls-cert")) {
		NEED_VAL();
		if (add_tls_cert(o, val))
			goto bad;
	} else if (!strcmp(name, "tls-key")) {
		NEED_VAL();
		if (!c->tls.ncerts || c->tls.certs[c->tls.ncerts - 1].key) {
			options_error(o, NULL, "--tls-key %s: give each key "
				      "once, after its --tls-cert", val);
			return -1;
		}
		c->tls.certs[c->tls.ncerts - 1].key = options_keep(o, val);
	} else if (!strcmp(name, "tls-ciphers")) {
		NEED_VAL();
		c->tls.ciphers = options_keep(o, val);
	} else if (!strcmp(name, "tls-ktls")) {
		NEED_VAL();
		if (choose(val, "on", "off", &c->tls.ktls))
			goto bad;
	} else if (!strcmp(name, "http2")) {
		NEED_VAL();
		if (choose(val, "on", "off", &c->h2.on))
			goto bad;
		if (c->h2.on && h2_unavailable()) {
			options_error(o, NULL, "--http2 on: %s", h2_unavailable());
			return -1;
		}
	} else if (!strcmp(name, "h2c-only")) {
		if (val)
			goto bad;
		c->h2.c_only = true;
	} else if (!strcmp(name, "h2-max-streams")) {
		NUM_NONZERO(h2.max_streams, 1u << 20);
	} else if (!strcmp(name, "h2-max-header-list")) {
		NEED_VAL();
		if (options_size(val, &n) || n < 1024 || n > (64u << 20))
			goto bad;
		c->h2.max_header_list = (unsigned)n;
	} else if (!strcmp(name, "h2-idle-timeout")) {
		NUM_NONZERO(h2.idle_timeout_ms, 3600000);
	} else if (!strcmp(name, "h2-settings-timeout")) {
		NUM_NONZERO(h2.settings_timeout_ms, 3600000);
	} else if (!strcmp(name, "user")) {
		NEED_VAL();
		o->user = options_keep(o, val);
	} else {
		options_error(o, NULL, "unknown option '%s'", name);
		return -1;
	}
	return 0;
missing:
	options_error(o, NULL, "option '%s' needs a value", name);
	return -1;
bad:
	options_error(o, NULL, "bad value '%s' for '%s'", val, name);
	return -1;
#undef NUM_NONZERO
#undef NUM
#undef NEED_VAL
}

/* One line of a configuration file, comments and blanks gone: a block's
 * start or end, or an option.  Returns 0 or -1 (reported). */
static int config_line(struct options *o, char *p, int depth)
{
	char *name = p, *val = strpbrk(p, " \t");

	if (val) {
		*val++ = 0;
		while (*val == ' ' || *val == '\t')
			val++;
	}
	int err = proxy_config_line(o, name, val);

	if (err <= 0)
		return err;
	if (!strcmp(name, "server") && val && !strcmp(val, "{")) {
		if (o->block) {
			options_error(o, NULL, "server blocks do not nest");
			return -1;
		}
		return vhost_begin(o);
	}
	if (!strcmp(name, "}") && !val) {
		if (!o->block) {
			options_error(o, NULL, "'}' outside a server block");
			return -1;
		}
		return vhost_end(o);
	}
	return apply(o, name, val, depth);
}

static int read_config(struct options *o, const char *path, int depth)
{
	char line[1024];
	int err = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		options_error(o, NULL, "%s: %s", path, strerror(errno));
		return -1;
	}
	o->file = path;
	o->line = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		char *p = line, *e;

		o->line++;
		if (!strchr(line, '\n') && !feof(f)) {
			options_error(o, NULL, "line too long (at most %zu bytes)",
				      sizeof(line) - 2);
			err = -1;
			break;
		}
		if ((e = strchr(p, '#')))
			*e = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && strchr(" \t\r\n", e[-1]))
			*--e = 0;
		if (*p)
			err = config_line(o, p, depth);
	}
	if (!err && o->block) {
		options_error(o, o->cfg.sites[o->block].where,
			      "server block not closed by '}'");
		err = -1;
	}
	fclose(f);
	/* Errors after the file (options_parse's checks) are not its. */
	o->file = NULL;
	o->block = 0;
	return err;
}

int options_parse(struct options *o, int argc, char **argv)
{
	options_defaults(o);
	/* Site 0 is the command line's (--root), wherever it is written. */
	if (vhost_add(o, NULL) < 0)
		return -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];
		const char *eq;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			o->help = true;
			return 0;
		}
		if (!strcmp(a, "--version")) {
			o->version = true;
			return 0;
		}
		if (!strcmp(a, "-t") || !strcmp(a, "--check-config")) {
			o->check_only = true;
			continue;
		}
		if (strncmp(a, "--", 2) || !a[2]) {
			options_error(o, NULL, "unexpected argument '%s'", a);
			return -1;
		}
		a += 2;
		eq = strchr(a, '=');
		if (eq) {
			if ((size_t)(eq - a) >= sizeof(name))
				goto unknown;
			memcpy(name, a, (size_t)(eq - a));
			name[eq - a] = 0;
			val = eq + 1;
		} else {
			if (strlen(a) >= sizeof(name))
				goto unknown;
			strcpy(name, a);
			if (strcmp(name, "follow-symlinks-outside") &&
			    strcmp(name, "h2c-only") && i + 1 < argc)
				val = argv[++i];
		}
		if (apply(o, name, val, 0))
			return -1;
		continue;
unknown:
		options_error(o, NULL, "unknown option '%s'", argv[i]);
		return -1;
	}
	if (o->cfg.h2.c_only && !o->cfg.h2.on) {
		options_error(o, NULL, "--h2c-only needs --http2 on");
		return -1;
	}
	if (o->cfg.tls.ncerts && !o->cfg.tls.listen) {
		options_error(o, NULL, "--tls-cert without --tls-listen");
		return -1;
	}
	if (proxy_conf_finish(o))
		return -1;
	return vhost_finish(o);
}
