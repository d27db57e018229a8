/*
 * conn_int.h - a connection's state, shared by conn.c (the state machine
 * that owns it) and request.c (the request.h interface handlers use).
 * request.c records what a handler asks for, reads the request body
 * through the connection's socket (sock.h) and posts the connection;
 * conn.c acts on it from its own loop (event.h's posted work), so
 * neither calls the other.
 */
#ifndef ZC_CONN_INT_H
#define ZC_CONN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "event.h"
#include "http_parser.h"
#include "request.h"
#include "sock.h"
#include "zc.h"
#include "zchttpd.h"

#define IN_CAP (32u << 10)		/* request head buffer */
#define HEAD_ARENA (8u << 10)		/* response heads, after the input */
#define OUT_HIGH_WATER (256u << 10)	/* stop parsing beyond this backlog */
#define MAX_INFLIGHT 32			/* pinned entries per connection */

enum conn_state { C_IDLE, C_READING, C_WRITING, C_WAITING, C_LINGER };

struct zh_conn {
	struct zh_conn *prev, *next;	/* worker's list */
	struct ev_post post;		/* process() before the loop sleeps */
	struct zh_worker *w;
	struct zh_sock sock;		/* the socket; its buffer holds the
					 * input, then the head arena (none
					 * held when idle) */
	enum conn_state state;
	struct ev_timer timer;
	size_t arena_used;		/* heads queued in out; reset when out
					 * is empty (nothing names them) */
	struct http_parser parser;
	zc_agg *out;
	bool close_after;		/* close once out is sent */
	bool linger;			/* the client may still be sending:
					 * close via LINGER, not at once */
	bool active;			/* req waits in its handler */
	bool paused;			/* ... which waits for the output to
					 * drain (request_send said so) */
	bool in_process;		/* process() is on the stack */
	bool rdhup_seen;		/* half-closed with requests pending */
	struct zh_request req;		/* the request being answered */
	uint64_t req_start;		/* stream offset where its response
					 * begins (sent + queued then) */
	struct sockaddr_storage peer;
	struct sockaddr_storage local;	/* ours, asked for when needed */
	bool have_local;
	struct zh_addr_memo addr_memo;	/* request_addr_memo */
	struct h2_conn *h2;		/* it speaks HTTP/2 (h2.h): the socket
					 * is h2_conn.c's, the rest here unused */
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

/* Close c now, whatever it was doing (HTTP/2 ends its connections so). */
void conn_close(struct zh_conn *c);

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

#endif
