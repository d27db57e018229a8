/*
 * zcframes - what it costs the sender to put a body on a loopback TCP
 * connection as HTTP/2 DATA frames, each way zchttpd could (docs/
 * bench-static.md, "HTTP/2 DATA frames by copy").
 *
 *   zcframes [SIZE [N [FRAME]]]     (defaults: 102400 20000 16384)
 *
 * A SIZE-byte file (in the page cache, made here) is sent N times per way
 * over one TCP connection to a thread on another CPU that reads and drops
 * everything; the sender's CPU time (RUSAGE_THREAD: its system calls and
 * the loopback's receive work they run) per body is printed per way:
 *
 *   whole-sendfile    one sendfile of the body (no frames: HTTP/1.1)
 *   frames-reference  per FRAME, a 9-byte header by sendmsg(MSG_MORE) and
 *                     the payload by sendfile, corked for the body
 *                     (HTTP/2 by reference)
 *   frames-mapped     every header and payload in one sendmsg, payloads
 *                     copied by the kernel from a mapping of the file
 *   frames-memory     the same from a copy of the body in memory (a body
 *                     the cache holds)
 *   frames-pread      pread of the body into a buffer, then as above (a
 *                     server that reads the file itself, as h2o does)
 *
 * Nothing else runs in the sender: the figures are the floor of each way.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "floor.h"

static int rfd;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);	/* best effort */
}

static void *drain(void *arg)
{
	static char buf[1 << 20];

	(void)arg;
	pin(1);
	while (read(rfd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

static double thread_cpu_us(void)
{
	struct rusage r;

	getrusage(RUSAGE_THREAD, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static void sendfile_all(int s, int f, off_t off, size_t len)
{
	while (len) {
		ssize_t n = sendfile(s, f, &off, len);

		if (n <= 0)
			die("sendfile");
		len -= (size_t)n;
	}
}

/* Header, payload, header, payload... from src, in one sendmsg (and more
 * if the socket takes less). */
static void sendmsg_frames(int s, const char *src, size_t size, size_t frame,
			   const unsigned char *hdr)
{
	struct iovec iov[1024];
	struct msghdr m = { .msg_iov = iov };
	size_t k = 0, left = 0;

	for (size_t off = 0; off < size && k + 2 <= 1024; off += frame) {
		size_t n = size - off < frame ? size - off : frame;

		iov[k++] = (struct iovec){ (void *)hdr, 9 };
		iov[k++] = (struct iovec){ (void *)(src + off), n };
		left += 9 + n;
	}
	m.msg_iovlen = k;
	while (left) {
		ssize_t n = sendmsg(s, &m, 0);

		if (n <= 0)
			die("sendmsg");
		left -= (size_t)n;
		while (n > 0) {
			if ((size_t)n >= m.msg_iov->iov_len) {
				n -= (ssize_t)m.msg_iov->iov_len;
				m.msg_iov++;
				m.msg_iovlen--;
			} else {
				m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + n;
				m.msg_iov->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
}

int main(int argc, char **argv)
{
	static const char *ways[] = { "whole-sendfile", "frames-reference",
				      "frames-mapped", "frames-memory",
				      "frames-pread" };
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 102400;
	long n = argc > 2 ? atol(argv[2]) : 20000;
	size_t frame = argc > 3 ? strtoul(argv[3], NULL, 0) : 16384;
	unsigned char hdr[9] = { 0, 0x40, 0, 0, 0, 0, 0, 0, 1 };
	char path[] = "/tmp/zcframes-XXXXXX", *held, *bounce, *map;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int f, l, s, one = 1;
	pthread_t t;

	if (!size || n < 1 || frame < 1 || size / frame > 500) {
		fprintf(stderr, "usage: zcframes [SIZE [N [FRAME]]]\n");
		return 2;
	}
	f = mkstemp(path);
	held = malloc(size);
	bounce = malloc(size);
	if (f < 0 || !held || !bounce)
		die("setup");
	unlink(path);
	for (size_t i = 0; i < size; i++)
		held[i] = (char)(i * 131 + i / 4093);
	if (pwrite(f, held, size, 0) != (ssize_t)size)
		die("pwrite");
	map = mmap(NULL, size, PROT_READ, MAP_SHARED | MAP_POPULATE, f, 0);
	if (map == MAP_FAILED)
		die("mmap");
	pin(0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		die("listen");
	rfd = socket(AF_INET, SOCK_STREAM, 0);
	if (rfd < 0 || connect(rfd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pthread_create(&t, NULL, drain, NULL);
	printf("%zu-byte body, %zu-byte frames, %ld bodies per way; sender CPU "
	       "per body:\n", size, frame, n);
	for (unsigned w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		double t0 = thread_cpu_us();

		for (long i = 0; i < n; i++) {
			switch (w) {
			case 0:
				sendfile_all(s, f, 0, size);
				break;
			case 1: {
				int on = 1, off = 0;

				setsockopt(s, IPPROTO_TCP, TCP_CORK, &on,
					   sizeof(on));
				for (size_t o = 0; o < size; o += frame) {
					size_t k = size - o < frame ? size - o
								    : frame;

					send(s, hdr, 9, MSG_MORE);
					sendfile_all(s, f, (off_t)o, k);
				}
				setsockopt(s, IPPROTO_TCP, TCP_CORK, &off,
					   sizeof(off));
				break;
			}
			case 2:
				sendmsg_frames(s, map, size, frame, hdr);
				break;
			case 3:
				sendmsg_frames(s, held, size, frame, hdr);
				break;
			default:
				if (pread(f, bounce, size, 0) != (ssize_t)size)
					die("pread");
				sendmsg_frames(s, bounce, size, frame, hdr);
				break;
			}
		}
		printf("  %-17s %7.2f us\n", ways[w],
		       (thread_cpu_us() - t0) / (double)n);
	}
	shutdown(s, SHUT_WR);
	pthread_join(t, NULL);
	return 0;
}
