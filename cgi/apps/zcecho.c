/*
 * zcecho - the upload echo: reads the whole request body and answers
 * with its length and SHA-256, the request's CONTENT_TYPE and method.
 * ?status=N sets the request's exit status (FCGI_SetExitStatus: the
 * END_REQUEST's appStatus) and says so on stderr.
 * Written with libfcgi's stdio API (fcgi_stdio.h), so it also runs as a
 * plain CGI program (fd 0 not a listening socket: one request, then exit).
 *
 *   zcecho [--listen ADDR]
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgi_stdio.h>

#include "app.h"
#include "sha256.h"

static char buf[1 << 16];

int main(int argc, char **argv)
{
	int sock = app_listen(argc, argv);

	if (sock < 0)
		return 1;
	/* The stdio API accepts on fd 0 only. */
	if (sock > 0 && (dup2(sock, 0) < 0 || close(sock) < 0))
		return 1;
	while (FCGI_Accept() >= 0) {
		const char *ct = getenv("CONTENT_TYPE");
		const char *method = getenv("REQUEST_METHOD");
		const char *cl = getenv("CONTENT_LENGTH");
		const char *qs = getenv("QUERY_STRING");
		char st[16];
		/* As CGI, stdin need not end with the body: read
		 * CONTENT_LENGTH bytes; as FastCGI the stream ends. */
		unsigned long long left = cl && *cl ? strtoull(cl, NULL, 10)
						    : ~0ull;
		unsigned long long total = 0;
		struct sha256 h;
		uint8_t digest[32];
		char hex[65];
		size_t n;

		sha256_init(&h);
		while (left && (n = fread(buf, 1, left < sizeof(buf) ? left
								   : sizeof(buf),
					 stdin)) > 0) {
			sha256_update(&h, buf, n);
			total += n;
			left -= n;
		}
		if (app_query(qs, "status", st, sizeof(st)) > 0) {
			FCGI_SetExitStatus(atoi(st));
			fprintf(stderr, "zcecho: exit status %d\n", atoi(st));
		}
		sha256_final(&h, digest);
		sha256_hex(digest, hex);
		printf("Content-Type: text/plain\r\n\r\n"
		       "length %llu\nsha256 %s\ncontent-type %s\nmethod %s\n",
		       total, hex, ct ? ct : "", method ? method : "");
	}
	return 0;
}
