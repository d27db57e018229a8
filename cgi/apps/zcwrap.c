/*
 * zcwrap - a page built around a static file: GET /...?file=NAME answers
 * an HTML page whose body is the file NAME under --root, included as it
 * is.  With zcstack's library the file goes out by extent
 * (zcfcgi_put_file: the app never reads it; zchttpd sends it with
 * sendfile); with Debian's libfcgi it is read and written with
 * FCGX_PutStr.  The same binary runs on both.
 *
 *   zcwrap --root DIR [--listen ADDR]
 *
 * NAME is resolved beneath DIR only (openat2 RESOLVE_BENEATH: no "..",
 * no absolute path, no symlink out); anything else is 404.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fcgiapp.h>

#define ZCFCGI_WEAK
#include "zcfcgi.h"
#include "app.h"

static const char head[] =
	"<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\">"
	"<title>zcwrap</title></head>\n<body>\n<div class=\"file\">\n";
static const char tail[] = "</div>\n</body>\n</html>\n";

static int root_fd = -1;

static int open_beneath(const char *name)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	if (!*name)
		return -1;
	return (int)syscall(SYS_openat2, root_fd, name, &how, sizeof(how));
}

static void not_found(FCGX_Stream *out)
{
	FCGX_PutS("Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\n"
		  "zcwrap: no such file\n", out);
}

/* Debian's libfcgi: read the extent and write it. */
static void copy_file(int fd, off_t size, FCGX_Stream *out)
{
	char buf[65536];
	off_t off = 0;

	while (off < size) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n <= 0 || FCGX_PutStr(buf, (int)n, out) < 0)
			return;
		off += n;
	}
}

static void answer(FCGX_Request *r)
{
	const char *qs = FCGX_GetParam("QUERY_STRING", r->envp);
	char name[1024];
	struct stat st;
	int fd;

	if (app_query(qs, "file", name, sizeof(name)) <= 0 ||
	    (fd = open_beneath(name)) < 0) {
		not_found(r->out);
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		not_found(r->out);
		return;
	}
	FCGX_FPrintF(r->out, "Content-Type: text/html; charset=utf-8\r\n"
			     "Content-Length: %lld\r\n\r\n",
		     (long long)(sizeof(head) - 1 + (size_t)st.st_size +
				 sizeof(tail) - 1));
	FCGX_PutStr(head, sizeof(head) - 1, r->out);
	if (zcfcgi_put_file)
		zcfcgi_put_file(r->out, fd, 0, (size_t)st.st_size);
	else
		copy_file(fd, st.st_size, r->out);
	FCGX_PutStr(tail, sizeof(tail) - 1, r->out);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *root = app_option(argc, argv, "root");
	if (!root) {
		fprintf(stderr, "usage: %s --root DIR [--listen ADDR]\n",
			argv[0]);
		return 2;
	}
	root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		perror(root);
		return 1;
	}
	return app_serve(argc, argv, answer);
}
