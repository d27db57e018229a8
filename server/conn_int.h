/*
 * conn_int.h - a connection's state, shared by conn.c (the state machine
 * that owns it) and request.c (the request.h interface handlers use).
 * request.c only records what a handler asks for and posts the
 * connection; conn.c acts on it from its own loop, so neither calls the
 * other.
 */
#ifndef ZC_CONN_INT_H
#define ZC_CONN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "event.h"
#include "http_parser.h"
#include "request.h"
#include "zc.h"
#include "zchttpd.h"

#define IN_CAP (32u << 10)		/* request head buffer */
#define HEAD_ARENA (8u << 10)		/* response heads, after the input */
#define OUT_HIGH_WATER (256u << 10)	/* stop parsing beyond this backlog */
#define MAX_INFLIGHT 32			/* pinned entries per connection */
#define SPILL_MAX (8u << 20)		/* see conn_ring.c's take_input */

enum conn_state { C_IDLE, C_READING, C_WRITING, C_WAITING, C_LINGER };

struct zh_conn {
	struct zh_conn *prev, *next;	/* worker's list */
	struct ev_post post;		/* process() before the loop sleeps */
	struct zh_worker *w;
	int fd;
	zc_sink sink;			/* fd, probed once for iol_write */
	struct tls_conn *tls;		/* HTTPS (tls.h), or NULL */
	enum conn_state state;
	struct ev_timer timer;
	char *in;			/* IN_CAP bytes, then the head arena;
					 * NULL when idle */
	size_t in_len;
	size_t arena_used;		/* heads queued in out; reset when out
					 * is empty (nothing names them) */
	struct http_parser parser;
	zc_agg *out;
	bool close_after;		/* close once out is sent */
	bool linger;			/* the client may still be sending:
					 * close via LINGER, not at once */
	uint32_t events;		/* epoll mask registered */
	bool in_epoll;			/* registered at all (see conn_new) */
	bool active;			/* req waits in its handler */
	bool paused;			/* ... which waits for the output to
					 * drain (request_send said so) */
	bool in_process;		/* process() is on the stack */
	bool rdhup_seen;		/* half-closed with requests pending */
	/* The io_uring loop's ring receive (conn_ring.c): */
	bool rx_on;			/* armed: input arrives by itself */
	bool rx_draining;		/* cancelled, its last call to come */
	bool rx_eof;			/* it saw the end (or an error) */
	char *spill;			/* input that arrived after the head
					 * buffer filled, in order, read before
					 * the socket (at most SPILL_MAX) */
	size_t spill_len, spill_cap;
	struct zh_request req;		/* the request being answered */
	uint64_t req_start;		/* stream offset where its response
					 * begins (sent + queued then) */
	struct sockaddr_storage peer;
	struct sockaddr_storage local;	/* ours, asked for when needed */
	bool have_local;
	/* Cache entries used by queued responses, oldest first, each with
	 * the stream offset where its response ends: once `sent` passes
	 * it, the entry is unpinned. */
	uint64_t sent;
	struct inflight {
		struct cache_entry *e;
		uint64_t end;
	} fl[MAX_INFLIGHT];
	unsigned nfl;
};

/* The stream offset just past everything queued. */
static inline uint64_t conn_queued_end(const struct zh_conn *c)
{
	return c->sent + zc_agg_len(c->out);
}

/* Have conn.c's process() run for c before the loop sleeps (handlers never
 * re-enter the connection): c->post, whose function conn.c set.  Inside
 * process() itself there is no need: its loop looks again. */
static inline void conn_post(struct zh_conn *c)
{
	if (!c->in_process)
		ev_post(c->w->loop, &c->post);
}

/* conn_ring.c: input from the io_uring loop's ring receive. */
enum ring_wait { RING_NO = 0, RING_WAITS, RING_FREED };
enum ring_wait conn_ring_wait(struct zh_conn *c);
void conn_ring_stop(struct zh_conn *c);
void conn_ring_forget(struct zh_conn *c);
/* Move what the ring received ahead (the spill) into the input; true if
 * anything moved. */
bool conn_spill_take(struct zh_conn *c);

/* Input from the connection, decrypted if it is HTTPS: bytes, 0 at the
 * end, -EAGAIN, or another -errno (conn.c). */
ssize_t conn_recv(struct zh_conn *c, void *buf, size_t len);
/* Input received ahead of the socket (the ring's spill, OpenSSL's
 * decrypted bytes) into c->in; true if any was added. */
bool conn_refill(struct zh_conn *c);

/* conn.c, for conn_ring.c */
void conn_free(struct zh_conn *c);
void conn_got_input(struct zh_conn *c);
bool conn_want_input(struct zh_conn *c);
char *conn_in_get(struct zh_worker *w);

#endif
