/* listen.h - listening sockets from "host:port" strings. */
#ifndef ZC_LISTEN_H
#define ZC_LISTEN_H

#include <sys/socket.h>

/* Parse "127.0.0.1:8080", "[::1]:8080", ":8080" (all IPv4 addresses) or
 * "8080".  Returns 0 or -EINVAL. */
int listen_parse(const char *spec, struct sockaddr_storage *ss,
		 socklen_t *len);

/* A non-blocking, close-on-exec listening TCP socket bound to the address
 * with SO_REUSEADDR and SO_REUSEPORT (so that every worker can bind its
 * own socket and the kernel spreads connections).  Returns the fd or a
 * negative errno. */
int listen_open(const struct sockaddr_storage *ss, socklen_t len, int backlog);

/* "ip:port" of a bound socket, for messages. */
void listen_name(int fd, char *out, size_t n);

#endif
