/*
 * errlog.h - the error log: every message zchttpd has for its operator
 * (start, reload, failures, FastCGI applications' stderr), with a level.
 *
 * One log per process tree: the master opens it (--error-log FILE, "-" or
 * no option: standard error) before it forks, so workers and the FastCGI
 * spawner inherit it; SIGUSR1 reopens it by its path in every process, as
 * the access log.  A message above --log-level costs one comparison.
 *
 * Lines on standard error keep the form they always had ("zchttpd:
 * message": journald and container runtimes add the time); lines in a file
 * carry the time, the level and the pid.  Each line is one write(2) to an
 * O_APPEND descriptor, so processes sharing the file never split a line.
 */
#ifndef ZC_ERRLOG_H
#define ZC_ERRLOG_H

enum zh_level { ZL_ERROR, ZL_WARN, ZL_NOTICE, ZL_INFO, ZL_DEBUG };

/* "error".."debug" -> the level, or -1. */
int errlog_level_parse(const char *name);
void errlog_set_level(enum zh_level level);

/* Log to `path` from now on (NULL or "-": standard error).  0, or a
 * negative errno with the old destination kept. */
int errlog_open(const char *path);
/* SIGUSR1: the same path again (after logrotate moved the file). */
int errlog_reopen(void);

void zh_log(enum zh_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
