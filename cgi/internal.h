/*
 * internal.h - private structures of cgi/'s FastCGI application library
 * (libfcgi.so.0 with libfcgi's API, on the standard and the zero-copy
 * transport; docs/fastcgi.md).
 *
 * One job per file:
 *
 *   conn.c       a connection: accept and transport detection, the input
 *                (socket bytes or channel aggregates, read as chunks), the
 *                record reader, and batches of records going out (one
 *                aggregate: iol_write on a socket, one message on a
 *                channel)
 *   fcgiapp.c    the FCGX_* calls: requests, the protocol a request runs,
 *                parameters, streams
 *   fcgi_stdio.c the FCGI_* calls of fcgi_stdio.h
 *   native.c     zcfcgi_* (include/zcfcgi.h): content by reference
 *
 * Names: everything here is hidden by the version script (libfcgi.map);
 * the prefix zcf_ keeps it apart from the application's names anyway.
 */
#ifndef ZCF_INTERNAL_H
#define ZCF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <fcgiapp.h>

#include "zc.h"
#include "zc_channel.h"
#include "fcgi_batch.h"
#include "fcgi_proto.h"

/* Bytes of PARAMS one request may send (the joined block). */
#define ZCF_PARAMS_MAX ((size_t)4 << 20)
/* Socket input buffer. */
#define ZCF_RBUF_SIZE ((size_t)64 << 10)
/* Socket output: staged bytes of one stream (one record's worth). */
#define ZCF_STAGE_SIZE 65528u
/* Channel output: pool buffers a stream writes into, and how much content
 * may wait before it is sent without a flush. */
#define ZCF_WBUF_FIRST ((size_t)16 << 10)
#define ZCF_WBUF_NEXT ((size_t)64 << 10)
#define ZCF_WBUF_MAX ((size_t)256 << 10)
#define ZCF_SEND_AT ((size_t)512 << 10)
/* Distinct files one channel may be sent (libzc's limit is 1024 per
 * channel); past it file extents are sent as copied bytes. */
#define ZCF_CONN_FILES 1000u

struct zcf_conn {
	int fd;			/* the socket, or the channel's socket */
	zc_channel *ch;		/* NULL: standard FastCGI on the socket */
	bool broken;		/* protocol or I/O error: close, answer nothing */
	bool eof;		/* the peer has closed (or is gone) */

	/* Output, standard transport: the socket as iol_write sees it. */
	zc_sink sink;
	/* Input, standard transport: bytes [rpos, rend) of rbuf. */
	uint8_t *rbuf;
	size_t rpos, rend;
	/* Input, zero-copy transport: received, not yet consumed. */
	zc_agg *rin;
	uint8_t *bounce;	/* a copy of a leading file slice */
	size_t bounce_len;

	/* The record being read: content and padding still unread. */
	struct fcgi_header rec;
	size_t rec_left, pad_left;

	/* Zero-copy transport: files sent on this channel so far. */
	zc_file **files;
	unsigned nfiles;
};

/* r = call, where call is a v* function given zcf_ap, the arguments
 * after `last`. */
#define ZCF_VARARGS(r, last, call)                                             \
	do {                                                                   \
		va_list zcf_ap;                                                \
		va_start(zcf_ap, last);                                        \
		r = call;                                                      \
		va_end(zcf_ap);                                                \
	} while (0)

/* conn.c ------------------------------------------------------------- */

/* Accept one connection from the listening socket and tell its transport
 * by the first byte (0x01 standard, 0xC1 channel).  0 and *out, or a
 * negative errno (-EINTR: a signal, or `wake` turned readable; -EAGAIN:
 * nothing yet, or a connection that closed or spoke something else:
 * accept again).  The listening socket is made non-blocking: every sleep
 * is a poll that also watches `wake` (-1: none). */
int zcf_conn_accept(int lsock, int wake, struct zcf_conn **out);
/* Sleep until the connection has input for the next request (0; also at
 * its end), or `wake` turns readable (-EINTR, as for a signal); another
 * negative errno if the connection failed. */
int zcf_conn_wait_input(struct zcf_conn *c, int wake);
void zcf_conn_close(struct zcf_conn *c);
/* The connection registered for a request's ipcFd (NULL: none). */
struct zcf_conn *zcf_conn_get(int fd);

/* The next contiguous input bytes, at most max: > 0 and *p, 0 at EOF, or
 * a negative errno.  *p stays valid until zcf_conn_consume. */
ssize_t zcf_conn_peek(struct zcf_conn *c, const uint8_t **p, size_t max);
void zcf_conn_consume(struct zcf_conn *c, size_t n);
/* Skip what is left of the current record, read and decode the next
 * header into c->rec (rec_left, pad_left set).  0, -EPROTO, -EPIPE at EOF
 * (clean between records or not), other negative errno. */
int zcf_conn_next_record(struct zcf_conn *c);
/* Copy the current record's content (all of it, c->rec_left bytes) to
 * dst. */
int zcf_conn_read_content(struct zcf_conn *c, void *dst);
/* Bytes buffered without waiting, and a non-blocking attempt to receive
 * more (0, or a negative errno other than -EAGAIN). */
size_t zcf_conn_buffered(struct zcf_conn *c);
int zcf_conn_poll_input(struct zcf_conn *c);
/* Copy n buffered bytes at offset off without consuming them (n and off
 * within zcf_conn_buffered). */
void zcf_conn_copy_buffered(struct zcf_conn *c, size_t off, void *dst,
			    size_t n);

/* A batch of outgoing records (fcgi_batch.h: fcgi_batch_bytes and
 * fcgi_batch_agg on recs), sent at once. */
struct zcf_batch {
	struct zcf_conn *c;
	int rawfd;		/* no connection: a bare socket (CreateWriter) */
	struct fcgi_batch recs;
};

void zcf_batch_init(struct zcf_batch *b, struct zcf_conn *c, int rawfd);
/* Send everything: 0 or a negative errno.  Frees the batch either way;
 * bytes added to it must stay as they are until then. */
int zcf_batch_send(struct zcf_batch *b);

/* Write one whole record now (END_REQUEST, management answers). */
int zcf_conn_send_record(struct zcf_conn *c, uint8_t type, uint16_t id,
			 const void *content, size_t len);

/* The pool output buffers come from (this process's; created on first
 * use).  NULL if it cannot be created. */
zc_pool *zcf_pool(void);
/* A zc_file for fd shared by every request that names the same version of
 * the same file (a new reference).  Negative errno on failure. */
int zcf_file_get(int fd, zc_file **out);
/* May this channel be sent one more slice of f?  Records f (true) or says
 * the channel has had too many distinct files (false). */
bool zcf_conn_file_ok(struct zcf_conn *c, zc_file *f);

/* fcgiapp.c ---------------------------------------------------------- */

struct zcf_stream {
	FCGX_Stream s;		/* first: the app holds &s */
	FCGX_Request *req;	/* NULL for FCGX_CreateWriter streams */
	int rawfd;		/* FCGX_CreateWriter's socket */
	uint8_t type;
	uint16_t id;
	bool used;		/* a writer that wrote something */
	bool aborted;		/* the request was aborted: discard */

	/* Reader: the chunk [rdNext, stop) came from the connection and is
	 * consumed when the next one is fetched; an unget of a different
	 * byte parks it and reads from `pushback` first. */
	size_t chunk;
	bool parked;
	unsigned char *park_next, *park_stop, *park_unget;
	unsigned char pushback[1];

	/* Writer on a socket: staged bytes. */
	unsigned char *stage;
	size_t stage_cap;
	/* Writer on a channel: the pool buffer being filled (wbase ..), and
	 * published content not sent yet. */
	zc_buf *wbuf;
	unsigned char *wbase;
	zc_agg *pend;
};

/* Per request, behind FCGX_Request.paramsPtr. */
struct Params {
	struct zcf_stream *in, *out, *err;
	uint8_t *block;		/* the joined PARAMS, then the envp
				 * strings, converted in place */
	char **env;		/* envp: NULL-terminated "NAME=VALUE",
				 * pointing into block */
	bool in_done;		/* STDIN (or DATA) read to its end */
	bool aborted;
	bool ended;		/* END_REQUEST sent */
};

struct zcf_conn *zcf_req_conn(FCGX_Request *r);
bool zcf_stream_on_channel(const struct zcf_stream *st);
/* Writers: publish/stage what the app wrote so far and, with send, send
 * it (records) now.  0 or -1 (stream error set). */
int zcf_writer_seal(struct zcf_stream *st);
int zcf_writer_send(struct zcf_stream *st, bool eos);
/* Send now what the stream holds, then `len` bytes (valid until the call
 * returns) and the content of agg (taken over; may be NULL), and with
 * eos the stream's end.  0 or -1. */
int zcf_writer_push(struct zcf_stream *st, const void *bytes, size_t len,
		    zc_agg *agg, bool eos);
/* Set the stream error (errno or FCGX_* code) and return -1. */
int zcf_stream_fail(struct zcf_stream *st, int err);

#endif /* ZCF_INTERNAL_H */
