/*
 * fcgi_client.h - a FastCGI client for tests: it plays the web server
 * towards an application, over a UNIX socket with the standard protocol
 * or over a libzc channel (the zero-copy transport, docs/fastcgi.md).
 * Records are built and parsed with zchttp/fcgi_proto.h.
 */
#ifndef ZC_FCGI_CLIENT_H
#define ZC_FCGI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zc_channel.h"
#include "fcgi_proto.h"

/* Bytes being assembled. */
struct fcl_vec {
	uint8_t *p;
	size_t len, cap;
};

void fcl_vec_put(struct fcl_vec *v, const void *p, size_t n);
void fcl_vec_free(struct fcl_vec *v);
/* Records into v: a whole record (content <= 65535); a stream's content
 * cut into records, with its empty end record if eos; BEGIN_REQUEST;
 * PARAMS from "NAME=VALUE" strings (NULL-terminated) and its end. */
void fcl_rec(struct fcl_vec *v, uint8_t type, uint16_t id, const void *p,
	     size_t n);
void fcl_stream(struct fcl_vec *v, uint8_t type, uint16_t id, const void *p,
		size_t n, bool eos);
void fcl_begin(struct fcl_vec *v, uint16_t id, uint16_t role, bool keep);
void fcl_params(struct fcl_vec *v, uint16_t id, const char *const *env);

struct fcl {
	int fd;
	zc_channel *ch;		/* the zero-copy transport */
	struct fcl_vec in;	/* standard: received, unparsed */
	size_t in_off;
	zc_agg *rin;		/* zero-copy: received, unparsed */
};

/* Connect to a UNIX socket path, optionally as a channel.  0 or -errno. */
int fcl_connect(const char *path, bool zc, struct fcl *c);
void fcl_close(struct fcl *c);
/* Send bytes (on a channel: one message of pool buffers). */
int fcl_send(struct fcl *c, const void *p, size_t n);

/* A response. */
struct fcl_resp {
	struct fcl_vec out, err;	/* STDOUT, STDERR content */
	zc_agg *out_agg;		/* zero-copy: STDOUT as received slices */
	bool out_eos, err_eos, ended;
	uint32_t app_status;
	int protocol_status;
	size_t out_records;
	uint8_t mgmt_type;		/* last management record seen */
	uint16_t other_id;		/* an END_REQUEST for another id */
	int other_status;
	struct fcl_vec mgmt;		/* its content */
};

void fcl_resp_free(struct fcl_resp *r);
/* Read records until END_REQUEST for id (or, id 0, until one management
 * record).  0, -EPIPE if the connection ended first, -EPROTO. */
int fcl_read(struct fcl *c, uint16_t id, struct fcl_resp *r);
/* Wait for the connection to end (EOF): 0, or -EPROTO if a record came. */
int fcl_expect_eof(struct fcl *c);

/* One whole request: BEGIN, PARAMS, STDIN (body of len bytes, sent in
 * pieces), then the response. */
int fcl_request(struct fcl *c, uint16_t id, bool keep,
		const char *const *env, const void *body, size_t len,
		struct fcl_resp *r);

#endif
