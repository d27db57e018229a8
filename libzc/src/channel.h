/*
 * channel.h - channel internals other modules use (cs_common.c).
 *
 * Not part of the public API: zc_channel.h has the channel calls programs
 * make.
 */
#ifndef ZC_CHANNEL_INTERNAL_H
#define ZC_CHANNEL_INTERNAL_H

#include <stdint.h>

#include "zc_channel.h"

/*
 * Collect buffers that peers have returned, on every channel of this
 * process (including closed channels still waiting for their lent buffers).
 * With wait_ms > 0 and nothing returned yet, keep looking for up to wait_ms
 * milliseconds.  Returns the number of buffers that came back.  cs_alloc
 * calls this when the pool is full: the memory is usually out on loan.
 */
int zc_channel_reclaim(int wait_ms);

/* A number that identifies this channel for its whole life (pointers and
 * descriptors are reused; this is not).  0 for NULL. */
uint64_t zc_channel_serial(const zc_channel *ch);

/* Buffers lent to the peer and not yet returned (tests, statistics). */
unsigned zc_channel_lent(const zc_channel *ch);

#endif /* ZC_CHANNEL_INTERNAL_H */
