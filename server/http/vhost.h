/*
 * vhost.h - virtual hosts: several sites on one listening socket, chosen
 * by the request's Host.
 *
 * A site has its own root, FastCGI routes and access log.  Site 0 is the
 * command line's (--root, --fastcgi, --access-log outside any block); each
 * `server { }` block of the configuration file adds one (options.c reads
 * the file, this module what a block holds).  A request goes to the site
 * one of whose names equals its host (http_host.h: port stripped, case
 * folded, trailing dot dropped); a host no site names, or none, goes to
 * the default site: the one marked `default`, else the first.  Without
 * blocks there is one site and nothing changes.
 *
 * The status endpoint (status.c), the listen address and every other
 * option are the server's, not a site's.
 */
#ifndef ZC_VHOST_H
#define ZC_VHOST_H

#include "http_parser.h"
#include "zchttpd.h"

struct options;

/* ---- configuration (options.c calls these while parsing) ---- */

/* A new site, written at o->file:o->line (NULL file: the command line's
 * site).  Returns its index, or -1 (reported). */
int vhost_add(struct options *o, const char *where_file);
/* "server {": a new site; options now go to it (o->block). */
int vhost_begin(struct options *o);
/* "}": checks the block. */
int vhost_end(struct options *o);
/* An option inside a block: 0 done, -1 bad (reported), 1 not a site's
 * option. */
int vhost_option(struct options *o, const char *name, const char *val);
/* After everything is parsed: the command line's site kept or dropped,
 * logs inherited, the default chosen, the names sorted and checked for
 * duplicates.  0, or -1 (reported). */
int vhost_finish(struct options *o);

/* ---- requests ---- */

/* The index of the site that answers `req` (never fails: the default). */
unsigned vhost_find(const struct zh_config *cfg,
		    const struct http_request *req);

/* ---- a worker's sites ---- */

/* w->vhosts from w->cfg and the descriptors the master passed (rootfds[i],
 * logfds[i]; a log descriptor equal to an earlier site's is shared). */
int vhost_worker_init(struct zh_worker *w, const int *rootfds,
		      const int *logfds);
void vhost_worker_fini(struct zh_worker *w);
/* Write out what every site's access log buffered. */
void vhost_flush_logs(struct zh_worker *w);
/* SIGUSR1: every site's access log reopened by its path. */
void vhost_reopen_logs(struct zh_worker *w);

#endif
