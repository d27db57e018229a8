/*
 * worker.c - one worker process: its loop, its signals, graceful stop.
 *
 * Signals arrive through a signalfd in the loop, so a handler never runs in
 * the middle of connection code.  SIGTERM (or SIGINT, SIGQUIT) starts a
 * graceful stop: the worker stops accepting, closes idle connections at
 * once, lets in-flight responses finish, and exits when the last
 * connection is gone or the shutdown deadline passes.  SIGUSR1 reopens the
 * access logs and the error log (the master forwards it; main.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cache.h"
#include "conn.h"
#include "errlog.h"
#include "respond.h"
#include "vhost.h"
#include "worker.h"

static struct ev_timer_list t_shutdown;
static struct ev_timer shutdown_timer;

static void on_shutdown_deadline(struct ev_loop *loop, struct ev_timer *t)
{
	(void)t;
	ev_stop(loop);
}

static void begin_stop(struct zh_worker *w)
{
	if (w->stopping)
		return;
	w->stopping = true;
	ev_del(w->loop, w->lfd);
	close(w->lfd);
	w->lfd = -1;
	if (w->tls_lfd >= 0) {
		ev_del(w->loop, w->tls_lfd);
		close(w->tls_lfd);
		w->tls_lfd = -1;
	}
	conn_close_idle(w);
	proxy_worker_stop(w);
	ev_timer_arm(w->loop, &t_shutdown, &shutdown_timer,
		     on_shutdown_deadline);
}

static void on_signal(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	struct signalfd_siginfo si;
	struct zh_worker *w = data;

	(void)loop;
	(void)ev;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ||
		    si.ssi_signo == SIGQUIT)
			begin_stop(w);
		if (si.ssi_signo == SIGUSR1) {
			int err = errlog_reopen();

			if (err)
				zh_log(ZL_ERROR, "reopening the error log: %s "
				       "(still writing to the old file)",
				       strerror(-err));
			vhost_reopen_logs(w);
		}
		/* SIGHUP is the master's business: it starts new workers and
		 * stops us with SIGTERM. */
	}
}

static void on_accept(struct ev_loop *loop, int fd, uint32_t ev, void *data)
{
	(void)loop;
	(void)fd;
	(void)ev;
	conn_accept_all(data, false);
}

static void on_accept_tls(struct ev_loop *loop, int fd, uint32_t ev,
			  void *data)
{
	(void)loop;
	(void)fd;
	(void)ev;
	conn_accept_all(data, true);
}

static void on_disk_done(struct ev_loop *loop, int fd, uint32_t ev,
			 void *data)
{
	struct zh_worker *w = data;

	(void)loop;
	(void)fd;
	(void)ev;
	diskio_complete(w->diskio);
}

void worker_publish_stats(struct zh_worker *w)
{
	struct zc_io_stats io;

	zc_io_stats(&io);
	w->stats->zc_bytes_by_reference = io.bytes_by_reference;
	w->stats->zc_bytes_copied = io.bytes_copied;
	cache_stats(w->cache, &w->stats->cache);
}

/* Nothing to do here: waking the loop is the point (before_sleep runs
 * the cache's housekeeping). */
static void on_cache_timer(struct ev_loop *loop, struct ev_timer *t)
{
	(void)loop;
	(void)t;
}

static void before_sleep(struct ev_loop *loop, void *data)
{
	struct zh_worker *w = data;

	/* The loop has run the posted work (event.h) by now. */
	vhost_flush_logs(w);
	if (cache_maintain(w->cache, ev_now_ms(loop)) >= 0 &&
	    !ev_timer_armed(&w->cache_timer))
		ev_timer_arm(loop, &w->t_cache, &w->cache_timer, on_cache_timer);
	worker_publish_stats(w);
	if (w->stopping && w->nconns == 0)
		ev_stop(loop);
}

void block_control_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGQUIT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigprocmask(SIG_BLOCK, set, NULL);
}

int worker_run(struct zh_worker *w)
{
	const struct zh_config *cfg = w->cfg;
	sigset_t set;
	int err;

	block_control_signals(&set);
	signal(SIGPIPE, SIG_IGN);	/* iol_write reports EPIPE instead */
	w->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (w->sigfd < 0)
		return -errno;

	err = cfg->io_uring ? ev_loop_create_ring(&w->loop)
			    : ev_loop_create(&w->loop);
	if (err)
		return err;
	err = conn_worker_init(w);
	if (err)
		return err;
	ev_timer_list_init(&w->t_header, cfg->header_timeout_ms);
	ev_timer_list_init(&w->t_idle, cfg->keepalive_timeout_ms);
	ev_timer_list_init(&w->t_send, cfg->send_timeout_ms);
	ev_timer_list_init(&w->t_linger, 2000);
	ev_timer_list_init(&w->t_fcgi, cfg->fcgi_timeout_ms);
	ev_timer_list_init(&w->t_fcgi_idle, cfg->fcgi_idle_ms);
	ev_timer_list_init(&w->t_h2_idle, cfg->h2.idle_timeout_ms);
	ev_timer_list_init(&w->t_h2_settings, cfg->h2.settings_timeout_ms);
	ev_timer_list_init(&w->t_cache, 100);
	ev_timer_list_init(&t_shutdown, cfg->shutdown_timeout_ms);
	ev_timer_list_register(w->loop, &w->t_header);
	ev_timer_list_register(w->loop, &w->t_idle);
	ev_timer_list_register(w->loop, &w->t_send);
	ev_timer_list_register(w->loop, &w->t_linger);
	ev_timer_list_register(w->loop, &w->t_fcgi);
	ev_timer_list_register(w->loop, &w->t_fcgi_idle);
	ev_timer_list_register(w->loop, &w->t_h2_idle);
	ev_timer_list_register(w->loop, &w->t_h2_settings);
	ev_timer_list_register(w->loop, &w->t_cache);
	ev_timer_list_register(w->loop, &t_shutdown);
	err = cache_attach(w->cache_zone, (unsigned)w->index, &w->cache);
	if (err)
		return err;
	if (cfg->io_threads) {
		err = diskio_start((int)cfg->io_threads, &w->diskio);
		if (err)
			return err;
		err = ev_add(w->loop, diskio_fd(w->diskio), EPOLLIN,
			     on_disk_done, w);
		if (err)
			return err;
	}
	err = vhost_worker_init(w, w->site_rootfds, w->site_logfds);
	if (err)
		return err;
	err = fastcgi_worker_init(w);
	if (err)
		return err;
	err = proxy_worker_init(w);
	if (err)
		return err;
	err = router_init(&w->router, cfg);
	if (err)
		return err;
	if ((err = ev_add(w->loop, w->sigfd, EPOLLIN, on_signal, w)) ||
	    (err = ev_add(w->loop, w->lfd, EPOLLIN, on_accept, w)) ||
	    (w->tls_lfd >= 0 &&
	     (err = ev_add(w->loop, w->tls_lfd, EPOLLIN, on_accept_tls, w))))
		return err;
	ev_set_before_sleep(w->loop, before_sleep, w);
	w->stats->pid = getpid();
	zh_log(ZL_DEBUG, "worker %d (pid %d) serving %u site%s", w->index,
	       (int)getpid(), cfg->nsites, cfg->nsites > 1 ? "s" : "");

	err = ev_run(w->loop);

	/* Deadline passed or all done: whatever is left is cut off. */
	conn_close_all(w);	/* abandons their helper jobs, aborts their
				 * FastCGI requests */
	fastcgi_worker_fini(w);
	proxy_worker_fini(w);
	router_fini(&w->router);
	diskio_stop(w->diskio);	/* their requests are gone: jobs freed */
	vhost_worker_fini(w);
	worker_publish_stats(w);	/* final: the master folds them when we exit */
	cache_detach(w->cache);
	ev_loop_destroy(w->loop);
	return err;
}
