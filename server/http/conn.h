/*
 * conn.h - HTTP connections, as the worker sees them (the handlers see
 * them through request.h).
 */
#ifndef ZC_CONN_H
#define ZC_CONN_H

#include <stdbool.h>

struct zh_worker;

/* The worker's sockets (sock.h), once its loop exists: buffers sized for a
 * request head and its response heads, HTTPS if configured.  0 or a
 * negative errno. */
int conn_worker_init(struct zh_worker *w);
/* Accept what the listener (the HTTPS one if tls) has, up to a batch, and
 * read each new connection's first request (or handshake) at once.
 * Returns 0 or a negative errno. */
int conn_accept_all(struct zh_worker *w, bool tls);
/* Close idle connections now; the others close after their response. */
void conn_close_idle(struct zh_worker *w);
/* Close every connection now (shutdown deadline, or the worker's end),
 * and free what the sockets shared. */
void conn_close_all(struct zh_worker *w);

#endif
