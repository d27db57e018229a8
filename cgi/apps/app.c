/* app.c - the demo apps' shared helpers (app.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>

#include "app.h"

const char *app_option(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || a[1] != '-' || strncmp(a + 2, name, n))
			continue;
		if (a[2 + n] == '=')
			return a + 3 + n;
		if (a[2 + n] == 0 && i + 1 < argc)
			return argv[i + 1];
	}
	return NULL;
}

int app_listen(int argc, char **argv)
{
	const char *addr = app_option(argc, argv, "listen");
	int fd;

	if (!addr)
		return 0;
	if (!strncmp(addr, "unix:", 5))
		addr += 5;
	fd = FCGX_OpenSocket(addr, 128);
	if (fd < 0)
		fprintf(stderr, "%s: cannot listen on %s\n", argv[0], addr);
	return fd;
}

int app_serve(int argc, char **argv, void (*answer)(FCGX_Request *))
{
	FCGX_Request r;
	int sock = app_listen(argc, argv);

	if (sock < 0 || FCGX_Init())
		return 1;
	FCGX_InitRequest(&r, sock, 0);
	while (FCGX_Accept_r(&r) >= 0) {
		answer(&r);
		FCGX_Finish_r(&r);
	}
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long app_query(const char *qs, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);

	while (qs && *qs) {
		const char *end = qs + strcspn(qs, "&;");

		if ((size_t)(end - qs) > n && !strncmp(qs, name, n) &&
		    qs[n] == '=') {
			size_t w = 0;

			for (const char *p = qs + n + 1; p < end; p++) {
				int c = (unsigned char)*p;

				if (c == '+') {
					c = ' ';
				} else if (c == '%' && end - p > 2 &&
					   hexval(p[1]) >= 0 &&
					   hexval(p[2]) >= 0) {
					c = hexval(p[1]) << 4 | hexval(p[2]);
					p += 2;
				}
				if (w + 1 >= cap)
					return -1;
				out[w++] = (char)c;
			}
			out[w] = 0;
			return (long)w;
		}
		qs = *end ? end + 1 : end;
	}
	return -1;
}
