/*
 * channel_hello.c - the handshake: each side's ring region, created,
 * passed, checked and mapped.
 *
 * Each side creates the ring region for the direction it sends in (a
 * memfd, layout in ring.h) and passes it in its HELLO, the first message on
 * the socket.  Both ends send their HELLO before reading the peer's, so one
 * thread can open both ends of a pair and two processes cannot deadlock.
 *
 * The peer's region is mapped read-write (we advance its head indices), so
 * it must not be able to shrink under us: a truncated mapping would turn
 * every access into a SIGBUS.  We refuse a region without the shrink seal,
 * of another size than its HELLO says, or whose capacities are not ours to
 * handle (ring.h: zc_ring_cap_ok); the capacities we then use are the
 * checked ones from the HELLO, never those in the shared header.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channel_int.h"

#define HELLO_TIMEOUT_MS 10000		/* the peer must open within this */

struct hello_msg {
	uint8_t type, version;
	uint16_t pad;
	uint32_t data_cap, ret_cap;
	uint32_t pad2;
	uint64_t region_size;
};

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

int zc_ch_hello_send(zc_channel *ch)
{
	struct hello_msg m = {
		.type = ZC_CH_MSG_HELLO, .version = ZC_RING_VERSION,
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
		return -EPROTO;	/* zc_ch_rings_unmap unmaps it */
	return 0;
}

int zc_ch_hello_recv(zc_channel *ch)
{
	struct pollfd p = { .fd = ch->sock, .events = POLLIN };
	uint64_t deadline = zc_ch_now_ns() + HELLO_TIMEOUT_MS * 1000000ull;
	int t;

	for (;;) {
		t = zc_ch_peek_type(ch->sock);
		if (t != -EAGAIN)
			break;
		uint64_t now = zc_ch_now_ns();

		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	return zc_ch_hello_take(ch, t);
}

int zc_ch_hello_take(zc_channel *ch, int t)
{
	struct hello_msg m;
	int fd, err;

	if (t < 0)
		return t;
	if (t != ZC_CH_MSG_HELLO)
		return -EPROTO;
	err = zc_ch_read_msg(ch, &m, sizeof(m), &fd);
	if (err)
		return err;
	if (fd < 0)
		return -EPROTO;
	err = map_peer_ring(ch, &m, fd);
	close(fd);
	return err;
}

static void unmap_ring(struct zc_ring *r)
{
	if (r->shm)
		munmap(r->shm, r->map_len);
	r->shm = NULL;
}

void zc_ch_rings_unmap(zc_channel *ch)
{
	unmap_ring(&ch->tx);
	unmap_ring(&ch->rx);
}
