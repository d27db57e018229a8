/*
 * fcgi_spawn.c - FastCGI applications the master starts (fcgi_spawn.h).
 *
 * The FastCGI way to start an application: its listening socket is its
 * fd 0 (FCGI_LISTENSOCK_FILENO), so the same program works under any
 * server that spawns it.
 *
 * One socket per route *per worker*, each with its share of the N
 * processes (at least one; N is rounded up to a multiple of the workers),
 * and a worker keeps no more connections to its socket than it has
 * processes behind it.  A FastCGI process serves one connection at a
 * time, and a kept-alive connection holds its process even while idle: if
 * every worker could connect to every process, one worker's idle
 * connections would keep another's requests waiting in the backlog.
 *
 * Supervision: a process that exits is started again, after a delay that
 * doubles (from 100 ms up to 10 s) while processes keep dying young, and
 * goes back to nothing once one has lived for 10 s: a crashing app does
 * not turn the master into a fork loop, a one-off crash is repaired at
 * once.  The processes run with the master's identity after --user.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errlog.h"
#include "fastcgi.h"
#include "fcgi_spawn.h"
#include "parent_death.h"
#include "zchttpd.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000
#define HEALTHY_MS 10000		/* lived this long: not crash-looping */
#define STOP_WAIT_MS 5000

struct proc {
	pid_t pid;			/* 0: not running */
	uint64_t started_ms;
	uint64_t restart_at_ms;		/* when not running: start then */
};

struct spawned {
	const struct zh_fcgi_route *rt;	/* its argv; addrs are ours */
	unsigned worker;		/* whose share this is */
	char path[108];
	int lfd;
	unsigned backoff_ms;
	unsigned n;
	struct proc *procs;
};

struct fcgi_spawner {
	char dir[64];
	unsigned nworkers;
	unsigned n;
	struct spawned *sp;		/* per route, per worker */
	struct sockaddr_storage *addrs;	/* the routes' per-worker addresses */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void start_proc(struct spawned *s, struct proc *p)
{
	sigset_t none;
	pid_t master = getpid(), pid = fork();
	int err;

	if (pid < 0) {
		zh_log(ZL_ERROR, "fastcgi %s: fork: %s", s->rt->spec,
			strerror(errno));
		p->restart_at_ms = now_ms() + BACKOFF_MAX_MS;
		return;
	}
	if (pid > 0) {
		p->pid = pid;
		p->started_ms = now_ms();
		return;
	}
	/* The child: SIGTERM when the master dies (kept across execve:
	 * parent_death.h), the socket as fd 0, the master's signal mask and
	 * dispositions undone, nothing else inherited but stdout/stderr. */
	err = stop_with_parent(master);
	if (err == -ESRCH)
		_exit(0);
	if (err)
		zh_log(ZL_WARN, "fastcgi %s: will not notice the master's "
		       "death: %s", s->rt->spec, strerror(-err));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(s->lfd, 0) < 0)
		_exit(127);
	/* close_range(2), not closefrom(3): musl (the static image build)
	 * has no closefrom.  Linux >= 5.9; failure only leaks fds to the app. */
	syscall(SYS_close_range, 3U, ~0U, 0U);
	execvp(s->rt->argv[0], s->rt->argv);
	zh_log(ZL_ERROR, "fastcgi %s: %s: %s", s->rt->spec,
		s->rt->argv[0], strerror(errno));
	_exit(127);
}

static int open_socket(struct spawned *s)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", s->path);
	if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0 ||
	    listen(fd, 1024) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	s->lfd = fd;
	return 0;
}

/* A UNIX socket's address. */
static void set_addr(struct sockaddr_storage *ss, socklen_t *len,
		     const char *path)
{
	struct sockaddr_un *un = (struct sockaddr_un *)ss;

	memset(ss, 0, sizeof(*ss));
	un->sun_family = AF_UNIX;
	snprintf(un->sun_path, sizeof(un->sun_path), "%s", path);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			   strlen(un->sun_path) + 1);
}

/* Point the route at its per-worker sockets (sp[first .. first+W)). */
static void route_addrs(struct fcgi_spawner *sw, struct zh_fcgi_route *rt,
			unsigned first)
{
	socklen_t len = 0;

	rt->worker_addr = &sw->addrs[first];
	for (unsigned w = 0; w < sw->nworkers; w++)
		set_addr(&sw->addrs[first + w], &len, sw->sp[first + w].path);
	rt->worker_addr_len = len;	/* same length: same name pattern */
	rt->per_worker = sw->sp[first].n;
	set_addr(&rt->addr, &rt->addr_len, sw->sp[first].path);
}

int fcgi_spawn_start(struct zh_config *cfg, unsigned nworkers,
		     struct fcgi_spawner **out)
{
	const char *tmp = getenv("TMPDIR");
	struct fcgi_spawner *sw;
	unsigned n = 0;

	*out = NULL;
	for (unsigned i = 0; i < cfg->nfcgi; i++)
		n += cfg->fcgi[i].spawn > 0;
	if (!n)
		return 0;
	sw = calloc(1, sizeof(*sw));
	if (!sw || !(sw->sp = calloc(n * nworkers, sizeof(*sw->sp))) ||
	    !(sw->addrs = calloc(n * nworkers, sizeof(*sw->addrs))))
		goto oom;
	sw->nworkers = nworkers;
	snprintf(sw->dir, sizeof(sw->dir), "%s/zchttpd.XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(sw->dir)) {
		zh_log(ZL_ERROR, "%s: %s", sw->dir, strerror(errno));
		free(sw->addrs);
		free(sw->sp);
		free(sw);
		return -1;
	}
	*out = sw;
	for (unsigned i = 0; i < cfg->nfcgi; i++) {
		struct zh_fcgi_route *rt = &cfg->fcgi[i];
		unsigned each = (rt->spawn + nworkers - 1) / nworkers;
		unsigned first = sw->n;

		if (!rt->spawn)
			continue;
		for (unsigned w = 0; w < nworkers; w++) {
			struct spawned *s = &sw->sp[sw->n++];
			int err;

			s->rt = rt;
			s->worker = w;
			s->lfd = -1;
			s->n = each;
			s->backoff_ms = BACKOFF_MIN_MS;
			snprintf(s->path, sizeof(s->path), "%s/%u-%u.sock",
				 sw->dir, i, w);
			s->procs = calloc(s->n, sizeof(*s->procs));
			if (!s->procs)
				goto oom;
			err = open_socket(s);
			if (err) {
				zh_log(ZL_ERROR, "fastcgi %s: %s: %s",
					rt->spec, s->path, strerror(-err));
				return -1;
			}
			for (unsigned k = 0; k < s->n; k++)
				start_proc(s, &s->procs[k]);
		}
		route_addrs(sw, rt, first);
		zh_log(ZL_NOTICE, "fastcgi %s: %u process%s on %s/%u-*.sock "
			"(%u per worker)", rt->spec, each * nworkers,
			each * nworkers > 1 ? "es" : "", sw->dir, i, each);
	}
	return 0;
oom:
	zh_log(ZL_ERROR, "out of memory");
	return -1;
}

bool fcgi_spawn_reaped(struct fcgi_spawner *sw, pid_t pid, int status,
		       bool stopping)
{
	uint64_t now = now_ms();

	for (unsigned i = 0; sw && i < sw->n; i++) {
		struct spawned *s = &sw->sp[i];

		for (unsigned k = 0; k < s->n; k++) {
			struct proc *p = &s->procs[k];

			if (p->pid != pid)
				continue;
			p->pid = 0;
			if (stopping) {
				p->restart_at_ms = UINT64_MAX;
				return true;
			}
			if (now - p->started_ms >= HEALTHY_MS)
				s->backoff_ms = BACKOFF_MIN_MS;
			zh_log(ZL_WARN, "fastcgi %s: pid %d %s %d; "
				"restarting it in %u ms", s->rt->spec,
				(int)pid, WIFSIGNALED(status)
					? "killed by signal" : "exited with",
				WIFSIGNALED(status) ? WTERMSIG(status)
						    : WEXITSTATUS(status),
				s->backoff_ms);
			p->restart_at_ms = now + s->backoff_ms;
			s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS
						? BACKOFF_MAX_MS
						: s->backoff_ms * 2;
			return true;
		}
	}
	return false;
}

long fcgi_spawn_tick(struct fcgi_spawner *sw)
{
	uint64_t now = now_ms();
	long next = -1;

	for (unsigned i = 0; sw && i < sw->n; i++) {
		struct spawned *s = &sw->sp[i];

		for (unsigned k = 0; k < s->n; k++) {
			struct proc *p = &s->procs[k];

			if (p->pid)
				continue;
			if (p->restart_at_ms <= now)
				start_proc(s, p);
			if (!p->pid) {
				long wait = (long)(p->restart_at_ms - now);

				if (next < 0 || wait < next)
					next = wait;
			}
		}
	}
	return next;
}

int fcgi_spawn_adopt(struct fcgi_spawner *sw, struct zh_config *cfg)
{
	unsigned k = 0;

	for (unsigned i = 0; i < cfg->nfcgi; i++) {
		struct zh_fcgi_route *rt = &cfg->fcgi[i];

		if (!rt->spawn)
			continue;
		if (!sw || k >= sw->n || strcmp(sw->sp[k].rt->spec, rt->spec))
			goto changed;
		k += sw->nworkers;
	}
	if (sw && k != sw->n)
		goto changed;
	/* The running processes keep their argv (from the old options):
	 * point at the new, identical copy before the old one is freed. */
	for (unsigned i = 0, j = 0; sw && i < cfg->nfcgi; i++) {
		if (!cfg->fcgi[i].spawn)
			continue;
		route_addrs(sw, &cfg->fcgi[i], j);
		for (unsigned w = 0; w < sw->nworkers; w++)
			sw->sp[j++].rt = &cfg->fcgi[i];
	}
	return 0;
changed:
	zh_log(ZL_ERROR, "reload refused: --fastcgi-spawn changed "
		"(needs a restart)");
	return -1;
}

static bool any_running(const struct fcgi_spawner *sw)
{
	for (unsigned i = 0; i < sw->n; i++)
		for (unsigned k = 0; k < sw->sp[i].n; k++)
			if (sw->sp[i].procs[k].pid)
				return true;
	return false;
}

static void signal_all(struct fcgi_spawner *sw, int sig)
{
	for (unsigned i = 0; i < sw->n; i++)
		for (unsigned k = 0; k < sw->sp[i].n; k++)
			if (sw->sp[i].procs[k].pid)
				kill(sw->sp[i].procs[k].pid, sig);
}

/* Reap our processes until none is left or the deadline passes. */
static void wait_all(struct fcgi_spawner *sw, uint64_t deadline)
{
	while (any_running(sw) && now_ms() < deadline) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			for (unsigned i = 0; i < sw->n; i++)
				for (unsigned k = 0; k < sw->sp[i].n; k++)
					if (sw->sp[i].procs[k].pid == pid)
						sw->sp[i].procs[k].pid = 0;
			continue;
		}
		if (pid < 0 && errno == ECHILD)
			break;
		usleep(10000);
	}
}

void fcgi_spawn_stop(struct fcgi_spawner *sw)
{
	if (!sw)
		return;
	signal_all(sw, SIGTERM);
	wait_all(sw, now_ms() + STOP_WAIT_MS);
	if (any_running(sw)) {
		signal_all(sw, SIGKILL);
		wait_all(sw, now_ms() + STOP_WAIT_MS);
	}
	for (unsigned i = 0; i < sw->n; i++) {
		if (sw->sp[i].lfd >= 0)
			close(sw->sp[i].lfd);
		unlink(sw->sp[i].path);
		free(sw->sp[i].procs);
	}
	rmdir(sw->dir);
	free(sw->addrs);
	free(sw->sp);
	free(sw);
}
