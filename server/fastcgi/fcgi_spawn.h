/*
 * fcgi_spawn.h - FastCGI applications started and supervised by the master
 * (--fastcgi-spawn), like spawn-fcgi or php-fpm's static pool.
 */
#ifndef ZC_FCGI_SPAWN_H
#define ZC_FCGI_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

struct zh_config;
struct fcgi_spawner;

/*
 * For every route with spawn > 0: per worker, a listening UNIX socket in a
 * private directory (the route's worker_addr[w]) and that worker's share
 * of the processes, each with the socket as fd 0, as FastCGI expects.
 * Call it after --user: the processes run as the workers do.  Returns 0 or
 * -1 after saying why on stderr.  *out is NULL when no route spawns.
 */
int fcgi_spawn_start(struct zh_config *cfg, unsigned nworkers,
		     struct fcgi_spawner **out);
/* A child was reaped: true if it was one of ours (unless the server is
 * stopping, its restart is then scheduled, sooner or later depending on
 * how long it lived). */
bool fcgi_spawn_reaped(struct fcgi_spawner *s, pid_t pid, int status,
		       bool stopping);
/* Start the restarts that are due.  Returns the milliseconds until the
 * next one, or -1 if none is pending. */
long fcgi_spawn_tick(struct fcgi_spawner *s);
/* Reload: the new configuration must spawn the same things; their
 * addresses are carried over.  0, or -1 after saying why. */
int fcgi_spawn_adopt(struct fcgi_spawner *s, struct zh_config *cfg);
/* SIGTERM every process, wait (bounded), SIGKILL what is left, remove the
 * sockets; frees s. */
void fcgi_spawn_stop(struct fcgi_spawner *s);

#endif
