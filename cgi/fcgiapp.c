/*
 * fcgiapp.c - the FCGX_* calls of libfcgi's fcgiapp.h: requests, the
 * FastCGI protocol one request runs on its connection, parameters, and
 * the streams.
 *
 * Written from the header's documentation and the FastCGI 1.0
 * specification; the structures are Debian's (FCGX_Request, FCGX_Stream)
 * so that programs built against Debian's libfcgi run unchanged.
 *
 * A request: FCGX_Accept_r finishes the previous one, takes the next
 * connection (or keeps the one FCGI_KEEP_CONN kept), reads BEGIN_REQUEST
 * and the PARAMS stream, and hands the application three streams.  STDIN
 * is read as the application asks for it.  On the way the library answers
 * GET_VALUES, a management record of a type it does not know
 * (UNKNOWN_TYPE), a BEGIN_REQUEST for a second request on the connection
 * (CANT_MPX_CONN) and a role it does not know (UNKNOWN_ROLE); it honours
 * ABORT_REQUEST (the input ends, output is discarded, END_REQUEST goes
 * out).  Bytes that break the protocol drop the connection; the next
 * FCGX_Accept_r takes the next one.
 *
 * Output: a stream writes into a staging buffer (standard transport) or
 * straight into pool buffers (zero-copy transport: the one copy, and no
 * socket copy follows).  A flush or the end of the request sends records;
 * at the end STDERR, STDOUT, their ends and END_REQUEST leave as one batch
 * (one channel message).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

#define FCGI_LISTENSOCK_FILENO 0

static atomic_int shutdown_pending;
/* A stop asked for must end a wait for the next request even when it
 * comes after the last look at shutdown_pending and before the sleep --
 * EINTR alone would be lost there.  So it also writes a byte to this
 * pipe, which every such sleep polls (conn.c).  Never drained: once a
 * stop is asked for, every wait ends.  A forked child gets a pipe of its
 * own: a stop asked of its parent, or of a sibling, is not its own. */
static int wake[2] = { -1, -1 };
static int lib_initialized;
static int is_fastcgi = -1;
static FCGX_Request the_request;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------ the library */

static void sigpipe_handler(int sig)
{
	(void)sig;
}

static void shutdown_handler(int sig)
{
	(void)sig;
	FCGX_ShutdownPending();
}

/* Our handlers go in only where the program kept the default: SIGPIPE
 * must not kill us when a server goes away (a handler, not SIG_IGN, so
 * that programs we exec get the default back), and SIGUSR1 and SIGTERM
 * ask for a graceful end, as with Debian's libfcgi: the request in hand
 * is finished, then FCGX_Accept_r returns -1 -- at once if it was waiting
 * for a connection or for the next request on one (the wake pipe). */
static void install_handler(int sig, void (*fn)(int))
{
	struct sigaction sa, old;

	if (sigaction(sig, NULL, &old) < 0 || old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void wake_open(void)
{
	if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) < 0)
		wake[0] = wake[1] = -1;	/* waits as before: EINTR only */
}

static void wake_fork_child(void)
{
	if (wake[0] >= 0) {
		close(wake[0]);
		close(wake[1]);
	}
	wake_open();
	if (atomic_load(&shutdown_pending))
		FCGX_ShutdownPending();
}

static void lib_init(void)
{
	wake_open();
	pthread_atfork(NULL, NULL, wake_fork_child);
	install_handler(SIGPIPE, sigpipe_handler);
	install_handler(SIGUSR1, shutdown_handler);
	install_handler(SIGTERM, shutdown_handler);
}

int FCGX_Init(void)
{
	if (lib_initialized)
		return 0;
	pthread_once(&init_once, lib_init);
	FCGX_InitRequest(&the_request, FCGI_LISTENSOCK_FILENO, 0);
	lib_initialized = 1;
	return 0;
}

/* A FastCGI application is started with a listening socket on fd 0. */
static int listens(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(int);
	int v = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0)
		return v != 0;
	len = sizeof(ss);
	return getpeername(fd, (struct sockaddr *)&ss, &len) != 0 &&
	       errno == ENOTCONN;
}

int FCGX_IsCGI(void)
{
	if (is_fastcgi != -1)
		return !is_fastcgi;
	FCGX_Init();
	is_fastcgi = listens(FCGI_LISTENSOCK_FILENO);
	return !is_fastcgi;
}

/* Called from signal handlers: async-signal-safe. */
void FCGX_ShutdownPending(void)
{
	int saved = errno;

	atomic_store(&shutdown_pending, 1);
	if (wake[1] >= 0)
		(void)!write(wake[1], "", 1);	/* a full pipe is awake */
	errno = saved;
}

/* "/path/to/socket", ":port" or "host:port". */
int FCGX_OpenSocket(const char *path, int backlog)
{
	const char *colon;
	int fd = -1, one = 1;

	if (!path || !*path)
		return -1;
	colon = strrchr(path, ':');
	if (colon && !strchr(path, '/')) {
		struct addrinfo hints = {
			.ai_family = AF_UNSPEC,
			.ai_socktype = SOCK_STREAM,
			.ai_flags = AI_PASSIVE,
		}, *res = NULL, *ai;
		char host[256];
		size_t hl = (size_t)(colon - path);

		if (hl >= sizeof(host) || !colon[1])
			return -1;
		memcpy(host, path, hl);
		host[hl] = 0;
		if (hl == 0)
			hints.ai_family = AF_INET;	/* libfcgi: INADDR_ANY */
		if (getaddrinfo(hl ? host : NULL, colon + 1, &hints, &res))
			return -1;
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, 0);
			if (fd < 0)
				continue;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
			    listen(fd, backlog) == 0)
				break;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(res);
		return fd;
	}
	{
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		if (strlen(path) >= sizeof(sun.sun_path))
			return -1;
		strcpy(sun.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return -1;
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
		    listen(fd, backlog) < 0) {
			close(fd);
			return -1;
		}
		/* Any local web server may connect, as with libfcgi. */
		chmod(path, 0777);
	}
	return fd;
}

int FCGX_InitRequest(FCGX_Request *r, int sock, int flags)
{
	memset(r, 0, sizeof(*r));
	r->listen_sock = sock;
	r->flags = flags;
	r->ipcFd = -1;
	return 0;
}

int FCGX_Attach(FCGX_Request *r)
{
	r->detached = 0;
	return 0;
}

int FCGX_Detach(FCGX_Request *r)
{
	if (r->ipcFd <= 0)
		return -1;
	r->detached = 1;
	return 0;
}

/* ---------------------------------------------------------------- streams */

static void reader_fill(FCGX_Stream *s);
static void writer_empty(FCGX_Stream *s, int doClose);

static struct zcf_stream *st_of(FCGX_Stream *s)
{
	return (struct zcf_stream *)s;
}

struct zcf_conn *zcf_req_conn(FCGX_Request *r)
{
	return r ? zcf_conn_get(r->ipcFd) : NULL;
}

static struct zcf_conn *st_conn(const struct zcf_stream *st)
{
	return st->req ? zcf_conn_get(st->req->ipcFd) : NULL;
}

bool zcf_stream_on_channel(const struct zcf_stream *st)
{
	struct zcf_conn *c = st_conn(st);

	return c && c->ch;
}

static struct zcf_stream *stream_new(FCGX_Request *r, int rawfd,
				     bool reader, uint8_t type, uint16_t id)
{
	struct zcf_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->s.isReader = reader;
	st->s.fillBuffProc = reader_fill;
	st->s.emptyBuffProc = writer_empty;
	st->s.data = st;
	st->req = r;
	st->rawfd = rawfd;
	st->type = type;
	st->id = id;
	return st;
}

static void stream_free(struct zcf_stream *st)
{
	if (!st)
		return;
	free(st->stage);
	zc_buf_release(st->wbuf);
	zc_agg_release(st->pend);
	free(st);
}

int zcf_stream_fail(struct zcf_stream *st, int err)
{
	if (!st->s.FCGI_errno)
		st->s.FCGI_errno = err;
	if (!st->s.isReader) {
		/* Nothing more fits until FCGX_ClearError. */
		zc_buf_release(st->wbuf);
		st->wbuf = NULL;
		st->wbase = NULL;
		st->s.wrNext = st->s.stop = NULL;
	}
	return -1;
}

/* ---------------------------------------------------------- the protocol */

static int send_end(struct zcf_conn *c, uint16_t id, uint32_t status,
		    uint8_t proto)
{
	uint8_t rec[16];

	fcgi_end_encode(rec, id, status, proto);
	return zcf_conn_send_record(c, FCGI_END_REQUEST, id, rec + 8, 8);
}

/* GET_VALUES: what we know of the asked names.  One request at a time per
 * connection, one connection at a time per accepting thread. */
static int answer_get_values(struct zcf_conn *c)
{
	static const struct {
		const char *name, *value;
	} known[] = {
		{ "FCGI_MAX_CONNS", "1" },
		{ "FCGI_MAX_REQS", "1" },
		{ "FCGI_MPXS_CONNS", "0" },
	};
	uint8_t in[FCGI_MAX_CONTENT], out[256];
	size_t len = c->rec_left, off = 0, olen = 0;
	struct fcgi_nv nv;
	int r;

	if ((r = zcf_conn_read_content(c, in)))
		return r;
	while ((r = fcgi_nv_next(in, len, &off, &nv)) == 1) {
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
			if (strlen(known[i].name) != nv.name_len ||
			    memcmp(known[i].name, nv.name, nv.name_len))
				continue;
			fcgi_nv_encode(out, sizeof(out), &olen, known[i].name,
				       nv.name_len, known[i].value,
				       strlen(known[i].value));
		}
	}
	if (r < 0)
		return r;
	return zcf_conn_send_record(c, FCGI_GET_VALUES_RESULT, 0, out, olen);
}

/* The current record is for no active request: a management record (id
 * 0) gets its answer, a BEGIN_REQUEST beyond the first CANT_MPX_CONN, the
 * rest of an ended request is skipped.  0 or a negative errno. */
static int other_record(struct zcf_conn *c)
{
	struct fcgi_header *h = &c->rec;
	uint8_t body[8], rec[16];

	if (h->request_id == FCGI_NULL_REQUEST_ID) {
		if (h->type == FCGI_GET_VALUES)
			return answer_get_values(c);
		fcgi_unknown_type_encode(rec, h->type);
		return zcf_conn_send_record(c, FCGI_UNKNOWN_TYPE, 0, rec + 8,
					    8);
	}
	if (h->type == FCGI_BEGIN_REQUEST) {
		int err = zcf_conn_read_content(c, body);

		return err ? err : send_end(c, h->request_id, 0,
					    FCGI_CANT_MPX_CONN);
	}
	return 0;	/* skipped by the next zcf_conn_next_record */
}

/* The in-stream needs the next record of its stream: 1 with c->rec_left
 * bytes of content ready, 0 at the end of the stream, -1 when the request
 * ended (aborted, protocol error, connection gone: error set). */
static int next_stream_record(struct zcf_stream *st, struct zcf_conn *c)
{
	struct Params *q = st->req->paramsPtr;
	int err;

	for (;;) {
		if ((err = zcf_conn_next_record(c)))
			goto fail;
		if (c->rec.request_id != st->id) {
			if ((err = other_record(c)))
				goto fail;
			continue;
		}
		if (c->rec.type == FCGI_ABORT_REQUEST) {
			q->aborted = true;
			return zcf_stream_fail(st, ECONNABORTED);
		}
		if (c->rec.type != st->type) {
			err = -EPROTO;
			goto fail;
		}
		if (c->rec_left == 0)
			return 0;
		return 1;
	}
fail:
	c->broken = true;
	return zcf_stream_fail(st, err == -EPROTO ? FCGX_PROTOCOL_ERROR
			       : err == -EPIPE ? EPIPE : -err);
}

static void reader_fill(FCGX_Stream *s)
{
	struct zcf_stream *st = st_of(s);
	struct zcf_conn *c = st_conn(st);
	struct Params *q = st->req ? st->req->paramsPtr : NULL;

	if (st->parked) {
		st->parked = false;
		s->rdNext = st->park_next;
		s->stop = st->park_stop;
		s->stopUnget = st->park_unget;
		if (s->rdNext != s->stop)
			return;
	}
	if (!c || !q || s->isClosed) {
		s->rdNext = s->stop = NULL;
		return;
	}
	zcf_conn_consume(c, st->chunk);
	c->rec_left -= st->chunk;
	st->chunk = 0;
	s->rdNext = s->stop = s->stopUnget = NULL;
	for (;;) {
		const uint8_t *p;
		ssize_t n;

		if (c->rec_left == 0) {
			int r = next_stream_record(st, c);

			if (r <= 0) {
				s->isClosed = 1;
				q->in_done = true;
				return;
			}
		}
		n = zcf_conn_peek(c, &p, c->rec_left);
		if (n <= 0) {
			c->broken = true;
			zcf_stream_fail(st, n ? (int)-n : EPIPE);
			s->isClosed = 1;
			q->in_done = true;
			return;
		}
		st->chunk = (size_t)n;
		s->rdNext = s->stopUnget = (unsigned char *)p;
		s->stop = (unsigned char *)p + n;
		return;
	}
}

/* A record arrived while the application writes (its input was read to
 * the end): an ABORT_REQUEST or a management record is dealt with now,
 * if it is all here; nothing waits.  A request that follows this one
 * stays where it is, with everything behind it. */
static void poll_input(FCGX_Request *r, struct zcf_conn *c)
{
	struct Params *q = r->paramsPtr;

	if (!q || !q->in_done || q->aborted || c->broken || c->rec_left ||
	    zcf_conn_poll_input(c))
		return;
	for (;;) {
		size_t avail = zcf_conn_buffered(c);
		uint8_t hb[FCGI_HEADER_LEN];
		struct fcgi_header h;

		if (c->pad_left) {
			size_t n = c->pad_left < avail ? c->pad_left : avail;

			zcf_conn_consume(c, n);
			c->pad_left -= n;
			if (c->pad_left)
				return;
			avail -= n;
		}
		if (avail < FCGI_HEADER_LEN)
			return;
		zcf_conn_copy_buffered(c, 0, hb, sizeof(hb));
		if (fcgi_header_decode_any(hb, &h)) {
			c->broken = true;
			return;
		}
		/* The next request, pipelined behind this one (zchttpd
		 * does on the zero-copy transport), is the next accept's. */
		if (avail < fcgi_record_len(&h) ||
		    (h.request_id == r->requestId &&
		     h.type != FCGI_ABORT_REQUEST) ||
		    (h.request_id != FCGI_NULL_REQUEST_ID &&
		     h.type == FCGI_BEGIN_REQUEST))
			return;
		if (zcf_conn_next_record(c)) {
			c->broken = true;
			return;
		}
		if (h.request_id == r->requestId) {
			q->aborted = true;
			return;
		}
		if (other_record(c)) {
			c->broken = true;
			return;
		}
	}
}

/* Writers ------------------------------------------------------------ */

static bool st_channel(const struct zcf_stream *st)
{
	return zcf_stream_on_channel(st);
}

int zcf_writer_seal(struct zcf_stream *st)
{
	size_t used;
	int err = 0;

	if (!st->wbuf)
		return 0;
	used = (size_t)(st->s.wrNext - st->wbase);
	if (used) {
		if (!st->pend && (err = zc_agg_create(&st->pend)))
			goto out;
		if (!(err = zc_buf_publish(st->wbuf, used)))
			err = zc_agg_append_buf(st->pend, st->wbuf, 0, used);
	}
out:
	zc_buf_release(st->wbuf);
	st->wbuf = NULL;
	st->wbase = st->s.wrNext = st->s.stop = NULL;
	return err ? zcf_stream_fail(st, -err) : 0;
}

/* Put what the stream holds into a batch (records; its end with eos).
 * The staged bytes stay where they are until the batch has gone. */
static int writer_add(struct zcf_stream *st, struct zcf_batch *b, bool eos)
{
	if (st->s.FCGI_errno)
		return -1;
	if (st->wbuf && zcf_writer_seal(st))
		return -1;
	if (st->pend) {
		fcgi_batch_agg(&b->recs, st->type, st->id, st->pend);
		st->pend = NULL;
	}
	if (st->stage && st->s.wrNext != st->stage)
		fcgi_batch_bytes(&b->recs, st->type, st->id, st->stage,
				(size_t)(st->s.wrNext - st->stage));
	if (eos)
		fcgi_batch_bytes(&b->recs, st->type, st->id, NULL, 0);
	return 0;
}

static void writer_sent(struct zcf_stream *st, int err)
{
	if (st->stage)
		st->s.wrNext = st->stage;
	if (err)
		zcf_stream_fail(st, err == -EPIPE ? EPIPE : -err);
}

static bool writer_dead(struct zcf_stream *st)
{
	struct Params *q = st->req ? st->req->paramsPtr : NULL;
	struct zcf_conn *c = st_conn(st);

	if (st->s.FCGI_errno)
		return true;
	if (q && q->aborted) {
		zcf_stream_fail(st, ECONNABORTED);
		return true;
	}
	if (st->req && (!c || c->broken)) {
		zcf_stream_fail(st, EPIPE);
		return true;
	}
	return false;
}

int zcf_writer_push(struct zcf_stream *st, const void *bytes, size_t len,
		    zc_agg *agg, bool eos)
{
	struct zcf_batch b;
	int err;

	if (writer_dead(st)) {
		zc_agg_release(agg);
		return -1;
	}
	zcf_batch_init(&b, st_conn(st), st->rawfd);
	if (writer_add(st, &b, false)) {
		fcgi_batch_free(&b.recs);
		zc_agg_release(agg);
		return -1;
	}
	if (len)
		fcgi_batch_bytes(&b.recs, st->type, st->id, bytes, len);
	if (agg)
		fcgi_batch_agg(&b.recs, st->type, st->id, agg);
	if (eos)
		fcgi_batch_bytes(&b.recs, st->type, st->id, NULL, 0);
	err = zcf_batch_send(&b);
	writer_sent(st, err);
	if (!err && !eos && st->req)
		poll_input(st->req, st_conn(st));
	return err ? -1 : 0;
}

int zcf_writer_send(struct zcf_stream *st, bool eos)
{
	return zcf_writer_push(st, NULL, 0, NULL, eos);
}

/* Room for at least one byte at wrNext; `want` says how much is coming. */
static int writer_room(struct zcf_stream *st, size_t want)
{
	FCGX_Stream *s = &st->s;
	size_t size;
	int err;

	if (s->wrNext != s->stop)
		return 0;
	if (s->isClosed || s->isReader || writer_dead(st))
		return -1;
	if (!st_channel(st)) {
		if (!st->stage) {
			if (!(st->stage = malloc(ZCF_STAGE_SIZE)))
				return zcf_stream_fail(st, ENOMEM);
			st->stage_cap = ZCF_STAGE_SIZE;
			s->wrNext = st->stage;
			s->stop = st->stage + st->stage_cap;
			return 0;
		}
		return zcf_writer_send(st, false);
	}
	if (zcf_writer_seal(st))
		return -1;
	if (st->pend && zc_agg_len(st->pend) >= ZCF_SEND_AT &&
	    zcf_writer_send(st, false))
		return -1;
	size = st->used ? ZCF_WBUF_NEXT : ZCF_WBUF_FIRST;
	if (want > size)
		size = want < ZCF_WBUF_MAX ? want : ZCF_WBUF_MAX;
	if ((err = zc_buf_alloc(zcf_pool(), size, &st->wbuf)))
		return zcf_stream_fail(st, -err);
	st->wbase = zc_buf_wptr(st->wbuf);
	s->wrNext = st->wbase;
	s->stop = st->wbase + zc_buf_capacity(st->wbuf);
	return 0;
}

static void writer_empty(FCGX_Stream *s, int doClose)
{
	struct zcf_stream *st = st_of(s);

	if (s->isReader || s->isClosed)
		return;
	zcf_writer_send(st, doClose != 0);
	if (doClose)
		s->isClosed = 1;
}

int FCGX_PutChar(int c, FCGX_Stream *s)
{
	if (!s)
		return EOF;
	if (s->wrNext == s->stop && writer_room(st_of(s), 1))
		return EOF;
	*s->wrNext++ = (unsigned char)c;
	st_of(s)->used = true;
	return c & 0xff;
}

int FCGX_PutStr(const char *str, int n, FCGX_Stream *s)
{
	struct zcf_stream *st;
	int done = 0;

	if (!s || n < 0 || s->isReader)
		return EOF;
	st = st_of(s);
	if (n == 0)
		return 0;
	if (s->isClosed || writer_dead(st))
		return EOF;
	/* Standard transport, a large write: straight from the caller's
	 * memory into records, no staging copy. */
	if (!st_channel(st) && (size_t)n >= ZCF_STAGE_SIZE) {
		st->used = true;
		return zcf_writer_push(st, str, (size_t)n, NULL, false) ? EOF
									: n;
	}
	while (done < n) {
		size_t room, k;

		if (writer_room(st, (size_t)(n - done)))
			return EOF;
		room = (size_t)(s->stop - s->wrNext);
		k = (size_t)(n - done) < room ? (size_t)(n - done) : room;
		memcpy(s->wrNext, str + done, k);
		s->wrNext += k;
		done += (int)k;
		st->used = true;
	}
	return n;
}

int FCGX_PutS(const char *str, FCGX_Stream *s)
{
	size_t n = strlen(str);

	if (n > INT32_MAX)
		return EOF;
	return FCGX_PutStr(str, (int)n, s);
}

int FCGX_VFPrintF(FCGX_Stream *s, const char *format, va_list arg)
{
	char small[1024], *p = small;
	va_list ap;
	int n, r;

	va_copy(ap, arg);
	n = vsnprintf(small, sizeof(small), format, ap);
	va_end(ap);
	if (n < 0)
		return EOF;
	if ((size_t)n >= sizeof(small)) {
		if (!(p = malloc((size_t)n + 1)))
			return EOF;
		va_copy(ap, arg);
		vsnprintf(p, (size_t)n + 1, format, ap);
		va_end(ap);
	}
	r = FCGX_PutStr(p, n, s);
	if (p != small)
		free(p);
	return r;
}

int FCGX_FPrintF(FCGX_Stream *s, const char *format, ...)
{
	int r;

	ZCF_VARARGS(r, format, FCGX_VFPrintF(s, format, zcf_ap));
	return r;
}

int FCGX_FFlush(FCGX_Stream *s)
{
	if (!s)
		return EOF;
	if (s->isReader || s->isClosed)
		return 0;
	return zcf_writer_send(st_of(s), false) ? EOF : 0;
}

int FCGX_FClose(FCGX_Stream *s)
{
	struct zcf_stream *st;
	int r = 0;

	if (!s)
		return 0;
	st = st_of(s);
	if (!s->wasFCloseCalled && !s->isReader && !s->isClosed) {
		struct Params *q = st->req ? st->req->paramsPtr : NULL;

		if (!(q && q->aborted))
			r = zcf_writer_send(st, true);
	}
	s->isClosed = 1;
	s->wasFCloseCalled = 1;
	if (s->isReader)
		s->rdNext = s->stop;
	return r || s->FCGI_errno ? EOF : 0;
}

/* Readers ------------------------------------------------------------ */

int FCGX_GetChar(FCGX_Stream *s)
{
	if (!s || !s->isReader)
		return EOF;
	if (s->rdNext != s->stop)
		return *s->rdNext++;
	if (s->isClosed)
		return EOF;
	reader_fill(s);
	if (s->rdNext != s->stop)
		return *s->rdNext++;
	return EOF;
}

int FCGX_UnGetChar(int c, FCGX_Stream *s)
{
	struct zcf_stream *st;

	if (!s || c == EOF || !s->isReader || s->isClosed)
		return EOF;
	st = st_of(s);
	c &= 0xff;
	if (s->rdNext && s->rdNext != s->stopUnget && s->rdNext[-1] == c) {
		s->rdNext--;
		return c;
	}
	/* The input may be another process's read-only memory: a different
	 * byte goes in front of it, one at a time. */
	if (st->parked)
		return EOF;
	st->parked = true;
	st->park_next = s->rdNext;
	st->park_stop = s->stop;
	st->park_unget = s->stopUnget;
	st->pushback[0] = (unsigned char)c;
	s->rdNext = s->stopUnget = st->pushback;
	s->stop = st->pushback + 1;
	return c;
}

int FCGX_GetStr(char *str, int n, FCGX_Stream *s)
{
	int done = 0;

	if (!s || n <= 0 || !s->isReader)
		return 0;
	while (done < n) {
		size_t avail = (size_t)(s->stop - s->rdNext), k;

		if (!avail) {
			if (s->isClosed)
				break;
			reader_fill(s);
			if (s->rdNext == s->stop)
				break;
			continue;
		}
		k = (size_t)(n - done) < avail ? (size_t)(n - done) : avail;
		memcpy(str + done, s->rdNext, k);
		s->rdNext += k;
		done += (int)k;
	}
	return done;
}

char *FCGX_GetLine(char *str, int n, FCGX_Stream *s)
{
	int i = 0, c;

	if (!s || n <= 0)
		return NULL;
	while (i < n - 1) {
		c = FCGX_GetChar(s);
		if (c == EOF) {
			if (i == 0)
				return NULL;
			break;
		}
		str[i++] = (char)c;
		if (c == '\n')
			break;
	}
	str[i] = '\0';
	return str;
}

int FCGX_HasSeenEOF(FCGX_Stream *s)
{
	return s && s->isClosed ? EOF : 0;
}

int FCGX_GetError(FCGX_Stream *s)
{
	return s ? s->FCGI_errno : 0;
}

void FCGX_ClearError(FCGX_Stream *s)
{
	struct zcf_stream *st;

	if (!s)
		return;
	st = st_of(s);
	s->FCGI_errno = 0;
	/* A writer gets its room back (unless its request is gone). */
	if (!s->isReader && st->stage && !s->isClosed) {
		s->wrNext = st->stage;
		s->stop = st->stage + st->stage_cap;
	}
}

/* A stream that writes records on a bare socket (cgi-fcgi's use). */
FCGX_Stream *FCGX_CreateWriter(int socket, int requestId, int bufflen,
			       int streamType)
{
	struct zcf_stream *st = stream_new(NULL, socket, false,
					   (uint8_t)streamType,
					   (uint16_t)requestId);

	(void)bufflen;
	return st ? &st->s : NULL;
}

void FCGX_FreeStream(FCGX_Stream **stream)
{
	if (!stream || !*stream)
		return;
	stream_free(st_of(*stream));
	*stream = NULL;
}

int FCGX_StartFilterData(FCGX_Stream *s)
{
	struct zcf_stream *st;

	if (!s)
		return -1;
	st = st_of(s);
	if (!s->isReader || !s->isClosed || !st->req ||
	    st->req->role != FCGI_FILTER || st->type != FCGI_STDIN ||
	    s->FCGI_errno) {
		zcf_stream_fail(st, FCGX_CALL_SEQ_ERROR);
		return -1;
	}
	st->type = FCGI_DATA;
	s->isClosed = 0;
	s->rdNext = s->stop = s->stopUnget = NULL;
	((struct Params *)st->req->paramsPtr)->in_done = false;
	return 0;
}

void FCGX_SetExitStatus(int status, FCGX_Stream *s)
{
	struct zcf_stream *st = s ? st_of(s) : NULL;

	if (st && st->req)
		st->req->appStatus = status;
}

/* ------------------------------------------------------------ parameters */

char *FCGX_GetParam(const char *name, FCGX_ParamArray envp)
{
	size_t len;

	if (!name || !envp)
		return NULL;
	len = strlen(name);
	for (; *envp; envp++)
		if (!strncmp(*envp, name, len) && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

/*
 * The pairs become "NAME=VALUE" strings where they lie, in one pass that
 * checks and converts: a pair's length bytes (two at least) leave room for
 * the '=' and the NUL, so each string ends inside its own pair, before
 * the next pair's lengths are read.  The pointers are gathered on the
 * stack (a request has some 20-40 parameters) and copied into envp.
 */
#define ENV_LOCAL 64

static int build_env(struct Params *q, size_t len)
{
	char *local[ENV_LOCAL], **v = local;
	size_t off = 0, n = 0, cap = ENV_LOCAL;
	struct fcgi_nv nv;
	int r = 0;

	for (;;) {
		char *w = (char *)q->block + off;

		if ((r = fcgi_nv_next(q->block, len, &off, &nv)) != 1)
			break;
		if (n == cap) {
			char **g = malloc(2 * cap * sizeof(*g));

			if (!g) {
				r = -ENOMEM;
				break;
			}
			memcpy(g, v, n * sizeof(*g));
			if (v != local)
				free(v);
			v = g;
			cap *= 2;
		}
		v[n++] = w;
		memmove(w, nv.name, nv.name_len);
		w[nv.name_len] = '=';
		memmove(w + nv.name_len + 1, nv.value, nv.value_len);
		w[nv.name_len + 1 + nv.value_len] = 0;
	}
	if (!r && !(q->env = malloc((n + 1) * sizeof(char *))))
		r = -ENOMEM;
	if (!r) {
		memcpy(q->env, v, n * sizeof(char *));
		q->env[n] = NULL;
	}
	if (v != local)
		free(v);
	return r;
}

static void params_free(struct Params *q)
{
	if (!q)
		return;
	for (int i = 0; i < 3; i++)
		stream_free((&q->in)[i]);
	free(q->block);
	free(q->env);
	free(q);
}

/* ------------------------------------------------------------ requests */

enum { START_OK, START_AGAIN, START_CLOSE };

/* Read BEGIN_REQUEST and PARAMS for the next request on c.  START_OK: the
 * request is set up; START_AGAIN: it ended before it started (aborted,
 * unknown role) and the connection may carry another; START_CLOSE: the
 * connection is done (closed by the peer, broken). */
static int start_request(FCGX_Request *r, struct zcf_conn *c)
{
	struct fcgi_begin begin;
	struct Params *q;
	uint8_t body[8];
	size_t len = 0;
	uint16_t id;

	for (;;) {
		if (zcf_conn_next_record(c))
			return START_CLOSE;
		if (c->rec.request_id != FCGI_NULL_REQUEST_ID &&
		    c->rec.type == FCGI_BEGIN_REQUEST)
			break;
		/* Management, or what is left of a request that ended. */
		if (c->rec.request_id == FCGI_NULL_REQUEST_ID &&
		    other_record(c))
			return START_CLOSE;
	}
	id = c->rec.request_id;
	if (zcf_conn_read_content(c, body) ||
	    fcgi_begin_decode(body, sizeof(body), &begin))
		return START_CLOSE;
	r->keepConnection = (begin.flags & FCGI_KEEP_CONN) != 0;
	if (begin.role != FCGI_RESPONDER && begin.role != FCGI_AUTHORIZER &&
	    begin.role != FCGI_FILTER) {
		if (send_end(c, id, 0, FCGI_UNKNOWN_ROLE))
			return START_CLOSE;
		return r->keepConnection ? START_AGAIN : START_CLOSE;
	}
	if (!(q = calloc(1, sizeof(*q))))
		return START_CLOSE;
	for (;;) {
		if (zcf_conn_next_record(c))
			goto close;
		if (c->rec.request_id != id) {
			if (other_record(c))
				goto close;
			continue;
		}
		if (c->rec.type == FCGI_ABORT_REQUEST) {
			params_free(q);
			if (send_end(c, id, 0, FCGI_REQUEST_COMPLETE))
				return START_CLOSE;
			return r->keepConnection ? START_AGAIN : START_CLOSE;
		}
		if (c->rec.type != FCGI_PARAMS)
			goto close;
		if (c->rec_left == 0)
			break;
		if (len + c->rec_left > ZCF_PARAMS_MAX)
			goto close;
		{
			uint8_t *v = realloc(q->block, len + c->rec_left);

			if (!v)
				goto close;
			q->block = v;
		}
		size_t n = c->rec_left;

		if (zcf_conn_read_content(c, q->block + len))
			goto close;
		len += n;
	}
	if (build_env(q, len))
		goto close;
	q->in = stream_new(r, -1, true, FCGI_STDIN, id);
	q->out = stream_new(r, -1, false, FCGI_STDOUT, id);
	q->err = stream_new(r, -1, false, FCGI_STDERR, id);
	if (!q->in || !q->out || !q->err)
		goto close;
	/* An Authorizer is sent no input. */
	if (begin.role == FCGI_AUTHORIZER) {
		q->in->s.isClosed = 1;
		q->in_done = true;
	}
	r->requestId = id;
	r->role = begin.role;
	r->appStatus = 0;
	r->paramsPtr = q;
	r->in = &q->in->s;
	r->out = &q->out->s;
	r->err = &q->err->s;
	r->envp = q->env;
	r->isBeginProcessed = 1;
	r->nWriters = 2;
	return START_OK;
close:
	params_free(q);
	c->broken = true;
	return START_CLOSE;
}

void FCGX_Free(FCGX_Request *r, int close)
{
	if (!r)
		return;
	params_free(r->paramsPtr);
	r->paramsPtr = NULL;
	r->in = r->out = r->err = NULL;
	r->envp = NULL;
	if (close && r->ipcFd >= 0) {
		struct zcf_conn *c = zcf_conn_get(r->ipcFd);

		if (c)
			zcf_conn_close(c);
		r->ipcFd = -1;
		r->detached = 0;
	}
}

void FCGX_Finish_r(FCGX_Request *r)
{
	struct Params *q;
	struct zcf_conn *c;
	bool close;

	if (!r || !(q = r->paramsPtr))
		return;
	c = zcf_conn_get(r->ipcFd);
	close = !r->keepConnection || !c;
	if (c && !c->broken && !q->ended) {
		struct zcf_batch b;
		uint8_t end[16];
		int err;

		zcf_batch_init(&b, c, -1);
		if (!q->aborted) {
			struct zcf_stream *e = q->err, *o = q->out;

			if (!e->s.isClosed)
				writer_add(e, &b, e->used);
			if (!o->s.isClosed)
				writer_add(o, &b, true);
		}
		fcgi_end_encode(end, (uint16_t)r->requestId,
				(uint32_t)r->appStatus, FCGI_REQUEST_COMPLETE);
		fcgi_batch_bytes(&b.recs, FCGI_END_REQUEST,
				 (uint16_t)r->requestId, end + 8, 8);
		err = zcf_batch_send(&b);
		q->ended = true;
		if (err)
			close = true;
	}
	if (c && (c->broken || c->eof))
		close = true;
	r->isBeginProcessed = 0;
	FCGX_Free(r, close);
}

int FCGX_Accept_r(FCGX_Request *r)
{
	if (!lib_initialized)
		FCGX_Init();
	FCGX_Finish_r(r);
	for (;;) {
		struct zcf_conn *c;
		int err;

		if (atomic_load(&shutdown_pending))
			return -1;
		if (r->ipcFd < 0) {
			err = zcf_conn_accept(r->listen_sock, wake[0], &c);
			if (err == -EAGAIN)
				continue;
			if (err == -EINTR) {
				if (r->flags & FCGI_FAIL_ACCEPT_ON_INTR)
					return -1;
				continue;
			}
			if (err) {
				errno = -err;
				return -1;
			}
			r->ipcFd = c->fd;
		}
		c = zcf_conn_get(r->ipcFd);
		if (!c) {
			r->ipcFd = -1;
			continue;
		}
		/* Asleep until the next request begins; a stop asked for
		 * meanwhile (the wake pipe) ends the wait. */
		err = zcf_conn_wait_input(c, wake[0]);
		if (err == -EINTR)
			continue;
		switch (err ? START_CLOSE : start_request(r, c)) {
		case START_OK:
			return 0;
		case START_AGAIN:
			continue;
		default:
			zcf_conn_close(c);
			r->ipcFd = -1;
		}
	}
}

int FCGX_Accept(FCGX_Stream **in, FCGX_Stream **out, FCGX_Stream **err,
		FCGX_ParamArray *envp)
{
	int rc;

	if (!lib_initialized && (rc = FCGX_Init()))
		return rc;
	rc = FCGX_Accept_r(&the_request);
	*in = the_request.in;
	*out = the_request.out;
	*err = the_request.err;
	*envp = the_request.envp;
	return rc;
}

void FCGX_Finish(void)
{
	FCGX_Finish_r(&the_request);
}
