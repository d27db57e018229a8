/*
 * fdkind.c - what kind of descriptor an fd is.
 *
 * iol_read and iol_write pick their mechanism from the pair (slice kind,
 * descriptor kind), so they ask this once per call.  The answer is never
 * cached: descriptors are reused as soon as they are closed, and a stale
 * answer would send vmsplice() at a socket.  Cost: one fstat, plus two or
 * three getsockopt calls for sockets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "internal.h"

/*
 * channel_registry.c provides the real lookup.  This weak default lets
 * libzc link (and fdkind work) in a build without channels, and is
 * overridden by the strong definition as soon as channel_registry.c is
 * linked in.
 */
__attribute__((weak)) zc_channel *zc_channel_from_fd(int fd)
{
	(void)fd;
	return NULL;
}

static int sockopt_int(int fd, int opt, int *val)
{
	socklen_t len = sizeof(*val);

	return getsockopt(fd, SOL_SOCKET, opt, val, &len);
}

/*
 * Only stream sockets get the socket mechanisms: sendfile into a datagram
 * socket would cut the stream into arbitrary datagrams, and SCTP/MPTCP
 * stream sockets have their own rules for MSG_MORE and TCP_CORK, so they
 * are OTHER (plain write, which is always correct).
 */
static enum zc_fdkind sock_kind(int fd)
{
	int domain, type, proto;

	if (sockopt_int(fd, SO_DOMAIN, &domain) < 0 ||
	    sockopt_int(fd, SO_TYPE, &type) < 0)
		return ZC_FD_OTHER;
	if (type != SOCK_STREAM)
		return ZC_FD_OTHER;
	if (domain == AF_UNIX)
		return ZC_FD_UNIX;
	if (domain != AF_INET && domain != AF_INET6)
		return ZC_FD_OTHER;
	if (sockopt_int(fd, SO_PROTOCOL, &proto) < 0)
		return ZC_FD_OTHER;
	return proto == IPPROTO_TCP ? ZC_FD_TCP : ZC_FD_OTHER;
}

enum zc_fdkind zc_fdkind_of(int fd)
{
	struct stat st;

	if (fd < 0)
		return ZC_FD_BAD;
	/* A channel is a UNIX socket underneath: ask before fstat says so. */
	if (zc_channel_from_fd(fd))
		return ZC_FD_CHANNEL;
	if (fstat(fd, &st) < 0)
		return ZC_FD_BAD;
	if (S_ISREG(st.st_mode))
		return ZC_FD_FILE;
	if (S_ISFIFO(st.st_mode))
		return ZC_FD_PIPE;
	if (S_ISSOCK(st.st_mode))
		return sock_kind(fd);
	return ZC_FD_OTHER;
}
