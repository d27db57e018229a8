/*
 * main.c - zchttpd's master process.
 *
 * The master parses the options, opens the document root and one
 * SO_REUSEPORT listening socket per worker (so "address in use" is reported
 * once, at start, and privileges can be dropped right after binding), then
 * forks the workers and supervises them:
 *
 *   SIGTERM, SIGINT   graceful stop: workers finish in-flight responses
 *                     (bounded by --shutdown-timeout), then everyone exits.
 *   SIGHUP            reload: re-read the options and --config file, start a
 *                     new generation of workers on the same sockets (no
 *                     connection is refused meanwhile), stop the old one
 *                     gracefully.  The listen address cannot change.
 *   SIGUSR1           reopen the access logs and the error log (after
 *                     logrotate moved them).
 *   a worker dies     it is replaced (at most 10 times a minute, then the
 *                     master gives up and stops: a crash loop is a bug to
 *                     report, not to hide).
 *   the master dies   (SIGKILL: no code of ours runs) the workers and the
 *                     spawned applications get SIGTERM from the kernel and
 *                     stop gracefully (parent_death.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "access_log.h"
#include "errlog.h"
#include "event.h"
#include "fcgi_spawn.h"
#include "listen.h"
#include "options.h"
#include "parent_death.h"
#include "probe.h"
#include "stats.h"
#include "tls.h"
#include "worker.h"

struct master {
	struct options opt;
	int argc;
	char **argv;
	int *rootfds;			/* per site (opt.cfg.sites) */
	int *logfds;			/* per site: access log, or -1 */
	int nworkers;
	int lfds[ZCHTTPD_MAX_WORKERS];
	int tls_lfds[ZCHTTPD_MAX_WORKERS];	/* --tls-listen, or -1 */
	pid_t pids[ZCHTTPD_MAX_WORKERS];	/* current generation */
	uint64_t born_ms[ZCHTTPD_MAX_WORKERS];	/* when each was started */
	pid_t old[4 * ZCHTTPD_MAX_WORKERS];	/* stopping generations */
	struct stats_area *stats;
	struct cache_zone *zone;	/* the current generation's cache */
	struct fcgi_spawner *spawner;	/* --fastcgi-spawn processes */
	bool stopping;
	time_t restart_window;
	int restarts;
};

/* The cache a generation of workers shares (cache.h), mapped here before
 * they are forked.  A reload's generation gets a new one: its sites, and
 * so its keys and root descriptors, may differ. */
static struct cache_zone *new_zone(const struct zh_config *c, int nworkers)
{
	struct cache_config cc = {
		.budget = c->cache_bytes,
		.max_entries = c->cache_entries,
		.small_max = c->cache_small_max,
		.copy_max = c->cache_copy_max,
		.ttl_ms = c->cache_ttl_ms,
		.policy = c->cache_policy,
		.owns_pages = c->cache_owns_pages,
		.nworkers = (unsigned)nworkers,
	};
	struct cache_zone *z;
	int err = cache_zone_create(&cc, &z);

	if (err) {
		zh_log(ZL_ERROR, "the cache (--cache-size %llu, --cache-entries "
		       "%u): %s", (unsigned long long)c->cache_bytes,
		       c->cache_entries, strerror(-err));
		return NULL;
	}
	return z;
}

/* A worker that dies within this of its start counts towards the limit
 * of restarts: it is failing to start (a crash loop), not killed later. */
#define DIES_YOUNG_MS 1000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static pid_t spawn(struct master *m, int i)
{
	struct worker_stats *slot = stats_claim(m->stats);
	pid_t master = getpid(), pid;
	int err;

	m->born_ms[i] = now_ms();
	if (!slot) {
		zh_log(ZL_ERROR, "too many draining workers; "
			"worker %d not started", i);
		return 0;
	}
	pid = fork();
	if (pid < 0)
		slot->pid = 0;
	if (pid > 0)
		slot->pid = pid;	/* the child sets it too: no race */
	if (pid != 0)
		return pid;
	/* Child: a master killed outright stops us too (parent_death.h). */
	err = stop_with_parent(master);
	if (err == -ESRCH)
		_exit(0);
	if (err)
		zh_log(ZL_WARN, "worker %d: will not notice the master's "
		       "death: %s", i, strerror(-err));
	/* Only our own listening socket stays open. */
	for (int j = 0; j < m->nworkers; j++) {
		if (j == i)
			continue;
		close(m->lfds[j]);
		if (m->tls_lfds[j] >= 0)
			close(m->tls_lfds[j]);
	}
	struct zh_worker *w = calloc(1, sizeof(*w));
	if (!w)
		_exit(1);
	w->cfg = &m->opt.cfg;
	w->index = i;
	w->lfd = m->lfds[i];
	w->tls_lfd = m->tls_lfds[i];
	w->site_rootfds = m->rootfds;
	w->site_logfds = m->logfds;
	w->stats = slot;
	w->all_stats = m->stats;
	w->cache_zone = m->zone;
	w->nworkers = m->nworkers;
	err = worker_run(w);
	if (err)
		zh_log(ZL_ERROR, "worker %d: %s", i, strerror(-err));
	_exit(err ? 1 : 0);
}

/* A site's option, as an error message names it: "FILE:LINE: root" for
 * a server block, "--root" for the command line's site. */
static void site_error(const struct zh_site *s, const char *what,
		       const char *path, int err)
{
	if (s->where)
		zh_log(ZL_ERROR, "%s: %s %s: %s", s->where, what, path,
		       strerror(err));
	else
		zh_log(ZL_ERROR, "--%s %s: %s", what, path, strerror(err));
}

static int open_root(const struct zh_site *s)
{
	int fd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		site_error(s, "root", s->root, errno);
	return fd;
}

static int drop_privileges(const char *user)
{
	struct passwd *pw = getpwnam(user);

	if (!pw) {
		zh_log(ZL_ERROR, "--user %s: no such user", user);
		return -1;
	}
	if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(pw->pw_uid) < 0) {
		zh_log(ZL_ERROR, "--user %s: %s", user,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* The master opens the logs, as it does the roots and the sockets, so that
 * workers under --user can append to a file only root may write. */
static int open_log(const struct zh_site *s)
{
	int fd = access_log_open_fd(s->access_log);

	if (fd < 0)
		site_error(s, "access-log", s->access_log, -fd);
	return fd;
}

/* Certificates and keys are loaded by the master, before the workers
 * exist (they share the contexts and the session-ticket keys) and before
 * --user drops the right to read the keys.  Returns -1 after saying why. */
static int load_tls(struct zh_config *cfg)
{
	char err[512];

	if (!cfg->tls.listen)
		return 0;
	cfg->tls.h2 = cfg->h2.on;
	if (tls_create(&cfg->tls, &cfg->tls_ctx, err, sizeof(err))) {
		zh_log(ZL_ERROR, "TLS: %s", err);
		return -1;
	}
	return 0;
}

/* Close what open_sites opened (a log shared by sites once). */
static void close_sites(unsigned n, int *rootfds, int *logfds)
{
	for (unsigned i = 0; rootfds && i < n; i++) {
		bool shared = false;

		if (rootfds[i] >= 0)
			close(rootfds[i]);
		for (unsigned j = 0; j < i; j++)
			shared |= logfds[j] == logfds[i];
		if (logfds[i] >= 0 && !shared)
			close(logfds[i]);
	}
	free(rootfds);
	free(logfds);
}

/* The descriptor of the access log at `path` among the running sites',
 * or -1. */
static int running_log(const struct master *m, const char *path)
{
	for (unsigned i = 0; m && m->logfds && i < m->opt.cfg.nsites; i++)
		if (m->logfds[i] >= 0 && m->opt.cfg.sites[i].access_log &&
		    !strcmp(m->opt.cfg.sites[i].access_log, path))
			return m->logfds[i];
	return -1;
}

/* Every site's root and access log, opened: arrays of c->nsites.  Sites
 * naming the same log share one descriptor (one file offset, whole lines:
 * access_log.c).  On reload (`running` set) a log that can no longer be
 * opened (--user) but is open since start goes on in the same file.
 * Returns 0, or -1 (reported, nothing left open). */
static int open_sites(const struct zh_config *c, const struct master *running,
		      int **rootfds_out, int **logfds_out)
{
	int *rootfds = calloc(c->nsites, sizeof(int));
	int *logfds = calloc(c->nsites, sizeof(int));
	unsigned i;

	if (!rootfds || !logfds) {
		free(rootfds);
		free(logfds);
		zh_log(ZL_ERROR, "out of memory");
		return -1;
	}
	for (i = 0; i < c->nsites; i++)
		rootfds[i] = logfds[i] = -1;
	for (i = 0; i < c->nsites; i++) {
		const struct zh_site *s = &c->sites[i];

		rootfds[i] = open_root(s);
		if (rootfds[i] < 0)
			goto fail;
		if (!s->access_log)
			continue;
		for (unsigned j = 0; j < i && logfds[i] < 0; j++)
			if (c->sites[j].access_log &&
			    !strcmp(c->sites[j].access_log, s->access_log))
				logfds[i] = logfds[j];
		if (logfds[i] >= 0)
			continue;
		logfds[i] = open_log(s);
		if (logfds[i] < 0 && running_log(running, s->access_log) >= 0) {
			logfds[i] = fcntl(running_log(running, s->access_log),
					  F_DUPFD_CLOEXEC, 3);
			if (logfds[i] >= 0)
				zh_log(ZL_WARN, "keeping the access log open "
				       "since start (%s)", s->access_log);
		}
		if (logfds[i] < 0)
			goto fail;
	}
	*rootfds_out = rootfds;
	*logfds_out = logfds;
	return 0;
fail:
	close_sites(i + 1, rootfds, logfds);
	return -1;
}

/* The error log of c (errlog.h), if it is not the one in use. */
static int open_error_log(const struct zh_config *c, const char *in_use)
{
	const char *p = c->error_log ? c->error_log : "-";
	int err;

	errlog_set_level((enum zh_level)c->log_level);
	if (!strcmp(p, in_use ? in_use : "-"))
		return 0;
	err = errlog_open(p);
	if (err)
		zh_log(ZL_ERROR, "--error-log %s: %s", p, strerror(-err));
	return err;
}

/* Each site's requests counter in the status area (stats.h), and what
 * the operator may want to see at --log-level info. */
static void announce_sites(struct master *m)
{
	const struct zh_config *c = &m->opt.cfg;

	for (unsigned i = 0; i < c->nsites; i++) {
		struct zh_site *s = &c->sites[i];

		s->stat_slot = stats_site_slot(m->stats, s->name);
		zh_log(ZL_INFO, "site %s: root %s%s%s%s", s->name, s->root,
		       s->access_log ? ", access log " : "",
		       s->access_log ? s->access_log : "",
		       i == c->default_site ? " (default)" : "");
	}
}

static void remember_old(struct master *m, pid_t pid)
{
	for (size_t i = 0; i < sizeof(m->old) / sizeof(m->old[0]); i++) {
		if (!m->old[i]) {
			m->old[i] = pid;
			return;
		}
	}
}

static bool forget_old(struct master *m, pid_t pid)
{
	for (size_t i = 0; i < sizeof(m->old) / sizeof(m->old[0]); i++) {
		if (m->old[i] == pid) {
			m->old[i] = 0;
			return true;
		}
	}
	return false;
}

static void signal_workers(const struct master *m, int sig)
{
	for (int i = 0; i < m->nworkers; i++)
		if (m->pids[i] > 0)
			kill(m->pids[i], sig);
	for (size_t i = 0; i < sizeof(m->old) / sizeof(m->old[0]); i++)
		if (m->old[i] > 0)
			kill(m->old[i], sig);
}

static void stop_all(struct master *m)
{
	m->stopping = true;
	signal_workers(m, SIGTERM);
}

/* SIGUSR1 (logrotate): every worker reopens the access logs by their
 * paths (each flushes what it buffered to the old file first) and the
 * error log; the master reopens its own copies, which workers started
 * later inherit.  Master and workers run as the same user, so what one may
 * open the others may. */
static void reopen_logs(struct master *m)
{
	const struct zh_config *c = &m->opt.cfg;
	int err = errlog_reopen();

	if (err)
		zh_log(ZL_ERROR, "reopening the error log: %s (still writing "
		       "to the old file)", strerror(-err));
	for (unsigned i = 0; i < c->nsites; i++) {
		int old = m->logfds[i], fd;
		bool shared = false;

		for (unsigned j = 0; j < i; j++)
			shared |= m->logfds[j] == old;
		if (old < 0 || shared)
			continue;
		fd = open_log(&c->sites[i]);
		if (fd < 0)
			continue;
		for (unsigned j = i; j < c->nsites; j++)
			if (m->logfds[j] == old)
				m->logfds[j] = fd;
		close(old);
	}
	signal_workers(m, SIGUSR1);
}

static bool any_alive(const struct master *m)
{
	for (int i = 0; i < m->nworkers; i++)
		if (m->pids[i] > 0)
			return true;
	for (size_t i = 0; i < sizeof(m->old) / sizeof(m->old[0]); i++)
		if (m->old[i] > 0)
			return true;
	return false;
}

static void reload(struct master *m)
{
	struct cache_zone *zone = NULL;
	struct options o;
	int *rootfds, *logfds;

	if (options_parse(&o, m->argc, m->argv) || o.help || o.version) {
		zh_log(ZL_ERROR, "reload refused: bad options");
		options_free(&o);
		return;
	}
	if (strcmp(o.cfg.listen, m->opt.cfg.listen) ||
	    (o.cfg.workers && o.cfg.workers != m->nworkers) ||
	    !o.cfg.tls.listen != !m->opt.cfg.tls.listen ||
	    (o.cfg.tls.listen &&
	     strcmp(o.cfg.tls.listen, m->opt.cfg.tls.listen))) {
		zh_log(ZL_ERROR, "reload refused: --listen, --tls-listen and "
			"--workers need a restart");
		options_free(&o);
		return;
	}
	/* New certificates (renewed ones: the same paths) are read now. */
	options_for_workers(&o.cfg, m->nworkers);
	if (load_tls(&o.cfg) || !(zone = new_zone(&o.cfg, m->nworkers))) {
		zh_log(ZL_ERROR, "reload refused");
		options_free(&o);
		return;
	}
	if (fcgi_spawn_adopt(m->spawner, &o.cfg)) {
		options_free(&o);
		cache_zone_unmap(zone);
		return;
	}
	if (open_sites(&o.cfg, m, &rootfds, &logfds)) {
		zh_log(ZL_ERROR, "reload refused");
		fcgi_spawn_adopt(m->spawner, &m->opt.cfg);	/* back */
		options_free(&o);
		cache_zone_unmap(zone);
		return;
	}
	if (open_error_log(&o.cfg, m->opt.cfg.error_log)) {
		zh_log(ZL_ERROR, "reload refused");
		errlog_set_level((enum zh_level)m->opt.cfg.log_level);
		close_sites(o.cfg.nsites, rootfds, logfds);
		fcgi_spawn_adopt(m->spawner, &m->opt.cfg);	/* back */
		options_free(&o);
		cache_zone_unmap(zone);
		return;
	}
	/* The old generation keeps its own copies until it exits. */
	close_sites(m->opt.cfg.nsites, m->rootfds, m->logfds);
	m->rootfds = rootfds;
	m->logfds = logfds;
	options_free(&m->opt);
	m->opt = o;
	/* Before the fork, or the new workers would inherit the old cache
	 * and keep its memory as long as they live; the old ones keep their
	 * own mapping until they exit. */
	cache_zone_unmap(m->zone);
	m->zone = zone;
	announce_sites(m);
	for (int i = 0; i < m->nworkers; i++) {
		pid_t old = m->pids[i];

		m->pids[i] = spawn(m, i);
		if (old > 0) {
			remember_old(m, old);
			kill(old, SIGTERM);
		}
	}
	zh_log(ZL_NOTICE, "reloaded");
}

static void reap(struct master *m)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (fcgi_spawn_reaped(m->spawner, pid, status, m->stopping))
			continue;
		stats_retire(m->stats, pid);
		if (forget_old(m, pid))
			continue;
		for (int i = 0; i < m->nworkers; i++) {
			if (m->pids[i] != pid)
				continue;
			m->pids[i] = 0;
			/* Before its successor takes the same pin row. */
			cache_zone_worker_gone(m->zone, (unsigned)i);
			if (m->stopping)
				break;
			zh_log(ZL_ERROR, "worker %d (pid %d) %s %d; "
				"restarting it", i, (int)pid,
				WIFSIGNALED(status) ? "killed by signal"
						    : "exited with",
				WIFSIGNALED(status) ? WTERMSIG(status)
						    : WEXITSTATUS(status));
			if (time(NULL) - m->restart_window > 60) {
				m->restart_window = time(NULL);
				m->restarts = 0;
			}
			if (now_ms() - m->born_ms[i] < DIES_YOUNG_MS &&
			    ++m->restarts > 10) {
				zh_log(ZL_ERROR, "workers keep dying; "
					"stopping");
				stop_all(m);
				break;
			}
			m->pids[i] = spawn(m, i);
		}
	}
}

int main(int argc, char **argv)
{
	static struct master m;
	struct sockaddr_storage ss;
	socklen_t sslen;
	char name[80];
	sigset_t set;
	long ncpu;

	/* Before options_parse: a probe needs no --root and starts nothing. */
	if (argc >= 2 && !strcmp(argv[1], "--probe")) {
		if (argc != 3) {
			fprintf(stderr, "usage: zchttpd --probe http://HOST:PORT/PATH\n");
			return 2;
		}
		return probe_run(argv[2], 3000);
	}
	m.argc = argc;
	m.argv = argv;
	if (options_parse(&m.opt, argc, argv)) {
		options_usage(stderr);
		return 2;
	}
	if (m.opt.help) {
		options_usage(stdout);
		return 0;
	}
	if (m.opt.version) {
		printf("zchttpd %s (libzc backend: %s)\n", ZC_VERSION,
		       zc_backend_name());
		return 0;
	}
	if (m.opt.cfg.io_uring) {
		/* Find out now, not in every worker, whether this kernel
		 * has what the io_uring loop needs. */
		struct ev_loop *probe;
		int err = ev_loop_create_ring(&probe);

		if (err) {
			zh_log(ZL_ERROR, "--event io_uring: %s "
				"(io_uring disabled, or older than Linux 5.19?)",
				strerror(-err));
			return 1;
		}
		ev_loop_destroy(probe);
	}
	/* Every connection and every cached file holds a descriptor: take
	 * the whole hard limit rather than the usual 1024. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (listen_parse(m.opt.cfg.listen, &ss, &sslen)) {
		zh_log(ZL_ERROR, "--listen %s: not an address",
			m.opt.cfg.listen);
		return 2;
	}
	struct sockaddr_storage tls_ss;
	socklen_t tls_sslen = 0;

	if (m.opt.cfg.tls.listen &&
	    listen_parse(m.opt.cfg.tls.listen, &tls_ss, &tls_sslen)) {
		zh_log(ZL_ERROR, "--tls-listen %s: not an address",
		       m.opt.cfg.tls.listen);
		return 2;
	}
	if (load_tls(&m.opt.cfg))
		return 1;
	if (open_sites(&m.opt.cfg, NULL, &m.rootfds, &m.logfds))
		return 1;
	if (m.opt.check_only) {
		const char *el = m.opt.cfg.error_log;
		int fd = el && strcmp(el, "-") ? access_log_open_fd(el) : -1;

		if (fd < 0 && el && strcmp(el, "-")) {
			zh_log(ZL_ERROR, "--error-log %s: %s", el, strerror(-fd));
			return 1;
		}
		if (fd >= 0)
			close(fd);
		/* -t: what start-up would refuse, refused above; the user
		 * too.  The address is only parsed: binding it would fail
		 * against the running server a check is usually made for. */
		if (m.opt.user && !getpwnam(m.opt.user)) {
			zh_log(ZL_ERROR, "--user %s: no such user",
				m.opt.user);
			return 1;
		}
		fprintf(stderr, "zchttpd: %s%s%sthe options are ok\n",
			m.opt.config ? "configuration file " : "",
			m.opt.config ? m.opt.config : "",
			m.opt.config ? " and " : "");
		return 0;
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	m.nworkers = m.opt.cfg.workers ? m.opt.cfg.workers
				       : (int)(ncpu > 0 ? ncpu : 1);
	if (m.nworkers > ZCHTTPD_MAX_WORKERS)
		m.nworkers = ZCHTTPD_MAX_WORKERS;
	for (int i = 0; i < m.nworkers; i++) {
		m.lfds[i] = listen_open(&ss, sslen, 4096);
		if (m.lfds[i] < 0) {
			zh_log(ZL_ERROR, "--listen %s: %s",
				m.opt.cfg.listen, strerror(-m.lfds[i]));
			return 1;
		}
		m.tls_lfds[i] = -1;
		if (!m.opt.cfg.tls.listen)
			continue;
		m.tls_lfds[i] = listen_open(&tls_ss, tls_sslen, 4096);
		if (m.tls_lfds[i] < 0) {
			zh_log(ZL_ERROR, "--tls-listen %s: %s",
			       m.opt.cfg.tls.listen, strerror(-m.tls_lfds[i]));
			return 1;
		}
	}
	/* Before --user, as the access logs. */
	if (open_error_log(&m.opt.cfg, NULL))
		return 1;
	if (m.opt.user && drop_privileges(m.opt.user))
		return 1;
	m.stats = stats_area_create();
	if (!m.stats) {
		perror("zchttpd: mmap");
		return 1;
	}
	announce_sites(&m);
	options_for_workers(&m.opt.cfg, m.nworkers);
	m.zone = new_zone(&m.opt.cfg, m.nworkers);
	if (!m.zone)
		return 1;
	/* After --user: the applications run as the workers do. */
	if (fcgi_spawn_start(&m.opt.cfg, (unsigned)m.nworkers, &m.spawner)) {
		fcgi_spawn_stop(m.spawner);
		return 1;
	}

	/* The master also reaps its workers synchronously. */
	block_control_signals(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);

	listen_name(m.lfds[0], name, sizeof(name));
	if (m.opt.cfg.nsites == 1)
		zh_log(ZL_NOTICE, "serving %s on http://%s/ with %d worker%s",
		       m.opt.cfg.sites[0].root, name, m.nworkers,
		       m.nworkers > 1 ? "s" : "");
	else
		zh_log(ZL_NOTICE, "serving %u sites on http://%s/ with %d "
		       "worker%s", m.opt.cfg.nsites, name, m.nworkers,
		       m.nworkers > 1 ? "s" : "");
	if (m.opt.cfg.tls.listen) {
		listen_name(m.tls_lfds[0], name, sizeof(name));
		zh_log(ZL_NOTICE, "and on https://%s/ (records: %s)", name,
		       tls_record_layer(m.opt.cfg.tls_ctx));
	}
	for (int i = 0; i < m.nworkers; i++)
		m.pids[i] = spawn(&m, i);

	while (any_alive(&m)) {
		long wait_ms = m.stopping ? -1 : fcgi_spawn_tick(m.spawner);
		struct timespec ts = { wait_ms / 1000, wait_ms % 1000 * 1000000 };
		siginfo_t si;

		if ((wait_ms < 0 ? sigwaitinfo(&set, &si)
				 : sigtimedwait(&set, &si, &ts)) < 0)
			continue;
		switch (si.si_signo) {
		case SIGCHLD:
			reap(&m);
			break;
		case SIGHUP:
			if (!m.stopping)
				reload(&m);
			break;
		case SIGUSR1:
			reopen_logs(&m);
			break;
		default:
			stop_all(&m);
			break;
		}
	}
	/* The workers are gone: nothing needs the applications now. */
	fcgi_spawn_stop(m.spawner);
	zh_log(ZL_NOTICE, "stopped");
	return 0;
}
