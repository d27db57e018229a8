/*
 * proxy_head.h - the heads an intermediary sends (RFC 9110 7.6, RFC 9112):
 * the client's request as it goes to the upstream, and the upstream's
 * response as it goes to the client.  Pure functions over parsed heads,
 * built with respond.h's field builder into the caller's memory; unit
 * tested alone (server/tests/test_proxy_head.c).
 *
 * Both directions drop the hop-by-hop fields (Connection, Keep-Alive,
 * Proxy-Connection, TE, Transfer-Encoding, Upgrade, Trailer,
 * Proxy-Authenticate, Proxy-Authorization) and every field the Connection
 * fields name, and write the framing themselves: the body is framed by
 * us, whatever the other side wrote, so a message can never mean one
 * length to us and another to the next hop (no smuggling).  Via is added
 * (unless --proxy-via off).
 */
#ifndef ZC_PROXY_HEAD_H
#define ZC_PROXY_HEAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "http_parser.h"
#include "http_response.h"
#include "proxy.h"

enum ph_framing {
	PH_NONE,			/* no body, no length field */
	PH_LENGTH,			/* Content-Length: length */
	PH_CHUNKED,			/* Transfer-Encoding: chunked */
	PH_CLOSE,			/* the connection's end (HTTP/1.0) */
};

/* What the request head to the upstream is made of. */
struct ph_request {
	const struct http_request *req;	/* the client's, parsed */
	const char *target;		/* the request-target to send */
	size_t target_len;
	const struct zh_proxy_config *pc;
	const struct zh_upstream_server *server;
	const struct sockaddr_storage *peer;	/* the client */
	bool secure;			/* the client came over TLS */
	bool h2;			/* ... over HTTP/2 (cookie crumbs are
					 * joined, RFC 9113 8.2.3) */
	enum ph_framing framing;	/* PH_NONE, PH_LENGTH, PH_CHUNKED */
	uint64_t length;
	bool upgrade;			/* pass Upgrade on (a tunnel) */
};

/* The request head into buf[0..cap): its length, or -ENOSPC. */
ssize_t ph_request_head(const struct ph_request *in, char *buf, size_t cap);

/* What the response head to the client is made of. */
struct ph_response {
	const struct http_response *resp;	/* the upstream's, parsed */
	const struct zh_proxy_config *pc;
	enum ph_framing framing;	/* how we send the body */
	uint64_t length;		/* PH_LENGTH */
	bool keep_alive;		/* the client's connection stays */
	bool interim;			/* a 1xx passed on: no framing, no
					 * Connection */
	bool upgrade;			/* 101: Upgrade and Connection: upgrade */
};

/* The response head into buf[0..cap): its length, or -ENOSPC. */
ssize_t ph_response_head(const struct ph_response *in, char *buf,
			 size_t cap);

/* Whether the client's address is in --proxy-trust (its X-Forwarded-*
 * and Forwarded are kept and extended). */
bool ph_trusted(const struct zh_proxy_config *pc,
		const struct sockaddr_storage *peer);

#endif
