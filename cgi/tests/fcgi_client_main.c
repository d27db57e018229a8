/*
 * fcgi-client - the tests' FastCGI client on the command line: plays the
 * web server towards an application on a UNIX socket, on the standard
 * transport or (--zc) on a libzc channel.
 *
 *   fcgi-client [--zc] [--requests N] [--body FILE] PATH [NAME=VALUE...]
 *
 * Sends N requests (default 1; more than one share the connection with
 * FCGI_KEEP_CONN) with the given parameters and the body, writes each
 * response's STDOUT to stdout and STDERR to stderr.  Exit status: the last
 * appStatus, or 100 for a failure (message on stderr).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fcgi_client.h"

static int usage(void)
{
	fprintf(stderr, "usage: fcgi-client [--zc] [--requests N] "
			"[--body FILE] PATH [NAME=VALUE...]\n");
	return 100;
}

int main(int argc, char **argv)
{
	struct fcl_vec body = { 0 };
	const char *path = NULL;
	const char **env = calloc((size_t)argc + 1, sizeof(char *));
	long requests = 1;
	bool zc = false;
	size_t nenv = 0;
	struct fcl c;
	int err, status = 0;

	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--zc")) {
			zc = true;
		} else if (!strcmp(argv[i], "--requests") && i + 1 < argc) {
			requests = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--body") && i + 1 < argc) {
			char buf[65536];
			ssize_t n;
			int fd = open(argv[++i], O_RDONLY);

			if (fd < 0) {
				perror(argv[i]);
				return 100;
			}
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				fcl_vec_put(&body, buf, (size_t)n);
			close(fd);
		} else if (!path && argv[i][0] != '-') {
			path = argv[i];
		} else if (path && strchr(argv[i], '=')) {
			env[nenv++] = argv[i];
		} else {
			return usage();
		}
	}
	if (!path || requests < 1)
		return usage();
	if ((err = fcl_connect(path, zc, &c))) {
		fprintf(stderr, "fcgi-client: %s: %s\n", path, strerror(-err));
		return 100;
	}
	for (long i = 0; i < requests; i++) {
		struct fcl_resp r = { 0 };

		err = fcl_request(&c, 1, requests > 1, env, body.p, body.len,
				  &r);
		if (err || !r.ended) {
			fprintf(stderr, "fcgi-client: request %ld: %s\n", i + 1,
				strerror(err ? -err : EPROTO));
			return 100;
		}
		fwrite(r.out.p, 1, r.out.len, stdout);
		fwrite(r.err.p, 1, r.err.len, stderr);
		status = (int)r.app_status;
		fcl_resp_free(&r);
	}
	fflush(stdout);
	fcl_close(&c);
	fcl_vec_free(&body);
	free(env);
	return status;
}
