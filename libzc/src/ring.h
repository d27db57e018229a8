/*
 * ring.h - the shared-memory layout of a channel direction.
 *
 * Each side of a channel creates one "ring region" (a sealed memfd) for the
 * direction it sends in and passes it to the peer at the handshake.  Both
 * sides map it read-write: the owner produces, the peer consumes and has to
 * advance the head indices.  A region holds two single-producer /
 * single-consumer rings:
 *
 *   data ring     descriptors of the owner's messages (BUF, FILE, MSG_END)
 *   return ring   RETURN entries: tokens of buffers the peer lent to the
 *                 owner and the owner has now released
 *
 * Returns get a ring of their own (rather than travelling behind data on the
 * data ring) so that a lender can always collect its credits, even when it
 * has not read the peer's data yet: no head-of-line blocking between the
 * two flows.  Indices are free-running 64-bit counters (slot = index & (cap
 * - 1)); the producer publishes with a release store of its tail, the
 * consumer with a release store of its head.
 *
 * Nothing a peer writes into a region is trusted: capacities come from the
 * handshake message (checked against the memfd size), indices are checked
 * against the capacity, and entries are copied out before they are checked.
 */
#ifndef ZC_RING_H
#define ZC_RING_H

#include <stdatomic.h>
#include <stdint.h>

#define ZC_RING_MAGIC 0x474e525au	/* "ZRNG" */
#define ZC_RING_VERSION 3u	/* 2: ZC_ENT_F_END; 3: the RING message */

#define ZC_RING_DATA_CAP 256u		/* descriptors: 16 KiB */
#define ZC_RING_RET_CAP 1024u		/* returns: 16 KiB */
#define ZC_RING_MIN_CAP 4u

/* What a sleeping side waits for (its `sleeping` word): a producer rings
 * only for what it provides.  Data: new descriptors.  Room: consumed
 * slots or window.  Returns: buffers given back -- nobody sleeps for
 * those today (reclaiming polls), so releasing a received buffer, the
 * commonest event of all, never wakes a peer that waits for data. */
#define ZC_RING_WANT_DATA 1u
#define ZC_RING_WANT_ROOM 2u
#define ZC_RING_WANT_RETURNS 4u
#define ZC_RING_MAX_CAP 65536u

enum zc_ent_type {
	ZC_ENT_BUF = 1,		/* a slice of a buffer lent to the peer */
	ZC_ENT_FILE = 2,	/* an extent of a file sent earlier */
	ZC_ENT_MSG_END = 3,	/* end of one message (one aggregate) */
	ZC_ENT_RETURN = 4,	/* a lent buffer comes back (return ring) */
};

#define ZC_ENT_F_KREF 0x1u	/* RETURN: the peer gave the pages to its
				 * kernel by reference; detach on reuse */
#define ZC_ENT_F_ABORT 0x2u	/* MSG_END: discard the message so far */
#define ZC_ENT_F_END 0x4u	/* BUF, FILE: the message's last descriptor.
				 * A message that has one needs no MSG_END
				 * entry: one cache line less to move from
				 * core to core per message (the full-map
				 * IPC path sends one BUF per message). */
#define ZC_ENT_F_READ 0x8u	/* RETURN: the peer read the bytes (took
				 * their address), so their lines may sit
				 * in its caches: reuse the memory last.
				 * An older peer never sets it. */

/* One data-ring descriptor: exactly one cache line. */
struct zc_ring_ent {
	uint32_t type;
	uint32_t flags;
	uint64_t pool;		/* BUF: pool id;  FILE: file token */
	uint64_t off;		/* BUF: buffer offset in the pool */
	uint64_t len;		/* BUF: buffer length (published) */
	uint64_t gen;		/* BUF: buffer generation */
	uint64_t token;		/* BUF: lend token, comes back in RETURN */
	uint64_t soff;		/* slice offset in the buffer / the file */
	uint64_t slen;		/* slice length */
};

struct zc_ret_ent {
	uint32_t type;		/* ZC_ENT_RETURN */
	uint32_t flags;
	uint64_t token;
};

/* One index on its own cache line, so producer and consumer do not
 * false-share. */
struct zc_ring_idx {
	_Alignas(64) _Atomic uint64_t v;
};

struct zc_ring_shm {
	uint32_t magic, version;
	uint32_t data_cap, ret_cap;	/* informational; see the handshake */
	struct zc_ring_idx data_tail;	/* owner writes */
	struct zc_ring_idx data_head;	/* peer writes */
	struct zc_ring_idx ret_tail;	/* owner writes */
	struct zc_ring_idx ret_head;	/* peer writes */
	struct zc_ring_idx sleeping;	/* owner sets before it sleeps
					 * (what it waits for: ZC_RING_WANT_*),
					 * the peer clears it and rings */
	struct zc_ring_idx cpu;		/* owner's last CPU + 1 (0: unknown),
					 * a hint for the peer's waits */
};

/*
 * Format constants, not the page size: both sides compute the data ring's
 * offset and the region's size from the HELLO's capacities, and the size
 * must come out equal (the handshake refuses a region of any other size).
 * Tied to the page size they would be a property of each process rather
 * than of the format.  Any page size works with them: a region is mapped
 * from offset 0 and only its own bytes are ever touched.
 */
#define ZC_RING_HDR_SIZE 4096u		/* header, then the data ring */
#define ZC_RING_ALIGN 4096u		/* region sizes are multiples of it */

_Static_assert(sizeof(struct zc_ring_shm) <= ZC_RING_HDR_SIZE,
	       "ring header larger than its slot");

static inline size_t zc_ring_data_off(void)
{
	return ZC_RING_HDR_SIZE;
}

static inline size_t zc_ring_ret_off(uint32_t data_cap)
{
	return ZC_RING_HDR_SIZE + (size_t)data_cap * sizeof(struct zc_ring_ent);
}

static inline size_t zc_ring_region_size(uint32_t data_cap, uint32_t ret_cap)
{
	size_t sz = zc_ring_ret_off(data_cap) +
		    (size_t)ret_cap * sizeof(struct zc_ret_ent);

	return (sz + ZC_RING_ALIGN - 1) & ~(size_t)(ZC_RING_ALIGN - 1);
}

static inline int zc_ring_cap_ok(uint32_t cap)
{
	return cap >= ZC_RING_MIN_CAP && cap <= ZC_RING_MAX_CAP &&
	       (cap & (cap - 1)) == 0;
}

/* A mapped region as seen by one side (capacities are local, trusted). */
struct zc_ring {
	struct zc_ring_shm *shm;
	struct zc_ring_ent *data;
	struct zc_ret_ent *ret;
	uint32_t data_cap, ret_cap;
	size_t map_len;
};

static inline uint64_t zc_ld_acq(_Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_acquire);
}

static inline void zc_st_rel(_Atomic uint64_t *p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_release);
}

static inline void zc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif /* ZC_RING_H */
