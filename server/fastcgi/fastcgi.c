/*
 * fastcgi.c - a request answered by a FastCGI application (fastcgi.h).
 *
 * The request waits in this handler (request.h) from its head to the end
 * of its response:
 *
 *   1. A link to the backend (fcgi_upstream.h): at once if one is idle,
 *      else when one opens or frees up.  A chunked request body is read
 *      whole first, because CGI needs CONTENT_LENGTH before the body.
 *   2. BEGIN_REQUEST and the PARAMS records (one pool buffer), then the
 *      body as STDIN records: bytes that came with the head are copied into
 *      a pool buffer once, the rest is read from the client socket straight
 *      into pool buffers (iol_read) and sent by descriptor on the zero-copy
 *      transport.  Reading stops while the backend has not taken what was
 *      sent (backpressure both ways, nothing unbounded).
 *   3. STDOUT: the CGI head is gathered (copied, bounded) and turned into
 *      the HTTP head (fcgi_reply.c); everything after it is body, appended
 *      to the client's output as the slices it arrived in -- on the
 *      zero-copy transport the application's own buffers and file extents,
 *      so the body is never copied by the server.  When the client's output
 *      is full, the link holds further records back (and stops reading the
 *      backend) until it drains.
 *   4. END_REQUEST ends the response (the last chunk, or a check that the
 *      app's Content-Length was met) and gives the link back.
 *
 * Faults: no backend, a refused connection, a broken record stream, an app
 * that dies before its head: 502; no progress within --fastcgi-timeout:
 * 504; anything after the head was sent: the client's connection is
 * closed, so a cut body is never taken for a whole one.  A client that
 * goes away aborts its request (FCGI_ABORT_REQUEST) and frees everything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errlog.h"
#include "fastcgi.h"
#include "fcgi_batch.h"
#include "fcgi_params.h"
#include "fcgi_proto.h"
#include "fcgi_reply.h"
#include "fcgi_upstream.h"
#include "http_chunked.h"
#include "request.h"
#include "uri.h"
#include "zchttpd.h"

#define BODY_READ (256u << 10)		/* one read of a request body */
#define TX_HIGH_WATER (512u << 10)	/* stop reading the client's body */
#define HEAD_MAX (16u << 10)		/* the app's CGI head */
#define HEAD_FIELDS 100
#define STDERR_LINE_MAX 1024
#define SPILL_AT (1u << 20)		/* a chunked body beyond this goes to
					 * a temporary file */

struct fcgi_req {
	struct fcgi_client cl;		/* first: callbacks find us by it */
	struct ev_timer qtimer;		/* waiting in the backend's queue */
	struct zh_request *r;		/* NULL: the client went away */
	struct zh_worker *w;
	const struct zh_fcgi_route *rt;
	struct fcgi_link *link;

	/* The request body. */
	uint64_t body_left;		/* Content-Length bytes still to read */
	bool chunked_in;		/* chunked (or HTTP/2 without a
					 * length, r->body_to_end): read
					 * whole, then sent */
	struct http_chunked dec;
	zc_agg *body;			/* read and not yet sent */
	int spill_fd;			/* chunked body on disk, or -1 */
	uint64_t spilled;
	bool body_read;			/* every byte of it read */
	bool params_sent;
	bool stdin_ended;		/* the empty STDIN record is queued */
	bool body_gone;			/* body bytes were sent: the request
					 * cannot go again */
	bool retried;			/* sent again once already */
	bool continued;			/* 100 Continue sent */

	/* The response. */
	bool head_done;
	char *head;			/* the CGI head being gathered */
	size_t head_len, head_cap;
	struct cgi_head_parser hp;
	struct fcgi_reply rep;
	uint64_t body_sent;		/* bytes of body after the head */
	bool held;			/* the link holds records for us */
	char *redirect;			/* local redirect target */

	/* Last, and not zeroed (3 KiB): the head parser fills what it
	 * reports. */
	struct cgi_field fields[HEAD_FIELDS];
};

static const struct zh_handler fastcgi_handler;
static void finish(struct fcgi_req *f, zh_answer how);

/* No link came within --fastcgi-timeout (every connection busy with
 * slow requests): 504, as for a backend that does not answer. */
static void on_queue_timeout(struct ev_loop *loop, struct ev_timer *t)
{
	struct fcgi_req *f = (struct fcgi_req *)((char *)t -
					offsetof(struct fcgi_req, qtimer));

	(void)loop;
	fcgi_link_cancel(f->w, f->rt, &f->cl);
	zh_log(ZL_ERROR, "fastcgi %s: no connection free within "
		"the timeout", f->rt->spec);
	finish(f, zh_status(504));
}

/* Ask for a link; the queue wait (if any) is bounded. */
static int acquire(struct fcgi_req *f)
{
	int err = fcgi_link_acquire(f->w, f->rt, &f->cl);

	if (!err && f->cl.queued)
		ev_timer_arm(f->w->loop, &f->w->t_fcgi, &f->qtimer,
			     on_queue_timeout);
	return err;
}

/* ------------------------------------------------------------ routes */

/* Where a suffix route's script ends in "/"+npath: just past the first
 * segment that ends in the suffix; 0 if none does. */
static size_t suffix_end(const struct zh_fcgi_route *rt, const char *uri,
			 size_t len)
{
	const char *sfx = rt->match + 1;	/* ".php" */
	size_t slen = rt->match_len - 1;

	for (size_t i = 1; i <= len; i++) {
		if (i < len && uri[i] != '/')
			continue;
		if (i >= slen && !memcmp(uri + i - slen, sfx, slen) &&
		    i - slen > 0 && uri[i - slen - 1] != '/')
			return i;
	}
	return 0;
}

static size_t script_end(const struct zh_fcgi_route *rt, const char *uri,
			 size_t len)
{
	size_t n;

	if (rt->suffix)
		return suffix_end(rt, uri, len);
	if (len < rt->match_len || memcmp(uri, rt->match, rt->match_len))
		return 0;
	n = rt->match_len;
	while (n > 1 && uri[n - 1] == '/')	/* "/app/" names "/app" */
		n--;
	return n;
}

bool fastcgi_route_matches(const struct zh_fcgi_route *rt, const char *uri,
			   size_t len)
{
	return script_end(rt, uri, len) != 0;
}

/* ------------------------------------------------------------ helpers */

static void req_free(struct fcgi_req *f)
{
	ev_timer_disarm(&f->qtimer);
	if (f->spill_fd >= 0)
		close(f->spill_fd);
	zc_agg_release(f->body);
	free(f->head);
	free(f->redirect);
	free(f);
}

/* Done with the client's request (request_finish). */
static void finish(struct fcgi_req *f, zh_answer how)
{
	struct zh_request *r = f->r;

	if (r) {
		/* An app may answer before it read the whole body; then the
		 * connection closes after this response (request.h). */
		r->body_read = f->body_read;
		request_finish(r, how);
	}
	req_free(f);
}

/* How a request ends after a failure here.  The functions of this file
 * return 0, an HTTP status (what to answer: a bad body, no memory), or a
 * negative errno (the client or the backend broke, or the head is gone
 * already): then the response is cut. */
static zh_answer failed(int err)
{
	return err > 0 ? zh_status(err) : ZH_TRUNCATED;
}

/* ------------------------------------------------------------ request */

static int send_params(struct fcgi_req *f, zc_agg *out)
{
	struct zh_request *r = f->r;
	const struct http_request *req = &r->http;
	const char *uri = r->uri;
	size_t ulen = r->uri_len, se = script_end(f->rt, uri, ulen);
	const struct http_header *ct = http_find_header(req, "Content-Type");
	char filename[PATH_MAX + ZH_PATH_MAX + 1];
	struct fcgi_params_in in = {
		.req = req,
		.script_name = uri,
		.script_name_len = se,
		.path_info = uri + se,
		.path_info_len = ulen - se,
		.document_root = r->vhost->root_abs,
		.document_uri = uri,
		.query = r->up.query,
		.query_len = r->up.query_len,
		.content_type = ct ? ct->value.p : NULL,
		.content_type_len = ct ? ct->value.len : 0,
		.has_body = (req->flags & (HTTP_F_CHUNKED |
					   HTTP_F_CONTENT_LENGTH)) != 0 ||
			    r->body_to_end,
		/* A chunked body is all read (and closed) by now. */
		.content_length = f->chunked_in ? zc_agg_len(f->body)
						: req->content_length,
		.server = request_local(r),
		.peer = request_peer(r),
		.addr_memo = request_addr_memo(r),
		.protocol = request_protocol(r),
	};
	int err;

	size_t rlen = strlen(r->vhost->root_abs);

	/* root + script path: both bounded (a realpath, a request path),
	 * so the stack holds it; no allocation per request. */
	if (rlen + se >= sizeof(filename))
		return 414;
	memcpy(filename, r->vhost->root_abs, rlen);
	memcpy(filename + rlen, uri, se);
	filename[rlen + se] = 0;
	in.script_filename = filename;
	err = fcgi_params_build(&in, f->cl.request_id, true, out);
	f->params_sent = !err;
	return err;
}

/* Send what is ready: the parameters, body read so far, the end of
 * STDIN once the body is all read.  The body's slices go as they are,
 * framed as records by pointer work (fcgi_batch.h); the record headers
 * are copied into one buffer, since the link may queue them. */
static int push(struct fcgi_req *f)
{
	struct fcgi_batch b;
	zc_agg *out, *body = NULL;
	bool ends = false;
	int err = 0;

	if (!f->link)
		return 0;
	if (zc_agg_create(&out))
		return -ENOMEM;
	fcgi_batch_init(&b);
	if (!f->params_sent)
		err = send_params(f, out);
	if (!err && zc_agg_len(f->body) &&
	    !(err = zc_agg_split(f->body, 0, &body))) {
		fcgi_batch_agg(&b, FCGI_STDIN, f->cl.request_id, body);
		f->body_gone = true;	/* the batch took it over */
	}
	if (!err && f->body_read && !f->stdin_ended) {
		fcgi_batch_bytes(&b, FCGI_STDIN, f->cl.request_id, NULL, 0);
		ends = true;
	}
	if (!err)
		err = fcgi_batch_build(&b, FCGI_BATCH_COPY, NULL, out);
	fcgi_batch_free(&b);
	if (!err && ends)
		f->stdin_ended = true;
	if (!err && zc_agg_len(out))
		err = fcgi_link_send(f->link, out, ends);
	zc_agg_release(out);
	return err;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Decoded bytes of a chunked body, which is read whole before it is sent
 * (CONTENT_LENGTH).  The first SPILL_AT bytes stay in pool buffers; a
 * larger body goes to an unlinked temporary file (as nginx's
 * client_body_temp), sent later as a file extent: sendfile on a socket,
 * a descriptor on the zero-copy transport.  Pool memory stays bounded
 * whatever --max-body allows.
 */
static int body_add(struct fcgi_req *f, const char *p, size_t n)
{
	char buf[16384];
	size_t off = 0, have = zc_agg_len(f->body);

	if (f->spill_fd < 0 && have + n <= SPILL_AT)
		return zc_agg_append_bytes(f->body, NULL, p, n);
	if (f->spill_fd < 0) {
		const char *tmp = getenv("TMPDIR");

		f->spill_fd = open(tmp ? tmp : "/tmp",
				   O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (f->spill_fd < 0)
			return -errno;
		while (off < have) {
			size_t k = have - off < sizeof(buf) ? have - off
							    : sizeof(buf);
			int err;

			if (zc_agg_copyout(f->body, off, buf, k) != (ssize_t)k)
				return -EIO;
			err = write_all(f->spill_fd, buf, k);
			if (err)
				return err;
			off += k;
		}
		f->spilled = have;
		zc_agg_truncate(f->body, 0);
	}
	f->spilled += n;
	return write_all(f->spill_fd, p, n);
}

/* The whole chunked body is here: a spilled one becomes one extent. */
static int body_close(struct fcgi_req *f)
{
	struct stat st;
	zc_file *file;
	int err;

	if (f->spill_fd < 0)
		return 0;
	if (fstat(f->spill_fd, &st) < 0)
		return -errno;
	err = zc_file_adopt(f->spill_fd, &st, &file);
	if (err)
		return err;
	f->spill_fd = -1;
	err = zc_agg_append_file(f->body, file, 0, (size_t)st.st_size);
	zc_file_release(file);
	return err;
}

/* Read the body from what the connection already has and, if more is
 * due, ask for the client's input (bounded by the backend's appetite). */
static int pull_body(struct fcgi_req *f)
{
	struct zh_request *r = f->r;
	const char *p;
	size_t n;
	int err = 0;

	if (f->body_read)
		return 0;
	request_input(r, &p, &n);
	if (n && r->body_to_end) {
		/* HTTP/2 without Content-Length: the bytes as they come, to
		 * the stream's end (on_input), within --max-body. */
		if (f->spilled + zc_agg_len(f->body) + n >
		    r->w->cfg->max_body_bytes)
			return 413;
		err = body_add(f, p, n);
		if (err)
			return err;
		request_input_consume(r, n);
	} else if (n && !f->chunked_in) {
		if (n > f->body_left)
			n = (size_t)f->body_left;
		err = zc_agg_append_bytes(f->body, NULL, p, n);
		if (err)
			return err;
		request_input_consume(r, n);
		f->body_left -= n;
		f->body_read = f->body_left == 0;
	} else if (n) {
		size_t used = 0;

		while (used < n && !http_chunked_done(&f->dec)) {
			size_t off, dlen;
			ssize_t k = http_chunked_step(&f->dec, p + used,
						      n - used, &off, &dlen);

			if (k < 0)
				return k == -E2BIG ? 413 : 400;
			if (dlen)
				err = body_add(f, p + used + off, dlen);
			if (err)
				return err;
			used += (size_t)k;
		}
		request_input_consume(r, used);
		f->body_read = http_chunked_done(&f->dec);
		if (f->body_read)
			err = body_close(f);
		if (err)
			return err;
	}
	if (f->body_read) {
		request_want_input(r, false);
		return 0;
	}
	/* A client that sent "Expect: 100-continue" waits for our word
	 * before it sends the body. */
	if ((r->http.flags & HTTP_F_EXPECT_CONTINUE) && !f->continued) {
		f->continued = true;
		if (request_continue(r))
			return 503;
	}
	request_want_input(r, !f->link ||
			      fcgi_link_queued(f->link) < TX_HIGH_WATER);
	return 0;
}

/* A request body (or the client's hang-up) arrived. */
static void on_input(struct zh_request *r)
{
	struct fcgi_req *f = r->wait;
	int err;

	if (!f->chunked_in && request_input_buffered(r)) {
		/* Body bytes that reached the buffer first: pull_body takes
		 * them before anything more is read from the socket. */
	} else if (!f->chunked_in) {
		size_t want = f->body_left < BODY_READ ? (size_t)f->body_left
						       : BODY_READ;
		ssize_t n = request_read_body(r, &f->body, want);

		if (n == -EAGAIN || n == -EINTR)
			return;
		if (n <= 0) {
			err = -EPIPE;	/* the client left mid-body */
			goto fail;
		}
		f->body_left -= (uint64_t)n;
		f->body_read = f->body_left == 0;
		if (f->body_read)
			request_want_input(r, false);
	} else {
		ssize_t n = request_read(r);

		if (n == -EAGAIN)
			return;
		if (n == 0 && r->body_to_end) {
			/* The stream's end: the body is whole. */
			f->body_read = true;
			err = body_close(f);
			if (err)
				goto fail;
		} else if (n <= 0) {
			err = -EPIPE;
			goto fail;
		}
	}
	err = pull_body(f);
	if (!err && f->link)
		err = push(f);
	if (!err && f->link && !f->body_read &&
	    fcgi_link_queued(f->link) >= TX_HIGH_WATER)
		request_want_input(r, false);
	if (!err && !f->link && f->chunked_in && f->body_read)
		err = acquire(f);
	if (!err)
		return;
fail:
	/* Nothing was answered yet: say why if we can (a 4xx from the body
	 * decoder), else the client is gone or broken: just close. */
	if (f->link) {
		fcgi_link_abort(f->link, &f->cl);
		f->link = NULL;
	}
	fcgi_link_cancel(f->w, f->rt, &f->cl);
	r->keep_alive = false;
	finish(f, failed(err));
}

/* ------------------------------------------------------------ response */

static void hold(struct fcgi_req *f, bool on)
{
	if (f->held != on && f->link) {
		f->held = on;
		fcgi_link_hold(f->link, on);
	}
}

/* Body bytes of the response: framed for the client and queued. */
static int emit_body(struct fcgi_req *f, zc_agg *content)
{
	zc_agg *out = request_out(f->r);
	size_t len = zc_agg_len(content);
	char chunk[32];
	int err = 0;

	if (!len || f->rep.no_body || f->redirect)
		return 0;
	if (f->rep.has_length && f->body_sent + len > f->rep.length) {
		/* More than the app promised: what exceeds it is dropped
		 * (and the connection closed at the end, see on_end). */
		len = (size_t)(f->rep.length - f->body_sent);
		zc_agg_truncate(content, len);
		if (!len)
			return 0;
	}
	if (f->rep.chunked) {
		int n = snprintf(chunk, sizeof(chunk), "%zx\r\n", len);

		err = zc_agg_append_bytes(out, NULL, chunk, (size_t)n);
	}
	if (!err)
		err = zc_agg_concat(out, content);
	if (!err && f->rep.chunked)
		err = zc_agg_append_bytes(out, NULL, "\r\n", 2);
	f->body_sent += len;
	f->r->body_bytes = f->body_sent;
	if (!err && !request_send(f->r))
		hold(f, true);
	return err;
}

/* STDOUT before the head is complete: gather and parse it. */
static int gather_head(struct fcgi_req *f, zc_agg *content)
{
	struct zh_request *r = f->r;
	struct cgi_head h = { .fields = f->fields, .max_fields = HEAD_FIELDS };
	size_t have = f->head_len, len = zc_agg_len(content);
	ssize_t hl;

	/* Copy a little at a time: a head is short, the rest of the record
	 * is body and should stay where it is. */
	for (size_t take = 512;; take *= 4) {
		size_t n = len - (f->head_len - have);

		if (n > take)
			n = take;
		if (f->head_len + n > HEAD_MAX)
			n = HEAD_MAX - f->head_len;
		if (f->head_len + n > f->head_cap) {
			size_t cap = f->head_len + n;
			char *p = realloc(f->head, cap);

			if (!p)
				return 503;
			f->head = p;
			f->head_cap = cap;
		}
		if (n && zc_agg_copyout(content, f->head_len - have,
					f->head + f->head_len, n) != (ssize_t)n)
			return 502;
		f->head_len += n;
		hl = cgi_head_parse(&f->hp, f->head, f->head_len, HEAD_MAX, &h);
		if (hl >= 0)
			break;
		if (hl != CGI_HEAD_INCOMPLETE)
			return 502;	/* malformed or too large */
		if (f->head_len - have == len)
			return 0;	/* all of it taken: wait for more */
		if (f->head_len >= HEAD_MAX)
			return 502;
	}
	f->head_done = true;
	/* An HTTP/2 stream's end delimits the body, as closing does for
	 * HTTP/1.0: no chunks. */
	if (fcgi_reply_plan(&h, r->head_only, r->stream ? 0 : r->http.minor,
			    &f->rep))
		return 502;
	/* The part of this record after the head is body. */
	zc_agg_trim_front(content, (size_t)hl - have);
	if (f->rep.local_redirect) {
		f->redirect = strndup(h.location, h.location_len);
		return f->redirect ? 0 : 503;
	}
	r->status = f->rep.status;
	if (f->rep.close_delimited)
		r->keep_alive = false;
	if (fcgi_reply_head(&h, &f->rep, r->keep_alive, r))
		return 503;
	return emit_body(f, content);	/* a -errno: cut (failed()) */
}

/* FCGI_STDERR: to the error log, a line at a time, with the request. */
static void log_stderr(struct fcgi_req *f, zc_agg *content)
{
	char buf[STDERR_LINE_MAX + 1];
	ssize_t n = zc_agg_copyout(content, 0, buf, STDERR_LINE_MAX);
	const struct http_request *req = f->r ? &f->r->http : NULL;

	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n; i++)	/* no control bytes in the log */
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\n')
			buf[i] = '?';
	buf[n] = 0;
	for (char *line = buf, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (*line)
			zh_log(ZL_WARN, "fastcgi %s: stderr: %s "
				"(request \"%.*s %.*s\")", f->rt->spec, line,
				req ? (int)req->method_str.len : 1,
				req ? req->method_str.p : "-",
				req ? (int)req->target.len : 1,
				req ? req->target.p : "-");
		if (!nl)
			break;
	}
}

static void on_end(struct fcgi_req *f, zc_agg *content)
{
	struct zh_request *r = f->r;
	uint8_t body[8];
	struct fcgi_end end;
	bool clean;
	zh_answer how = ZH_ANSWERED;

	clean = content &&
		zc_agg_copyout(content, 0, body, sizeof(body)) == 8 &&
		fcgi_end_decode(body, 8, &end) == 0 &&
		end.protocol_status == FCGI_REQUEST_COMPLETE;
	zc_agg_release(content);
	fcgi_link_release(f->link, &f->cl, clean && f->stdin_ended);
	f->link = NULL;
	if (!clean && !f->head_done)
		how = zh_status(502);	/* overloaded, or cannot multiplex:
					 * no answer */
	else if (!f->head_done)
		how = zh_status(502);	/* ended without a head: nothing to
					 * send */
	else if (f->redirect) {
		char *to = f->redirect;

		f->redirect = NULL;
		r->body_read = f->body_read;
		req_free(f);
		request_redirect(r, to, strlen(to));
		free(to);
		return;
	} else if (f->rep.chunked) {
		if (zc_agg_append_bytes(request_out(r), NULL, "0\r\n\r\n", 5))
			how = ZH_TRUNCATED;
	} else if (f->rep.has_length && !f->rep.no_body &&
		   f->body_sent != f->rep.length) {
		zh_log(ZL_ERROR, "fastcgi %s: Content-Length %llu but "
			"%llu bytes sent", f->rt->spec,
			(unsigned long long)f->rep.length,
			(unsigned long long)f->body_sent);
		how = ZH_TRUNCATED;
	}
	if (zh_error_status(how) == 502)
		zh_log(ZL_ERROR, "fastcgi %s: the application ended "
			"the request without a response", f->rt->spec);
	finish(f, how);
}

/* ------------------------------------------------------------ link calls */

static struct fcgi_req *of_client(struct fcgi_client *cl)
{
	return (struct fcgi_req *)cl;
}

static void cl_attached(struct fcgi_client *cl, struct fcgi_link *l)
{
	struct fcgi_req *f = of_client(cl);
	int err;

	ev_timer_disarm(&f->qtimer);
	f->link = l;
	err = push(f);
	if (!err)
		err = pull_body(f);
	if (!err)
		err = push(f);
	if (err) {
		fcgi_link_abort(l, cl);
		f->link = NULL;
		finish(f, zh_status(err > 0 ? err : 503));
	}
}

static void cl_record(struct fcgi_client *cl, const struct fcgi_header *h,
		      zc_agg *content)
{
	struct fcgi_req *f = of_client(cl);
	int err = 0;

	if (h->type == FCGI_STDERR) {
		if (content)
			log_stderr(f, content);
	} else if (h->type == FCGI_END_REQUEST) {
		on_end(f, content);	/* f is gone after it */
		return;
	} else if (content && !f->head_done) {
		err = gather_head(f, content);
	} else if (content) {
		err = emit_body(f, content);
	}
	zc_agg_release(content);
	if (err) {
		fcgi_link_abort(f->link, &f->cl);
		f->link = NULL;
		finish(f, failed(err));
	}
}

static void cl_failed(struct fcgi_client *cl, int status, bool begun)
{
	struct fcgi_req *f = of_client(cl);
	const char *body = f->stdin_ended ? "queued whole" :
			   f->params_sent ? "queued in part" : "not queued";

	f->link = NULL;
	if (!begun && status == 502 && !f->retried && !f->body_gone) {
		/* Pipelined behind a request whose connection broke: the
		 * application never began it, and it can be sent again
		 * (all of it is still ours), once, on another connection. */
		f->retried = true;
		f->params_sent = f->stdin_ended = false;
		if (!acquire(f))
			return;
	}
	zh_log(ZL_ERROR, "fastcgi %s: %s (request body %s, response %s)",
		f->rt->spec,
		status == 504 ? "timed out" : "connection failed or broken",
		body, f->head_done ? "begun" : "not begun");
	finish(f, f->head_done ? ZH_TRUNCATED : zh_status(status));
}

static void cl_writable(struct fcgi_client *cl)
{
	struct fcgi_req *f = of_client(cl);
	int err = pull_body(f);

	if (!err)
		err = push(f);
	if (err) {
		fcgi_link_abort(f->link, &f->cl);
		f->link = NULL;
		finish(f, failed(err));
	}
}

/* ------------------------------------------------------------ handler */

static void on_abort(struct zh_request *r)
{
	struct fcgi_req *f = r->wait;

	f->r = NULL;
	if (f->link)
		fcgi_link_abort(f->link, &f->cl);
	else
		fcgi_link_cancel(f->w, f->rt, &f->cl);
	req_free(f);
}

static void on_drained(struct zh_request *r)
{
	hold(r->wait, false);
}

static const struct zh_handler fastcgi_handler = {
	.name = "fastcgi",
	.own_timeouts = true,
	.abort = on_abort,
	.drained = on_drained,
	.input = on_input,
};

zh_answer fastcgi_serve(struct zh_request *r, const struct zh_fcgi_route *rt)
{
	const struct http_request *req = &r->http;
	struct fcgi_req *f = malloc(sizeof(*f));
	int err;

	if (f)
		memset(f, 0, offsetof(struct fcgi_req, fields));
	if (!f || zc_agg_create(&f->body)) {
		free(f);
		return zh_status(503);
	}
	f->w = r->w;
	f->rt = rt;
	f->r = r;
	f->spill_fd = -1;
	f->cl.attached = cl_attached;
	f->cl.record = cl_record;
	f->cl.failed = cl_failed;
	f->cl.writable = cl_writable;
	if (r->body_to_end) {
		f->chunked_in = true;	/* read whole first, undecoded */
	} else if (req->flags & HTTP_F_CHUNKED) {
		struct http_chunked_limits lim = {
			.max_body = r->w->cfg->max_body_bytes,
			.max_ext = 4096,
			.max_trailer = r->w->cfg->limits.max_head_bytes,
		};

		f->chunked_in = true;
		http_chunked_init(&f->dec, &lim);
	} else if (req->flags & HTTP_F_CONTENT_LENGTH) {
		f->body_left = req->content_length;
	}
	f->body_read = !f->chunked_in && f->body_left == 0;
	err = request_wait(r, &fastcgi_handler, f);
	if (err) {
		req_free(f);
		return zh_status(err);
	}
	if (f->chunked_in) {
		err = pull_body(f);	/* the link when it is all here */
		if (!err && f->body_read)
			err = acquire(f);
	} else {
		err = acquire(f);
	}
	if (err) {
		/* The handler still owns r: answer the error through it. */
		if (f->link) {
			fcgi_link_abort(f->link, &f->cl);
			f->link = NULL;
		}
		finish(f, zh_status(err > 0 ? err : 503));
	}
	return ZH_WAITING;
}

int fastcgi_worker_init(struct zh_worker *w)
{
	return fcgi_upstreams_init(w);
}

void fastcgi_worker_fini(struct zh_worker *w)
{
	fcgi_upstreams_fini(w);
}
