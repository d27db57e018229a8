/*
 * zc_channel.h - libzc channels: two processes joined by a UNIX socket and
 * shared descriptor rings, transferring aggregates (zc.h) as descriptors:
 * buffers are lent and come back when the peer releases them, file
 * extents travel as (file, offset, length), bytes never.
 * docs/ARCHITECTURE.md ("Channels") has the design.
 *
 * A channel belongs to one thread at a time (the caller serialises).
 * iol_write and cs_write on zc_channel_fd() pass descriptors too.
 */
#ifndef ZC_CHANNEL_H
#define ZC_CHANNEL_H

#include "zc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zc_channel zc_channel;

/* Turn a connected UNIX socket (SOCK_SEQPACKET or SOCK_STREAM) into a
 * channel; both ends call this.  The channel owns the socket from then on.
 * With a channel, iol_write/cs_write on zc_channel_fd() pass descriptors. */
int zc_channel_open(int sock, zc_channel **out);
/* zc_channel_open for an event loop: sends our side of the handshake and
 * returns at once with a non-blocking channel whose peer may not have
 * answered yet.  zc_channel_handshake completes it: 0 once done (also
 * when it was done already), -EAGAIN while the peer's answer has not
 * arrived (poll zc_channel_fd for POLLIN), another negative errno if the
 * peer is not a channel.  recv and send complete it themselves and return
 * -EAGAIN until then.  On failure of zc_channel_open_nb the socket is
 * still the caller's. */
int zc_channel_open_nb(int sock, zc_channel **out);
int zc_channel_handshake(zc_channel *ch);
/* A connected pair in this process (for fork, threads and tests). */
int zc_channel_pair(zc_channel **a, zc_channel **b);
/* The descriptor to poll for readability.  A wake-up reaches only a side
 * that has said it waits: call zc_channel_recv until it returns -EAGAIN,
 * then poll for POLLIN (polling before ever receiving can sleep forever). */
int zc_channel_fd(const zc_channel *ch);
/* Send an aggregate as one message of descriptors: buffers are lent to
 * the peer until it releases them; file slices send the file descriptor
 * once, then extents.  The aggregate is left unchanged.  A message of any
 * number of slices goes: one longer than the channel's ring (256 slices)
 * streams through it as the peer reads, and arrives whole.  A blocking
 * channel waits for room; a non-blocking one takes the whole message or
 * nothing (-EAGAIN: poll zc_channel_fd for POLLIN, then send again) --
 * and of a message longer than the ring, the rest follows in later calls
 * on the channel (send, recv, zc_channel_flush), each new send saying
 * -EAGAIN until it has gone. */
int zc_channel_send(zc_channel *ch, const zc_agg *agg);
/* Move on the rest of a long message a non-blocking send took: 0 when
 * nothing is left to send, -EAGAIN while something is (poll for POLLIN
 * and call again), another negative errno if the channel broke.  Call it
 * until 0 before closing: a channel closed with a rest drops the message.
 * Always 0 on a blocking channel. */
int zc_channel_flush(zc_channel *ch);
/* Corking: while a channel is corked, a send that finds the peer asleep
 * does not wake it; the wake-up is owed until zc_channel_ring (or
 * zc_channel_cork(ch, 0), which rings), so that several messages cost the
 * peer one wake-up.  A blocking call that waits on the channel rings
 * first; an event loop that corks rings before it sleeps (a peer asleep
 * waiting for data we published and did not ring for never wakes). */
void zc_channel_cork(zc_channel *ch, int on);
void zc_channel_ring(zc_channel *ch);
/* Receive one message: *out is a new aggregate of read-only buffers (and
 * file extents).  -EAGAIN if none is waiting and the channel is
 * non-blocking, -EPIPE once the peer is gone. */
int zc_channel_recv(zc_channel *ch, zc_agg **out);
/* The next message without consuming it: *out is a new aggregate of the
 * same read-only buffers the following zc_channel_recv returns (no copy).
 * Peeking again returns the same message.  Errors as zc_channel_recv. */
int zc_channel_peek(zc_channel *ch, zc_agg **out);
int zc_channel_set_nonblock(zc_channel *ch, int on);
/* While fd (>= 0) is set, a blocking recv that waits for a message, or a
 * send that waits for room to start one, returns -EINTR as soon as fd is
 * readable (a message already there is still returned first); -1 clears
 * it.  For a process that must stop waiting when told to: a signal
 * handler that writes a pipe wakes the wait even if the signal came
 * before the wait began, which EINTR alone cannot promise.  The rest of a
 * message already started is never cut short. */
int zc_channel_set_interrupt(zc_channel *ch, int fd);
void zc_channel_close(zc_channel *ch);
/* The channel registered for fd, or NULL. */
zc_channel *zc_channel_from_fd(int fd);

#ifdef __cplusplus
}
#endif
#endif /* ZC_CHANNEL_H */
