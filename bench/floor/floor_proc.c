/*
 * floor_proc.c - what every floor program does around its loop: fail
 * loudly, listen, and run N worker processes on one listener.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

void die(const char *what)
{
	perror(what);
	exit(1);
}

int floor_listen(const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(addr, ':');
	int fd, one = 1;

	if (!colon || (size_t)(colon - addr) >= sizeof(host)) {
		fprintf(stderr, "--listen wants HOST:PORT, got %s\n", addr);
		exit(2);
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	sa.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "bad IPv4 address %s\n", host);
		exit(2);
	}
	/* Accepted sockets inherit TCP_NODELAY; TCP_DEFER_ACCEPT hands a
	 * connection over with its first bytes already there. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0)
		die(addr);
	return fd;
}

void floor_run(int workers, void (*serve)(int lfd), int lfd)
{
	pid_t parent = getpid();

	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < workers; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			/* A parent that died between fork and prctl sent no
			 * signal: the child would serve on, orphaned. */
			if (getppid() != parent)
				_exit(0);
			serve(lfd);
			_exit(0);
		}
	}
	serve(lfd);	/* the parent serves too; the children die with it */
}
