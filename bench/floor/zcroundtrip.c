/*
 * zcroundtrip - the floor of any design in which a separate process makes
 * the response: two processes pass a 64-byte message back and forth over
 * an AF_UNIX stream socket, one write and one read each per round trip,
 * each side sleeping until the other answers.  Run it under the same CPU
 * budget as a server and its FastCGI application (zcbench fastcgi's
 * method) and it says what one request/response exchange between them
 * costs at the least, with no protocol and no data:
 *
 *   zcroundtrip [ROUND_TRIPS]     (default 200000)
 *
 * prints "N round trips/s, U us CPU per round trip" (CPU of both
 * processes, from getrusage).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double secs(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

static int xfer(int fd, char *b, int out)
{
	ssize_t n = out ? write(fd, b, 64) : read(fd, b, 64);

	return n == 64 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct timespec t0, t1;
	struct rusage self, kids;
	char b[64] = { 0 };
	int sv[2], status;
	pid_t pid;
	double wall, cpu;

	if (n <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		fprintf(stderr, "usage: zcroundtrip [ROUND_TRIPS]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(sv[0]);
		for (long i = 0; i < n; i++)
			if (xfer(sv[1], b, 0) || xfer(sv[1], b, 1))
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (xfer(sv[0], b, 1) || xfer(sv[0], b, 0))
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cpu = secs(self.ru_utime) + secs(self.ru_stime) + secs(kids.ru_utime) + secs(kids.ru_stime);
	printf("%.0f round trips/s, %.2f us CPU per round trip\n", (double)n / wall, cpu * 1e6 / (double)n);
	return 0;
}
