/*
 * fcgi_upstream.h - connections to FastCGI backends, per worker.
 *
 * A link is one connection to a backend, kept for the next request with
 * FCGI_KEEP_CONN.  A socket link serves one request at a time; a link on
 * the zero-copy transport (which only our libfcgi speaks) carries up to
 * --fastcgi-pipeline requests in flight, each sent whole before the next
 * and answered in order: the application finds its next request waiting
 * when it finishes one, and takes it without sleeping.  Each backend has
 * a bounded pool of links (--fastcgi-conns) and a bounded queue of
 * requests waiting for one (--fastcgi-queue; 503 beyond).
 * Links are non-blocking and live in the worker's loop: a slow or dead
 * backend never stalls anything else.  The transport -- bytes on a socket,
 * or a libzc channel whose messages carry the records as descriptors -- is
 * this file's business alone: above it a link sends and receives records
 * as aggregates.
 *
 * A request talks to its link through a fcgi_client: the link calls it
 * back (attached, one record at a time, failed, writable) from the loop.
 */
#ifndef ZC_FCGI_UPSTREAM_H
#define ZC_FCGI_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "fcgi_proto.h"
#include "zc.h"

struct zh_worker;
struct zh_fcgi_route;
struct fcgi_link;

struct fcgi_client {
	/* A link is ready for this request: send its records now. */
	void (*attached)(struct fcgi_client *cl, struct fcgi_link *l);
	/* One record for this request (STDOUT, STDERR, END_REQUEST).
	 * `content` (NULL when empty) is the callee's to keep or release.
	 * After END_REQUEST the client must release the link. */
	void (*record)(struct fcgi_client *cl, const struct fcgi_header *h,
		       zc_agg *content);
	/* The link failed or timed out before END_REQUEST (502 or 504 is
	 * what a server answers); the link is gone when this returns.
	 * begun false: the request was in flight behind another and the
	 * application cannot have begun it (it may be sent again). */
	void (*failed)(struct fcgi_client *cl, int status, bool begun);
	/* What the client sent drained below the low-water mark. */
	void (*writable)(struct fcgi_client *cl);
	uint16_t request_id;		/* set before `attached`: the id of
					 * every record of this request */
	struct fcgi_client *qnext;	/* the backend's queue (private) */
	bool queued;			/* (private) */
};

/* Ask for a link to the route's backend: one now (attached is called
 * before this returns), one being opened, or a place in the queue.
 * Returns 0, or 503 when the queue is full, 502 when a connection
 * cannot even be started. */
int fcgi_link_acquire(struct zh_worker *w, const struct zh_fcgi_route *rt,
		      struct fcgi_client *cl);
/* A queued client gives up (its request went away). */
void fcgi_link_cancel(struct zh_worker *w, const struct zh_fcgi_route *rt,
		      struct fcgi_client *cl);

/* Queue records of cl's request (their slices move out of `records`,
 * which is left empty) and send what the backend takes now; `last`: these
 * end the request's records (its STDIN is closed).  0, or a negative
 * errno (the connection broke, or out of memory): the client then aborts.
 * Like every call below, it never calls this client back; records arrive
 * only from the link's own wake-ups. */
int fcgi_link_send(struct fcgi_link *l, zc_agg *records, bool last);
/* Bytes queued and not yet taken by the backend (the newest request's:
 * one is pipelined behind another only once all of that one's went). */
size_t fcgi_link_queued(const struct fcgi_link *l);
/* Hold back (or resume) the delivery of records: the client receiving
 * them has its own output full.  While held, the link does not read. */
void fcgi_link_hold(struct fcgi_link *l, bool hold);
/* cl's request is done with the link.  reusable: it ended cleanly with
 * END_REQUEST and every record of it was sent: keep the connection (and
 * the requests in flight behind it).  Not reusable: the connection
 * closes, and requests in flight behind cl's fail (502). */
void fcgi_link_release(struct fcgi_link *l, struct fcgi_client *cl,
		       bool reusable);
/* cl's request goes away mid-way.  Its records are dropped until its
 * END_REQUEST and the connection is reused; alone on the link it is also
 * sent FCGI_ABORT_REQUEST (the application may stop early).  One whose
 * records were cut short with others in flight closes the connection. */
void fcgi_link_abort(struct fcgi_link *l, struct fcgi_client *cl);

/* Per worker: set up and tear down the pools (fastcgi.h calls these). */
int fcgi_upstreams_init(struct zh_worker *w);
void fcgi_upstreams_fini(struct zh_worker *w);

#endif
