/* test_proxy_head.c - the heads the reverse proxy writes (proxy_head.c):
 * what an intermediary must drop, add and frame itself (RFC 9110 7.6,
 * RFC 9112, RFC 7239), from heads parsed by zchttp's real parsers. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "http_parser.h"
#include "http_response.h"
#include "proxy_head.h"

static struct http_header slots[64];
static struct http_request req;
static struct zh_proxy_config pc;
static struct zh_upstream_server server = { .authority = "app:8000" };
static struct sockaddr_storage peer;
static char out[8192];

static void parse_request(const char *text)
{
	struct http_parser p;
	struct http_limits lim = HTTP_LIMITS_DEFAULT;

	memset(&req, 0, sizeof(req));
	req.headers = slots;
	http_parser_init(&p);
	assert_int_equal(http_parse_request(&p, text, strlen(text), &lim, &req),
			 (ssize_t)strlen(text));
}

static void v4_peer(const char *a)
{
	struct sockaddr_in *s = (struct sockaddr_in *)&peer;

	memset(&peer, 0, sizeof(peer));
	s->sin_family = AF_INET;
	inet_pton(AF_INET, a, &s->sin_addr);
}

static int setup(void **state)
{
	(void)state;
	memset(&pc, 0, sizeof(pc));
	pc.host = ZH_HOST_PASS;
	pc.via = true;
	v4_peer("192.0.2.9");
	return 0;
}

static const char *request_head(enum ph_framing f, uint64_t len)
{
	struct ph_request in = {
		.req = &req,
		.target = req.path.p,
		.target_len = req.path.len,
		.pc = &pc,
		.server = &server,
		.peer = &peer,
		.framing = f,
		.length = len,
	};
	ssize_t n = ph_request_head(&in, out, sizeof(out) - 1);

	assert_true(n > 0);
	out[n] = 0;
	return out;
}

static void test_hop_by_hop_dropped(void **state)
{
	const char *h;

	(void)state;
	parse_request("POST /a?b HTTP/1.1\r\nHost: ex.com\r\n"
		      "Connection: keep-alive, X-Secret\r\nX-Secret: s\r\n"
		      "Keep-Alive: 5\r\nTE: trailers\r\nTrailer: X-T\r\n"
		      "Proxy-Connection: x\r\nProxy-Authorization: Basic x\r\n"
		      "Upgrade: foo\r\nExpect: 100-continue\r\n"
		      "Content-Length: 3\r\nX-Keep: k\r\n\r\n");
	h = request_head(PH_LENGTH, 3);
	assert_non_null(strstr(h, "POST /a?b HTTP/1.1\r\nHost: ex.com\r\n"));
	assert_non_null(strstr(h, "X-Keep: k\r\n"));
	assert_non_null(strstr(h, "Content-Length: 3\r\n"));
	for (const char *gone[] = { "Connection", "X-Secret", "Keep-Alive",
				    "TE:", "Trailer", "Proxy-", "Upgrade",
				    "Expect" }, **g = gone;
	     g < gone + sizeof(gone) / sizeof(*gone); g++)
		if (strstr(h, *g))
			fail_msg("%s passed in:\n%s", *g, h);
	/* one length, ours */
	assert_null(strstr(strstr(h, "Content-Length") + 1, "Content-Length"));
}

static void test_framing_is_ours(void **state)
{
	const char *h;

	(void)state;
	parse_request("POST / HTTP/1.1\r\nHost: a\r\n"
		      "Transfer-Encoding: chunked\r\n\r\n");
	h = request_head(PH_CHUNKED, 0);
	assert_non_null(strstr(h, "Transfer-Encoding: chunked\r\n\r\n"));
	assert_null(strstr(h, "Content-Length"));
	parse_request("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	h = request_head(PH_NONE, 0);
	assert_null(strstr(h, "Transfer-Encoding"));
	assert_null(strstr(h, "Content-Length"));
}

static void test_forwarded_untrusted(void **state)
{
	const char *h;

	(void)state;
	parse_request("GET / HTTP/1.1\r\nHost: ex.com:8080\r\n"
		      "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\n"
		      "X-Forwarded-Host: evil\r\nForwarded: for=6.6.6.6\r\n\r\n");
	h = request_head(PH_NONE, 0);
	assert_null(strstr(h, "6.6.6.6"));
	assert_null(strstr(h, "evil"));
	assert_non_null(strstr(h, "X-Forwarded-For: 192.0.2.9\r\n"));
	assert_non_null(strstr(h, "X-Forwarded-Proto: http\r\n"));
	assert_non_null(strstr(h, "X-Forwarded-Host: ex.com:8080\r\n"));
	assert_non_null(strstr(h, "Forwarded: for=192.0.2.9;"
				  "host=\"ex.com:8080\";proto=http\r\n"));
	assert_non_null(strstr(h, "Via: 1.1 zchttpd\r\n"));
}

static void test_forwarded_trusted(void **state)
{
	struct zh_trusted_net *t = &pc.trust[0];
	const char *h;

	(void)state;
	memset(t, 0, sizeof(*t));
	t->addr.ss_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.0",
		  &((struct sockaddr_in *)&t->addr)->sin_addr);
	t->prefix = 25;
	pc.ntrust = 1;
	parse_request("GET / HTTP/1.1\r\nHost: h\r\n"
		      "X-Forwarded-For: 10.1.1.1\r\nX-Forwarded-For: 10.2.2.2\r\n"
		      "Forwarded: for=10.1.1.1\r\n\r\n");
	h = request_head(PH_NONE, 0);
	assert_non_null(strstr(h, "X-Forwarded-For: 10.1.1.1, 10.2.2.2, "
				  "192.0.2.9\r\n"));
	assert_non_null(strstr(h, "Forwarded: for=10.1.1.1, for=192.0.2.9;"));
	/* one bit outside the prefix: not trusted */
	v4_peer("192.0.2.200");
	h = request_head(PH_NONE, 0);
	assert_null(strstr(h, "10.1.1.1"));
	assert_true(ph_trusted(&pc, &(struct sockaddr_storage){ 0 }) == false);
	pc.ntrust = 0;
}

static void test_ipv6_forwarded_quoted(void **state)
{
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)&peer;
	const char *h;

	(void)state;
	memset(&peer, 0, sizeof(peer));
	s->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &s->sin6_addr);
	parse_request("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
	h = request_head(PH_NONE, 0);
	assert_non_null(strstr(h, "X-Forwarded-For: 2001:db8::1\r\n"));
	assert_non_null(strstr(h, "Forwarded: for=\"[2001:db8::1]\";"));
	v4_peer("192.0.2.9");
}

static void test_host_modes(void **state)
{
	const char *h;

	(void)state;
	parse_request("GET / HTTP/1.1\r\nHost: client.example\r\n\r\n");
	pc.host = ZH_HOST_UPSTREAM;
	h = request_head(PH_NONE, 0);
	assert_non_null(strstr(h, "\r\nHost: app:8000\r\n"));
	assert_null(strstr(h, "\r\nHost: client.example"));
	pc.host = ZH_HOST_SET;
	pc.host_name = "internal";
	h = request_head(PH_NONE, 0);
	assert_non_null(strstr(h, "\r\nHost: internal\r\n"));
	pc.host = ZH_HOST_PASS;
	pc.via = false;
	h = request_head(PH_NONE, 0);
	assert_null(strstr(h, "Via"));
	pc.via = true;
}

static void test_too_small(void **state)
{
	struct ph_request in = { .req = &req, .target = "/", .target_len = 1,
				 .pc = &pc, .server = &server, .peer = &peer };

	(void)state;
	parse_request("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_int_equal(ph_request_head(&in, out, 40), -ENOSPC);
}

/* ------------------------------------------------------------ responses */

static struct http_response resp;

static void parse_response(const char *text)
{
	struct http_parser p;
	struct http_limits lim = HTTP_LIMITS_DEFAULT;

	memset(&resp, 0, sizeof(resp));
	resp.headers = slots;
	http_parser_init(&p);
	assert_int_equal(http_parse_response(&p, text, strlen(text), &lim,
					     &resp), (ssize_t)strlen(text));
}

static const char *response_head(enum ph_framing f, uint64_t len, bool ka)
{
	struct ph_response in = { .resp = &resp, .pc = &pc, .framing = f,
				  .length = len, .keep_alive = ka };
	ssize_t n = ph_response_head(&in, out, sizeof(out) - 1);

	assert_true(n > 0);
	out[n] = 0;
	return out;
}

static void test_response_fields(void **state)
{
	const char *h;

	(void)state;
	parse_response("HTTP/1.0 201 Made It\r\nDate: Sun, 06 Nov 1994 "
		       "08:49:37 GMT\r\nConnection: close, X-Private\r\n"
		       "X-Private: secret\r\nKeep-Alive: timeout=5\r\n"
		       "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
		       "Content-Length: 10\r\n\r\n");
	h = response_head(PH_LENGTH, 10, true);
	assert_non_null(strstr(h, "HTTP/1.1 201 Made It\r\n"));
	assert_non_null(strstr(h, "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"));
	assert_non_null(strstr(h, "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n"));
	assert_non_null(strstr(h, "Via: 1.0 zchttpd\r\n"));
	assert_non_null(strstr(h, "Content-Length: 10\r\n"));
	assert_non_null(strstr(h, "Connection: keep-alive\r\n\r\n"));
	assert_null(strstr(h, "Private"));
	assert_null(strstr(h, "timeout=5"));
	assert_null(strstr(h, "close"));
}

static void test_response_reframed(void **state)
{
	const char *h;

	(void)state;
	/* close-delimited upstream, chunked to the client; a Date added */
	parse_response("HTTP/1.1 200 OK\r\nX-A: b\r\n\r\n");
	h = response_head(PH_CHUNKED, 0, true);
	assert_non_null(strstr(h, "Transfer-Encoding: chunked\r\n"));
	assert_non_null(strstr(h, "\r\nDate: "));
	/* chunked upstream to an HTTP/1.0 client: close */
	parse_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	h = response_head(PH_CLOSE, 0, false);
	assert_null(strstr(h, "Transfer-Encoding"));
	assert_non_null(strstr(h, "Connection: close\r\n\r\n"));
}

static void test_interim(void **state)
{
	struct ph_response in = { .resp = &resp, .pc = &pc, .interim = true };
	ssize_t n;

	(void)state;
	parse_response("HTTP/1.1 103 Early Hints\r\nLink: </s.css>; "
		       "rel=preload\r\n\r\n");
	n = ph_response_head(&in, out, sizeof(out) - 1);
	assert_true(n > 0);
	out[n] = 0;
	assert_non_null(strstr(out, "HTTP/1.1 103 Early Hints\r\n"));
	assert_non_null(strstr(out, "Link: </s.css>; rel=preload\r\n"));
	assert_null(strstr(out, "Connection"));
	assert_null(strstr(out, "Date"));
	/* 101: Upgrade and Connection: upgrade */
	parse_response("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket"
		       "\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n");
	in.upgrade = true;
	n = ph_response_head(&in, out, sizeof(out) - 1);
	out[n] = 0;
	assert_non_null(strstr(out, "Upgrade: websocket\r\n"));
	assert_non_null(strstr(out, "Connection: upgrade\r\n"));
	assert_non_null(strstr(out, "Sec-WebSocket-Accept: x\r\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hop_by_hop_dropped),
		cmocka_unit_test(test_framing_is_ours),
		cmocka_unit_test(test_forwarded_untrusted),
		cmocka_unit_test(test_forwarded_trusted),
		cmocka_unit_test(test_ipv6_forwarded_quoted),
		cmocka_unit_test(test_host_modes),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_response_fields),
		cmocka_unit_test(test_response_reframed),
		cmocka_unit_test(test_interim),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
