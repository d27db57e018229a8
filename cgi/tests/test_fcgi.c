/*
 * test_fcgi.c - the FastCGI application side end to end: the demo apps
 * (cgi/apps/, linked against Debian's libfcgi) started on Debian's library
 * and, through LD_LIBRARY_PATH, on ours, and this program as the web
 * server (fcgi_client.c) on the standard transport and on the zero-copy
 * one (a libzc channel).
 *
 * Environment (meson sets it): ZCGEN, ZCWRAP, ZCECHO (the apps), ZCFCGI_LIBDIR
 * (the directory of our libfcgi.so.0), ZC_TEST_TMPDIR (scratch space).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fcgi_client.h"
#include "../apps/sha256.h"

/* Where an app runs: Debian's library on a socket, ours on a socket, ours
 * on a channel. */
enum mode { DEB_STD, OURS_STD, OURS_ZC };
static const char *const mode_name[] = { "debian/std", "ours/std", "ours/zc" };

struct app {
	pid_t pid;
	char sock[256];
	bool zc;
};

static char tmpdir[200];
/* The app of the test running now: a failed test leaves it to teardown. */
static pid_t running = -1;

static const char *env_or_fail(const char *name)
{
	const char *v = getenv(name);

	if (!v)
		fail_msg("%s is not set (run through meson test)", name);
	return v;
}

/* Start the app listening on a new socket; preload: an object for
 * LD_PRELOAD, or NULL. */
static void app_spawn(struct app *a, enum mode m, const char *which,
		      const char *extra, const char *preload)
{
	static int n;
	const char *prog = env_or_fail(which);
	const char *libdir = env_or_fail("ZCFCGI_LIBDIR");
	char listen[300];

	snprintf(a->sock, sizeof(a->sock), "%s/app%d.sock", tmpdir, n++);
	snprintf(listen, sizeof(listen), "--listen=unix:%s", a->sock);
	a->zc = m == OURS_ZC;
	a->pid = fork();
	assert_true(a->pid >= 0);
	if (a->pid == 0) {
		char log[300];
		int fd;

		/* Not meson's pipes: they must close when we do. */
		snprintf(log, sizeof(log), "%s/app.log", tmpdir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (m == DEB_STD)
			unsetenv("LD_LIBRARY_PATH");
		else
			setenv("LD_LIBRARY_PATH", libdir, 1);
		if (preload) {
			/* Before an ASan build's runtime: harmless, the
			 * object replaces nothing the runtime does. */
			const char *o = getenv("ASAN_OPTIONS");
			char opts[512];

			snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0",
				 o ? o : "", o && *o ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
			setenv("LD_PRELOAD", preload, 1);
		}
		execl(prog, prog, listen, extra, (char *)NULL);
		_exit(127);
	}
	running = a->pid;
}

static void app_start(struct app *a, enum mode m, const char *which,
		      const char *extra)
{
	app_spawn(a, m, which, extra, NULL);
	/* Wait until it listens (or died). */
	for (;;) {
		struct fcl c;
		int st;

		if (fcl_connect(a->sock, false, &c) == 0) {
			fcl_close(&c);	/* the app sees a silent peer: drops it */
			break;
		}
		assert_int_equal(waitpid(a->pid, &st, WNOHANG), 0);
		usleep(2000);
	}
}

/* The app ended as a graceful stop ends it: exit 0, or our SIGTERM (both
 * libraries end gracefully on it), not a crash or a sanitizer. */
static void expect_stopped(int st)
{
	running = -1;
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) &&
	    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))
		fail_msg("the app ended with status %#x", st);
}

/* The app ends within a few seconds (of the SIGTERM it was sent); a
 * failed test leaves it to teardown. */
static void app_gone(struct app *a)
{
	for (int ms = 0; ms < 10000; ms += 5) {
		int st;
		pid_t p = waitpid(a->pid, &st, WNOHANG);

		assert_true(p >= 0);
		if (p == a->pid) {
			expect_stopped(st);
			unlink(a->sock);
			return;
		}
		usleep(5000);
	}
	fail_msg("the app did not end within 10 s of SIGTERM");
}

static void app_stop(struct app *a)
{
	kill(a->pid, SIGTERM);
	app_gone(a);
}

static void conn(struct app *a, struct fcl *c)
{
	assert_int_equal(fcl_connect(a->sock, a->zc, c), 0);
}

/* The response of one request on a new connection. */
static void ask(struct app *a, const char *const *env, const void *body,
		size_t len, struct fcl_resp *r)
{
	struct fcl c;

	conn(a, &c);
	memset(r, 0, sizeof(*r));
	assert_int_equal(fcl_request(&c, 1, false, env, body, len, r), 0);
	assert_true(r->ended && r->out_eos);
	assert_int_equal(r->protocol_status, FCGI_REQUEST_COMPLETE);
	assert_int_equal(fcl_expect_eof(&c), 0);
	fcl_close(&c);
}

static void echo_expect(const struct fcl_resp *r, const uint8_t *body,
			size_t len, const char *ct, const char *method);

/* cmocka cases running fn on our library on both transports (and on
 * Debian's, which has only the standard one). */
#define ON_OURS(fn)                                                            \
	static void fn##_std(void **s) { (void)s; fn(OURS_STD); }              \
	static void fn##_zc(void **s) { (void)s; fn(OURS_ZC); }
#define ON_ALL(fn)                                                             \
	ON_OURS(fn)                                                            \
	static void fn##_deb(void **s) { (void)s; fn(DEB_STD); }

/* ------------------------------------------------------------- zcgen */

static const char pattern[] = "abcdefghijklmnopqrstuvwxyz0123456789\n";

static void expect_gen(const struct fcl_resp *r, size_t size)
{
	char head[128];
	int hl = snprintf(head, sizeof(head),
			  "Content-Type: application/octet-stream\r\n"
			  "Content-Length: %zu\r\n\r\n", size);

	assert_int_equal(r->out.len, (size_t)hl + size);
	assert_memory_equal(r->out.p, head, (size_t)hl);
	for (size_t i = 0; i < size; i++)
		if (r->out.p[hl + i] != (uint8_t)pattern[i % 37])
			fail_msg("byte %zu of %zu differs", i, size);
}

static const size_t sizes[] = {
	0, 1, 16383, 16384, 16385, 65534, 65535, 65536, 65537,
	131070, 131071, (size_t)1 << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void gen_sizes(enum mode m, struct fcl_vec *all)
{
	struct app a;

	app_start(&a, m, "ZCGEN", NULL);
	for (size_t i = 0; i < NSIZES; i++) {
		char qs[64];
		const char *env[] = { "REQUEST_METHOD=GET", qs, NULL };
		struct fcl_resp r;

		snprintf(qs, sizeof(qs), "QUERY_STRING=size=%zu", sizes[i]);
		/* Twice: built once, then resent. */
		for (int k = 0; k < 2; k++) {
			ask(&a, env, NULL, 0, &r);
			expect_gen(&r, sizes[i]);
			if (all)
				fcl_vec_put(all, r.out.p, r.out.len);
			fcl_resp_free(&r);
		}
	}
	app_stop(&a);
}

/* run() on every library and transport collects bytes that must be the
 * same on all. */
static void same_everywhere(void (*run)(enum mode, struct fcl_vec *))
{
	struct fcl_vec v[3] = { 0 };

	for (int m = DEB_STD; m <= OURS_ZC; m++)
		run((enum mode)m, &v[m]);
	for (int m = OURS_STD; m <= OURS_ZC; m++) {
		assert_int_equal(v[m].len, v[DEB_STD].len);
		if (memcmp(v[m].p, v[DEB_STD].p, v[m].len))
			fail_msg("%s differs from %s", mode_name[m],
				 mode_name[DEB_STD]);
	}
	for (int m = 0; m < 3; m++)
		fcl_vec_free(&v[m]);
}

/* Byte-exact bodies at the record boundaries, and the same bytes from the
 * same binary on every library and transport. */
static void test_gen_identical(void **state)
{
	(void)state;
	same_everywhere(gen_sizes);
}

/* The zero-copy transport: a cached document is one published buffer,
 * sent by reference to every request; no record is longer than 65535
 * bytes, so a big one comes in sub-slices of that buffer. */
static void test_gen_cached_by_reference(void **state)
{
	const char *env[] = { "REQUEST_METHOD=GET",
			      "QUERY_STRING=size=200000", NULL };
	struct zc_buf_id first = { 0 };
	struct app a;

	(void)state;
	app_start(&a, OURS_ZC, "ZCGEN", NULL);
	for (int k = 0; k < 3; k++) {
		struct fcl_resp r;
		struct zc_slice s;
		struct zc_buf_id id;
		size_t n;

		ask(&a, env, NULL, 0, &r);
		expect_gen(&r, 200000);
		assert_true(r.out_records >= 200000 / 65535 + 1);
		n = zc_agg_nslices(r.out_agg);
		assert_true(n >= 2);
		/* The last slice is the end of the document. */
		assert_int_equal(zc_agg_slice(r.out_agg, n - 1, &s), 0);
		assert_int_equal(s.kind, ZC_SLICE_BUF);
		zc_buf_id(s.buf, &id);
		assert_int_equal(zc_buf_len(s.buf), 200000);
		assert_int_equal(s.off + s.len, 200000);
		if (k == 0)
			first = id;
		assert_memory_equal(&id, &first, sizeof(id));
		fcl_resp_free(&r);
	}
	app_stop(&a);
}

/* Many requests on one connection (FCGI_KEEP_CONN): bodies of every size
 * through zcecho, and (ours: Debian's libfcgi closes a connection whose
 * request left input unread) zcgen's documents. */
static void test_keep_conn(enum mode m)
{
	const char *env[] = { "REQUEST_METHOD=PUT", "CONTENT_TYPE=k/c", NULL };
	uint8_t *body = malloc((size_t)1 << 20);
	struct app a;
	struct fcl c;

	memset(body, 'k', (size_t)1 << 20);
	app_start(&a, m, "ZCECHO", NULL);
	conn(&a, &c);
	for (int i = 0; i < 200; i++) {
		size_t size = sizes[i % NSIZES];
		struct fcl_resp r = { 0 };

		assert_int_equal(fcl_request(&c, (uint16_t)(1 + i % 3), true,
					     env, body, size, &r), 0);
		echo_expect(&r, body, size, "k/c", "PUT");
		fcl_resp_free(&r);
	}
	fcl_close(&c);
	app_stop(&a);
	free(body);
	if (m == DEB_STD)
		return;
	app_start(&a, m, "ZCGEN", NULL);
	conn(&a, &c);
	for (int i = 0; i < 300; i++) {
		size_t size = sizes[i % NSIZES];
		char qs[64];
		const char *genv[] = { "REQUEST_METHOD=GET", qs, NULL };
		struct fcl_resp r = { 0 };

		snprintf(qs, sizeof(qs), "QUERY_STRING=size=%zu", size);
		assert_int_equal(fcl_request(&c, (uint16_t)(1 + i % 3), true,
					     genv, NULL, 0, &r), 0);
		expect_gen(&r, size);
		fcl_resp_free(&r);
	}
	fcl_close(&c);
	app_stop(&a);
}
ON_ALL(test_keep_conn)


/* ------------------------------------------------------------ zcwrap */

static void wrap(enum mode m, struct fcl_vec *all)
{
	char root[256], path[300], extra[300];
	const char *env[] = { "REQUEST_METHOD=GET",
			      "QUERY_STRING=file=page%2Ebin", NULL };
	const char *bad[] = { "REQUEST_METHOD=GET",
			      "QUERY_STRING=file=../outside", NULL };
	uint8_t *data = malloc(300000);
	struct fcl_resp r;
	struct app a;
	int fd;

	snprintf(root, sizeof(root), "%s/root", tmpdir);
	mkdir(root, 0755);
	snprintf(path, sizeof(path), "%s/page.bin", root);
	for (size_t i = 0; i < 300000; i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, 300000), 300000);
	close(fd);
	snprintf(path, sizeof(path), "%s/outside", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	snprintf(extra, sizeof(extra), "--root=%s", root);

	app_start(&a, m, "ZCWRAP", extra);
	ask(&a, env, NULL, 0, &r);
	assert_true(r.out.len > 300000);
	assert_non_null(memmem(r.out.p, r.out.len, data, 300000));
	if (m == OURS_ZC) {
		/* The file went as an extent: the app never read it. */
		bool file = false;

		for (size_t i = 0; i < zc_agg_nslices(r.out_agg); i++) {
			struct zc_slice s;

			zc_agg_slice(r.out_agg, i, &s);
			file |= s.kind == ZC_SLICE_FILE;
		}
		assert_true(file);
	}
	fcl_vec_put(all, r.out.p, r.out.len);
	fcl_resp_free(&r);
	ask(&a, bad, NULL, 0, &r);
	assert_non_null(memmem(r.out.p, r.out.len, "404", 3));
	fcl_vec_put(all, r.out.p, r.out.len);
	fcl_resp_free(&r);
	app_stop(&a);
	free(data);
}

static void test_wrap_identical(void **state)
{
	(void)state;
	same_everywhere(wrap);
}

/* ------------------------------------------------------------ zcecho */

static void echo_expect(const struct fcl_resp *r, const uint8_t *body,
			size_t len, const char *ct, const char *method)
{
	struct sha256 h;
	uint8_t d[32];
	char hex[65], want[512];

	sha256_init(&h);
	sha256_update(&h, body, len);
	sha256_final(&h, d);
	sha256_hex(d, hex);
	snprintf(want, sizeof(want),
		 "Content-Type: text/plain\r\n\r\n"
		 "length %zu\nsha256 %s\ncontent-type %s\nmethod %s\n",
		 len, hex, ct, method);
	assert_int_equal(r->out.len, strlen(want));
	assert_memory_equal(r->out.p, want, r->out.len);
}

static uint8_t *make_body(size_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	uint64_t x = 88172645463325252ull;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	return b;
}

/* Request bodies of every edge size and a 100 MiB one, streamed. */
static void test_upload(enum mode m)
{
	static const size_t lens[] = { 0, 1, 16383, 16384, 16385, 65534,
				       65535, 65536, 1 << 20, 100 << 20 };
	const char *env[] = { "REQUEST_METHOD=POST",
			      "CONTENT_TYPE=application/x-test", NULL };
	uint8_t *body = make_body(100 << 20);
	struct app a;

	app_start(&a, m, "ZCECHO", NULL);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct fcl_resp r;

		ask(&a, env, body, lens[i], &r);
		echo_expect(&r, body, lens[i], "application/x-test", "POST");
		fcl_resp_free(&r);
	}
	app_stop(&a);
	free(body);
}
ON_ALL(test_upload)


/* FCGI_SetExitStatus is END_REQUEST's appStatus; stderr is STDERR. */
static void test_status(enum mode m)
{
	const char *env[] = { "REQUEST_METHOD=GET", "QUERY_STRING=status=7",
			      NULL };
	struct fcl_resp r;
	struct app a;

	app_start(&a, m, "ZCECHO", NULL);
	ask(&a, env, NULL, 0, &r);
	assert_int_equal(r.app_status, 7);
	assert_int_equal(r.err.len, strlen("zcecho: exit status 7\n"));
	assert_memory_equal(r.err.p, "zcecho: exit status 7\n", r.err.len);
	echo_expect(&r, NULL, 0, "", "GET");
	fcl_resp_free(&r);
	app_stop(&a);
}
ON_ALL(test_status)


/* ------------------------------------------------------- graceful stop */

/* SIGTERM while the app waits for the next request on a kept connection:
 * it ends now, not when the server closes the connection (the request in
 * hand is all a graceful stop waits for). */
static void test_term_idle(enum mode m)
{
	const char *env[] = { "REQUEST_METHOD=GET", NULL };
	struct fcl_resp r = { 0 };
	struct app a;
	struct fcl c;

	app_start(&a, m, "ZCECHO", NULL);
	conn(&a, &c);
	assert_int_equal(fcl_request(&c, 1, true, env, NULL, 0, &r), 0);
	echo_expect(&r, NULL, 0, "", "GET");
	fcl_resp_free(&r);
	usleep(20000);	/* most likely asleep by now; it must end either way */
	kill(a.pid, SIGTERM);
	app_gone(&a);
	fcl_close(&c);
}
ON_OURS(test_term_idle)

/* SIGTERM after the library looked for a pending stop and before it slept
 * in accept (raise_before_accept.c puts it exactly there): the app ends
 * all the same, with no connection coming to wake it. */
static void test_term_before_accept(void **state)
{
	struct app a;

	(void)state;
	app_spawn(&a, OURS_STD, "ZCECHO", NULL,
		  env_or_fail("RAISE_BEFORE_ACCEPT"));
	app_gone(&a);
}


/* ------------------------------------------------- protocol behaviour */

static const char *const post_env[] = { "REQUEST_METHOD=POST",
					"CONTENT_TYPE=t/t", NULL };

/* A request that works, on a new connection: the app is still serving. */
static void still_serving(struct app *a)
{
	uint8_t body[100];
	struct fcl_resp r;

	memset(body, 'x', sizeof(body));
	ask(a, post_env, body, sizeof(body), &r);
	echo_expect(&r, body, sizeof(body), "t/t", "POST");
	fcl_resp_free(&r);
}

/* ABORT_REQUEST in the middle of the body: the app's input ends, its
 * output is dropped, END_REQUEST comes, and the kept connection serves the
 * next request. */
static void test_abort(enum mode m)
{
	uint8_t body[70000];
	struct fcl_vec v = { 0 };
	struct fcl_resp r = { 0 };
	struct app a;
	struct fcl c;

	memset(body, 'a', sizeof(body));
	app_start(&a, m, "ZCECHO", NULL);
	conn(&a, &c);
	fcl_begin(&v, 1, FCGI_RESPONDER, true);
	fcl_params(&v, 1, post_env);
	fcl_stream(&v, FCGI_STDIN, 1, body, sizeof(body), false);
	fcl_rec(&v, FCGI_ABORT_REQUEST, 1, NULL, 0);
	assert_int_equal(fcl_send(&c, v.p, v.len), 0);
	assert_int_equal(fcl_read(&c, 1, &r), 0);
	assert_true(r.ended);
	assert_int_equal(r.protocol_status, FCGI_REQUEST_COMPLETE);
	assert_int_equal(r.out.len, 0);
	fcl_resp_free(&r);
	/* The same connection, the next request. */
	assert_int_equal(fcl_request(&c, 2, true, post_env, body, 10, &r), 0);
	echo_expect(&r, body, 10, "t/t", "POST");
	fcl_resp_free(&r);
	/* An abort before the request started (during PARAMS). */
	v.len = 0;
	fcl_begin(&v, 3, FCGI_RESPONDER, true);
	fcl_rec(&v, FCGI_ABORT_REQUEST, 3, NULL, 0);
	assert_int_equal(fcl_send(&c, v.p, v.len), 0);
	assert_int_equal(fcl_read(&c, 3, &r), 0);
	assert_true(r.ended);
	fcl_resp_free(&r);
	fcl_vec_free(&v);
	fcl_close(&c);
	still_serving(&a);
	app_stop(&a);
}
ON_OURS(test_abort)


/* The server dies in the middle of a request (in PARAMS, in the body,
 * before reading the answer): the app survives and takes the next. */
static void test_peer_dies(enum mode m)
{
	uint8_t body[200000];
	struct app a;

	memset(body, 'b', sizeof(body));
	app_start(&a, m, "ZCECHO", NULL);
	for (int cut = 0; cut < 4; cut++) {
		struct fcl_vec v = { 0 };
		struct fcl c;

		conn(&a, &c);
		fcl_begin(&v, 1, FCGI_RESPONDER, false);
		if (cut == 0) {
			v.len -= 3;		/* in the middle of BEGIN */
		} else {
			fcl_params(&v, 1, post_env);
			if (cut == 1)
				v.len -= 5;	/* in the middle of PARAMS */
			else
				fcl_stream(&v, FCGI_STDIN, 1, body,
					   sizeof(body), cut == 3);
		}
		assert_int_equal(fcl_send(&c, v.p, v.len), 0);
		fcl_vec_free(&v);
		fcl_close(&c);
		still_serving(&a);
	}
	app_stop(&a);
}
ON_OURS(test_peer_dies)


/* Bytes that break the protocol: the connection is dropped, the app
 * serves the next one. */
static void test_malformed(enum mode m)
{
	struct app a;

	app_start(&a, m, "ZCECHO", NULL);
	for (int kind = 0; kind < 4; kind++) {
		struct fcl_vec v = { 0 };
		struct fcl c;
		struct fcl_resp r = { 0 };
		static const uint8_t bad_nv[] = { 0x05, 0x7f, 'A', 'B' };

		conn(&a, &c);
		fcl_begin(&v, 1, FCGI_RESPONDER, true);
		switch (kind) {
		case 0:	/* version 2 */
			v.p[0] = 2;
			break;
		case 1:	/* a name-value pair running past its block */
			fcl_rec(&v, FCGI_PARAMS, 1, bad_nv, sizeof(bad_nv));
			fcl_rec(&v, FCGI_PARAMS, 1, NULL, 0);
			break;
		case 2:	/* STDIN before the end of PARAMS */
			fcl_rec(&v, FCGI_STDIN, 1, "x", 1);
			break;
		case 3:	/* BEGIN_REQUEST with a short body */
			v.len = 0;
			fcl_rec(&v, FCGI_BEGIN_REQUEST, 1, "\0\1\1", 3);
			break;
		}
		assert_int_equal(fcl_send(&c, v.p, v.len), 0);
		fcl_vec_free(&v);
		assert_int_equal(fcl_expect_eof(&c), 0);
		(void)r;
		fcl_close(&c);
		still_serving(&a);
	}
	app_stop(&a);
}
ON_OURS(test_malformed)


/* GET_VALUES, an unknown management type, an unknown role, and a second
 * request on a busy connection. */
static void test_mgmt(enum mode m)
{
	static const uint8_t gv[] = {
		13, 0, 'F', 'C', 'G', 'I', '_', 'M', 'A', 'X', '_', 'R', 'E',
		'Q', 'S', 15, 0, 'F', 'C', 'G', 'I', '_', 'M', 'P', 'X', 'S',
		'_', 'C', 'O', 'N', 'N', 'S',
	};
	static const uint8_t want[] = {
		13, 1, 'F', 'C', 'G', 'I', '_', 'M', 'A', 'X', '_', 'R', 'E',
		'Q', 'S', '1', 15, 1, 'F', 'C', 'G', 'I', '_', 'M', 'P', 'X',
		'S', '_', 'C', 'O', 'N', 'N', 'S', '0',
	};
	uint8_t hdr[8];
	struct fcl_vec v = { 0 };
	struct fcl_resp r = { 0 };
	struct app a;
	struct fcl c;

	app_start(&a, m, "ZCECHO", NULL);
	conn(&a, &c);
	fcl_rec(&v, FCGI_GET_VALUES, 0, gv, sizeof(gv));
	assert_int_equal(fcl_send(&c, v.p, v.len), 0);
	assert_int_equal(fcl_read(&c, 0, &r), 0);
	assert_int_equal(r.mgmt_type, FCGI_GET_VALUES_RESULT);
	assert_int_equal(r.mgmt.len, sizeof(want));
	assert_memory_equal(r.mgmt.p, want, sizeof(want));
	fcl_resp_free(&r);

	/* Type 42 (unknown): UNKNOWN_TYPE naming it. */
	fcgi_header_encode(hdr, 42, 0, 0, 0);
	assert_int_equal(fcl_send(&c, hdr, sizeof(hdr)), 0);
	assert_int_equal(fcl_read(&c, 0, &r), 0);
	assert_int_equal(r.mgmt_type, FCGI_UNKNOWN_TYPE);
	assert_int_equal(r.mgmt.len, 8);
	assert_int_equal(r.mgmt.p[0], 42);
	fcl_resp_free(&r);

	/* Role 9: UNKNOWN_ROLE; the kept connection goes on. */
	v.len = 0;
	fcl_begin(&v, 5, 9, true);
	assert_int_equal(fcl_send(&c, v.p, v.len), 0);
	assert_int_equal(fcl_read(&c, 5, &r), 0);
	assert_true(r.ended);
	assert_int_equal(r.protocol_status, FCGI_UNKNOWN_ROLE);
	fcl_resp_free(&r);

	/* A second BEGIN while request 1 runs: CANT_MPX_CONN for it, and
	 * request 1 completes. */
	v.len = 0;
	fcl_begin(&v, 1, FCGI_RESPONDER, true);
	fcl_params(&v, 1, post_env);
	fcl_stream(&v, FCGI_STDIN, 1, "abc", 3, false);
	fcl_begin(&v, 2, FCGI_RESPONDER, true);
	fcl_stream(&v, FCGI_STDIN, 1, "def", 3, true);
	assert_int_equal(fcl_send(&c, v.p, v.len), 0);
	assert_int_equal(fcl_read(&c, 1, &r), 0);
	assert_int_equal(r.mgmt_type, FCGI_END_REQUEST);
	assert_int_equal(r.other_id, 2);
	assert_int_equal(r.other_status, FCGI_CANT_MPX_CONN);
	assert_int_equal(r.protocol_status, FCGI_REQUEST_COMPLETE);
	echo_expect(&r, (const uint8_t *)"abcdef", 6, "t/t", "POST");
	fcl_resp_free(&r);
	fcl_vec_free(&v);
	fcl_close(&c);
	app_stop(&a);
}
ON_OURS(test_mgmt)


/* Transport detection peeks at the first byte of the connection: a peek
 * must leave the descriptors a message carries (the channel handshake's
 * SCM_RIGHTS) in place for the real receive. */
static void test_peek_keeps_fds(void **state)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b = (char)0xC1, got[4];
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int sv[2], fd, rfd = -1;
	struct stat a, c;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd = open("/dev/null", O_RDONLY);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	assert_int_equal(sendmsg(sv[0], &mh, 0), 1);

	assert_int_equal(recv(sv[1], got, 1, MSG_PEEK), 1);
	assert_int_equal((uint8_t)got[0], 0xC1);

	memset(cbuf, 0, sizeof(cbuf));
	iov.iov_base = got;
	mh.msg_controllen = sizeof(cbuf);
	assert_int_equal(recvmsg(sv[1], &mh, 0), 1);
	cm = CMSG_FIRSTHDR(&mh);
	assert_non_null(cm);
	assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
	memcpy(&rfd, CMSG_DATA(cm), sizeof(int));
	assert_true(rfd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(rfd, &c), 0);
	assert_true(a.st_ino == c.st_ino && a.st_dev == c.st_dev);
	close(rfd);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

static int teardown(void **state)
{
	(void)state;
	if (running > 0) {
		kill(running, SIGKILL);
		waitpid(running, NULL, 0);
		running = -1;
	}
	return 0;
}

static int group_setup(void **state)
{
	const char *base = getenv("ZC_TEST_TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/cgi-XXXXXX",
		 base ? base : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_peek_keeps_fds, teardown),
		cmocka_unit_test_teardown(test_gen_identical, teardown),
		cmocka_unit_test_teardown(test_gen_cached_by_reference, teardown),
		cmocka_unit_test_teardown(test_keep_conn_deb, teardown),
		cmocka_unit_test_teardown(test_keep_conn_std, teardown),
		cmocka_unit_test_teardown(test_keep_conn_zc, teardown),
		cmocka_unit_test_teardown(test_wrap_identical, teardown),
		cmocka_unit_test_teardown(test_upload_deb, teardown),
		cmocka_unit_test_teardown(test_upload_std, teardown),
		cmocka_unit_test_teardown(test_upload_zc, teardown),
		cmocka_unit_test_teardown(test_status_deb, teardown),
		cmocka_unit_test_teardown(test_status_std, teardown),
		cmocka_unit_test_teardown(test_status_zc, teardown),
		cmocka_unit_test_teardown(test_term_idle_std, teardown),
		cmocka_unit_test_teardown(test_term_idle_zc, teardown),
		cmocka_unit_test_teardown(test_term_before_accept, teardown),
		cmocka_unit_test_teardown(test_abort_std, teardown),
		cmocka_unit_test_teardown(test_abort_zc, teardown),
		cmocka_unit_test_teardown(test_peer_dies_std, teardown),
		cmocka_unit_test_teardown(test_peer_dies_zc, teardown),
		cmocka_unit_test_teardown(test_malformed_std, teardown),
		cmocka_unit_test_teardown(test_malformed_zc, teardown),
		cmocka_unit_test_teardown(test_mgmt_std, teardown),
		cmocka_unit_test_teardown(test_mgmt_zc, teardown),
	};

	if (getenv("ZC_TEST_FILTER"))
		cmocka_set_test_filter(getenv("ZC_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
