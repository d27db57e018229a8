/*
 * channel_multi.c - multiway channels (Streamline's multiway pipes, section
 * 5.1): one writer, many readers, every reader sees every message in order.
 *
 * A multiway channel is a set of ordinary channels, one per reader, all
 * owned by the writer.  Readers are plain channel ends (zc_channel_recv,
 * zc_channel_peek), in this process or any other.  Sending a message puts
 * the same descriptors on every reader's ring: the buffers are lent once per
 * reader (each reader's lend table keeps its own reference), so they are
 * shared read-only and go back to the writer's pool when the last reader
 * has released them -- plain reference counting, nothing new.  Everything
 * else is the point-to-point channel's too: pools and files shared once per
 * reader, doorbells, the window, a dead reader's loans released KREF.
 *
 * All or nothing: a message goes to every live reader or to none.  Before
 * it sends to anybody, zc_mchannel_send asks every reader for room
 * (zc_ch_send_room); room on a ring only grows while we are its only
 * producer, so after all said yes the sends cannot fall behind.  So the
 * slowest live reader bounds the writer: once it is a window (1 MiB, or
 * 256 descriptors) behind, a blocking send waits for it and a non-blocking
 * one returns -EAGAIN with nothing sent, as a full socket would.  A reader
 * that has read a message but still holds its buffers does not hold the
 * writer back; it holds only pool memory, its own choice.
 *
 * Readers that go: a reader that closed its end (CLOSE) or whose process
 * died (EOF on the socket) answers -EPIPE to the room check or the send;
 * that reader is dropped (its channel closed, lingering until the buffers
 * it still holds come back, or released at once, KREF, if its process is
 * gone), and the message goes to the others.  A dead reader is noticed when
 * the writer waits for it, every 64 sends, or at zc_mchannel_readers.
 *
 * Readers that come: zc_mchannel_add makes an open channel a reader; it
 * receives the messages sent from then on (it starts at the current head,
 * never at old messages: those may be recycled already).
 *
 * The writer's event loop polls zc_mchannel_fd (an epoll descriptor over
 * every reader's socket): after -EAGAIN it turns readable when a reader
 * makes room, as zc_channel_fd does for one channel.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "channel_int.h"

#define MAX_READERS 1024u

struct zc_mchannel {
	zc_channel **rd;	/* live readers, in the order they joined */
	unsigned n, cap;
	int epfd;
	bool nonblock;
};

int zc_mchannel_create(zc_mchannel **out)
{
	zc_mchannel *m;

	if (!out)
		return -EINVAL;
	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->epfd < 0) {
		int err = -errno;

		free(m);
		return err;
	}
	*out = m;
	return 0;
}

int zc_mchannel_fd(const zc_mchannel *m)
{
	return m ? m->epfd : -EINVAL;
}

int zc_mchannel_add(zc_mchannel *m, zc_channel *ch)
{
	struct epoll_event ev = { .events = EPOLLIN };
	zc_channel **v;

	if (!m || !ch)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	if (ch->handshaking) {
		/* zc_channel_open_nb: a reader joins once it answered. */
		int err = zc_channel_handshake(ch);

		if (err)
			return err;
	}
	for (unsigned i = 0; i < m->n; i++)
		if (m->rd[i] == ch)
			return -EEXIST;
	if (m->n == MAX_READERS)
		return -ENOBUFS;
	if (m->n == m->cap) {
		unsigned cap = m->cap ? m->cap * 2 : 4;

		v = realloc(m->rd, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->rd = v;
		m->cap = cap;
	}
	ev.data.ptr = ch;
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, ch->sock, &ev) < 0)
		return -errno;
	ch->nonblock = m->nonblock;
	m->rd[m->n++] = ch;
	return 0;
}

/* Reader i is gone or broken: close our end of it (it lingers while the
 * reader's process still holds our buffers). */
static void drop(zc_mchannel *m, unsigned i)
{
	zc_channel *ch = m->rd[i];

	epoll_ctl(m->epfd, EPOLL_CTL_DEL, ch->sock, NULL);
	/* The rest keep their join order. */
	memmove(&m->rd[i], &m->rd[i + 1], (m->n - i - 1) * sizeof(*m->rd));
	m->n--;
	zc_channel_close(ch);
}

/* A reader's answer that means it is gone for good (rather than a
 * condition of this call, such as -EAGAIN or -EINTR). */
static bool reader_gone(int err)
{
	return err == -EPIPE || err == -EPROTO || err == -EBADF;
}

/*
 * Before -EAGAIN: take the doorbells waiting on every other reader's
 * socket.  Only the reader that said -EAGAIN is waited for (its `sleeping`
 * flag is set; it drained its own socket before setting it, so its next
 * doorbell is a real wake-up), but the others may hold old doorbells --
 * a reader rings whenever it makes room, also when we did not need it --
 * and with them in the sockets zc_mchannel_fd stays readable and the
 * writer's poll loop spins.  A reader found gone here is dropped.
 */
static void quiet_others(zc_mchannel *m, zc_channel *waited)
{
	for (unsigned i = 0; i < m->n;) {
		zc_channel *ch = m->rd[i];

		if (ch != waited && zc_ch_drain_sock(ch) < 0) {
			drop(m, i);
			continue;
		}
		i++;
	}
}

int zc_mchannel_send(zc_mchannel *m, const zc_agg *agg)
{
	zc_agg *owned = NULL;
	unsigned sent = 0;
	int err = 0;

	if (!m || !agg)
		return -EINVAL;
	/* Borrowed bytes become one pool copy that every reader shares. */
	if (zc_agg_has_borrowed(agg)) {
		if ((err = zc_agg_owned_copy(agg, &owned)))
			return err;
		agg = owned;
	}
	for (unsigned i = 0; i < m->n;) {
		err = zc_ch_send_room(m->rd[i], agg);
		if (err && reader_gone(err)) {
			drop(m, i);
			continue;
		}
		if (err == -EAGAIN)
			quiet_others(m, m->rd[i]);
		if (err)
			goto out;	/* -EAGAIN, -EINTR, ...: nothing sent */
		i++;
	}
	for (unsigned i = 0; i < m->n;) {
		err = zc_ch_send_fitted(m->rd[i], agg);
		if (err && reader_gone(err)) {
			drop(m, i);
			continue;
		}
		if (err)
			goto out;	/* -ENOMEM, a pool or file not shareable */
		sent++;
		i++;
	}
	err = sent ? 0 : -EPIPE;
out:
	zc_agg_release(owned);
	return err;
}

int zc_mchannel_readers(zc_mchannel *m)
{
	if (!m)
		return -EINVAL;
	for (unsigned i = 0; i < m->n;) {
		zc_channel *ch = m->rd[i];

		/* CLOSE, EOF and doorbells, then the buffers it gave back. */
		zc_ch_drain_sock(ch);
		zc_ch_flush_returns(ch);
		zc_ch_drain_returns(ch);
		if (ch->peer_closed || atomic_load(&ch->peer_gone) ||
		    atomic_load(&ch->broken)) {
			drop(m, i);
			continue;
		}
		i++;
	}
	zc_ch_reap_maybe();
	return (int)m->n;
}

int zc_mchannel_set_nonblock(zc_mchannel *m, int on)
{
	if (!m)
		return -EINVAL;
	m->nonblock = on != 0;
	for (unsigned i = 0; i < m->n; i++)
		m->rd[i]->nonblock = m->nonblock;
	return 0;
}

void zc_mchannel_close(zc_mchannel *m)
{
	if (!m)
		return;
	while (m->n)
		drop(m, m->n - 1);
	close(m->epfd);
	free(m->rd);
	free(m);
}
