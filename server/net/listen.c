/*
 * listen.c - listening sockets.  Each worker opens its own socket with
 * SO_REUSEPORT: the kernel balances accepted connections across workers
 * with no shared accept lock and no thundering herd.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "listen.h"

static int parse_port(const char *s, in_port_t *port)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return -EINVAL;
	*port = htons((in_port_t)v);
	return 0;
}

int listen_parse(const char *spec, struct sockaddr_storage *ss,
		 socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[64];
	const char *colon;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!spec || !*spec)
		return -EINVAL;
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - spec - 1);
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, hl);
		host[hl] = 0;
		in6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1 ||
		    parse_port(close + 2, &in6->sin6_port))
			return -EINVAL;
		*len = sizeof(*in6);
		return 0;
	}
	in4->sin_family = AF_INET;
	*len = sizeof(*in4);
	colon = strrchr(spec, ':');
	if (!colon) {
		in4->sin_addr.s_addr = htonl(INADDR_ANY);
		return parse_port(spec, &in4->sin_port);
	}
	hl = (size_t)(colon - spec);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, hl);
	host[hl] = 0;
	if (hl == 0)
		in4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (strcmp(host, "localhost") == 0)
		in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
		return -EINVAL;
	return parse_port(colon + 1, &in4->sin_port);
}

int listen_open(const struct sockaddr_storage *ss, socklen_t len, int backlog)
{
	int fd, one = 1, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	/*
	 * Accepted sockets inherit TCP_NODELAY from the listener (one
	 * setsockopt per worker instead of one per connection).
	 * TCP_DEFER_ACCEPT wakes us only once a connection has sent its first
	 * bytes, so conn.c reads the request right after accept4 without a
	 * trip through epoll; a client that connects and stays silent is
	 * accepted anyway after about a second (then the usual timeouts
	 * apply), and until then costs us nothing but a request sock.
	 */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)ss, len) < 0 ||
	    listen(fd, backlog) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

void listen_name(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
			port = ntohs(a->sin6_port);
			snprintf(out, n, "[%s]:%u", ip, port);
			return;
		}
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	}
	snprintf(out, n, "%s:%u", ip, port);
}
