/*
 * fuzz_sock_in.c - libFuzzer target: a socket's input assembly
 * (sock_in.h), against a simulated stream.
 *
 * The peer sends a stream whose every byte is known (a function of its
 * position), so a byte lost, repeated or moved is seen at once.  The input
 * is a script that interleaves what the peer, the kernel and the owner do:
 *   - the peer sends some bytes, or closes;
 *   - plain sockets: reads that return what the socket has, cut where the
 *     script says (split reads); a ring receive that is armed, takes
 *     bytes from the socket into its queue, delivers them in pieces of at
 *     most 2 KiB (sock_in_arrive), is cancelled and ends -- as the
 *     io_uring loop's receives do, the last completion after the cancel;
 *   - HTTPS: records of sizes the script gives, decoded whole when all of
 *     a record is in, handed out as far as the reader has room, the rest
 *     held decoded (OpenSSL's SSL_pending); with read-ahead (tls.c after
 *     the handshake) bytes past the record are said to be held too after
 *     a read that made progress, though they may be only part of the next
 *     record, so a read may then find nothing (-EAGAIN) and the source
 *     says nothing is held until it made progress again;
 *   - the owner fills, reads, consumes from the front (a request
 *     answered) or after a head (a body taken), and gives its buffer back.
 * Asserted after every step: the window is exactly the stream's next
 * bytes after what the owner consumed, the overflow the bytes after those,
 * and the source's next byte the one after those (nothing between them
 * lost or overtaken); the window stays within cap, the overflow within
 * over_max; each call's result is what the state allows (-EAGAIN only
 * when nothing may or can be read, -ENOBUFS only for a full window, 0 only
 * at the end).  At the end everything is drained and must arrive whole.
 * Small windows, so that full windows and the overflow's bound are met at
 * fuzzing sizes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sock_in.h"

#include "fuzz_check.h"

#define STREAM_MAX 16384u
#define RING_PIECE 2048u		/* EV_RECV_MAX */

static uint8_t stream_byte(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;

	return (uint8_t)(x >> 24 ^ x >> 11 ^ i);
}

struct sim {
	size_t n;			/* the stream's length */
	size_t sent;			/* bytes the peer has sent */
	bool closed;			/* ... and then closed */
	size_t taken;			/* bytes taken out of the socket */
	size_t read_cut;		/* a read returns at most this */
	/* Ring receive (plain only): it took [rq, taken) not yet delivered. */
	bool ring_armed, ring_live;
	size_t rq;
	/* HTTPS: the record [rec_start, rec_end) decoded, dec handed out. */
	bool tls;
	bool ahead, buffered;		/* read-ahead; raw bytes held */
	size_t rec_end, dec;
	const uint8_t *rec_sizes;
	size_t nrec_sizes, next_rec;
	unsigned recvs;			/* calls of the source's recv */
};

static size_t next_record_end(const struct sim *s)
{
	size_t len = s->nrec_sizes ? 1 + s->rec_sizes[s->next_rec %
						      s->nrec_sizes] * 8u
				   : 1024;
	return s->rec_end + len < s->n ? s->rec_end + len : s->n;
}

static ssize_t sim_recv(void *ctx, void *buf, size_t len)
{
	struct sim *s = ctx;
	size_t k;

	s->recvs++;
	CHECK(len > 0);
	/* Never while the ring may still deliver (its bytes come first),
	 * which sock_in_next() forbids: the content checks would catch the
	 * overtaking too, this says where. */
	CHECK(!s->ring_live);
	if (s->tls) {
		if (s->dec == s->rec_end) {
			size_t end = next_record_end(s);

			if (end == s->rec_end || s->sent < end) {
				s->buffered = false;
				return s->closed && s->rec_end == s->n ? 0
								       : -EAGAIN;
			}
			s->dec = s->rec_end;
			s->rec_end = s->taken = end;
			s->next_rec++;
		}
		k = s->rec_end - s->dec;
		if (k > len)
			k = len;
		for (size_t i = 0; i < k; i++)
			((uint8_t *)buf)[i] = stream_byte(s->dec + i);
		s->dec += k;
		s->buffered = s->ahead && s->sent > s->rec_end;
		return (ssize_t)k;
	}
	k = s->sent - s->taken;
	if (!k)
		return s->closed ? 0 : -EAGAIN;
	if (k > len)
		k = len;
	if (k > s->read_cut)
		k = s->read_cut;
	for (size_t i = 0; i < k; i++)
		((uint8_t *)buf)[i] = stream_byte(s->taken + i);
	s->taken += k;
	s->rq = s->taken;
	return (ssize_t)k;
}

static bool sim_decoded(void *ctx)
{
	const struct sim *s = ctx;

	return s->dec < s->rec_end || s->buffered;
}

/* The owner's view: what it consumed, and the window it should see. */
struct owner {
	size_t next;			/* the stream position after the window */
	uint8_t model[4096];		/* the window as it must be */
	size_t model_len;
};

/* The stream position of the first byte sock_in has not got yet. */
static size_t source_pos(const struct sim *s)
{
	return s->tls ? s->dec : s->rq;
}

static void check(struct sock_in *in, struct sock_bufs *b, struct sim *s,
		  struct owner *o)
{
	CHECK(in->len <= b->cap);
	CHECK(in->over_len <= b->over_max);
	CHECK(!in->len || in->buf);
	if (in->len > o->model_len) {	/* bytes came: the stream's next */
		size_t add = in->len - o->model_len;

		for (size_t i = 0; i < add; i++)
			CHECK((uint8_t)in->buf[o->model_len + i] ==
			      stream_byte(o->next + i));
		memcpy(o->model + o->model_len, in->buf + o->model_len, add);
		o->model_len = in->len;
		o->next += add;
	}
	CHECK(in->len == o->model_len);
	CHECK(!in->len || memcmp(in->buf, o->model, in->len) == 0);
	for (size_t i = 0; i < in->over_len; i++)
		CHECK((uint8_t)in->over[i] == stream_byte(o->next + i));
	/* Nothing between the overflow and the source. */
	CHECK(o->next + in->over_len == source_pos(s));
	CHECK(in->arriving == s->ring_live);
}

static void consume(struct sock_in *in, struct owner *o, size_t off,
		    size_t n)
{
	if (off > in->len)
		off = in->len;
	if (n > in->len - off)
		n = in->len - off;
	sock_in_consume(in, off, n);
	memmove(o->model + off, o->model + off + n, o->model_len - off - n);
	o->model_len -= n;
}

/* The owner reads; the result must be what the state allows. */
static ssize_t owner_read(struct sock_in *in, struct sock_bufs *b,
			  const struct sock_in_src *src, struct sim *s)
{
	bool held = in->over_len > 0, live = s->ring_live;
	bool had_buf = in->buf != NULL;
	size_t before = in->len;
	ssize_t n = sock_in_read(in, b, src);

	if (n > 0) {
		CHECK(in->len == before + (size_t)n);
	} else {
		CHECK(in->len == before);
		if (n == -ENOBUFS)
			CHECK(before == b->cap);
		else if (n == -EAGAIN)
			CHECK(live || (!held && (s->tls ? !sim_decoded(s)
						        : s->taken == s->sent)));
		else
			CHECK(n == 0 && !held && !live && s->closed &&
			      source_pos(s) == s->n);
		if (!had_buf && n != -ENOBUFS)
			CHECK(in->buf == NULL);	/* given back */
	}
	return n;
}

static void ring_deliver(struct sock_in *in, struct sock_bufs *b,
			 struct sim *s, size_t k, bool *dead)
{
	uint8_t piece[RING_PIECE];
	size_t room, behind;
	int err;

	if (k > s->taken - s->rq)
		k = s->taken - s->rq;
	if (k > RING_PIECE)
		k = RING_PIECE;
	if (!k)
		return;
	for (size_t i = 0; i < k; i++)
		piece[i] = stream_byte(s->rq + i);
	room = in->over_len ? 0 : b->cap - in->len;
	behind = k > room ? k - room : 0;
	err = sock_in_arrive(in, b, (const char *)piece, k);
	if (err) {
		/* Beyond the bound: the connection is dropped (sock.c). */
		CHECK(err == -ENOBUFS);
		CHECK(in->over_len + behind > b->over_max);
		*dead = true;
		return;
	}
	CHECK(in->over_len <= b->over_max);
	s->rq += k;
}

/* A request body read past the window, as sock.c's sock_read_agg does
 * (by reference from the socket where it can): what is held first,
 * nothing while the ring may deliver, then the source. */
static void read_past_window(struct sock_in *in, const struct sock_in_src *src,
			     struct sim *s, struct owner *o, size_t want)
{
	uint8_t buf[4096];
	ssize_t n;

	if (want > sizeof(buf))
		want = sizeof(buf);
	switch (sock_in_next(in, src)) {
	case SOCK_IN_HELD:
		n = (ssize_t)(want < in->over_len ? want : in->over_len);
		memcpy(buf, in->over, (size_t)n);
		sock_in_take_over(in, (size_t)n);
		break;
	case SOCK_IN_WAIT:
		CHECK(s->ring_live);
		return;
	default:
		n = src->recv(src->ctx, buf, want);
		if (n <= 0)
			return;
		break;
	}
	for (ssize_t i = 0; i < n; i++)
		CHECK(buf[i] == stream_byte(o->next + (size_t)i));
	o->next += (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim s = { 0 };
	struct owner o = { 0 };
	struct sock_bufs b;
	struct sock_in in = { 0 };
	struct sock_in_src src = { sim_recv, sim_decoded, &s };
	size_t i = 4, cap, over_max;
	bool dead = false;

	if (size < 4)
		return 0;
	s.tls = data[0] & 1;
	s.ahead = data[0] & 2;
	cap = 8 + (size_t)data[1] * 8;		/* 8 .. 2048 */
	over_max = 64 + (size_t)data[2] * 64;	/* 64 .. 16384 */
	s.n = (size_t)data[3] * 64;		/* 0 .. 16320 */
	s.read_cut = 1 + data[0] / 2;
	if (s.tls) {	/* the record sizes: the script's tail, read backwards */
		s.rec_sizes = data + size / 2;
		s.nrec_sizes = size - size / 2;
	} else {
		src.decoded = NULL;	/* as a plain socket's */
	}
	sock_bufs_init(&b, cap, 16, over_max);

	while (!dead && i + 1 < size) {
		uint8_t op = data[i] % 14, arg = data[i + 1];

		i += 2;
		switch (op) {
		case 0:		/* the peer sends */
			s.sent += 1 + (size_t)arg * 16;
			if (s.sent > s.n)
				s.sent = s.n;
			break;
		case 1:		/* the peer closes */
			if (s.sent == s.n)
				s.closed = true;
			break;
		case 2:		/* a ring receive is armed */
			if (!s.tls && !s.ring_live) {
				s.ring_armed = s.ring_live = true;
				in.arriving = true;
			}
			break;
		case 3:		/* it takes what the socket has */
			if (s.ring_armed) {
				size_t k = 1 + (size_t)arg * 32;

				if (k > s.sent - s.taken)
					k = s.sent - s.taken;
				s.taken += k;
			}
			break;
		case 4:		/* it delivers a piece */
			if (s.ring_live)
				ring_deliver(&in, &b, &s, 1 + (size_t)arg * 16,
					     &dead);
			break;
		case 5:		/* it is cancelled */
			s.ring_armed = false;
			break;
		case 6:		/* its last completion (ended or ran dry) */
			if (s.ring_live && s.rq == s.taken) {
				s.ring_armed = s.ring_live = false;
				in.arriving = false;
			}
			break;
		case 7:
			sock_in_fill(&in, &b, &src);
			break;
		case 8:
			owner_read(&in, &b, &src, &s);
			break;
		case 9:		/* a request answered */
			consume(&in, &o, 0, arg);
			break;
		case 10:	/* a body taken after its head */
			consume(&in, &o, arg % 64, 1 + (size_t)arg * 4);
			break;
		case 11:
			sock_in_release(&in, &b);
			break;
		case 12:	/* how much one read returns */
			s.read_cut = 1 + (size_t)arg * 64;
			break;
		case 13:	/* a body read into an aggregate */
			read_past_window(&in, &src, &s, &o,
					 1 + (size_t)arg * 16);
			break;
		}
		if (!dead)
			check(&in, &b, &s, &o);
	}

	if (!dead) {
		/* The end: the ring gives what it has and stops, the peer sends
		 * the rest and closes, the owner reads and consumes it all. */
		s.ring_armed = false;
		while (!dead && !s.tls && s.rq < s.taken) {
			ring_deliver(&in, &b, &s, RING_PIECE, &dead);
			if (!dead) {
				check(&in, &b, &s, &o);
				consume(&in, &o, 0, in.len);
				sock_in_fill(&in, &b, &src);
				check(&in, &b, &s, &o);
			}
		}
	}
	if (!dead) {
		ssize_t n;
		unsigned rounds = 0;

		s.ring_live = false;
		in.arriving = false;
		s.sent = s.n;
		s.closed = true;
		s.read_cut = 4096;
		do {
			consume(&in, &o, 0, in.len);
			n = owner_read(&in, &b, &src, &s);
			check(&in, &b, &s, &o);
			CHECK(++rounds <= 4 * STREAM_MAX);
		} while (n > 0);
		CHECK(n == 0);
		CHECK(o.next == s.n && in.over_len == 0);
	}
	sock_in_free(&in, &b);
	sock_bufs_fini(&b);
	return 0;
}
