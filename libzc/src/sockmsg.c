/*
 * sockmsg.c - the two halves of passing descriptors over a UNIX socket,
 * shared by pool sharing (pool.c) and channels (channel_ctl.c,
 * channel_hello.c, channel_wait.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

int zc_sock_send(int sock, const void *msg, size_t len, int fd, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	return (size_t)n == len ? 0 : -EPROTO;
}

size_t zc_sock_take_fd_array(struct msghdr *mh, int *fds, size_t cap)
{
	size_t came = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (came < cap)
				fds[came] = f;
			else
				close(f);
			came++;
		}
	}
	return came;
}

void zc_sock_take_fds(struct msghdr *mh, int *fd)
{
	int none;

	if (fd && *fd < 0)
		zc_sock_take_fd_array(mh, fd, 1);
	else
		zc_sock_take_fd_array(mh, &none, 0);
}
