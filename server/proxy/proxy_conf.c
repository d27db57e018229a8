/*
 * proxy_conf.c - the reverse proxy's options (proxy.h).
 *
 * On the command line:
 *
 *   --proxy /api/=http://10.0.0.1:8000,http://10.0.0.2:8000 weight=2
 *   --proxy /=unix:/run/app.sock
 *   --proxy-timeout 30000 --proxy-balance least-conn ...
 *
 * A route's servers are separated by commas, each a URL followed by its
 * parameters (weight=N, backup).  The --proxy-* settings are the defaults of
 * every group; they may come before or after the routes.  In a
 * configuration file a group can be named and given settings of its own:
 *
 *   upstream app {
 *       server http://127.0.0.1:9000 weight=2
 *       server http://127.0.0.1:9001 backup
 *       balance hash-header:X-User
 *       health /healthz
 *   }
 *   proxy /=@app                     # or, with a path: /api/=@app/v1/
 *
 * and `proxy` lines go inside server { } blocks like `fastcgi` ones.
 * A URL's path replaces the route's MATCH in the request target (nginx's
 * proxy_pass with a URI); without one the target goes as the client sent
 * it.  Host names are resolved once, when the options are read.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "options.h"
#include "proxy.h"

#define UNSET UINT_MAX

void proxy_conf_defaults(struct zh_proxy_config *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->defaults = (struct zh_upstream_group){
		.balance = ZH_BALANCE_RR,
		.keepalive = 256,
		.max_conns = 0,
		.queue = 1024,
		.connect_ms = 5000,
		.timeout_ms = 60000,
		.idle_ms = 30000,
		.max_fails = 1,
		.fail_ms = 10000,
		.health_ms = 5000,
		.health_rise = 2,
		.health_fall = 3,
	};
	pc->host = ZH_HOST_PASS;
	pc->via = true;
	/* Measured per size (docs/proxy.md, "Splice or copy, measured"):
	 * on Linux 6.18 over loopback a copied body cost less up to 256 KiB
	 * (100 KB: 39.7 against 44.5 us), a spliced one from 384 KiB on
	 * (1 MB: 210 against 304 us). */
	pc->splice_min = 320u << 10;
	pc->pipe_size = 256u << 10;
}

void proxy_conf_free(struct zh_proxy_config *pc)
{
	free(pc->routes);
	free(pc->groups);
	free(pc->servers);
	pc->routes = NULL;
	pc->groups = NULL;
	pc->servers = NULL;
	pc->nroutes = pc->ngroups = pc->nservers = 0;
}

/* ------------------------------------------------------------ helpers */

/* options_uint into an unsigned (max fits one). */
static int parse_uint(const char *v, unsigned long max, unsigned *out)
{
	unsigned long x;

	if (options_uint(v, max, &x))
		return -1;
	*out = (unsigned)x;
	return 0;
}

/* Grow an array of options' own by one element: a pointer to it. */
static void *grow(void **v, unsigned *n, size_t size)
{
	char *p = realloc(*v, (*n + 1) * size);

	if (!p)
		return NULL;
	*v = p;
	memset(p + *n * size, 0, size);
	return p + (*n)++ * size;
}

static struct zh_upstream_group *new_group(struct options *o,
					   const char *name)
{
	struct zh_proxy_config *pc = &o->cfg.proxy;
	struct zh_upstream_group *g = grow((void **)&pc->groups, &pc->ngroups,
					   sizeof(*g));

	if (!g)
		return NULL;
	/* Every setting unset: proxy_conf_finish gives it the default. */
	*g = (struct zh_upstream_group){
		.name = options_keep(o, name),
		.first = pc->nservers,
		.balance = (enum zh_balance)UNSET,
		.keepalive = UNSET, .max_conns = UNSET, .queue = UNSET,
		.connect_ms = UNSET, .timeout_ms = UNSET, .idle_ms = UNSET,
		.max_fails = UNSET, .fail_ms = UNSET, .health_ms = UNSET,
		.health_status = -1, .health_rise = UNSET,
		.health_fall = UNSET,
	};
	return g;
}

/* "host:port" or "[v6]:port" (port default 80) resolved to an address;
 * the authority is kept as written for Host. */
static int parse_host(struct options *o, struct zh_upstream_server *s,
		      const char *a, size_t n)
{
	char host[256], port[8] = "80";
	const char *colon;
	size_t hl;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int err;

	if (!n || n >= sizeof(host))
		return -1;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (!close)
			return -1;
		hl = (size_t)(close - a - 1);
		memcpy(host, a + 1, hl);
		colon = close + 1 < a + n ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
		hints.ai_flags = AI_NUMERICHOST;
	} else {
		colon = memrchr(a, ':', n);
		hl = colon ? (size_t)(colon - a) : n;
		memcpy(host, a, hl);
	}
	host[hl] = 0;
	if (colon) {
		size_t pl = (size_t)(a + n - colon - 1);
		unsigned p;

		if (!pl || pl >= sizeof(port))
			return -1;
		memcpy(port, colon + 1, pl);
		port[pl] = 0;
		if (parse_uint(port, 65535, &p) || !p)
			return -1;
	}
	if (!hl)
		return -1;
	err = getaddrinfo(host, port, &hints, &res);
	if (err) {
		options_error(o, NULL, "upstream '%.*s': %s", (int)n, a,
			      gai_strerror(err));
		return -2;
	}
	memcpy(&s->addr, res->ai_addr, res->ai_addrlen);
	s->addr_len = res->ai_addrlen;
	freeaddrinfo(res);
	{
		char auth[300];

		snprintf(auth, sizeof(auth), "%.*s", (int)n, a);
		s->authority = options_keep(o, auth);
	}
	return 0;
}

/* One server: URL [weight=N] [backup].  *path gets the URL's path (NULL:
 * none).  0, -1 (bad value: the caller reports), -2 (reported). */
static int parse_server(struct options *o, struct zh_upstream_group *g,
			const char *text, size_t len, const char **path,
			size_t *path_len)
{
	struct zh_proxy_config *pc = &o->cfg.proxy;
	struct zh_upstream_server *s;
	char buf[1024];
	char *save = NULL, *url, *param;
	int err;

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, text, len);
	buf[len] = 0;
	url = strtok_r(buf, " \t", &save);
	if (!url)
		return -1;
	if (pc->nservers >= ZH_PROXY_MAX_SERVERS) {
		options_error(o, NULL, "more than %d upstream servers",
			      ZH_PROXY_MAX_SERVERS);
		return -2;
	}
	s = grow((void **)&pc->servers, &pc->nservers, sizeof(*s));
	if (!s)
		return -1;
	s->index = pc->nservers - 1;
	s->group = (unsigned)(g - pc->groups);
	s->spec = options_keep(o, url);
	s->weight = 1;
	*path = NULL;
	*path_len = 0;
	if (!strncmp(url, "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&s->addr;
		const char *p = url + 5;

		if (!*p || strlen(p) >= sizeof(un->sun_path))
			return -1;
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, p);
		s->addr_len = (socklen_t)(offsetof(struct sockaddr_un,
						   sun_path) + strlen(p) + 1);
		s->authority = "localhost";
	} else if (!strncmp(url, "http://", 7)) {
		const char *h = url + 7, *slash = strchr(h, '/');
		size_t hn = slash ? (size_t)(slash - h) : strlen(h);

		err = parse_host(o, s, h, hn);
		if (err)
			return err;
		if (slash) {
			*path = s->spec + (slash - url);
			*path_len = strlen(slash);
		}
	} else if (!strncmp(url, "https://", 8)) {
		options_error(o, NULL, "'%s': HTTPS upstreams are not "
			      "supported yet (docs/proxy.md)", url);
		return -2;
	} else {
		return -1;
	}
	while ((param = strtok_r(NULL, " \t", &save))) {
		if (!strncmp(param, "weight=", 7)) {
			if (parse_uint(param + 7, 1000, &s->weight) ||
			    !s->weight)
				return -1;
		} else if (!strcmp(param, "backup")) {
			s->backup = true;
		} else {
			options_error(o, NULL, "unknown server parameter '%s' "
				      "(weight=N, backup)", param);
			return -2;
		}
	}
	g->n++;
	return 0;
}

/* --proxy-balance, `balance`. */
static int parse_balance(struct zh_upstream_group *g, const char *v)
{
	if (!strcmp(v, "round-robin")) {
		g->balance = ZH_BALANCE_RR;
	} else if (!strcmp(v, "least-conn")) {
		g->balance = ZH_BALANCE_LEAST_CONN;
	} else if (!strcmp(v, "hash-uri")) {
		g->balance = ZH_BALANCE_HASH;
		g->hash_key = ZH_HASH_URI;
	} else if (!strcmp(v, "hash-client")) {
		g->balance = ZH_BALANCE_HASH;
		g->hash_key = ZH_HASH_CLIENT;
	} else if (!strncmp(v, "hash-header:", 12) && v[12]) {
		g->balance = ZH_BALANCE_HASH;
		g->hash_key = ZH_HASH_HEADER;
		g->hash_header = v + 12;
	} else {
		return -1;
	}
	return 0;
}

/* A group setting by its name, the same for --proxy-NAME and NAME in an
 * upstream block: 0, 1 not a group setting, -1 bad value. */
static int group_setting(struct options *o, struct zh_upstream_group *g,
			 const char *name, const char *val)
{
	static const struct {
		const char *name;
		size_t off;
		unsigned long max;
	} nums[] = {
#define N(n, f, m) { n, offsetof(struct zh_upstream_group, f), m }
		N("keepalive", keepalive, 100000),
		N("conns", max_conns, 1000000),
		N("queue", queue, 1000000),
		N("connect-timeout", connect_ms, 3600000),
		N("timeout", timeout_ms, 3600000),
		N("idle", idle_ms, 3600000),
		N("max-fails", max_fails, 1000),
		N("fail-timeout", fail_ms, 3600000),
		N("health-interval", health_ms, 3600000),
		N("health-rise", health_rise, 100),
		N("health-fall", health_fall, 100),
#undef N
	};

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (strcmp(name, nums[i].name))
			continue;
		if (parse_uint(val, nums[i].max,
			       (unsigned *)((char *)g + nums[i].off)))
			return -1;
		return 0;
	}
	if (!strcmp(name, "balance")) {
		if (!val || parse_balance(g, val))
			return -1;
		if (g->hash_header)
			g->hash_header = options_keep(o, g->hash_header);
		return 0;
	}
	if (!strcmp(name, "health")) {
		if (!val || val[0] != '/' || strpbrk(val, " \t\r\n"))
			return -1;
		g->health_path = options_keep(o, val);
		return 0;
	}
	if (!strcmp(name, "health-status")) {
		unsigned st;

		if (parse_uint(val, 599, &st) || st < 100)
			return -1;
		g->health_status = (int)st;
		return 0;
	}
	return 1;
}

/* "10.0.0.0/8", "::1", "fd00::/8". */
static int parse_net(const char *v, size_t n, struct zh_trusted_net *t)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	unsigned bits, max;

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, v, n);
	buf[n] = 0;
	slash = strchr(buf, '/');
	if (slash)
		buf[slash - buf] = 0;
	memset(&t->addr, 0, sizeof(t->addr));
	if (inet_pton(AF_INET, buf,
		      &((struct sockaddr_in *)&t->addr)->sin_addr) == 1) {
		t->addr.ss_family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf,
			     &((struct sockaddr_in6 *)&t->addr)->sin6_addr) ==
		   1) {
		t->addr.ss_family = AF_INET6;
		max = 128;
	} else {
		return -1;
	}
	bits = max;
	if (slash && parse_uint(slash + 1, max, &bits))
		return -1;
	t->prefix = bits;
	return 0;
}

/* ------------------------------------------------------------ routes */

/* --proxy MATCH=URL[,URL...] or MATCH=@group[/path]. */
static int add_route(struct options *o, const char *val)
{
	struct zh_proxy_config *pc = &o->cfg.proxy;
	const char *eq = strchr(val, '='), *list;
	struct zh_proxy_route *rt;
	struct zh_upstream_group *g;
	int err;

	if (!eq || eq == val || val[0] != '/' || !eq[1])
		return -1;
	rt = grow((void **)&pc->routes, &pc->nroutes, sizeof(*rt));
	if (!rt)
		return -1;
	rt->spec = options_keep(o, val);
	rt->site = o->block;
	rt->seq = o->route_seq++;
	rt->match = rt->spec;
	rt->match_len = (size_t)(eq - val);
	list = rt->spec + rt->match_len + 1;
	if (list[0] == '@') {
		/* A named group, found when every block has been read. */
		const char *slash = strchr(list, '/');

		rt->group = UNSET;
		rt->group_name = slash ? options_keep(o, list) : list;
		if (slash) {
			size_t nl = (size_t)(slash - list);

			((char *)rt->group_name)[nl] = 0;
			rt->path = list + nl;
			rt->path_len = strlen(rt->path);
		}
		return 0;
	}
	g = new_group(o, rt->spec);
	if (!g)
		return -1;
	rt->group = pc->ngroups - 1;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		const char *path;
		size_t path_len;

		err = parse_server(o, g, p, n, &path, &path_len);
		if (err)
			return err == -2 ? -2 : -1;
		if (p == list) {
			rt->path = path;
			rt->path_len = path_len;
		} else if (path_len != rt->path_len ||
			   (path_len && memcmp(path, rt->path, path_len))) {
			options_error(o, NULL, "--proxy %s: every server of a "
				      "route has the same path", val);
			return -2;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

bool proxy_route_matches(const struct zh_proxy_route *rt, const char *path,
			 size_t len)
{
	return len >= rt->match_len && !memcmp(path, rt->match, rt->match_len);
}

/* ------------------------------------------------------------ options */

int proxy_option(struct options *o, const char *name, const char *val)
{
	struct zh_proxy_config *pc = &o->cfg.proxy;
	const char *full = name;
	int err;

	if (strncmp(name, "proxy", 5) || (name[5] && name[5] != '-'))
		return 1;
	if (!val) {
		options_error(o, NULL, "option '%s' needs a value", name);
		return -1;
	}
	if (!strcmp(name, "proxy")) {
		err = add_route(o, val);
		if (err == -1)
			goto bad;
		return err ? -1 : 0;
	}
	name += 6;
	if (!strcmp(name, "host")) {
		if (!strcmp(val, "pass")) {
			pc->host = ZH_HOST_PASS;
		} else if (!strcmp(val, "upstream")) {
			pc->host = ZH_HOST_UPSTREAM;
		} else if (strpbrk(val, " \t\r\n/@") || !*val) {
			goto bad;
		} else {
			pc->host = ZH_HOST_SET;
			pc->host_name = options_keep(o, val);
		}
	} else if (!strcmp(name, "via")) {
		if (!strcmp(val, "on"))
			pc->via = true;
		else if (!strcmp(val, "off"))
			pc->via = false;
		else
			goto bad;
	} else if (!strcmp(name, "trust")) {
		for (const char *p = val; *p;) {
			size_t n = strcspn(p, ", ");

			if (pc->ntrust >= ZH_PROXY_MAX_TRUST ||
			    parse_net(p, n, &pc->trust[pc->ntrust]))
				goto bad;
			pc->ntrust++;
			p += n;
			while (*p == ',' || *p == ' ')
				p++;
		}
	} else if (!strcmp(name, "splice-min") ||
		   !strcmp(name, "pipe-size")) {
		unsigned long x;

		if (options_size(val, &x))
			goto bad;
		if (name[0] == 's') {
			pc->splice_min = x;
		} else {
			if (x < 4096 || x > (64u << 20))
				goto bad;
			pc->pipe_size = (unsigned)x;
		}
	} else {
		err = group_setting(o, &pc->defaults, name, val);
		if (err < 0)
			goto bad;
		if (err > 0) {
			options_error(o, NULL, "unknown option 'proxy-%s'",
				      name);
			return -1;
		}
	}
	return 0;
bad:
	options_error(o, NULL, "bad value '%s' for '%s'", val, full);
	return -1;
}

int proxy_config_line(struct options *o, const char *name, const char *val)
{
	struct zh_proxy_config *pc = &o->cfg.proxy;
	struct zh_upstream_group *g;
	int err;

	if (!o->upstream) {
		char gname[128];
		size_t n;

		if (strcmp(name, "upstream"))
			return 1;
		/* upstream NAME { */
		n = val ? strcspn(val, " \t") : 0;
		if (!n || n + 2 > sizeof(gname) - 1 ||
		    strcmp(val + n + strspn(val + n, " \t"), "{")) {
			options_error(o, NULL, "expected 'upstream NAME {'");
			return -1;
		}
		if (o->block) {
			options_error(o, NULL, "upstream blocks go outside "
				      "server blocks");
			return -1;
		}
		gname[0] = '@';
		memcpy(gname + 1, val, n);
		gname[n + 1] = 0;
		for (unsigned i = 0; i < pc->ngroups; i++)
			if (!strcmp(pc->groups[i].name, gname)) {
				options_error(o, NULL, "upstream %s defined "
					      "twice", gname + 1);
				return -1;
			}
		g = new_group(o, gname);
		if (!g)
			return -1;
		{
			char where[512];

			snprintf(where, sizeof(where), "%s:%u",
				 o->file ? o->file : "-", o->line);
			g->where = options_keep(o, where);
		}
		o->upstream = pc->ngroups;
		return 0;
	}
	g = &pc->groups[o->upstream - 1];
	if (!strcmp(name, "}") && !val) {
		o->upstream = 0;
		if (!g->n) {
			options_error(o, g->where, "upstream %s has no server",
				      g->name + 1);
			return -1;
		}
		return 0;
	}
	if (!val) {
		options_error(o, NULL, "option '%s' needs a value", name);
		return -1;
	}
	if (!strcmp(name, "server")) {
		const char *path;
		size_t path_len;

		if (g->first + g->n != pc->nservers) {
			options_error(o, NULL, "internal: servers out of order");
			return -1;
		}
		err = parse_server(o, g, val, strlen(val), &path, &path_len);
		if (!err && path) {
			options_error(o, NULL, "a server of an upstream block "
				      "has no path (give it in the route: "
				      "proxy /x=@%s/path)", g->name + 1);
			return -1;
		}
		if (err == -1)
			options_error(o, NULL, "bad server '%s'", val);
		return err ? -1 : 0;
	}
	err = group_setting(o, g, name, val);
	if (err > 0) {
		options_error(o, NULL, "'%s' is not an upstream setting", name);
		return -1;
	}
	if (err < 0) {
		options_error(o, NULL, "bad value '%s' for '%s'", val, name);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ finish */

static void settle(struct zh_upstream_group *g,
		   const struct zh_upstream_group *d)
{
#define D(f) do { if (g->f == UNSET) g->f = d->f; } while (0)
	if ((unsigned)g->balance == UNSET) {
		g->balance = d->balance;
		g->hash_key = d->hash_key;
		g->hash_header = d->hash_header;
	}
	D(keepalive); D(max_conns); D(queue); D(connect_ms); D(timeout_ms);
	D(idle_ms); D(max_fails); D(fail_ms); D(health_ms); D(health_rise);
	D(health_fall);
	if (!g->health_path)
		g->health_path = d->health_path;
	if (g->health_status < 0)
		g->health_status = d->health_status;
#undef D
}

int proxy_conf_finish(struct options *o)
{
	struct zh_proxy_config *pc = &o->cfg.proxy;

	if (o->upstream) {
		options_error(o, pc->groups[o->upstream - 1].where,
			      "upstream block not closed by '}'");
		return -1;
	}
	for (unsigned i = 0; i < pc->ngroups; i++)
		settle(&pc->groups[i], &pc->defaults);
	for (unsigned i = 0; i < pc->nroutes; i++) {
		struct zh_proxy_route *rt = &pc->routes[i];

		if (rt->group != UNSET)
			continue;
		for (unsigned k = 0; k < pc->ngroups; k++)
			if (!strcmp(pc->groups[k].name, rt->group_name))
				rt->group = k;
		if (rt->group == UNSET) {
			options_error(o, NULL, "--proxy %s: no upstream block "
				      "'%s'", rt->spec, rt->group_name + 1);
			return -1;
		}
	}
	return 0;
}
