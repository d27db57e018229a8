/* trace.c - the trace format's one parser (docs/trace-format.md).
 *
 * Hand-written rather than sscanf: sscanf accepts "12abc" as 12, "-1" as a
 * huge unsigned and silently ignores trailing junk, which is exactly the
 * class of input we promise to reject with a line number.  It is also the
 * fast path of gdssim (a million lines in well under a second).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gds_trace.h"

static inline bool is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Split on runs of blanks; at most `max` fields (one more is reported as
 * "too many").  Returns the field count. */
static int split(char *s, size_t len, char **f, size_t *flen, int max)
{
	size_t i = 0;
	int n = 0;

	for (;;) {
		while (i < len && is_space(s[i]))
			i++;
		if (i == len)
			return n;
		if (n == max)
			return max + 1;
		f[n] = s + i;
		while (i < len && !is_space(s[i]))
			i++;
		flen[n] = (size_t)(s + i - f[n]);
		n++;
	}
}

/* Decimal digits only, no sign, no overflow. */
static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool is_method(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '-' || s[i] == '_'))
			return false;
	return len > 0;
}

static int parse_meta(char *line, size_t len, struct gds_trace_rec *rec)
{
	size_t i = 1, k0, k1;

	while (i < len && is_space(line[i]))
		i++;
	k0 = i;
	while (i < len && line[i] != ':' && !is_space(line[i]))
		i++;
	k1 = i;
	if (k1 == k0 || i == len || line[i] != ':')
		return GDS_TRACE_COMMENT;
	i++;
	while (i < len && is_space(line[i]))
		i++;
	while (len > i && is_space(line[len - 1]))
		len--;
	rec->key = line + k0;
	rec->key_len = k1 - k0;
	rec->value = line + i;
	rec->value_len = len - i;
	return GDS_TRACE_META;
}

int gds_trace_parse_line(char *line, size_t len, struct gds_trace_rec *rec,
			 const char **why)
{
	char *f[6];
	size_t fl[6];
	uint64_t status;
	int n;

	memset(rec, 0, sizeof(*rec));
	while (len > 0 && (line[len - 1] == '\r' || is_space(line[len - 1])))
		len--;
	if (len > 0 && line[0] == '#')
		return parse_meta(line, len, rec);

	n = split(line, len, f, fl, 6);
	if (n == 0)
		return GDS_TRACE_EOF;
	if (n != 3 && n != 6) {
		*why = n > 6 ? "too many fields (want 3 or 6: time_ms object_id size_bytes [method status path])"
			     : "wrong number of fields (want 3 or 6: time_ms object_id size_bytes [method status path])";
		return GDS_TRACE_ERROR;
	}
	if (!parse_u64(f[0], fl[0], &rec->time_ms)) {
		*why = "time_ms is not a non-negative decimal integer";
		return GDS_TRACE_ERROR;
	}
	if (!parse_u64(f[1], fl[1], &rec->object_id)) {
		*why = "object_id is not a decimal integer below 2^64";
		return GDS_TRACE_ERROR;
	}
	if (!parse_u64(f[2], fl[2], &rec->size)) {
		*why = "size_bytes is not a decimal integer";
		return GDS_TRACE_ERROR;
	}
	if (rec->size == 0) {
		*why = "size_bytes is 0 (sizes must be positive)";
		return GDS_TRACE_ERROR;
	}
	if (n == 6) {
		if (!is_method(f[3], fl[3])) {
			*why = "method is not an upper-case token (GET, HEAD, ...)";
			return GDS_TRACE_ERROR;
		}
		if (fl[4] != 3 || !parse_u64(f[4], 3, &status) ||
		    status < 100 || status > 599) {
			*why = "status is not an HTTP status code (100-599)";
			return GDS_TRACE_ERROR;
		}
		rec->method = f[3];
		rec->method_len = fl[3];
		rec->status = (int)status;
		rec->path = f[5];
		rec->path_len = fl[5];
	}
	return GDS_TRACE_REQUEST;
}

void gds_trace_init(struct gds_trace_reader *r, FILE *f, const char *name)
{
	memset(r, 0, sizeof(*r));
	r->f = f;
	r->name = name ? name : "trace";
}

int gds_trace_open(struct gds_trace_reader *r, const char *path)
{
	FILE *f;

	if (strcmp(path, "-") == 0) {
		gds_trace_init(r, stdin, "<stdin>");
		return 0;
	}
	f = fopen(path, "r");
	gds_trace_init(r, f, path);
	if (!f) {
		int err = errno;

		snprintf(r->error, sizeof(r->error), "%s: cannot open: %s",
			 path, strerror(err));
		return -err;
	}
	r->own = 1;
	return 0;
}

static int fail(struct gds_trace_reader *r, const char *why)
{
	snprintf(r->error, sizeof(r->error), "%s:%lu: %s", r->name,
		 r->lineno, why);
	return GDS_TRACE_ERROR;
}

int gds_trace_next(struct gds_trace_reader *r, struct gds_trace_rec *rec)
{
	const char *why = NULL;
	ssize_t got;
	int k;

	for (;;) {
		errno = 0;
		got = getline(&r->line, &r->cap, r->f);
		if (got < 0) {
			if (ferror(r->f)) {
				r->lineno++;
				return fail(r, errno ? strerror(errno) : "read error");
			}
			return GDS_TRACE_EOF;
		}
		r->lineno++;
		if (got > 0 && r->line[got - 1] == '\n')
			got--;
		if (memchr(r->line, '\0', (size_t)got))
			return fail(r, "NUL byte in line (not a text trace?)");
		k = gds_trace_parse_line(r->line, (size_t)got, rec, &why);
		if (k == GDS_TRACE_EOF)
			continue;	/* empty line */
		if (k == GDS_TRACE_ERROR)
			return fail(r, why);
		break;
	}
	if (k == GDS_TRACE_COMMENT && r->lineno == 1) {
		/* "# zctrace N": the version line. */
		const char *s = r->line + 1;

		while (*s == ' ' || *s == '\t')
			s++;
		if (strncmp(s, "zctrace", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
			char *end;
			long v = strtol(s + 8, &end, 10);

			if (v != GDS_TRACE_VERSION) {
				char msg[128];

				snprintf(msg, sizeof(msg),
					 "unsupported trace format version (this reader knows zctrace %d)",
					 GDS_TRACE_VERSION);
				return fail(r, msg);
			}
		}
	}
	if (k == GDS_TRACE_REQUEST) {
		if (rec->time_ms < r->last_time) {
			char msg[160];

			snprintf(msg, sizeof(msg),
				 "time_ms %llu goes backwards (previous request at %llu)",
				 (unsigned long long)rec->time_ms,
				 (unsigned long long)r->last_time);
			return fail(r, msg);
		}
		r->last_time = rec->time_ms;
		r->requests++;
	}
	return k;
}

void gds_trace_close(struct gds_trace_reader *r)
{
	if (r->own && r->f)
		fclose(r->f);
	free(r->line);
	r->line = NULL;
	r->f = NULL;
}
