/*
 * probe.c - zchttpd's health-check client.
 *
 * The container image is FROM scratch: no shell, no curl.  A HEALTHCHECK
 * in exec form can only run zchttpd itself, so zchttpd carries this
 * minimal HTTP/1.0 client: one request, the status line decides.
 */
#define _GNU_SOURCE
#include "probe.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "listen.h"

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Wait for events on fd until the deadline; 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	for (;;) {
		long left = deadline - now_ms();
		if (left <= 0)
			return 0;
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return 0;
	}
}

int probe_run(const char *url, int timeout_ms)
{
	char hostport[128], req[1024], buf[64];
	struct sockaddr_storage ss;
	socklen_t sslen;
	const char *p = url + strlen("http://"), *path;
	long deadline = now_ms() + timeout_ms;
	size_t got = 0;
	int fd, ok = 0;

	if (strncmp(url, "http://", 7))
		return 2;
	const char *slash = strchr(p, '/');
	size_t hl = slash ? (size_t)(slash - p) : strlen(p);
	path = slash ? slash : "/";
	if (hl == 0 || hl >= sizeof(hostport))
		return 2;
	memcpy(hostport, p, hl);
	hostport[hl] = '\0';
	if (listen_parse(hostport, &ss, &sslen))
		return 2;
	int rl = snprintf(req, sizeof(req),
			  "GET %s HTTP/1.0\r\nHost: %s\r\n"
			  "User-Agent: zchttpd-probe\r\n\r\n", path, hostport);
	if (rl < 0 || (size_t)rl >= sizeof(req))
		return 2;

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	if (connect(fd, (struct sockaddr *)&ss, sslen) && errno != EINPROGRESS)
		goto out;
	if (!wait_fd(fd, POLLOUT, deadline))
		goto out;
	int err = 0;
	socklen_t el = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
		goto out;
	/* The request is far below a socket buffer: one send suffices. */
	if (send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl)
		goto out;
	/* "HTTP/1.x 200 " is all that is needed of the reply. */
	while (got < 13) {
		if (!wait_fd(fd, POLLIN, deadline))
			goto out;
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (n <= 0) {
			if (n < 0 && errno == EAGAIN)
				continue;
			goto out;
		}
		got += (size_t)n;
	}
	ok = !strncmp(buf, "HTTP/1.", 7) && !strncmp(buf + 8, " 200 ", 5);
out:
	close(fd);
	return ok ? 0 : 1;
}
