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
 *   SIGUSR1           reopen the access log (after logrotate moved it).
 *   a worker dies     it is replaced (at most 10 times a minute, then the
 *                     master gives up and stops: a crash loop is a bug to
 *                     report, not to hide).
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
#include "fcgi_spawn.h"
#include "listen.h"
#include "event.h"
#include "options.h"
#include "probe.h"
#include "stats.h"
#include "worker.h"

struct master {
	struct options opt;
	int argc;
	char **argv;
	int rootfd;
	int logfd;			/* access log, or -1 */
	int nworkers;
	int lfds[ZCHTTPD_MAX_WORKERS];
	int tls_lfds[ZCHTTPD_MAX_WORKERS];	/* --tls-listen, or -1 */
	pid_t pids[ZCHTTPD_MAX_WORKERS];	/* current generation */
	pid_t old[4 * ZCHTTPD_MAX_WORKERS];	/* stopping generations */
	struct stats_area *stats;
	struct fcgi_spawner *spawner;	/* --fastcgi-spawn processes */
	bool stopping;
	time_t restart_window;
	int restarts;
};

static pid_t spawn(struct master *m, int i)
{
	struct worker_stats *slot = stats_claim(m->stats);
	pid_t pid;

	if (!slot) {
		fprintf(stderr, "zchttpd: too many draining workers; "
			"worker %d not started\n", i);
		return 0;
	}
	pid = fork();
	if (pid < 0)
		slot->pid = 0;
	if (pid > 0)
		slot->pid = pid;	/* the child sets it too: no race */
	if (pid != 0)
		return pid;
	/* Child: only our own listening socket stays open. */
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
	w->rootfd = m->rootfd;
	w->logfd = m->logfd;
	w->stats = slot;
	w->all_stats = m->stats;
	w->nworkers = m->nworkers;
	int err = worker_run(w);
	if (err)
		fprintf(stderr, "zchttpd: worker %d: %s\n", i, strerror(-err));
	_exit(err ? 1 : 0);
}

static int open_root(const char *root)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "zchttpd: --root %s: %s\n", root,
			strerror(errno));
	return fd;
}

static int drop_privileges(const char *user)
{
	struct passwd *pw = getpwnam(user);

	if (!pw) {
		fprintf(stderr, "zchttpd: --user %s: no such user\n", user);
		return -1;
	}
	if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(pw->pw_uid) < 0) {
		fprintf(stderr, "zchttpd: --user %s: %s\n", user,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* The master opens the log, as it does the root and the sockets, so that
 * workers under --user can append to a file only root may write. */
static int open_log(const char *path)
{
	int fd;

	if (!path)
		return -1;
	fd = access_log_open_fd(path);
	if (fd < 0)
		fprintf(stderr, "zchttpd: --access-log %s: %s\n", path,
			strerror(-fd));
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
	if (tls_create(&cfg->tls, &cfg->tls_ctx, err, sizeof(err))) {
		fprintf(stderr, "zchttpd: TLS: %s\n", err);
		return -1;
	}
	return 0;
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

/* SIGUSR1 (logrotate): every worker reopens the access log by its path
 * (each flushes what it buffered to the old file first); the master
 * reopens its own copy, which workers started later inherit.  Master and
 * workers run as the same user, so what one may open the others may. */
static void reopen_logs(struct master *m)
{
	int fd;

	if (!m->opt.cfg.access_log)
		return;
	fd = open_log(m->opt.cfg.access_log);
	if (fd >= 0) {
		if (m->logfd >= 0)
			close(m->logfd);
		m->logfd = fd;
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
	struct options o;
	int fd, logfd;

	if (options_parse(&o, m->argc, m->argv) || o.help || o.version) {
		fprintf(stderr, "zchttpd: reload refused: bad options\n");
		options_free(&o);
		return;
	}
	if (strcmp(o.cfg.listen, m->opt.cfg.listen) ||
	    (o.cfg.workers && o.cfg.workers != m->nworkers) ||
	    !o.cfg.tls.listen != !m->opt.cfg.tls.listen ||
	    (o.cfg.tls.listen &&
	     strcmp(o.cfg.tls.listen, m->opt.cfg.tls.listen))) {
		fprintf(stderr, "zchttpd: reload refused: --listen, "
			"--tls-listen and --workers need a restart\n");
		options_free(&o);
		return;
	}
	/* New certificates (renewed ones: the same paths) are read now. */
	if (load_tls(&o.cfg)) {
		fprintf(stderr, "zchttpd: reload refused\n");
		options_free(&o);
		return;
	}
	if (fcgi_spawn_adopt(m->spawner, &o.cfg)) {
		options_free(&o);
		return;
	}
	fd = open_root(o.cfg.root);
	if (fd < 0) {
		fcgi_spawn_adopt(m->spawner, &m->opt.cfg);	/* back */
		options_free(&o);
		return;
	}
	logfd = open_log(o.cfg.access_log);
	/* Reopening lets a reload follow a rotated log.  Where that is no
	 * longer allowed (--user) the same log goes on in the same file. */
	if (o.cfg.access_log && logfd < 0 && m->logfd >= 0 &&
	    m->opt.cfg.access_log &&
	    !strcmp(o.cfg.access_log, m->opt.cfg.access_log)) {
		logfd = fcntl(m->logfd, F_DUPFD_CLOEXEC, 3);
		if (logfd >= 0)
			fprintf(stderr, "zchttpd: keeping the access log "
				"open since start\n");
	}
	if (o.cfg.access_log && logfd < 0) {
		fprintf(stderr, "zchttpd: reload refused\n");
		fcgi_spawn_adopt(m->spawner, &m->opt.cfg);	/* back */
		close(fd);
		options_free(&o);
		return;
	}
	close(m->rootfd);
	m->rootfd = fd;
	/* The old generation keeps its own copy until it exits. */
	if (m->logfd >= 0)
		close(m->logfd);
	m->logfd = logfd;
	options_free(&m->opt);
	m->opt = o;
	for (int i = 0; i < m->nworkers; i++) {
		pid_t old = m->pids[i];

		m->pids[i] = spawn(m, i);
		if (old > 0) {
			remember_old(m, old);
			kill(old, SIGTERM);
		}
	}
	fprintf(stderr, "zchttpd: reloaded\n");
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
			if (m->stopping)
				break;
			fprintf(stderr, "zchttpd: worker %d (pid %d) %s %d; "
				"restarting it\n", i, (int)pid,
				WIFSIGNALED(status) ? "killed by signal"
						    : "exited with",
				WIFSIGNALED(status) ? WTERMSIG(status)
						    : WEXITSTATUS(status));
			if (time(NULL) - m->restart_window > 60) {
				m->restart_window = time(NULL);
				m->restarts = 0;
			}
			if (++m->restarts > 10) {
				fprintf(stderr, "zchttpd: workers keep dying; "
					"stopping\n");
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
			fprintf(stderr, "zchttpd: --event io_uring: %s "
				"(io_uring disabled, or older than Linux 5.19?)\n",
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
		fprintf(stderr, "zchttpd: --listen %s: not an address\n",
			m.opt.cfg.listen);
		return 2;
	}
	struct sockaddr_storage tls_ss;
	socklen_t tls_sslen = 0;

	if (m.opt.cfg.tls.listen &&
	    listen_parse(m.opt.cfg.tls.listen, &tls_ss, &tls_sslen)) {
		fprintf(stderr, "zchttpd: --tls-listen %s: not an address\n",
			m.opt.cfg.tls.listen);
		return 2;
	}
	if (load_tls(&m.opt.cfg))
		return 1;
	m.rootfd = open_root(m.opt.cfg.root);
	if (m.rootfd < 0)
		return 1;
	m.logfd = open_log(m.opt.cfg.access_log);
	if (m.opt.cfg.access_log && m.logfd < 0)
		return 1;
	if (m.opt.check_only) {
		/* -t: what start-up would refuse, refused above; the user
		 * too.  The address is only parsed: binding it would fail
		 * against the running server a check is usually made for. */
		if (m.opt.user && !getpwnam(m.opt.user)) {
			fprintf(stderr, "zchttpd: --user %s: no such user\n",
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
			fprintf(stderr, "zchttpd: --listen %s: %s\n",
				m.opt.cfg.listen, strerror(-m.lfds[i]));
			return 1;
		}
		m.tls_lfds[i] = -1;
		if (!m.opt.cfg.tls.listen)
			continue;
		m.tls_lfds[i] = listen_open(&tls_ss, tls_sslen, 4096);
		if (m.tls_lfds[i] < 0) {
			fprintf(stderr, "zchttpd: --tls-listen %s: %s\n",
				m.opt.cfg.tls.listen, strerror(-m.tls_lfds[i]));
			return 1;
		}
	}
	if (m.opt.user && drop_privileges(m.opt.user))
		return 1;
	m.stats = stats_area_create();
	if (!m.stats) {
		perror("zchttpd: mmap");
		return 1;
	}
	/* After --user: the applications run as the workers do. */
	if (fcgi_spawn_start(&m.opt.cfg, (unsigned)m.nworkers, &m.spawner)) {
		fcgi_spawn_stop(m.spawner);
		return 1;
	}

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);

	listen_name(m.lfds[0], name, sizeof(name));
	fprintf(stderr, "zchttpd: serving %s on http://%s/ with %d worker%s\n",
		m.opt.cfg.root, name, m.nworkers, m.nworkers > 1 ? "s" : "");
	if (m.opt.cfg.tls.listen) {
		listen_name(m.tls_lfds[0], name, sizeof(name));
		fprintf(stderr, "zchttpd: and on https://%s/ (records: %s)\n",
			name, tls_record_layer(m.opt.cfg.tls_ctx));
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
	fprintf(stderr, "zchttpd: stopped\n");
	return 0;
}
