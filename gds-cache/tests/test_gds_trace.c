/* test_gds_trace.c - the trace format's parser: what it accepts, and that
 * everything else is an error naming the line and the field. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gds_trace.h"

static int parse(const char *text, struct gds_trace_rec *rec, const char **why)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s", text);
	*why = NULL;
	return gds_trace_parse_line(buf, strlen(buf), rec, why);
}

static void test_valid_lines(void **state)
{
	struct gds_trace_rec rec;
	const char *why;

	(void)state;
	assert_int_equal(parse("0 17 4096", &rec, &why), GDS_TRACE_REQUEST);
	assert_int_equal(rec.time_ms, 0);
	assert_int_equal(rec.object_id, 17);
	assert_int_equal(rec.size, 4096);
	assert_null(rec.method);
	assert_int_equal(rec.status, 0);

	assert_int_equal(parse("12\t18446744073709551615  1 GET 200 /a/b?c=d\r", &rec, &why),
			 GDS_TRACE_REQUEST);
	assert_true(rec.object_id == UINT64_MAX);
	assert_int_equal(rec.method_len, 3);
	assert_memory_equal(rec.method, "GET", 3);
	assert_int_equal(rec.status, 200);
	assert_int_equal(rec.path_len, 8);
	assert_memory_equal(rec.path, "/a/b?c=d", 8);

	assert_int_equal(parse("# seed: 42 ", &rec, &why), GDS_TRACE_META);
	assert_int_equal(rec.key_len, 4);
	assert_memory_equal(rec.key, "seed", 4);
	assert_int_equal(rec.value_len, 2);
	assert_memory_equal(rec.value, "42", 2);
	assert_int_equal(parse("#no colon here", &rec, &why), GDS_TRACE_COMMENT);
	assert_int_equal(parse("", &rec, &why), GDS_TRACE_EOF);
	assert_int_equal(parse("   \t ", &rec, &why), GDS_TRACE_EOF);
}

static void expect_error(const char *line, const char *words)
{
	struct gds_trace_rec rec;
	const char *why;

	if (parse(line, &rec, &why) != GDS_TRACE_ERROR)
		fail_msg("accepted: '%s'", line);
	if (!strstr(why, words))
		fail_msg("'%s': message '%s' lacks '%s'", line, why, words);
}

static void test_invalid_lines(void **state)
{
	(void)state;
	expect_error("1 2", "number of fields");
	expect_error("1 2 3 GET", "number of fields");
	expect_error("1 2 3 GET 200", "number of fields");
	expect_error("1 2 3 GET 200 / extra", "too many fields");
	expect_error("-1 2 3", "time_ms");
	expect_error("1.5 2 3", "time_ms");
	expect_error("1 x 3", "object_id");
	expect_error("1 18446744073709551616 3", "object_id");	/* 2^64 */
	expect_error("1 2 3k", "size_bytes");
	expect_error("1 2 +3", "size_bytes");
	expect_error("1 2 0", "size_bytes is 0");
	expect_error("1 2 3 get 200 /", "method");
	expect_error("1 2 3 GET 20 /", "status");
	expect_error("1 2 3 GET 600 /", "status");
	expect_error("1 2 3 GET 2000 /", "status");
	expect_error(" 1 2 3 GET abc /", "status");
}

/* A reader over an in-memory file. */
static int read_all(const char *text, char *err, size_t errlen,
		    unsigned long *requests, unsigned long *meta)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct gds_trace_reader r;
	struct gds_trace_rec rec;
	int k;

	assert_non_null(f);
	gds_trace_init(&r, f, "t.txt");
	*requests = *meta = 0;
	while ((k = gds_trace_next(&r, &rec)) > 0) {
		if (k == GDS_TRACE_REQUEST)
			(*requests)++;
		else if (k == GDS_TRACE_META)
			(*meta)++;
	}
	snprintf(err, errlen, "%s", k < 0 ? r.error : "");
	gds_trace_close(&r);
	fclose(f);
	return k;
}

static void test_reader(void **state)
{
	char err[512];
	unsigned long req, meta;

	(void)state;
	assert_int_equal(read_all("# zctrace 1\n# seed: 7\n\n0 1 10\n5 2 20 GET 200 /x\n"
				  "5 1 10\n# trailing: note\n", err, sizeof(err), &req, &meta),
			 GDS_TRACE_EOF);
	assert_int_equal(req, 3);
	assert_int_equal(meta, 2);
	/* no newline at the end of the last line */
	assert_int_equal(read_all("0 1 10\n1 1 10", err, sizeof(err), &req, &meta),
			 GDS_TRACE_EOF);
	assert_int_equal(req, 2);

	/* errors carry the file name and the line number */
	assert_int_equal(read_all("# zctrace 1\n0 1 10\n\n1 2 0\n", err, sizeof(err),
				  &req, &meta), GDS_TRACE_ERROR);
	assert_non_null(strstr(err, "t.txt:4: size_bytes is 0"));
	assert_int_equal(read_all("10 1 10\n9 1 10\n", err, sizeof(err), &req, &meta),
			 GDS_TRACE_ERROR);
	assert_non_null(strstr(err, "t.txt:2: time_ms 9 goes backwards"));
	assert_int_equal(read_all("# zctrace 2\n0 1 1\n", err, sizeof(err), &req, &meta),
			 GDS_TRACE_ERROR);
	assert_non_null(strstr(err, "t.txt:1: unsupported trace format version"));
}

static void test_nul_byte(void **state)
{
	static const char text[] = "0 1 1\n0 1\0 1\n";
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	struct gds_trace_reader r;
	struct gds_trace_rec rec;

	(void)state;
	gds_trace_init(&r, f, "bin");
	assert_int_equal(gds_trace_next(&r, &rec), GDS_TRACE_REQUEST);
	assert_int_equal(gds_trace_next(&r, &rec), GDS_TRACE_ERROR);
	assert_non_null(strstr(r.error, "bin:2: NUL byte"));
	gds_trace_close(&r);
	fclose(f);
}

static void test_open_missing(void **state)
{
	struct gds_trace_reader r;

	(void)state;
	assert_true(gds_trace_open(&r, "/nonexistent/trace.txt") < 0);
	assert_non_null(strstr(r.error, "/nonexistent/trace.txt: cannot open"));
	gds_trace_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_lines),
		cmocka_unit_test(test_invalid_lines),
		cmocka_unit_test(test_reader),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_open_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
