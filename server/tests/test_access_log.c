/* test_access_log.c - Combined Log Format lines: the fields, their
 * escaping, the peer of each address family, a request that did not
 * parse, and the bound on a line whose fields are long and escaped. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "access_log.h"
#include "http_parser.h"

#define LINE_MAX_BYTES 4096	/* access_log.c's LOG_LINE_MAX */

static struct access_log *lg;
static FILE *file;
static struct http_header slots[16];
static struct http_request req;
static char text[1 << 20];

static int setup(void **state)
{
	int fd;

	(void)state;
	file = tmpfile();
	assert_non_null(file);
	fd = dup(fileno(file));
	/* appending, as a log is opened: a truncated file starts over */
	assert_int_equal(fcntl(fd, F_SETFL, O_APPEND), 0);
	assert_int_equal(access_log_adopt(fd, &lg), 0);
	assert_non_null(lg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	access_log_close(lg);
	fclose(file);
	return 0;
}

/* Everything logged so far, flushed and read back, in text[]. */
static size_t logged(void)
{
	ssize_t n;

	access_log_flush(lg);
	n = pread(fileno(file), text, sizeof(text) - 1, 0);
	assert_true(n >= 0);
	text[n] = '\0';
	return (size_t)n;
}

static const struct http_request *parse(const char *head)
{
	struct http_parser p;
	struct http_limits lim = { 8192, 16, 16384 };

	http_parser_init(&p);
	req = (struct http_request){ .headers = slots };
	assert_int_equal(http_parse_request(&p, head, strlen(head), &lim, &req),
			 (ssize_t)strlen(head));
	return &req;
}

static struct sockaddr_storage ipv4(const char *a)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	in->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, a, &in->sin_addr), 1);
	return ss;
}

/* text holds exactly `host - - [now] rest`, now within the last second. */
static void assert_line(const char *host, const char *rest)
{
	char want[512], when[64];
	time_t before = time(NULL);
	struct tm tm;

	logged();
	for (time_t t = before - 1; t <= before; t++) {
		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S +0000", &tm);
		snprintf(want, sizeof(want), "%s - - [%s] %s", host, when, rest);
		if (strcmp(text, want) == 0)
			return;
	}
	fail_msg("logged '%s', want '%s'", text, want);
}

static void test_fields(void **state)
{
	struct sockaddr_storage ss = ipv4("192.0.2.7");

	(void)state;
	access_log_request(lg, &ss, parse("GET /a?b=c HTTP/1.1\r\nHost: h\r\n"
					  "Referer: http://r/\r\n"
					  "user-agent: ua/1.0\r\n\r\n"),
			   200, 1234);
	assert_line("192.0.2.7",
		    "\"GET /a?b=c HTTP/1.1\" 200 1234 \"http://r/\" \"ua/1.0\"\n");
}

static void test_numbers(void **state)
{
	struct sockaddr_storage ss = ipv4("255.0.10.100");

	(void)state;
	access_log_request(lg, &ss, parse("HEAD / HTTP/1.0\r\n\r\n"), 304, 0);
	access_log_request(lg, &ss, parse("GET / HTTP/1.0\r\n\r\n"), 200,
			   UINT64_MAX);
	logged();
	assert_non_null(strstr(text, "255.0.10.100 - - ["));
	assert_non_null(strstr(text, "] \"HEAD / HTTP/1.0\" 304 0 \"-\" \"-\"\n"));
	assert_non_null(strstr(text, "] \"GET / HTTP/1.0\" 200 "
				     "18446744073709551615 \"-\" \"-\"\n"));
}

static void test_peers(void **state)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	(void)state;
	in6->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", &in6->sin6_addr), 1);
	access_log_request(lg, &ss, NULL, 400, 0);
	assert_line("2001:db8::1", "\"-\" 400 0 \"-\" \"-\"\n");

	assert_int_equal(ftruncate(fileno(file), 0), 0);
	ss = ipv4("0.0.0.0");
	access_log_request(lg, &ss, NULL, 408, 0);
	assert_line("0.0.0.0", "\"-\" 408 0 \"-\" \"-\"\n");

	assert_int_equal(ftruncate(fileno(file), 0), 0);
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	access_log_request(lg, &ss, NULL, 400, 0);
	assert_line("-", "\"-\" 400 0 \"-\" \"-\"\n");
}

/* Quotes, backslashes, HTAB and obs-text from the client are escaped: a
 * client cannot end a field or forge a line. */
static void test_escaping(void **state)
{
	struct sockaddr_storage ss = ipv4("10.0.0.1");

	(void)state;
	access_log_request(lg, &ss,
			   parse("GET /q?\"x\\y\xc3\xa9 HTTP/1.1\r\nHost: h\r\n"
				 "User-Agent: a\tb \"c\"\r\n\r\n"),
			   404, 5);
	assert_line("10.0.0.1", "\"GET /q?\\x22x\\x5cy\\xc3\\xa9 HTTP/1.1\" 404 5 "
				"\"-\" \"a\\x09b \\x22c\\x22\"\n");
}

/* Fields escaped to four times their length are cut: the line stays
 * within its bound, whole, and the next line follows intact.  (A line
 * formatted past its buffer used to crash the worker.) */
static void test_long_fields(void **state)
{
	static char head[8192];
	struct sockaddr_storage ss = ipv4("10.0.0.2");
	size_t n = 0, len;
	char *nl;

	(void)state;
	n += (size_t)sprintf(head + n, "GET /");
	memset(head + n, 0xff, 1500);
	n += 1500;
	n += (size_t)sprintf(head + n, " HTTP/1.1\r\nHost: h\r\nReferer: ");
	memset(head + n, '"', 600);
	n += 600;
	n += (size_t)sprintf(head + n, "\r\nUser-Agent: ");
	memset(head + n, '\\', 600);
	n += 600;
	sprintf(head + n, "\r\n\r\n");
	access_log_request(lg, &ss, parse(head), 414, 99);
	access_log_request(lg, &ss, NULL, 400, 0);
	len = logged();
	nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_true((size_t)(nl + 1 - text) <= LINE_MAX_BYTES);
	assert_true((size_t)(nl + 1 - text) > LINE_MAX_BYTES - 8);
	assert_int_equal(nl[-1], '"');
	assert_non_null(strstr(text, "] \"GET /\\xff\\xff"));
	assert_null(memchr(text, '\0', len));
	assert_non_null(strstr(nl + 1, "10.0.0.2 - - ["));
	assert_non_null(strstr(nl + 1, "] \"-\" 400 0 \"-\" \"-\"\n"));
	assert_ptr_equal(strchr(nl + 1, '\n'), text + len - 1);
}

/* More lines than the buffer holds: flushed as it fills, none lost or cut. */
static void test_many_lines(void **state)
{
	struct sockaddr_storage ss = ipv4("10.0.0.3");
	const struct http_request *r = parse("GET /many HTTP/1.1\r\nHost: h\r\n\r\n");
	size_t len, lines = 0;

	(void)state;
	for (int i = 0; i < 5000; i++)
		access_log_request(lg, &ss, r, 200, (uint64_t)i);
	len = logged();
	for (char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 5000);
	assert_int_equal(text[len - 1], '\n');
	assert_non_null(strstr(text, "\" 200 4999 \"-\" \"-\"\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_lines, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
