/*
 * errlog.c - the error log (errlog.h).
 *
 * State is per process and set before fork, so workers inherit the
 * descriptor, the path and the level; helper threads may log too (each
 * message is built on the caller's stack and written with one call).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "errlog.h"

/* Messages are cut to this: a log line never grows with attacker input. */
#define LINE_MAX_BYTES 2048

static const char *const names[] = { "error", "warn", "notice", "info",
				     "debug" };

static enum zh_level cur_level = ZL_NOTICE;
static int log_fd = -1;			/* -1: standard error */
static char *log_path;			/* NULL: standard error */

int errlog_level_parse(const char *name)
{
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (name && !strcmp(name, names[i]))
			return i;
	return -1;
}

void errlog_set_level(enum zh_level level)
{
	cur_level = level;
}

static int open_path(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	return fd < 0 ? -errno : fd;
}

int errlog_open(const char *path)
{
	char *copy = NULL;
	int fd = -1;

	if (path && strcmp(path, "-")) {
		fd = open_path(path);
		if (fd < 0)
			return fd;
		copy = strdup(path);
		if (!copy) {
			close(fd);
			return -ENOMEM;
		}
	}
	if (log_fd >= 0)
		close(log_fd);
	free(log_path);
	log_fd = fd;
	log_path = copy;
	return 0;
}

int errlog_reopen(void)
{
	int fd;

	if (!log_path)
		return 0;
	fd = open_path(log_path);
	if (fd < 0)
		return fd;
	/* dup3 keeps the number: nothing else holds the old one. */
	if (dup3(fd, log_fd, O_CLOEXEC) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	return 0;
}

void zh_log(enum zh_level level, const char *fmt, ...)
{
	char line[LINE_MAX_BYTES];
	size_t k;
	va_list ap;
	int n;

	if (level > cur_level)
		return;
	if (log_fd < 0) {
		k = (size_t)snprintf(line, sizeof(line), "zchttpd: ");
	} else {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		k = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%SZ", &tm);
		k += (size_t)snprintf(line + k, sizeof(line) - k,
				      " [%s] zchttpd[%d]: ", names[level],
				      (int)getpid());
	}
	va_start(ap, fmt);
	n = vsnprintf(line + k, sizeof(line) - k, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	k += (size_t)n;
	if (k > sizeof(line) - 2)
		k = sizeof(line) - 2;	/* cut, still one line */
	while (k && line[k - 1] == '\n')
		k--;
	line[k++] = '\n';
	/* A full disk or a closed stderr loses the message, nothing more. */
	while (write(log_fd < 0 ? STDERR_FILENO : log_fd, line, k) < 0 &&
	       errno == EINTR)
		;
}
