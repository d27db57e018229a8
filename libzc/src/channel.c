/*
 * channel.c - channels: two processes joined by a UNIX socket plus shared
 * descriptor rings (Streamline-style) and shared pools.
 *
 * What travels where:
 *
 *   socket   typed control messages only: the handshake (each side's ring
 *            region memfd), pool memfds (zc_pool_send), file descriptors,
 *            CLOSE, and one-byte doorbells.  It is also what the program
 *            polls, and its EOF is how we learn that the peer is gone.
 *   rings    descriptors: BUF (pool id, offset, length, generation, lend
 *            token, slice), FILE (file token, extent), MSG_END, and RETURN
 *            on a separate return ring (see ring.h).  While both sides are
 *            busy a transfer costs no system call at all.
 *
 * Ordering rule: a pool or file a descriptor names is always sent on the
 * socket *before* the descriptor is published on the ring.  AF_UNIX sendmsg
 * queues the message at the receiver before it returns, so a receiver that
 * meets an unknown pool id only has to drain the socket (without blocking)
 * to find it; if it is still unknown the peer is lying (-EPROTO).
 *
 * Lending and credits: every BUF descriptor carries a token naming a
 * reference the sender keeps (zc_buf_ref) in its lend table.  The receiver
 * wraps the memory in a foreign zc_buf whose last release pushes a RETURN
 * with the token; the sender then drops its reference and the memory goes
 * back to its pool, hot, without zeroing.  Flow control is the ring size
 * (a full ring blocks or gives -EAGAIN) and pool space (cs_alloc reclaims
 * returned buffers through zc_channel_reclaim when the pool is full).
 *
 * Sleeping without lost wakeups (the Dekker pattern): a consumer that finds
 * nothing to do sets its shared `sleeping` flag (seq_cst), checks again,
 * and only then polls the socket.  A producer publishes, issues a seq_cst
 * fence, and if the peer's flag is set clears it and sends a doorbell byte.
 * Blocking waits first spin for a short while (SPIN_NS): on a busy channel
 * the peer answers within microseconds and a sleep/wake pair costs more
 * than the spin.
 *
 * Event loops: zc_channel_fd() turns readable when a doorbell or a control
 * message arrives, and a doorbell only goes to a side that announced it is
 * waiting -- which a non-blocking recv or send does when it returns -EAGAIN.
 * So: call recv (or send) until -EAGAIN, then poll for POLLIN (after a
 * send's -EAGAIN too: room on the ring rings the same bell).
 *
 * Endings: zc_channel_close sends CLOSE; the peer's recv then drains what
 * was already published and returns -EPIPE.  Buffers lent to a peer stay
 * lent after our close until the peer returns them: the closed channel
 * "lingers" (socket and rings kept) and is reaped later.  EOF on the socket
 * means the peer process has no channel state left at all (it exited, was
 * killed, or closed with nothing of ours in hand): what is still lent is
 * released, marked KREF because a dead peer may have handed the pages to
 * its kernel (a pipe, a socket) and the pool must then detach them.
 *
 * Threads: a channel belongs to one thread at a time (zc.h), but the
 * buffers it delivers may be released on any thread, so the return-ring
 * producer side has its own lock (ret_lock), and the lend table has one
 * (lend_lock) because zc_channel_reclaim may run on another thread.
 *
 * fork: both processes inherit both ends of a pair made before fork, and
 * each will use one of them.  An end belongs to the process that last sent
 * or received on it (it "claims" it): only that process speaks the protocol
 * for it -- sends CLOSE, returns tokens, releases what is lent.  Closing an
 * end this process never used (the other process's end) is silent: memory
 * and descriptor go, the peer hears nothing.  Hand each end to one process
 * and do not use it on both sides of a fork.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "channel.h"
#include "ring.h"

#define SPIN_NS 50000			/* busy-wait before sleeping */
#define SPIN_PURE_NS 10000		/* ... the first part without yielding */
#define HELLO_TIMEOUT_MS 10000		/* the peer must open within this */
#define MAX_LENT (1u << 20)		/* lend table slots per channel */
#define MAX_POOLS 1024u			/* pools shared per channel */
#define MAX_FILES 1024u			/* files sent per channel */
#define LENT_NONE UINT32_MAX

/*
 * The window: bytes a writer may have published that its reader has not
 * consumed yet -- the channel's socket buffer.  Without it a writer that
 * runs ahead fills the whole ring (128 one-slice messages: 16 MiB of
 * 128 KiB blocks in flight), the buffers cycle through far more memory than
 * the caches hold, and the bytes go to and from L3 or DRAM.  A small window
 * keeps a few buffers in flight and cache-hot: 1 MiB is eight 128 KiB blocks,
 * well inside a core's L2 (windows from 256 KiB to 16 MiB measured within
 * the machine's noise of it, see docs/ipc-benchmark.md).
 * ZC_CHANNEL_WINDOW (bytes) overrides it.
 */
#define DEFAULT_WINDOW (1u << 20)

/* Control messages.  The first byte says what follows; anything else is a
 * pool share in zc_pool_send's own format, checked by zc_pool_recv. */
enum {
	MSG_HELLO = 0xC1,
	MSG_FILE = 0xC2,
	MSG_CLOSE = 0xC3,
	MSG_DOORBELL = 0xD0,
};

struct hello_msg {
	uint8_t type, version;
	uint16_t pad;
	uint32_t data_cap, ret_cap;
	uint32_t pad2;
	uint64_t region_size;
};

struct file_msg {
	uint8_t type, pad[3];
	uint32_t token;
	struct zc_file_version v;
};

struct lent_slot {
	zc_buf *buf;		/* NULL: free */
	uint32_t gen;		/* bumped on reuse: stale tokens fail */
	uint32_t next;		/* free list */
};

struct imp_pool {
	uint64_t id;
	zc_pool *pool;
};

struct zc_channel {
	atomic_int refs;	/* handle + each live foreign buffer + linger */
	int sock, socktype;
	unsigned owner_gen;	/* fork generation of the process using it */
	bool used;		/* sent or received since it was claimed */
	uint64_t serial;
	bool nonblock, closed, peer_closed;
	atomic_bool peer_gone, lingering;
	atomic_int broken;	/* sticky protocol error, 0 if none */
	unsigned sends;		/* for the occasional socket check */

	struct zc_ring tx;	/* ours: we produce */
	struct zc_ring rx;	/* the peer's: we consume */
	uint64_t tx_tail;	/* next data slot we fill */
	uint64_t tx_pub;	/* tail the peer can see */
	uint64_t tx_seen;	/* peer head we last accounted for */
	uint64_t tx_inring;	/* bytes published and not yet consumed */
	uint64_t tx_want;	/* bytes of the message waiting to go */
	uint64_t *tx_bytes;	/* bytes per data slot (tx_inring upkeep) */
	uint64_t rx_head;	/* next data slot we read */

	/* Lending side: what the peer holds of ours. */
	pthread_mutex_t lend_lock;
	struct lent_slot *lent;
	uint32_t lent_cap, lent_free;
	atomic_uint lent_n;
	_Atomic uint64_t rx_ret_head;

	/* Returning side: RETURNs we produce (any thread). */
	pthread_mutex_t ret_lock;
	uint64_t tx_ret_tail;
	struct zc_ret_ent *ovf;	/* returns waiting for ring space */
	size_t ovf_cap;
	atomic_size_t ovf_n;
	bool ret_dead;		/* peer gone: returns are dropped */

	/* What we sent (references held so ids stay unique). */
	zc_pool **sent_pools;
	uint32_t n_sent_pools, cap_sent_pools, last_pool;
	zc_file **sent_files;	/* index = file token */
	uint32_t n_sent_files;

	/* What we received. */
	struct imp_pool *imp_pools;
	uint32_t n_imp_pools, cap_imp_pools, last_imp;
	zc_file **imp_files;	/* index = file token */
	zc_agg *rx_agg;		/* message being assembled */

	zc_channel *prev, *next;	/* all channels (all_lock) */
};

/* --------------------------------------------------------------- globals */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static zc_channel *all_head;
static atomic_uint n_lingering;
static atomic_uint_fast64_t next_serial = 1;
static uint64_t window = DEFAULT_WINDOW;

static void on_fork_child(void)
{
	/* Another thread may have held these at fork time. */
	pthread_mutex_init(&all_lock, NULL);
	pthread_mutex_init(&reap_lock, NULL);
	pthread_mutex_init(&reg_lock, NULL);
}

static void channel_init(void)
{
	const char *w = getenv("ZC_CHANNEL_WINDOW");
	char *end;
	unsigned long long v;

	zc_fork_child_hook(on_fork_child);
	if (w && *w) {
		v = strtoull(w, &end, 0);
		if (!*end && v > 0)
			window = v;
	}
}

/* Does this process speak for the channel (see the top of the file)? */
static bool owned(const zc_channel *ch)
{
	return ch->owner_gen == zc_fork_gen();
}

static unsigned note_cpu(zc_channel *ch);

/* Every send and receive: this process speaks for the channel, and the
 * peer learns which CPU we run on. */
static void claim(zc_channel *ch)
{
	ch->owner_gen = zc_fork_gen();
	ch->used = true;
	note_cpu(ch);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int broke(zc_channel *ch, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&ch->broken, &zero, err);
	return err;
}

static void chan_get(zc_channel *ch)
{
	atomic_fetch_add_explicit(&ch->refs, 1, memory_order_relaxed);
}

/* A reference unless the channel is already being freed. */
static bool chan_tryget(zc_channel *ch)
{
	int r = atomic_load_explicit(&ch->refs, memory_order_relaxed);

	while (r > 0) {
		if (atomic_compare_exchange_weak(&ch->refs, &r, r + 1))
			return true;
	}
	return false;
}

static void chan_put(zc_channel *ch);

/* -------------------------------------------------------------- registry */

/*
 * fd -> channel, for iol_write/cs_write on zc_channel_fd().  Two levels of
 * lazily allocated chunks: lookups are lock-free (two acquire loads) and
 * chunks never move, so a lookup never races with growth.  4M descriptors.
 */
#define REG_CHUNK 1024
#define REG_TOP 4096

typedef _Atomic(zc_channel *) reg_slot;
static _Atomic(reg_slot *) reg_top[REG_TOP];

static int reg_set(int fd, zc_channel *expect, zc_channel *ch)
{
	reg_slot *chunk;
	int err = 0;

	if (fd < 0 || fd >= REG_TOP * REG_CHUNK)
		return -EMFILE;
	pthread_mutex_lock(&reg_lock);
	chunk = atomic_load(&reg_top[fd / REG_CHUNK]);
	if (!chunk && ch) {
		chunk = calloc(REG_CHUNK, sizeof(*chunk));
		if (chunk)
			atomic_store(&reg_top[fd / REG_CHUNK], chunk);
	}
	if (!chunk)
		err = ch ? -ENOMEM : 0;
	else if (!atomic_compare_exchange_strong(&chunk[fd % REG_CHUNK],
						 &expect, ch))
		err = -EBUSY;
	pthread_mutex_unlock(&reg_lock);
	return err;
}

zc_channel *zc_channel_from_fd(int fd)
{
	reg_slot *chunk;

	if (fd < 0 || fd >= REG_TOP * REG_CHUNK)
		return NULL;
	chunk = atomic_load_explicit(&reg_top[fd / REG_CHUNK],
				     memory_order_acquire);
	if (!chunk)
		return NULL;
	return atomic_load_explicit(&chunk[fd % REG_CHUNK],
				    memory_order_acquire);
}

/* ------------------------------------------------------- control socket */

/* Read one whole message of exactly `len` bytes.  *fd receives a passed
 * descriptor or -1.  Anything of another size is a protocol error. */
static int read_msg(zc_channel *ch, void *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	int flags = MSG_CMSG_CLOEXEC;
	ssize_t n;

	*fd = -1;
	if (ch->socktype == SOCK_STREAM)
		flags |= MSG_WAITALL;
	do
		n = recvmsg(ch->sock, &mh, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	zc_sock_take_fds(&mh, fd);
	if (n == 0 || (size_t)n != len ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return n == 0 ? -EPIPE : -EPROTO;
	}
	return 0;
}

/* Type byte of the next message; -EAGAIN if none, -EPIPE at EOF. */
static int peek_type(int sock)
{
	unsigned char t;
	ssize_t n;

	do
		n = recv(sock, &t, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -EAGAIN;
		return errno == ECONNRESET ? -EPIPE : -errno;
	}
	return n == 0 ? -EPIPE : t;
}

static int drain_returns(zc_channel *ch);
static void release_all_lent(zc_channel *ch);

/* The peer has no channel state left: take back what it returned, then
 * everything else it held (conservatively marked as kernel-referenced). */
static void mark_peer_gone(zc_channel *ch)
{
	if (atomic_exchange(&ch->peer_gone, true))
		return;
	pthread_mutex_lock(&ch->ret_lock);
	ch->ret_dead = true;
	atomic_store(&ch->ovf_n, 0);
	pthread_mutex_unlock(&ch->ret_lock);
	drain_returns(ch);
	release_all_lent(ch);
}

static int import_pool(zc_channel *ch)
{
	struct imp_pool *v;
	zc_pool *p;
	int err = zc_pool_recv(ch->sock, &p);

	if (err)
		return err == -EPIPE ? err : -EPROTO;
	for (uint32_t i = 0; i < ch->n_imp_pools; i++) {
		if (ch->imp_pools[i].id == p->id) {
			/* Shared twice: a confused peer; keep the first. */
			zc_pool_put(p);
			return -EPROTO;
		}
	}
	if (ch->n_imp_pools == ch->cap_imp_pools) {
		uint32_t cap = ch->cap_imp_pools ? ch->cap_imp_pools * 2 : 4;

		v = cap > MAX_POOLS ? NULL :
		    realloc(ch->imp_pools, cap * sizeof(*v));
		if (!v) {
			zc_pool_put(p);
			return cap > MAX_POOLS ? -EPROTO : -ENOMEM;
		}
		ch->imp_pools = v;
		ch->cap_imp_pools = cap;
	}
	ch->imp_pools[ch->n_imp_pools].id = p->id;
	ch->imp_pools[ch->n_imp_pools++].pool = p;
	return 0;
}

static int import_file(zc_channel *ch)
{
	struct file_msg m;
	zc_file *f;
	int fd, err = read_msg(ch, &m, sizeof(m), &fd);

	if (err)
		return err;
	if (fd < 0 || m.token >= MAX_FILES)
		err = -EPROTO;
	if (!err && !ch->imp_files &&
	    !(ch->imp_files = calloc(MAX_FILES, sizeof(zc_file *))))
		err = -ENOMEM;
	if (!err && ch->imp_files[m.token])
		err = -EPROTO;	/* tokens are never reused */
	if (!err)
		err = zc_file_from_fd(fd, &f);
	if (fd >= 0)
		close(fd);
	if (err)
		return err == -ENOMEM ? err : -EPROTO;
	/* The extents were cut against the sender's version of the file:
	 * keep that version, so a change since then reads as -ESTALE. */
	f->v = m.v;
	ch->imp_files[m.token] = f;
	return 0;
}

/* Read one control message if one is waiting: 1 done, 0 none, <0 error. */
static int handle_msg(zc_channel *ch)
{
	unsigned char b;
	int fd, err, t = peek_type(ch->sock);

	if (t == -EAGAIN)
		return 0;
	if (t < 0)
		return t;
	switch (t) {
	case MSG_DOORBELL:
	case MSG_CLOSE:
		err = read_msg(ch, &b, 1, &fd);
		if (fd >= 0)
			close(fd);
		if (!err && t == MSG_CLOSE)
			ch->peer_closed = true;
		break;
	case MSG_FILE:
		err = import_file(ch);
		break;
	case MSG_HELLO:
		err = -EPROTO;	/* only once, at the handshake */
		break;
	default:
		err = import_pool(ch);
		break;
	}
	return err ? err : 1;
}

/* Process every control message that is already there.  -EPIPE once the
 * peer is gone, a protocol error breaks the channel. */
static int drain_sock(zc_channel *ch)
{
	int r;

	while ((r = handle_msg(ch)) > 0)
		;
	if (r == -EPIPE) {
		mark_peer_gone(ch);
		return r;
	}
	if (r < 0 && r != -EINTR)
		return broke(ch, r == -ENOMEM ? r : -EPROTO);
	return 0;
}

/* ------------------------------------------------------------ handshake */

static void ring_view(struct zc_ring *r, void *base, size_t len,
		      uint32_t data_cap, uint32_t ret_cap)
{
	r->shm = base;
	r->data = (struct zc_ring_ent *)((char *)base + zc_ring_data_off());
	r->ret = (struct zc_ret_ent *)((char *)base + zc_ring_ret_off(data_cap));
	r->data_cap = data_cap;
	r->ret_cap = ret_cap;
	r->map_len = len;
}

/* Create and map our ring region; *fd is the memfd to pass to the peer. */
static int ring_create(struct zc_ring *r, int *fd)
{
	size_t len = zc_ring_region_size(ZC_RING_DATA_CAP, ZC_RING_RET_CAP);
	struct zc_ring_shm *shm;
	void *base;
	int err;

	*fd = memfd_create("zc-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return -errno;
	/* Sealed against shrinking: the peer maps it too, and a truncated
	 * mapping would turn its every access into a SIGBUS. */
	if (ftruncate(*fd, (off_t)len) < 0 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (base == MAP_FAILED)
		goto fail;
	ring_view(r, base, len, ZC_RING_DATA_CAP, ZC_RING_RET_CAP);
	shm = r->shm;
	shm->magic = ZC_RING_MAGIC;
	shm->version = ZC_RING_VERSION;
	shm->data_cap = ZC_RING_DATA_CAP;
	shm->ret_cap = ZC_RING_RET_CAP;
	return 0;
fail:
	err = -errno;
	close(*fd);
	*fd = -1;
	return err;
}

static int hello_send(zc_channel *ch)
{
	struct hello_msg m = {
		.type = MSG_HELLO, .version = ZC_RING_VERSION,
		.data_cap = ZC_RING_DATA_CAP, .ret_cap = ZC_RING_RET_CAP,
		.region_size = zc_ring_region_size(ZC_RING_DATA_CAP,
						   ZC_RING_RET_CAP),
	};
	int fd, err = ring_create(&ch->tx, &fd);

	if (err)
		return err;
	err = zc_sock_send(ch->sock, &m, sizeof(m), fd, 0);
	close(fd);	/* the mapping keeps the region */
	return err;
}

/* Check the peer's region against its HELLO and map it. */
static int map_peer_ring(zc_channel *ch, const struct hello_msg *m, int fd)
{
	struct stat st;
	void *base;
	int seals;

	if (m->version != ZC_RING_VERSION || !zc_ring_cap_ok(m->data_cap) ||
	    !zc_ring_cap_ok(m->ret_cap) ||
	    m->region_size != zc_ring_region_size(m->data_cap, m->ret_cap))
		return -EPROTO;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != m->region_size)
		return -EPROTO;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPROTO;
	base = mmap(NULL, m->region_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	ring_view(&ch->rx, base, m->region_size, m->data_cap, m->ret_cap);
	if (ch->rx.shm->magic != ZC_RING_MAGIC)
		return -EPROTO;	/* ch_free unmaps it */
	return 0;
}

static int hello_recv(zc_channel *ch)
{
	struct pollfd p = { .fd = ch->sock, .events = POLLIN };
	uint64_t deadline = now_ns() + HELLO_TIMEOUT_MS * 1000000ull;
	struct hello_msg m;
	int fd, err, t;

	for (;;) {
		t = peek_type(ch->sock);
		if (t != -EAGAIN)
			break;
		uint64_t now = now_ns();

		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	if (t < 0)
		return t;
	if (t != MSG_HELLO)
		return -EPROTO;
	err = read_msg(ch, &m, sizeof(m), &fd);
	if (err)
		return err;
	if (fd < 0)
		return -EPROTO;
	err = map_peer_ring(ch, &m, fd);
	close(fd);
	return err;
}

/* ------------------------------------------------------------ lend table */

static int lent_grow(zc_channel *ch)
{
	uint32_t cap = ch->lent_cap ? ch->lent_cap * 2 : 64;
	struct lent_slot *v;

	if (cap > MAX_LENT)
		return -ENOBUFS;
	v = realloc(ch->lent, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = ch->lent_cap; i < cap; i++) {
		v[i].buf = NULL;
		v[i].gen = 0;
		v[i].next = i + 1 < cap ? i + 1 : ch->lent_free;
	}
	ch->lent_free = ch->lent_cap;
	ch->lent = v;
	ch->lent_cap = cap;
	return 0;
}

/* Keep a reference to buf for the peer; the token names it.  lend_lock. */
static int lent_add(zc_channel *ch, zc_buf *buf, uint64_t *token)
{
	struct lent_slot *s;
	uint32_t idx;
	int err;

	if (ch->lent_free == LENT_NONE && (err = lent_grow(ch)))
		return err;
	idx = ch->lent_free;
	s = &ch->lent[idx];
	ch->lent_free = s->next;
	s->buf = zc_buf_ref(buf);
	s->gen++;
	*token = (uint64_t)s->gen << 32 | idx;
	atomic_fetch_add_explicit(&ch->lent_n, 1, memory_order_relaxed);
	return 0;
}

/* The reference a token names, removed from the table; NULL if the token
 * is not one we handed out.  lend_lock. */
static zc_buf *lent_take(zc_channel *ch, uint64_t token)
{
	uint32_t idx = (uint32_t)token;
	struct lent_slot *s;
	zc_buf *buf;

	if (idx >= ch->lent_cap)
		return NULL;
	s = &ch->lent[idx];
	if (!s->buf || s->gen != (uint32_t)(token >> 32))
		return NULL;
	buf = s->buf;
	s->buf = NULL;
	s->next = ch->lent_free;
	ch->lent_free = idx;
	atomic_fetch_sub_explicit(&ch->lent_n, 1, memory_order_relaxed);
	return buf;
}

/* Everything still lent comes back: the peer is gone or the channel is
 * ending.  KREF because the peer may have given the pages to its kernel.
 * Released outside the lock: a release can run a foreign buffer's
 * callback, which takes other locks. */
static void release_all_lent(zc_channel *ch)
{
	zc_buf *batch[32];
	unsigned nb;
	uint32_t i = 0;

	do {
		nb = 0;
		pthread_mutex_lock(&ch->lend_lock);
		for (; i < ch->lent_cap && nb < 32; i++) {
			zc_buf *b = ch->lent[i].buf;

			if (!b)
				continue;
			lent_take(ch, (uint64_t)ch->lent[i].gen << 32 | i);
			zc_buf_mark_kref(b);
			batch[nb++] = b;
		}
		pthread_mutex_unlock(&ch->lend_lock);
		for (unsigned k = 0; k < nb; k++)
			zc_buf_release(batch[k]);
	} while (nb == 32);
}

/* ---------------------------------------------------------- return ring */

/* Take back the buffers the peer has returned.  Returns how many, or a
 * negative errno for a corrupt ring or a token we never handed out. */
static int drain_returns(zc_channel *ch)
{
	zc_buf *batch[32];
	uint64_t head, tail;
	int n = 0, err = 0;
	unsigned nb;

	if (!ch->rx.shm)
		return 0;
	tail = zc_ld_acq(&ch->rx.shm->ret_tail.v);
	if (tail == atomic_load_explicit(&ch->rx_ret_head, memory_order_relaxed))
		return 0;
	do {
		/* Release in batches outside the lock: a release can run a
		 * foreign buffer's callback, which takes other locks. */
		nb = 0;
		pthread_mutex_lock(&ch->lend_lock);
		head = atomic_load_explicit(&ch->rx_ret_head, memory_order_relaxed);
		tail = zc_ld_acq(&ch->rx.shm->ret_tail.v);
		if (tail - head > ch->rx.ret_cap)
			err = -EPROTO;
		while (!err && head != tail && nb < 32) {
			struct zc_ret_ent e;
			zc_buf *b;

			memcpy(&e, &ch->rx.ret[head & (ch->rx.ret_cap - 1)],
			       sizeof(e));
			b = e.type == ZC_ENT_RETURN ? lent_take(ch, e.token) : NULL;
			if (!b) {
				err = -EPROTO;
				break;
			}
			head++;
			if (e.flags & ZC_ENT_F_KREF)
				zc_buf_mark_kref(b);
			batch[nb++] = b;
		}
		atomic_store_explicit(&ch->rx_ret_head, head, memory_order_relaxed);
		zc_st_rel(&ch->rx.shm->ret_head.v, head);
		pthread_mutex_unlock(&ch->lend_lock);
		for (unsigned i = 0; i < nb; i++)
			zc_buf_release(batch[i]);
		n += (int)nb;
	} while (!err && nb == 32);
	return err ? broke(ch, err) : n;
}

/* Room on our return ring; a corrupt head (the peer wrote nonsense) means
 * we stop returning to it.  ret_lock. */
static uint64_t ret_space(zc_channel *ch)
{
	uint64_t used = ch->tx_ret_tail - zc_ld_acq(&ch->tx.shm->ret_head.v);

	if (used > ch->tx.ret_cap) {
		ch->ret_dead = true;
		return 0;
	}
	return ch->tx.ret_cap - used;
}

static void ret_put_locked(zc_channel *ch, const struct zc_ret_ent *e)
{
	memcpy(&ch->tx.ret[ch->tx_ret_tail & (ch->tx.ret_cap - 1)], e,
	       sizeof(*e));
	ch->tx_ret_tail++;
}

/* Move overflowed returns onto the ring, oldest first.  ret_lock.
 * Returns true if anything was published. */
static bool ret_flush_locked(zc_channel *ch)
{
	size_t n = atomic_load(&ch->ovf_n), i = 0;
	uint64_t space = n ? ret_space(ch) : 0;

	while (i < n && i < space)
		ret_put_locked(ch, &ch->ovf[i++]);
	if (i == 0)
		return false;
	memmove(ch->ovf, ch->ovf + i, (n - i) * sizeof(*ch->ovf));
	atomic_store(&ch->ovf_n, n - i);
	zc_st_rel(&ch->tx.shm->ret_tail.v, ch->tx_ret_tail);
	return true;
}

/* Queue a return; if the ring is full it waits in the overflow list (the
 * lender is not draining right now) and goes out with a later call. */
static bool ret_push_locked(zc_channel *ch, uint64_t token, uint32_t flags)
{
	struct zc_ret_ent e = { ZC_ENT_RETURN, flags, token };
	size_t n;

	ret_flush_locked(ch);
	if (ch->ret_dead)
		return false;
	n = atomic_load(&ch->ovf_n);
	if (n == 0 && ret_space(ch) > 0) {
		ret_put_locked(ch, &e);
		zc_st_rel(&ch->tx.shm->ret_tail.v, ch->tx_ret_tail);
		return true;
	}
	if (n == ch->ovf_cap) {
		size_t cap = ch->ovf_cap ? ch->ovf_cap * 2 : 256;
		struct zc_ret_ent *v = realloc(ch->ovf, cap * sizeof(*v));

		if (!v)
			return false;	/* the peer's buffer stays lent:
					 * lost capacity, never corruption */
		ch->ovf = v;
		ch->ovf_cap = cap;
	}
	ch->ovf[n] = e;
	atomic_store(&ch->ovf_n, n + 1);
	return false;
}

/* Wake the peer if it sleeps (see the top of the file).  Any thread. */
static void notify_peer(zc_channel *ch)
{
	static const unsigned char bell = MSG_DOORBELL;
	_Atomic uint64_t *s = &ch->rx.shm->sleeping.v;

	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(s, memory_order_relaxed) &&
	    atomic_exchange(s, 0))
		/* Never block: if the socket is full the peer's poll sees it
		 * readable anyway, which is all a doorbell has to achieve. */
		(void)zc_sock_send(ch->sock, &bell, 1, -1, MSG_DONTWAIT);
}

static void flush_returns(zc_channel *ch)
{
	bool sent;

	if (!atomic_load_explicit(&ch->ovf_n, memory_order_relaxed))
		return;
	pthread_mutex_lock(&ch->ret_lock);
	sent = ret_flush_locked(ch);
	pthread_mutex_unlock(&ch->ret_lock);
	if (sent)
		notify_peer(ch);
}

/* The last release of a buffer received on this channel (any thread). */
static void ret_cb(zc_buf *buf)
{
	zc_channel *ch = buf->release_ctx;
	uint32_t flags = 0;
	bool sent = false;

	if (atomic_load_explicit(&buf->flags, memory_order_relaxed) & ZC_BUF_KREF)
		flags = ZC_ENT_F_KREF;
	if (owned(ch)) {
		pthread_mutex_lock(&ch->ret_lock);
		sent = ret_push_locked(ch, buf->release_token, flags);
		pthread_mutex_unlock(&ch->ret_lock);
		if (sent)
			notify_peer(ch);
	}
	chan_put(ch);
}

/* ------------------------------------------------------------- waiting */

typedef int (*ready_fn)(zc_channel *ch);	/* 1 ready, 0 not, <0 error */

static int rx_ready(zc_channel *ch)
{
	return zc_ld_acq(&ch->rx.shm->data_tail.v) != ch->rx_head ||
	       ch->peer_closed || atomic_load(&ch->peer_gone);
}

/* Free data slots on our ring, or a negative errno.  Also settles the
 * byte count of what the peer consumed since we last looked. */
static int64_t tx_space(zc_channel *ch)
{
	uint64_t head = zc_ld_acq(&ch->tx.shm->data_head.v);
	uint64_t mask = ch->tx.data_cap - 1;

	if (ch->tx_tail - head > ch->tx.data_cap ||
	    head - ch->tx_seen > ch->tx.data_cap)
		return broke(ch, -EPROTO);	/* head ran backwards or ahead */
	for (; ch->tx_seen != head; ch->tx_seen++)
		ch->tx_inring -= ch->tx_bytes[ch->tx_seen & mask];
	return (int64_t)(ch->tx.data_cap - (ch->tx_tail - head));
}

/* Does a message of `need` slots and ch->tx_want bytes fit now?  Bytes
 * count against the window unless the ring is empty, so one message of
 * any size can always go. */
static int tx_fits(zc_channel *ch, size_t need)
{
	int64_t space = tx_space(ch);

	if (space < 0)
		return (int)space;
	return (size_t)space >= need &&
	       (ch->tx_inring == 0 || ch->tx_inring + ch->tx_want <= window);
}

static int tx_check(zc_channel *ch)
{
	int r = drain_returns(ch);	/* credits keep flowing meanwhile */

	if (r < 0)
		return r;
	if (ch->peer_closed || atomic_load(&ch->peer_gone))
		return -EPIPE;
	return 0;
}

/* Room for one more descriptor (a message streaming through the ring). */
static int tx_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	if (r)
		return r;
	r = (int)tx_space(ch);
	return r < 0 ? r : r > 0;
}

/* Room for a whole message of one slice plus its end, within the window. */
static int tx_window_ready(zc_channel *ch)
{
	int r = tx_check(ch);

	return r ? r : tx_fits(ch, 2);
}

/* Record the CPU we run on, for the peer's spin decision (refreshed on
 * every send, receive and wait, so the hint is never old).  Written only
 * when it changes: the line is shared with the peer. */
static unsigned note_cpu(zc_channel *ch)
{
	int cpu = sched_getcpu();	/* rseq: a load, no system call */
	uint64_t v = cpu < 0 ? 0 : (uint64_t)cpu + 1;

	if (atomic_load_explicit(&ch->tx.shm->cpu.v, memory_order_relaxed) != v)
		atomic_store_explicit(&ch->tx.shm->cpu.v, v,
				      memory_order_relaxed);
	return (unsigned)v;
}

/*
 * Busy-wait a little before sleeping: a peer running on another CPU answers
 * within microseconds, much faster than a sleep and a doorbell.  Not when
 * the peer last ran on our own CPU -- it cannot make progress while we
 * spin.  After SPIN_PURE_NS we yield between checks, so on a crowded
 * machine the peer (or anyone else) gets the CPU.
 */
static int spin(zc_channel *ch, ready_fn ready)
{
	unsigned me = note_cpu(ch);
	uint64_t peer = atomic_load_explicit(&ch->rx.shm->cpu.v,
					     memory_order_relaxed);
	uint64_t t0 = now_ns(), t;

	if (me && peer == me)
		return ready(ch);
	for (unsigned i = 1;; i++) {
		int r = ready(ch);

		if (r)
			return r;
		if (i % 64 == 0) {
			t = now_ns() - t0;
			if (t > SPIN_NS)
				return 0;
			if (t > SPIN_PURE_NS)
				sched_yield();
		}
		zc_cpu_relax();
	}
}

/* Announce that we are about to sleep and look once more: returns what
 * ready() says after the flag is visible to the peer. */
static int prepare_sleep(zc_channel *ch, ready_fn ready)
{
	int r;

	atomic_store(&ch->tx.shm->sleeping.v, 1);	/* seq_cst */
	r = ready(ch);
	if (r)
		atomic_store_explicit(&ch->tx.shm->sleeping.v, 0,
				      memory_order_relaxed);
	return r;
}

/* Block until ready() holds.  With intr, a signal returns -EINTR. */
static int chan_wait(zc_channel *ch, ready_fn ready, bool intr)
{
	struct pollfd p = { .fd = ch->sock, .events = POLLIN };
	int r = spin(ch, ready);

	while (r == 0) {
		r = drain_sock(ch);
		if (r < 0)
			break;
		flush_returns(ch);
		r = prepare_sleep(ch, ready);
		if (r)
			break;
		if (poll(&p, 1, -1) < 0 && errno == EINTR && intr)
			r = -EINTR;
		atomic_store_explicit(&ch->tx.shm->sleeping.v, 0,
				      memory_order_relaxed);
	}
	return r < 0 ? r : 0;
}

/* ------------------------------------------------------------- sending */

static int share_pool(zc_channel *ch, zc_pool *pool)
{
	zc_pool **v;
	int err;

	if (ch->last_pool < ch->n_sent_pools &&
	    ch->sent_pools[ch->last_pool] == pool)
		return 0;
	for (uint32_t i = 0; i < ch->n_sent_pools; i++) {
		if (ch->sent_pools[i] == pool) {
			ch->last_pool = i;
			return 0;
		}
	}
	if (ch->n_sent_pools == MAX_POOLS)
		return -ENOBUFS;
	if (ch->n_sent_pools == ch->cap_sent_pools) {
		uint32_t cap = ch->cap_sent_pools ? ch->cap_sent_pools * 2 : 4;

		v = realloc(ch->sent_pools, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ch->sent_pools = v;
		ch->cap_sent_pools = cap;
	}
	err = zc_pool_send(ch->sock, pool);
	if (err)
		return err == -ECONNRESET ? -EPIPE : err;
	/* Our reference keeps the pool (and so its id) alive and unique. */
	zc_pool_get(pool);
	ch->last_pool = ch->n_sent_pools;
	ch->sent_pools[ch->n_sent_pools++] = pool;
	return 0;
}

static int share_file(zc_channel *ch, zc_file *file, uint32_t *token)
{
	struct file_msg m = { .type = MSG_FILE };
	int err;

	for (uint32_t i = 0; i < ch->n_sent_files; i++) {
		if (ch->sent_files[i] == file) {
			*token = i;
			return 0;
		}
	}
	if (ch->n_sent_files == MAX_FILES)
		return -ENFILE;
	if (!ch->sent_files &&
	    !(ch->sent_files = calloc(MAX_FILES, sizeof(zc_file *))))
		return -ENOMEM;
	m.token = ch->n_sent_files;
	zc_file_version(file, &m.v);
	err = zc_sock_send(ch->sock, &m, sizeof(m), zc_file_fd(file), 0);
	if (err)
		return err;
	ch->sent_files[ch->n_sent_files] = zc_file_ref(file);
	*token = ch->n_sent_files++;
	return 0;
}

/* Turn one slice into a descriptor, sharing its pool or file first. */
static int make_entry(zc_channel *ch, const struct zc_slice_int *s,
		      struct zc_ring_ent *e)
{
	uint32_t ftok = 0;
	int err;

	memset(e, 0, sizeof(*e));
	e->soff = s->off;
	e->slen = s->len;
	if (s->kind == ZC_SLICE_FILE) {
		err = share_file(ch, s->file, &ftok);
		e->type = ZC_ENT_FILE;
		e->pool = ftok;
		return err;
	}
	err = share_pool(ch, s->buf->pool);
	if (err)
		return err;
	e->type = ZC_ENT_BUF;
	e->pool = s->buf->pool->id;
	e->off = s->buf->off;
	e->len = s->buf->len;
	e->gen = s->buf->gen;
	pthread_mutex_lock(&ch->lend_lock);
	err = lent_add(ch, s->buf, &e->token);
	pthread_mutex_unlock(&ch->lend_lock);
	return err;
}

/* Make what we wrote visible and wake the peer if it sleeps. */
static void publish(zc_channel *ch)
{
	if (ch->tx_pub == ch->tx_tail)
		return;
	zc_st_rel(&ch->tx.shm->data_tail.v, ch->tx_tail);
	ch->tx_pub = ch->tx_tail;
	notify_peer(ch);
}

/* Write one descriptor, waiting for room if the ring is full. */
static int put_entry(zc_channel *ch, const struct zc_ring_ent *e)
{
	int64_t space = tx_space(ch);
	int err;

	if (space < 0)
		return (int)space;
	if (space == 0) {
		/* A message longer than the ring streams through it: show
		 * the peer what we have so it can make room. */
		publish(ch);
		err = chan_wait(ch, tx_ready, false);
		if (err)
			return err;
	}
	memcpy(&ch->tx.data[ch->tx_tail & (ch->tx.data_cap - 1)], e, sizeof(*e));
	ch->tx_bytes[ch->tx_tail & (ch->tx.data_cap - 1)] = e->slen;
	ch->tx_inring += e->slen;
	ch->tx_tail++;
	return 0;
}

/* Undo a message that failed half way: unpublished descriptors are taken
 * back; if part of it was already published, the peer is told to drop it. */
static void abort_message(zc_channel *ch, uint64_t start)
{
	struct zc_ring_ent end = { .type = ZC_ENT_MSG_END,
				   .flags = ZC_ENT_F_ABORT };

	pthread_mutex_lock(&ch->lend_lock);
	for (uint64_t i = ch->tx_pub; i < ch->tx_tail; i++) {
		struct zc_ring_ent *e = &ch->tx.data[i & (ch->tx.data_cap - 1)];
		zc_buf *b = e->type == ZC_ENT_BUF ? lent_take(ch, e->token) : NULL;

		zc_buf_release(b);
		ch->tx_inring -= e->slen;
	}
	pthread_mutex_unlock(&ch->lend_lock);
	ch->tx_tail = ch->tx_pub;
	if (ch->tx_pub != start && !atomic_load(&ch->peer_gone) &&
	    put_entry(ch, &end) == 0)
		publish(ch);
}

static int check_usable(zc_channel *ch)
{
	int err = atomic_load(&ch->broken);

	if (err)
		return err;
	if (ch->peer_closed || atomic_load(&ch->peer_gone))
		return -EPIPE;
	return 0;
}

/*
 * Non-blocking send: all of a message or nothing, so it needs `need` free
 * slots now.  Otherwise -EAGAIN with our sleeping flag left set: the reader
 * rings when it makes room, and the program sees POLLIN on the channel fd.
 */
static int room_nonblock(zc_channel *ch, size_t need)
{
	int err;

	if (need > ch->tx.data_cap)
		return -EMSGSIZE;
	if ((err = tx_fits(ch, need)))
		return err < 0 ? err : 0;
	if ((err = drain_sock(ch)) < 0)
		return err;
	atomic_store(&ch->tx.shm->sleeping.v, 1);	/* seq_cst */
	if ((err = tx_fits(ch, need)) == 0)
		return check_usable(ch) ?: -EAGAIN;
	atomic_store_explicit(&ch->tx.shm->sleeping.v, 0, memory_order_relaxed);
	return err < 0 ? err : 0;
}

static void reap_maybe(void);

int zc_channel_send(zc_channel *ch, const zc_agg *agg)
{
	uint64_t start;
	int err;

	if (!ch || !agg)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	claim(ch);
	/* Now and then look at the socket even when nothing waits: this is
	 * how a sender that never blocks learns that its peer died. */
	if (++ch->sends % 64 == 0) {
		drain_sock(ch);
		reap_maybe();
	}
	if ((err = check_usable(ch)))
		return err;
	flush_returns(ch);
	if ((err = drain_returns(ch)) < 0)
		return err;
	ch->tx_want = agg->len;
	if (ch->nonblock)
		err = room_nonblock(ch, agg->n + 1);
	else if ((err = tx_fits(ch, 2)) >= 0)
		err = err ? 0 : chan_wait(ch, tx_window_ready, true);
	if (err)
		return err;
	start = ch->tx_tail;
	for (size_t i = 0; i < agg->n; i++) {
		struct zc_ring_ent e;

		err = make_entry(ch, &agg->s[agg->head + i], &e);
		if (!err && (err = put_entry(ch, &e)) && e.type == ZC_ENT_BUF) {
			pthread_mutex_lock(&ch->lend_lock);
			zc_buf_release(lent_take(ch, e.token));
			pthread_mutex_unlock(&ch->lend_lock);
		}
		if (err) {
			abort_message(ch, start);
			return err;
		}
	}
	struct zc_ring_ent end = { .type = ZC_ENT_MSG_END };

	if ((err = put_entry(ch, &end))) {
		abort_message(ch, start);
		return err;
	}
	publish(ch);
	return 0;
}

/* ------------------------------------------------------------ receiving */

static zc_pool *imp_pool_find(zc_channel *ch, uint64_t id)
{
	if (ch->last_imp < ch->n_imp_pools &&
	    ch->imp_pools[ch->last_imp].id == id)
		return ch->imp_pools[ch->last_imp].pool;
	for (uint32_t i = 0; i < ch->n_imp_pools; i++) {
		if (ch->imp_pools[i].id == id) {
			ch->last_imp = i;
			return ch->imp_pools[i].pool;
		}
	}
	return NULL;
}

static int take_buf(zc_channel *ch, const struct zc_ring_ent *e)
{
	zc_pool *pool = imp_pool_find(ch, e->pool);
	zc_buf *b;
	int err;

	if (!pool) {
		/* Sent before the descriptor, so it is in the socket now. */
		err = drain_sock(ch);
		if (err < 0 && err != -EPIPE)
			return err;
		if (!(pool = imp_pool_find(ch, e->pool)))
			return -EPROTO;
	}
	if (e->slen == 0 || e->soff > e->len || e->slen > e->len - e->soff)
		return -EPROTO;
	err = zc_buf_foreign(pool, e->off, e->len, e->gen, &b);
	if (err)
		return err == -EINVAL ? -EPROTO : err;
	b->on_release = ret_cb;
	b->release_ctx = ch;
	b->release_token = e->token;
	chan_get(ch);
	err = zc_agg_append_buf(ch->rx_agg, b, e->soff, e->slen);
	/* The aggregate holds the buffer now; if appending failed this
	 * release returns the token right away. */
	zc_buf_release(b);
	return err;
}

static int take_file(zc_channel *ch, const struct zc_ring_ent *e)
{
	zc_file *f = NULL;
	int err;

	if (e->pool >= MAX_FILES)
		return -EPROTO;
	if (!ch->imp_files || !ch->imp_files[e->pool]) {
		err = drain_sock(ch);
		if (err < 0 && err != -EPIPE)
			return err;
	}
	if (ch->imp_files)
		f = ch->imp_files[e->pool];
	if (!f || e->slen == 0)
		return -EPROTO;
	err = zc_agg_append_file(ch->rx_agg, f, e->soff, e->slen);
	return err == -ERANGE ? -EPROTO : err;
}

/* One descriptor: 1 at the end of a message, 0 to go on, <0 error. */
static int take_entry(zc_channel *ch, const struct zc_ring_ent *e)
{
	int err;

	if (!ch->rx_agg && (err = zc_agg_create(&ch->rx_agg)))
		return err;
	switch (e->type) {
	case ZC_ENT_BUF:
		return take_buf(ch, e);
	case ZC_ENT_FILE:
		return take_file(ch, e);
	case ZC_ENT_MSG_END:
		if (e->flags & ZC_ENT_F_ABORT) {
			zc_agg_release(ch->rx_agg);
			ch->rx_agg = NULL;
			return 0;
		}
		return 1;
	default:
		return -EPROTO;
	}
}

/* Pop descriptors into rx_agg up to a MSG_END: 1 with *out set, 0 if the
 * ring ran dry first (the partial message is kept), <0 error. */
static int pop_message(zc_channel *ch, zc_agg **out)
{
	uint64_t head = ch->rx_head;
	uint64_t tail = zc_ld_acq(&ch->rx.shm->data_tail.v);
	int r = 0;

	if (tail - head > ch->rx.data_cap)
		return broke(ch, -EPROTO);
	if (head == tail)
		return 0;
	while (head != tail && r == 0) {
		struct zc_ring_ent e;

		/* Copy first: the peer can rewrite the slot under us. */
		memcpy(&e, &ch->rx.data[head & (ch->rx.data_cap - 1)], sizeof(e));
		head++;
		r = take_entry(ch, &e);
	}
	ch->rx_head = head;
	zc_st_rel(&ch->rx.shm->data_head.v, head);
	notify_peer(ch);	/* a writer may wait for room */
	if (r < 0)
		return broke(ch, r == -ENOMEM ? r : -EPROTO);
	if (r == 1) {
		*out = ch->rx_agg;
		ch->rx_agg = NULL;
	}
	return r;
}

int zc_channel_recv(zc_channel *ch, zc_agg **out)
{
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!ch)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	claim(ch);
	if ((r = atomic_load(&ch->broken)))
		return r;
	flush_returns(ch);
	if ((r = drain_returns(ch)) < 0)
		return r;
	for (;;) {
		r = pop_message(ch, out);
		if (r)
			return r < 0 ? r : 0;
		if (ch->peer_closed || atomic_load(&ch->peer_gone)) {
			/* Everything published before the end was read. */
			zc_agg_release(ch->rx_agg);
			ch->rx_agg = NULL;
			return -EPIPE;
		}
		if (ch->nonblock) {
			/* Leave the flag set: the writer rings, poll sees
			 * POLLIN.  Stray doorbells are drained first so a
			 * level-triggered poll does not spin. */
			r = drain_sock(ch);
			if (r < 0 && r != -EPIPE)
				return r;
			if (r == 0 && prepare_sleep(ch, rx_ready) == 0)
				return -EAGAIN;
			continue;
		}
		r = chan_wait(ch, rx_ready, true);
		if (r < 0 && r != -EPIPE)
			return r;
	}
}

/* ----------------------------------------------------------- life cycle */

static int chan_new(int sock, int socktype, zc_channel **out)
{
	zc_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	pthread_once(&init_once, channel_init);
	atomic_init(&ch->refs, 1);
	ch->sock = sock;
	ch->socktype = socktype;
	ch->owner_gen = zc_fork_gen();
	ch->serial = atomic_fetch_add(&next_serial, 1);
	ch->lent_free = LENT_NONE;
	ch->tx_bytes = calloc(ZC_RING_DATA_CAP, sizeof(*ch->tx_bytes));
	if (!ch->tx_bytes) {
		free(ch);
		return -ENOMEM;
	}
	pthread_mutex_init(&ch->lend_lock, NULL);
	pthread_mutex_init(&ch->ret_lock, NULL);
	*out = ch;
	return 0;
}

static void list_add(zc_channel *ch)
{
	pthread_mutex_lock(&all_lock);
	ch->next = all_head;
	if (all_head)
		all_head->prev = ch;
	all_head = ch;
	pthread_mutex_unlock(&all_lock);
}

static void list_del(zc_channel *ch)
{
	pthread_mutex_lock(&all_lock);
	if (ch->prev)
		ch->prev->next = ch->next;
	else if (all_head == ch)
		all_head = ch->next;
	if (ch->next)
		ch->next->prev = ch->prev;
	ch->prev = ch->next = NULL;
	pthread_mutex_unlock(&all_lock);
}

static void unmap_ring(struct zc_ring *r)
{
	if (r->shm)
		munmap(r->shm, r->map_len);
	r->shm = NULL;
}

/* Free everything.  close_sock is false when opening failed: the socket
 * then still belongs to the caller. */
static void chan_free(zc_channel *ch, bool close_sock)
{
	list_del(ch);
	if (owned(ch)) {
		drain_returns(ch);
		release_all_lent(ch);
	}	/* else: the lent references belong to the other process */
	zc_agg_release(ch->rx_agg);
	for (uint32_t i = 0; i < ch->n_sent_pools; i++)
		zc_pool_put(ch->sent_pools[i]);
	for (uint32_t i = 0; i < ch->n_sent_files; i++)
		zc_file_release(ch->sent_files[i]);
	for (uint32_t i = 0; i < ch->n_imp_pools; i++)
		zc_pool_put(ch->imp_pools[i].pool);
	for (uint32_t i = 0; ch->imp_files && i < MAX_FILES; i++)
		zc_file_release(ch->imp_files[i]);
	unmap_ring(&ch->tx);
	unmap_ring(&ch->rx);
	if (close_sock)
		close(ch->sock);
	free(ch->sent_pools);
	free(ch->sent_files);
	free(ch->imp_pools);
	free(ch->imp_files);
	free(ch->lent);
	free(ch->ovf);
	free(ch->tx_bytes);
	pthread_mutex_destroy(&ch->lend_lock);
	pthread_mutex_destroy(&ch->ret_lock);
	free(ch);
}

static void chan_put(zc_channel *ch)
{
	if (atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_acq_rel) == 1)
		chan_free(ch, true);
}

/* Open a socket type this module speaks; the socket must be connected. */
static int check_socket(int sock, int *type)
{
	int domain;
	socklen_t len = sizeof(domain);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (sock < 0)
		return -EBADF;
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return -errno;
	len = sizeof(*type);
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, type, &len) < 0)
		return -errno;
	if (domain != AF_UNIX ||
	    (*type != SOCK_SEQPACKET && *type != SOCK_STREAM))
		return -EPROTOTYPE;
	if (getpeername(sock, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	return 0;
}

static int chan_register(zc_channel *ch)
{
	int err = reg_set(ch->sock, NULL, ch);

	if (!err)
		list_add(ch);
	return err;
}

int zc_channel_open(int sock, zc_channel **out)
{
	zc_channel *ch;
	int type, fl, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((err = check_socket(sock, &type)))
		return err;
	if (zc_channel_from_fd(sock))
		return -EBUSY;
	fl = fcntl(sock, F_GETFL);
	if (fl < 0)
		return -errno;
	if ((err = chan_new(sock, type, &ch)))
		return err;
	/* We wait with poll() and never want a control message half sent. */
	if ((fl & O_NONBLOCK) && fcntl(sock, F_SETFL, fl & ~O_NONBLOCK) < 0)
		err = -errno;
	if (!err)
		err = hello_send(ch);
	if (!err)
		err = hello_recv(ch);
	if (!err)
		err = chan_register(ch);
	if (err) {
		fcntl(sock, F_SETFL, fl);
		chan_free(ch, false);
		return err;
	}
	*out = ch;
	return 0;
}

int zc_channel_pair(zc_channel **a, zc_channel **b)
{
	zc_channel *ch[2] = { NULL, NULL };
	int sv[2], err = 0;

	if (!a || !b)
		return -EINVAL;
	*a = *b = NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	for (int i = 0; i < 2 && !err; i++)
		err = chan_new(sv[i], SOCK_SEQPACKET, &ch[i]);
	/* Both hellos go out before either is read: one thread does both
	 * ends, and the socket buffers the messages. */
	for (int i = 0; i < 2 && !err; i++)
		err = hello_send(ch[i]);
	for (int i = 0; i < 2 && !err; i++)
		err = hello_recv(ch[i]);
	for (int i = 0; i < 2 && !err; i++)
		err = chan_register(ch[i]);
	if (err) {
		for (int i = 0; i < 2; i++) {
			if (!ch[i]) {
				close(sv[i]);
				continue;
			}
			reg_set(sv[i], ch[i], NULL);
			chan_free(ch[i], true);
		}
		return err;
	}
	*a = ch[0];
	*b = ch[1];
	return 0;
}

int zc_channel_fd(const zc_channel *ch)
{
	return ch ? ch->sock : -EINVAL;
}

int zc_channel_set_nonblock(zc_channel *ch, int on)
{
	if (!ch)
		return -EINVAL;
	if (ch->closed)
		return -EBADF;
	ch->nonblock = on != 0;
	return 0;
}

void zc_channel_close(zc_channel *ch)
{
	static const unsigned char bye = MSG_CLOSE;

	if (!ch || ch->closed)
		return;
	ch->closed = true;
	reg_set(ch->sock, ch, NULL);
	/* A partial message: its buffers go back to the peer. */
	zc_agg_release(ch->rx_agg);
	ch->rx_agg = NULL;
	if (owned(ch) && ch->used && !atomic_load(&ch->broken) &&
	    !atomic_load(&ch->peer_gone)) {
		(void)zc_sock_send(ch->sock, &bye, 1, -1, MSG_DONTWAIT);
		flush_returns(ch);
		drain_returns(ch);
		if (atomic_load(&ch->lent_n) > 0) {
			/* The peer still reads our memory: keep the channel
			 * until it gives it back (see reap_lingering). */
			chan_get(ch);
			atomic_store(&ch->lingering, true);
			atomic_fetch_add(&n_lingering, 1);
		}
	}
	chan_put(ch);
	reap_maybe();
}

/* ---------------------------------------------------- reclaim and reaping */

/* References to the channels with buffers out on loan (all_lock taken and
 * dropped here so releases may free channels).  NULL-terminated. */
static zc_channel **snapshot_lending(void)
{
	zc_channel **v;
	size_t n = 0, i = 0;

	pthread_mutex_lock(&all_lock);
	for (zc_channel *c = all_head; c; c = c->next)
		n++;
	v = malloc((n + 1) * sizeof(*v));
	for (zc_channel *c = all_head; v && c; c = c->next) {
		if (owned(c) && (atomic_load(&c->lent_n) ||
				      atomic_load(&c->lingering)) &&
		    chan_tryget(c))
			v[i++] = c;
	}
	if (v)
		v[i] = NULL;
	pthread_mutex_unlock(&all_lock);
	return v;
}

/* A closed channel whose peer still held our buffers: collect returns,
 * notice the peer's end, and let it go when nothing is lent any more. */
static int reap_one(zc_channel *ch)
{
	int n;

	pthread_mutex_lock(&reap_lock);
	n = drain_returns(ch);
	if (atomic_load(&ch->lingering)) {
		drain_sock(ch);	/* EOF: the peer is gone, all comes back */
		if ((atomic_load(&ch->lent_n) == 0 ||
		     atomic_load(&ch->peer_gone) ||
		     atomic_load(&ch->broken)) &&
		    atomic_exchange(&ch->lingering, false)) {
			atomic_fetch_sub(&n_lingering, 1);
			chan_put(ch);
		}
	}
	pthread_mutex_unlock(&reap_lock);
	return n > 0 ? n : 0;
}

static int reclaim_once(void)
{
	zc_channel **v = snapshot_lending();
	int total = 0;

	if (!v)
		return 0;
	for (size_t i = 0; v[i]; i++) {
		/* An open channel's socket belongs to its thread: only the
		 * return ring (lend_lock) is touched here. */
		int n;

		if (atomic_load(&v[i]->lingering))
			n = reap_one(v[i]);
		else
			n = drain_returns(v[i]);
		total += n > 0 ? n : 0;
	}
	for (size_t i = 0; v[i]; i++)
		chan_put(v[i]);
	free(v);
	return total;
}

static void reap_maybe(void)
{
	if (atomic_load_explicit(&n_lingering, memory_order_relaxed))
		reclaim_once();
}

int zc_channel_reclaim(int wait_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 0) *
					       1000000u;
	struct timespec pause = { 0, 200000 };
	int n;

	while ((n = reclaim_once()) == 0 && now_ns() < deadline)
		nanosleep(&pause, NULL);
	return n;
}

uint64_t zc_channel_serial(const zc_channel *ch)
{
	return ch ? ch->serial : 0;
}

unsigned zc_channel_lent(const zc_channel *ch)
{
	return ch ? atomic_load(&((zc_channel *)ch)->lent_n) : 0;
}
