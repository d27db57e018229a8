/*
 * gds_trace.h - reader of zcstack's request trace format (docs/trace-format.md).
 *
 * One request per line, fields separated by spaces or tabs:
 *
 *     time_ms object_id size_bytes [method status path]
 *
 * Exactly 3 or 6 fields.  time_ms never decreases; object_id is a decimal
 * integer < 2^64; size_bytes is > 0.  Lines starting with '#' are metadata
 * ("# key: value") or comments; empty lines are allowed.  The first line
 * may be "# zctrace 1", the format version.
 *
 * This is the one parser of the format: gdssim and zcbench read traces
 * through it.  It is strict: any other line is an error that names the line
 * number and the field, never a line skipped.
 *
 *     struct gds_trace_reader r;
 *     struct gds_trace_rec rec;
 *     int k;
 *
 *     gds_trace_open(&r, "trace.txt");
 *     while ((k = gds_trace_next(&r, &rec)) > 0)
 *             if (k == GDS_TRACE_REQUEST) use(rec.time_ms, rec.object_id, ...);
 *     if (k < 0) fprintf(stderr, "%s\n", r.error);   // "trace.txt:12: ..."
 *     gds_trace_close(&r);
 */
#ifndef GDS_TRACE_H
#define GDS_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDS_TRACE_VERSION 1

enum gds_trace_kind {
	GDS_TRACE_ERROR = -1,	/* r->error says what and where */
	GDS_TRACE_EOF = 0,
	GDS_TRACE_REQUEST = 1,
	GDS_TRACE_META = 2,	/* "# key: value" (key and value set) */
	GDS_TRACE_COMMENT = 3,	/* any other '#' line */
};

/* One record.  Strings point into the reader's line buffer: valid until the
 * next gds_trace_next call.  They are not NUL-terminated: use the lengths. */
struct gds_trace_rec {
	uint64_t time_ms;
	uint64_t object_id;
	uint64_t size;
	int status;			/* 0 when the line has 3 fields */
	const char *method, *path;	/* NULL when the line has 3 fields */
	size_t method_len, path_len;
	const char *key, *value;	/* GDS_TRACE_META */
	size_t key_len, value_len;
};

struct gds_trace_reader {
	FILE *f;
	int own;		/* close f in gds_trace_close */
	const char *name;	/* for messages */
	char *line;
	size_t cap;
	unsigned long lineno;	/* of the record just returned */
	uint64_t last_time;
	unsigned long requests;
	char error[512];
};

/* Open a file ("-" is stdin).  -errno on failure, with r->error set. */
int gds_trace_open(struct gds_trace_reader *r, const char *path);

/* Read from an open stream (not closed by gds_trace_close). */
void gds_trace_init(struct gds_trace_reader *r, FILE *f, const char *name);

/* The next record: a gds_trace_kind.  Empty lines are passed over. */
int gds_trace_next(struct gds_trace_reader *r, struct gds_trace_rec *rec);

void gds_trace_close(struct gds_trace_reader *r);

/* Parse one line (without its newline) on its own, outside a reader: the
 * same rules except the time order.  Returns a kind, or GDS_TRACE_ERROR
 * with a static message in *why.  GDS_TRACE_EOF means an empty line. */
int gds_trace_parse_line(char *line, size_t len, struct gds_trace_rec *rec,
			 const char **why);

#ifdef __cplusplus
}
#endif

#endif /* GDS_TRACE_H */
