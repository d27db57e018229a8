/* gdssim.c - trace-driven cache simulator: how GDS compares.
 *
 *   gdssim --trace FILE [--policy gds1,gdsp,gdsf,lru,sieve,s3fifo]
 *          [--cache-size 1%,5%,10%,64M,...] [--json] [--plot out.png]
 *
 * Reads the trace once (gds_trace.h, the project's one parser), replays it
 * through every policy at every cache size, and prints object and byte hit
 * ratios, with an infinite cache as the ceiling.  Bad input is an error
 * with a line number and exit status 2; nothing is skipped.  The plot is
 * drawn by bench/trace/plot_hitratio.py from the --json document.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gds.h"
#include "gds_trace.h"
#include "sim.h"

#ifndef GDSSIM_PLOT_SCRIPT
#define GDSSIM_PLOT_SCRIPT "bench/trace/plot_hitratio.py"
#endif
#ifndef GDSSIM_PYTHON
#define GDSSIM_PYTHON "python3"
#endif

#define EXIT_USAGE 2	/* bad arguments or bad input */

/* A policy is a libgds one (gds.h's gds_policies, the names zchttpd's
 * --cache-policy takes too) or one of the yardsticks written here. */
struct policy {
	const char *name, *label;
	sim_fn run;			/* a yardstick, or */
	const struct gds_policy *gds;	/* a libgds policy */
};

static const struct policy yardsticks[] = {
	{ "sieve", "SIEVE", sim_sieve, NULL },
	{ "s3fifo", "S3-FIFO", sim_s3fifo, NULL },
};
#define NYARDSTICKS (sizeof(yardsticks) / sizeof(yardsticks[0]))
#define MAX_POLICIES 32

static struct policy policies[MAX_POLICIES];
static size_t npolicies;
static char policy_names[512];	/* "gds1 gdsp ... s3fifo" for messages */

static void init_policies(void)
{
	size_t k = 0;

	if (npolicies)
		return;		/* usage() may come first */
	for (unsigned i = 0; i < gds_npolicies && npolicies < MAX_POLICIES; i++)
		policies[npolicies++] = (struct policy){
			gds_policies[i].name, gds_policies[i].label, NULL,
			&gds_policies[i] };
	for (size_t i = 0; i < NYARDSTICKS && npolicies < MAX_POLICIES; i++)
		policies[npolicies++] = yardsticks[i];
	for (size_t i = 0; i < npolicies; i++) {
		int n = snprintf(policy_names + k, sizeof(policy_names) - k,
				 "%s%s", i ? " " : "", policies[i].name);

		if (n < 0 || (size_t)n >= sizeof(policy_names) - k)
			break;
		k += (size_t)n;
	}
}

static int run_policy(const struct policy *p, const struct sim_trace *t,
		      uint64_t cap, struct sim_result *r)
{
	return p->gds ? sim_gds(t, cap, p->gds, r) : p->run(t, cap, r);
}

#define DEFAULT_POLICIES "gds1,gdsp,gdsf,lru,sieve,s3fifo"
#define DEFAULT_SIZES "1%,2%,5%,10%"
#define MAX_LIST 64

struct size_spec {
	char text[32];
	double percent;		/* > 0 if given as a percentage */
	uint64_t bytes;		/* resolved */
};

static void usage(FILE *out)
{
	init_policies();
	fprintf(out,
"usage: gdssim --trace FILE [options]\n"
"\n"
"Replay a request trace (docs/trace-format.md) through cache replacement\n"
"policies and report object and byte hit ratios.\n"
"\n"
"  -t, --trace FILE        the trace (\"-\" reads stdin)\n"
"  -p, --policy LIST       comma-separated, from: %s\n"
"                          or \"all\" (default: %s)\n"
"  -s, --cache-size LIST   comma-separated sizes: a percentage of the trace's\n"
"                          unique bytes (5%%, 0.5%%) or bytes with an optional\n"
"                          binary suffix (65536, 64K, 64M, 2G)\n"
"                          (default: %s)\n"
"      --json              print the results as JSON instead of a table\n"
"      --plot FILE.png     also draw hit ratio and byte hit ratio against cache\n"
"                          size (needs python3 with matplotlib; see\n"
"                          GDSSIM_PYTHON, GDSSIM_PLOT_SCRIPT)\n"
"      --check             only read and validate the trace, print its summary\n"
"  -h, --help              this text\n"
"\n"
"Exit status: 0 ok, 1 failure while running (plotting, memory), 2 bad\n"
"arguments or bad trace.\n", policy_names, DEFAULT_POLICIES, DEFAULT_SIZES);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("gdssim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(gdssim --help for usage)\n", stderr);
	exit(EXIT_USAGE);
}

static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("gdssim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void copy_arg(char *dst, size_t len, const char *src, const char *opt)
{
	if (strlen(src) >= len)
		die_usage("%s: argument too long", opt);
	memcpy(dst, src, strlen(src) + 1);
}

/* Split a comma list in place; empty items are errors. */
static int split_list(char *s, char **items, const char *what)
{
	int n = 0;
	char *p = s;

	for (;;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		if (*p == '\0')
			die_usage("empty item in %s list", what);
		if (n == MAX_LIST)
			die_usage("too many items in %s list (at most %d)", what, MAX_LIST);
		items[n++] = p;
		if (!comma)
			return n;
		p = comma + 1;
	}
}

static void parse_size(const char *s, struct size_spec *out)
{
	char *end;

	if (strlen(s) >= sizeof(out->text))
		die_usage("cache size '%s' is too long", s);
	snprintf(out->text, sizeof(out->text), "%s", s);
	out->percent = 0;
	out->bytes = 0;
	if (s[0] < '0' || s[0] > '9')
		die_usage("cache size '%s' is not a number (want e.g. 5%% or 64M)", s);
	if (strchr(s, '%')) {
		errno = 0;
		double v = strtod(s, &end);

		if (errno || end == s || strcmp(end, "%") != 0 || !isfinite(v))
			die_usage("cache size '%s' is not a percentage (want e.g. 5%%)", s);
		if (v <= 0)
			die_usage("cache size '%s' must be greater than 0", s);
		out->percent = v;
		return;
	}
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;

	if (errno || end == s)
		die_usage("cache size '%s' is not a byte count", s);
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (shift && strcmp(end, "iB") == 0)
		end += 2;
	else if (strcmp(end, "B") == 0)
		end++;
	if (*end != '\0')
		die_usage("cache size '%s': unknown unit '%s' (use K, M, G, T or %%)", s, end);
	if (v == 0)
		die_usage("cache size '%s' must be greater than 0", s);
	if (shift && v > (UINT64_MAX >> shift))
		die_usage("cache size '%s' is too large", s);
	out->bytes = (uint64_t)v << shift;
}

/* ------------------------------------------------------------ trace load */

struct idmap {			/* object id -> dense number, open addressing */
	uint64_t *key;
	uint32_t *val;		/* val + 1; 0 = empty */
	size_t cap, n;
};

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die(1, "out of memory");
	return p;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p)
		die(1, "out of memory");
	return p;
}

static void idmap_grow(struct idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1 << 16;
	uint64_t *key = xcalloc(cap, sizeof(*key));
	uint32_t *val = xcalloc(cap, sizeof(*val));

	for (size_t i = 0; i < m->cap; i++) {
		if (!m->val[i])
			continue;
		size_t j = mix(m->key[i]) & (cap - 1);

		while (val[j])
			j = (j + 1) & (cap - 1);
		key[j] = m->key[i];
		val[j] = m->val[i];
	}
	free(m->key);
	free(m->val);
	m->key = key;
	m->val = val;
	m->cap = cap;
}

/* The dense number of `id`, a new one if unseen (*fresh set). */
static uint32_t idmap_get(struct idmap *m, uint64_t id, bool *fresh)
{
	if ((m->n + 1) * 2 > m->cap)
		idmap_grow(m);
	size_t j = mix(id) & (m->cap - 1);

	while (m->val[j]) {
		if (m->key[j] == id) {
			*fresh = false;
			return m->val[j] - 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->key[j] = id;
	m->val[j] = (uint32_t)(++m->n);
	*fresh = true;
	return (uint32_t)(m->n - 1);
}

/* The trace's "# key: value" metadata, passed through to --json (the plot
 * titles itself from it).  The first MAX_META, values cut at 255 bytes. */
#define MAX_META 32
static struct {
	char key[64], value[256];
} meta[MAX_META];
static int nmeta;

static void keep_meta(const struct gds_trace_rec *rec)
{
	if (nmeta == MAX_META || rec->key_len >= sizeof(meta[0].key))
		return;
	for (int i = 0; i < nmeta; i++)
		if (strlen(meta[i].key) == rec->key_len &&
		    memcmp(meta[i].key, rec->key, rec->key_len) == 0)
			return;	/* first one wins */
	memcpy(meta[nmeta].key, rec->key, rec->key_len);
	meta[nmeta].key[rec->key_len] = '\0';
	snprintf(meta[nmeta].value, sizeof(meta[nmeta].value), "%.*s",
		 (int)rec->value_len, rec->value);
	nmeta++;
}

static void load_trace(const char *path, struct sim_trace *t)
{
	struct gds_trace_reader r;
	struct gds_trace_rec rec;
	struct idmap m = { 0 };
	uint64_t *maxsize = NULL;
	size_t cap = 0, maxcap = 0;
	int k;

	memset(t, 0, sizeof(*t));
	if (gds_trace_open(&r, path) < 0)
		die(EXIT_USAGE, "%s", r.error);
	while ((k = gds_trace_next(&r, &rec)) > 0) {
		bool fresh;
		uint32_t x;

		if (k == GDS_TRACE_META)
			keep_meta(&rec);
		if (k != GDS_TRACE_REQUEST)
			continue;
		if (t->n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			t->obj = xrealloc(t->obj, cap * sizeof(*t->obj));
			t->size = xrealloc(t->size, cap * sizeof(*t->size));
		}
		if (m.n >= UINT32_MAX - 2)
			die(EXIT_USAGE, "%s:%lu: more than 2^32 objects", r.name, r.lineno);
		x = idmap_get(&m, rec.object_id, &fresh);
		if (x == maxcap) {
			maxcap = maxcap ? maxcap * 2 : 1 << 16;
			maxsize = xrealloc(maxsize, maxcap * sizeof(*maxsize));
		}
		if (fresh)
			maxsize[x] = 0;
		if (rec.size > maxsize[x]) {
			t->unique_bytes += rec.size - maxsize[x];
			maxsize[x] = rec.size;
		}
		t->obj[t->n] = x;
		t->size[t->n] = rec.size;
		t->requested_bytes += rec.size;
		t->n++;
	}
	if (k < 0)
		die(EXIT_USAGE, "%s", r.error);
	gds_trace_close(&r);
	t->nobj = (uint32_t)m.n;
	free(m.key);
	free(m.val);
	free(maxsize);
	if (t->n == 0)
		die(EXIT_USAGE, "%s: the trace has no requests", path);
}

/* -------------------------------------------------------------- output */

struct row {
	const struct policy *p;
	const struct size_spec *sz;
	struct sim_result r;
};

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)	/* always valid JSON, even
							 * for a non-UTF-8 byte */
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void print_json(FILE *out, const char *path, const struct sim_trace *t,
		       const struct sim_result *inf, const struct row *rows,
		       size_t nrows)
{
	fputs("{\n  \"trace\": ", out);
	json_string(out, path);
	fputs(",\n  \"metadata\": {", out);
	for (int i = 0; i < nmeta; i++) {
		fputs(i ? ", " : "", out);
		json_string(out, meta[i].key);
		fputs(": ", out);
		json_string(out, meta[i].value);
	}
	fputc('}', out);
	fprintf(out, ",\n  \"requests\": %zu,\n  \"objects\": %" PRIu32
		",\n  \"unique_bytes\": %" PRIu64 ",\n  \"requested_bytes\": %" PRIu64
		",\n  \"ceiling\": {\"hit_ratio\": %.6f, \"byte_hit_ratio\": %.6f,"
		" \"hits\": %" PRIu64 ", \"bytes_hit\": %" PRIu64 "},\n  \"results\": [",
		t->n, t->nobj, t->unique_bytes, t->requested_bytes,
		ratio(inf->hits, t->n), ratio(inf->bytes_hit, t->requested_bytes),
		inf->hits, inf->bytes_hit);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];

		fprintf(out, "%s\n    {\"policy\": \"%s\", \"label\": \"%s\", \"cache_size\": ",
			i ? "," : "", w->p->name, w->p->label);
		json_string(out, w->sz->text);
		fprintf(out, ", \"cache_bytes\": %" PRIu64 ", \"cache_fraction\": %.6f,"
			" \"hit_ratio\": %.6f, \"byte_hit_ratio\": %.6f,"
			" \"hits\": %" PRIu64 ", \"bytes_hit\": %" PRIu64
			", \"evictions\": %" PRIu64 ", \"seconds\": %.4f}",
			w->sz->bytes, ratio(w->sz->bytes, t->unique_bytes),
			ratio(w->r.hits, t->n), ratio(w->r.bytes_hit, t->requested_bytes),
			w->r.hits, w->r.bytes_hit, w->r.evictions, w->r.seconds);
	}
	fputs("\n  ]\n}\n", out);
}

static const char *human(uint64_t b, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static void print_summary(const char *path, const struct sim_trace *t,
			  const struct sim_result *inf)
{
	char a[32], b[32];

	printf("trace %s: %zu requests, %" PRIu32 " objects, %s unique, %s requested\n",
	       path, t->n, t->nobj, human(t->unique_bytes, a, sizeof(a)),
	       human(t->requested_bytes, b, sizeof(b)));
	printf("infinite cache (ceiling): hit ratio %.4f, byte hit ratio %.4f\n",
	       ratio(inf->hits, t->n), ratio(inf->bytes_hit, t->requested_bytes));
}

static void print_table(const struct sim_trace *t, const struct row *rows,
			size_t nrows)
{
	char a[32];

	printf("\n%-13s %-10s %11s %10s %15s %10s %8s\n", "policy", "cache", "bytes",
	       "hit ratio", "byte hit ratio", "evictions", "seconds");
	for (size_t i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];

		if (i && rows[i - 1].sz != w->sz)
			putchar('\n');
		printf("%-13s %-10s %11s %10.4f %15.4f %10" PRIu64 " %8.3f\n",
		       w->p->label, w->sz->text, human(w->sz->bytes, a, sizeof(a)),
		       ratio(w->r.hits, t->n),
		       ratio(w->r.bytes_hit, t->requested_bytes),
		       w->r.evictions, w->r.seconds);
	}
}

/* Hand the JSON document to the plotting helper on its stdin. */
static void plot(const char *out_png, const char *path, const struct sim_trace *t,
		 const struct sim_result *inf, const struct row *rows, size_t nrows)
{
	const char *py = getenv("GDSSIM_PYTHON");
	const char *script = getenv("GDSSIM_PLOT_SCRIPT");
	int fd[2], status;
	pid_t pid;
	FILE *w;

	if (!py || !*py)
		py = access(GDSSIM_PYTHON, X_OK) == 0 ? GDSSIM_PYTHON : "python3";
	if (!script || !*script)
		script = GDSSIM_PLOT_SCRIPT;
	if (access(script, R_OK) != 0)
		die(1, "plot helper %s: %s (set GDSSIM_PLOT_SCRIPT)", script, strerror(errno));
	if (pipe(fd) < 0)
		die(1, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die(1, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fd[0], STDIN_FILENO);
		close(fd[0]);
		close(fd[1]);
		execlp(py, py, script, "--out", out_png, (char *)NULL);
		fprintf(stderr, "gdssim: cannot run %s: %s\n", py, strerror(errno));
		_exit(127);
	}
	close(fd[0]);
	signal(SIGPIPE, SIG_IGN);
	w = fdopen(fd[1], "w");
	if (!w)
		die(1, "fdopen: %s", strerror(errno));
	print_json(w, path, t, inf, rows, nrows);
	fclose(w);
	if (waitpid(pid, &status, 0) < 0)
		die(1, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die(1, "plotting failed (%s %s exited with status %d)", py, script,
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "policy", required_argument, NULL, 'p' },
		{ "cache-size", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "plot", required_argument, NULL, 'P' },
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *trace = NULL, *plot_out = NULL;
	static char policy_arg[1024] = DEFAULT_POLICIES, size_arg[1024] = DEFAULT_SIZES;
	bool json = false, check = false;
	char *items[MAX_LIST];
	const struct policy *pol[MAX_LIST];
	struct size_spec sizes[MAX_LIST];
	int npol = 0, nsize, ch;
	struct sim_trace t;
	struct sim_result inf;

	init_policies();
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":t:p:s:h", opts, NULL)) != -1) {
		switch (ch) {
		case 't': trace = optarg; break;
		case 'p': copy_arg(policy_arg, sizeof(policy_arg), optarg, "--policy"); break;
		case 's': copy_arg(size_arg, sizeof(size_arg), optarg, "--cache-size"); break;
		case 'j': json = true; break;
		case 'P': plot_out = optarg; break;
		case 'c': check = true; break;
		case 'h': usage(stdout); return 0;
		case ':': die_usage("option %s needs an argument", argv[optind - 1]);
		default:
			die_usage("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!trace)
		die_usage("--trace FILE is required");
	if (plot_out && !*plot_out)
		die_usage("--plot needs a file name");

	/* Validate every argument before the (long) trace load. */
	if (strcmp(policy_arg, "all") == 0) {
		for (size_t i = 0; i < npolicies; i++)
			pol[npol++] = &policies[i];
	} else {
		int n = split_list(policy_arg, items, "policy");

		for (int i = 0; i < n; i++) {
			size_t j;

			for (j = 0; j < npolicies; j++)
				if (strcmp(items[i], policies[j].name) == 0)
					break;
			if (j == npolicies)
				die_usage("unknown policy '%s' (known: %s, or all)",
					  items[i], policy_names);
			for (int k = 0; k < npol; k++)
				if (pol[k] == &policies[j])
					die_usage("policy '%s' listed twice", items[i]);
			pol[npol++] = &policies[j];
		}
	}
	nsize = split_list(size_arg, items, "cache size");
	for (int i = 0; i < nsize; i++)
		parse_size(items[i], &sizes[i]);

	load_trace(trace, &t);
	if (sim_infinite(&t, 0, &inf) < 0)
		die(1, "out of memory");
	if (check) {
		print_summary(trace, &t, &inf);
		free(t.obj);
		free(t.size);
		return 0;
	}
	for (int i = 0; i < nsize; i++) {
		if (sizes[i].percent > 0) {
			double b = floor(sizes[i].percent / 100.0 * (double)t.unique_bytes);

			sizes[i].bytes = b < 1 ? 1 : (uint64_t)b;
		}
	}

	size_t nrows = (size_t)npol * (size_t)nsize, k = 0;
	struct row *rows = xcalloc(nrows, sizeof(*rows));

	for (int s = 0; s < nsize; s++) {
		for (int p = 0; p < npol; p++, k++) {
			rows[k].p = pol[p];
			rows[k].sz = &sizes[s];
			if (run_policy(pol[p], &t, sizes[s].bytes, &rows[k].r) < 0)
				die(1, "out of memory");
		}
	}
	if (json) {
		print_json(stdout, trace, &t, &inf, rows, nrows);
	} else {
		print_summary(trace, &t, &inf);
		print_table(&t, rows, nrows);
	}
	if (plot_out)
		plot(plot_out, trace, &t, &inf, rows, nrows);
	if (fflush(stdout) != 0 || ferror(stdout))
		die(1, "writing the results: %s", strerror(errno));
	free(rows);
	free(t.obj);
	free(t.size);
	return 0;
}
