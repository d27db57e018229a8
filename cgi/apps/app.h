/*
 * app.h - what the demo apps share: the listening socket (fd 0 from the
 * server or spawn-fcgi, or --listen ADDR through FCGX_OpenSocket) and
 * query-string parameters.
 */
#ifndef ZC_APP_H
#define ZC_APP_H

#include <stddef.h>

/* --listen unix:PATH | PATH | HOST:PORT | :PORT: the listening socket from
 * FCGX_OpenSocket; without it fd 0 (FCGI_LISTENSOCK_FILENO).  Other
 * options are left to the caller: app_option() finds one by name.
 * Returns the socket, or -1 after printing why. */
int app_listen(int argc, char **argv);
#include <fcgiapp.h>

/* Listen (app_listen) and answer every request with answer() until
 * FCGX_Accept_r fails (SIGTERM ends it gracefully): main's result. */
int app_serve(int argc, char **argv, void (*answer)(FCGX_Request *));
/* The value of --NAME VALUE (or --NAME=VALUE) in argv, or NULL. */
const char *app_option(int argc, char **argv, const char *name);

/* The value of parameter `name` in a query string, %-decoded into out
 * (NUL-terminated): its length, or -1 if absent or longer than cap-1. */
long app_query(const char *qs, const char *name, char *out, size_t cap);

#endif
