/*
 * sock.h - a connection's socket, below the protocol that speaks on it (in
 * the spirit of h2o's h2o_socket_t and nginx's c->recv/c->send).
 *
 * The protocol above -- conn.c's HTTP/1.1 state machine, or h2_conn.c's
 * HTTP/2 connection once it took the socket over (sock_set_hooks) -- sees:
 *
 *   s->in        one input buffer (sock_in.h): the stream's bytes in order,
 *                however they came, parsed in place; a tail of its own
 *                after it;
 *   reading      sock_read_start(): the socket puts input into s->in by
 *                itself and calls the owner's `read` hook after each batch,
 *                at the end of the stream or when it breaks;
 *                sock_drain_start(): the same with the bytes dropped (a
 *                close that lingers); sock_try_read(): the same, reading
 *                at once before waiting (a new connection's first request);
 *   readiness    sock_wait(): call the `ready` hook when the socket has
 *                input (SOCK_IN), room (SOCK_OUT) or the peer hung up
 *                (SOCK_HUP); the owner then reads itself -- sock_read() into
 *                s->in, sock_read_agg() straight into an aggregate (a
 *                request body, by reference where it can);
 *   writing      sock_send(): an aggregate, as much as the socket takes;
 *   the end      sock_shutdown() (our side is done), sock_close().
 *
 * Behind that, the backends, which the owner never names:
 *
 *   plain   epoll readiness, recv, and iol_write (sendmsg, sendfile);
 *   ring    (the io_uring loop, not HTTPS) while reading, input arrives by a
 *           multishot ring receive, with no epoll registration and no recv
 *           per request; everything else as plain (sock_ring.c);
 *   TLS     OpenSSL: the handshake before the first read, SSL_read, and
 *           SSL_write of a bounce copy -- or iol_write as plain where the
 *           kernel took the records (kTLS) (sock_tls.c).
 *
 * The input's order is kept in one place, sock_in_next(): bytes a ring
 * receive delivered behind a full buffer come first, the socket is not
 * read while a cancelled receive may still deliver (its readiness is not
 * reported either), and bytes OpenSSL holds decoded come before the
 * socket's.  Input the socket holds that no readiness event will announce
 * is moved into s->in by sock_fill(), which the owner calls before it waits
 * (no system call).
 *
 * Hooks run on the loop, from the socket's own wake-ups, and from the
 * calls that say so (sock_try_read); never from the others.
 */
#ifndef ZC_SOCK_H
#define ZC_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sock_in.h"
#include "zc.h"

struct ev_loop;
struct zh_sock;
struct zh_tls;
struct tls_conn;
struct tls_stats;

/* Readiness (sock_wait, the ready hook). */
#define SOCK_IN 1u			/* input to read */
#define SOCK_OUT 2u			/* room to write */
#define SOCK_HUP 4u			/* the peer half-closed */
#define SOCK_ERR 8u			/* hung up or failed (reported always) */

/* The owner's hooks. */
struct sock_hooks {
	/* Reading (sock_read_start, sock_drain_start): res > 0 bytes were
	 * added to s->in (never when draining), 0 the peer ended the
	 * stream, < 0 it broke (-errno).  Also, in any mode, when input
	 * was lost (more arrived than the socket may hold): the owner must
	 * close then. */
	void (*read)(struct zh_sock *s, ssize_t res);
	/* Readiness (sock_wait): SOCK_* bits. */
	void (*ready)(struct zh_sock *s, unsigned events);
};

/* What the sockets of one worker share. */
struct sock_env {
	struct ev_loop *loop;
	struct sock_bufs bufs;		/* input buffers and their spares */
	struct zh_tls *tls;		/* contexts for HTTPS; NULL: none */
	struct tls_stats *tls_stats;	/* counters (tls.h) */
	char *bounce;			/* one TLS record, encrypted or
					 * decrypted by copy (with tls) */
};

struct sock_layer;

struct zh_sock {
	int fd;
	struct sock_in in;		/* the input, in order */
	void *data;			/* the owner's */
	/* The rest is the socket's own. */
	struct sock_env *env;
	const struct sock_hooks *hooks;
	const struct sock_layer *layer;	/* plain or TLS (sock_int.h) */
	struct sock_in_src src;		/* the layer, as s->in reads it */
	struct tls_conn *tls;
	zc_sink sink;			/* fd, probed once for iol_write */
	uint8_t mode;			/* what the owner asked (sock.c) */
	bool ring;			/* input by ring receives (sock.c) */
	unsigned want;			/* SOCK_* asked by sock_wait */
	uint32_t events;		/* epoll mask registered */
	bool in_epoll;			/* registered at all */
	bool handshake;			/* TLS: not yet established */
	bool handshake_out;		/* ... and it waits for room */
	bool rx_on;			/* a ring receive is armed */
	bool rx_draining;		/* cancelled, its last call to come */
	bool rx_eof;			/* it saw the end (or an error) */
	bool rx_got;			/* bytes came while draining */
};

/* With tls, HTTPS sockets can be made; bounce and stats are then used.
 * cap and tail size the input buffers (sock_in.h).  0 or -ENOMEM. */
int sock_env_init(struct sock_env *env, struct ev_loop *loop, size_t cap,
		  size_t tail, struct zh_tls *tls, struct tls_stats *stats);
/* After every socket is closed. */
void sock_env_fini(struct sock_env *env);

/* sock_init's flags. */
#define SOCK_TLS 1u			/* HTTPS: the handshake comes first */
#define SOCK_TRUST_EXTENTS 2u		/* file extents are sent without a
					 * version check each (the owner
					 * revalidates its files: zc.h's
					 * zc_sink_trust_extents) */

/* A socket for fd (accepted, non-blocking, TCP).  0 or a negative errno
 * (fd is then the caller's to close). */
int sock_init(struct zh_sock *s, struct sock_env *env, int fd,
	      unsigned flags, const struct sock_hooks *hooks, void *data);
/* Close it (TLS: close_notify first if it can); what it held goes. */
void sock_close(struct zh_sock *s);
/* Our side is done (TLS: close_notify), the peer may still send. */
void sock_shutdown(struct zh_sock *s);

/* Start reading (see above); 0, or a negative errno if the socket cannot
 * wait (the stream ended already, or epoll refused): then close it. */
int sock_read_start(struct zh_sock *s);
int sock_drain_start(struct zh_sock *s);
/* Read now, then as sock_read_start: the read hook runs from this call
 * if anything came (or the stream ended). */
void sock_try_read(struct zh_sock *s);
/* Wait for readiness instead of reading (0: for nothing but errors): a
 * ring receive stops.  0 or a negative errno. */
int sock_wait(struct zh_sock *s, unsigned want);
/* What sock_wait asked, while the socket waits for readiness in epoll
 * (0 otherwise). */
unsigned sock_waits(const struct zh_sock *s);

/* Move input the socket holds ahead of the kernel into s->in; true if
 * any moved.  (Inline: the owner asks before every wait.) */
static inline bool sock_fill(struct zh_sock *s)
{
	return sock_in_fill(&s->in, &s->env->bufs, &s->src);
}
/* Whether it holds input no readiness event will announce. */
bool sock_holds(struct zh_sock *s);
/* Read into s->in: bytes added, 0 at the end, -EAGAIN, -ENOBUFS (s->in is
 * full), or -errno. */
ssize_t sock_read(struct zh_sock *s);
/* Read up to `want` bytes past s->in into *agg (NULL: a new aggregate):
 * by reference from the socket where libzc can (iol_read), by copy on
 * HTTPS.  Bytes, 0 at the end, -EAGAIN, or -errno. */
ssize_t sock_read_agg(struct zh_sock *s, zc_agg **agg, size_t want);
/* Whether bytes wait unread in the kernel (a peer that half-closed after
 * sending more). */
bool sock_peek(struct zh_sock *s);

/* Send the front of out, trimming what left: bytes, -EAGAIN (wait for
 * SOCK_OUT), or -errno. */
ssize_t sock_send(struct zh_sock *s, zc_agg *out);

/* Another owner, or another protocol of the same owner, takes the
 * socket over: its hooks from the next event on. */
static inline void sock_set_hooks(struct zh_sock *s,
				  const struct sock_hooks *hooks, void *data)
{
	s->hooks = hooks;
	s->data = data;
}

/* Whether sock_send writes with iol_write, so that an aggregate may hold
 * pipe slices (zc.h): plain TCP, or TLS whose records the kernel makes. */
bool sock_sends_by_reference(const struct zh_sock *s);
/* HTTPS. */
static inline bool sock_secure(const struct zh_sock *s)
{
	return s->tls != NULL;
}

/* HTTPS whose handshake is not done yet. */
static inline bool sock_handshaking(const struct zh_sock *s)
{
	return s->handshake;
}

/* The owner's room after the input window (NULL when no buffer is held;
 * there is one while s->in has bytes). */
static inline char *sock_tail(const struct zh_sock *s)
{
	return s->in.buf ? s->in.buf + s->env->bufs.cap : NULL;
}

/* Give the input buffer back while it is empty (an idle connection holds
 * none; the owner's tail goes with it). */
static inline void sock_release_buffer(struct zh_sock *s)
{
	sock_in_release(&s->in, &s->env->bufs);
}

/* The input window's size. */
static inline size_t sock_in_cap(const struct zh_sock *s)
{
	return s->env->bufs.cap;
}

#endif
