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
};

void options_defaults(struct options *o);
/* Parse argv (and any --config file).  Returns 0, or -1 after printing
 * the problem to stderr (the caller prints usage and exits 2). */
int options_parse(struct options *o, int argc, char **argv);
void options_usage(FILE *f);
/* Free the strings options_parse copied (o's pointers become invalid). */
void options_free(struct options *o);

#endif
