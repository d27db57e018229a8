/* options.h - zchttpd's command line and configuration file. */
#ifndef ZC_OPTIONS_H
#define ZC_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "zchttpd.h"

struct opt_str;

struct options {
	struct zh_config cfg;
	const char *config;	/* --config FILE, re-read on SIGHUP */
	const char *user;	/* --user NAME */
	bool help, version;
	bool check_only;	/* -t: check the options and exit */
	struct opt_str *strings;	/* the values' copies (options.c) */
	unsigned fcgi_cap;		/* room in cfg.fcgi */
	unsigned tls_cap;		/* room in cfg.tls.certs */
	unsigned sites_cap, names_cap;	/* room in cfg.sites, cfg.names */
	/* While parsing: where the option being applied was written (file
	 * NULL: the command line), and the `server { }` block it is in
	 * (0: none). */
	const char *file;
	unsigned line;
	unsigned block;
	unsigned upstream;	/* the `upstream { }` block being read:
				 * its group + 1 (0: none) */
	unsigned route_seq;	/* routes so far (FastCGI and proxy):
				 * the order the router tries them in */
};

void options_defaults(struct options *o);
/* Parse argv (and any --config file).  Returns 0, or -1 after printing
 * the problem to stderr (the caller prints usage and exits 2). */
int options_parse(struct options *o, int argc, char **argv);
void options_usage(FILE *f);
/* A copy of s that lives until options_free(o). */
const char *options_keep(struct options *o, const char *s);
/* A configuration error, as "FILE:LINE: message" when it was written in
 * a file (`where` NULL: the option being parsed; else "FILE:LINE"). */
void options_error(const struct options *o, const char *where,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Settings whose default depends on the number of workers (the cache's
 * --cache-small-max and --cache-copy-max: ZH_BY_WORKERS until then). */
void options_for_workers(struct zh_config *c, int nworkers);
/* A decimal number up to max; a size ("256M", "64k", "1G" or plain bytes,
 * at most 1 TiB).  0, or -1 for anything else. */
int options_uint(const char *v, unsigned long max, unsigned long *out);
int options_size(const char *v, unsigned long *out);
/* Free the strings options_parse copied (o's pointers become invalid). */
void options_free(struct options *o);

#endif
