/*
 * cs_kernel.c - Container Shipping on the patched kernel: the cs_* calls
 * as system calls, containers as kernel objects.
 *
 * backend.c reads the call numbers from /sys/kernel/zc; cs.c checks the
 * arguments (the same way as on the portable backend) and comes here.
 *
 * Who does what, by descriptor kind:
 *
 *   pipe, regular file,    the system calls themselves: pages move by
 *   TCP, AF_UNIX stream    reference into pipes and sockets and out of
 *                          pipes, the page cache is shared, sockets are
 *                          received straight into container pages
 *   libzc channel          the peer speaks libzc's descriptor protocol over
 *                          shared pools, which the kernel knows nothing
 *                          about: cs_write copies the container's bytes into
 *                          pool buffers once and sends their descriptors;
 *                          cs_read copies what arrives into new containers
 *   anything else          cs_write writes from the container's mapping;
 *   (devices, datagram     cs_read reads into a new container's mapping (one
 *   and seqpacket sockets) copy, the one read() makes anyway)
 *
 * Every bridged byte is counted in zc_io_stats' bytes_copied; the kernel's
 * own split (by reference or copied) is in /sys/kernel/zc.  Move semantics
 * hold on every path: a container written is gone (the bridge frees it once
 * everything went out), a failed write keeps it.
 *
 * The shadow table.  cs_write with offs/lens NULL means "each container's
 * data".  The kernel knows that region for the containers it filled, but a
 * container the bridge made from a channel message is a cs_alloc'ed one
 * whose bytes start inside the page (at the sender's offset): the kernel
 * takes the whole of it for the data.  So libzc keeps (size, data offset,
 * data length) per id, learned when the container was made, and always
 * gives the kernel explicit ranges.  The kernel stays the judge of which ids
 * exist: the shadow only describes them.  An entry carries a generation, so
 * that a thread that gave ids away does not forget the entry of a container
 * another thread made meanwhile under a reused id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "cs_kernel.h"

#define BRIDGE_RECV_DEFAULT (64 * 1024)	/* cs_read size when nothing queued */
#define KCS_MAX_COUNT 1024	/* ids in one kernel call (CS_MAX_COUNT) */
#define KCS_STACK 16		/* per-call arrays up to this live on the stack */

/* ----------------------------------------------------------- the calls */

static long ksys(int which, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(zc_kabi()->nr[which], a, b, c, d, e, f);

	return r < 0 ? -errno : r;
}

/* ------------------------------------------------------------- shadow */

struct kshadow {
	uint32_t size;		/* bytes (whole pages) */
	uint32_t off, len;	/* the data region */
	uint32_t gen;		/* bumped whenever the id names a new container */
	bool known;
};

static struct {
	pthread_mutex_t lock;
	struct kshadow *v;
	int cap;
} sh = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

static void shadow_set(int cid, size_t size, size_t off, size_t len)
{
	pthread_mutex_lock(&sh.lock);
	if (cid >= sh.cap) {
		int cap = sh.cap ? sh.cap : 64;
		struct kshadow *v;

		while (cap <= cid)
			cap *= 2;
		v = realloc(sh.v, (size_t)cap * sizeof(*v));
		if (!v) {
			/* Unknown: cs_write then needs explicit ranges. */
			pthread_mutex_unlock(&sh.lock);
			return;
		}
		memset(v + sh.cap, 0, (size_t)(cap - sh.cap) * sizeof(*v));
		sh.v = v;
		sh.cap = cap;
	}
	sh.v[cid] = (struct kshadow){ (uint32_t)zc_page_round(size),
				      (uint32_t)off, (uint32_t)len,
				      sh.v[cid].gen + 1, true };
	pthread_mutex_unlock(&sh.lock);
}

static bool shadow_get(int cid, struct kshadow *out)
{
	bool ok = false;

	pthread_mutex_lock(&sh.lock);
	if (cid >= 0 && cid < sh.cap && sh.v[cid].known) {
		*out = sh.v[cid];
		ok = true;
	}
	pthread_mutex_unlock(&sh.lock);
	return ok;
}

/* The generations of the ids, taken before a call that may free them. */
static void shadow_gens(int count, const int *cids, uint32_t *gens)
{
	pthread_mutex_lock(&sh.lock);
	for (int i = 0; i < count; i++)
		gens[i] = cids[i] >= 0 && cids[i] < sh.cap ? sh.v[cids[i]].gen : 0;
	pthread_mutex_unlock(&sh.lock);
}

/* The containers are gone: forget them, unless an id already names a new
 * container (another thread's cs_alloc or cs_read got it meanwhile). */
static void shadow_drop(int count, const int *cids, const uint32_t *gens)
{
	pthread_mutex_lock(&sh.lock);
	for (int i = 0; i < count; i++)
		if (cids[i] >= 0 && cids[i] < sh.cap &&
		    sh.v[cids[i]].gen == gens[i])
			sh.v[cids[i]].known = false;
	pthread_mutex_unlock(&sh.lock);
}

/* Per-call arrays: in the caller's stack array (room for KCS_STACK
 * entries times per) when n entries fit, else on the heap. */
static void *scratch_of(size_t n, size_t size, void *stack, size_t room)
{
	return n <= room ? stack : calloc(n, size);
}

#define scratch(n, size, stack) \
	scratch_of((n), (size), (stack), sizeof(stack) / (size))

static void scratch_free(void *p, void *stack)
{
	if (p != stack)
		free(p);
}

/* ------------------------------------------------ alloc, free, map, unmap */

int zc_kcs_alloc(int size, void **addr, int options)
{
	long cid = ksys(ZC_KNR_ALLOC, size, (long)addr, options, 0, 0, 0);

	if (cid >= 0)
		shadow_set((int)cid, (size_t)size, 0, (size_t)size);
	return (int)cid;
}

int zc_kcs_free(int count, const int *cids)
{
	uint32_t stackg[KCS_STACK], *gens;
	long r;

	if (count > KCS_MAX_COUNT)
		return -EINVAL;
	if (!(gens = scratch((size_t)count, sizeof(*gens), stackg)))
		return -ENOMEM;
	shadow_gens(count, cids, gens);
	r = ksys(ZC_KNR_FREE, count, (long)cids, 0, 0, 0, 0);
	if (r == 0)
		shadow_drop(count, cids, gens);
	scratch_free(gens, stackg);
	return (int)r;
}

int zc_kcs_map(int count, const int *cids, void **addrs)
{
	return (int)ksys(ZC_KNR_MAP, count, (long)cids, (long)addrs, 0, 0, 0);
}

int zc_kcs_unmap(int count, const int *cids)
{
	return (int)ksys(ZC_KNR_UNMAP, count, (long)cids, 0, 0, 0, 0);
}

/* --------------------------------------------------------------- cs_write */

struct krange {
	int off, len;
};

/* The byte range of each container cs_write sends: offs/lens as given, or
 * the data region the shadow remembers.  -EBADF for an id libzc does not
 * know, -EINVAL for a range outside the container. */
static int resolve(int count, const int *cids, const int *offs,
		   const int *lens, struct krange *v)
{
	for (int i = 0; i < count; i++) {
		struct kshadow s;
		long long off, len;

		if (!shadow_get(cids[i], &s))
			return -EBADF;
		off = offs ? offs[i] : (long long)s.off;
		len = lens ? lens[i] : (long long)s.off + s.len - off;
		if (off < 0 || len < 0 || off > s.size || len > s.size - off)
			return -EINVAL;
		v[i].off = (int)off;
		v[i].len = (int)len;
	}
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* An id listed twice cannot be given away twice: -EINVAL. */
static int check_unique(int count, const int *cids)
{
	int stackv[KCS_STACK], *v, err = 0;

	if (!(v = scratch((size_t)count, sizeof(*v), stackv)))
		return -ENOMEM;
	memcpy(v, cids, (size_t)count * sizeof(*v));
	qsort(v, (size_t)count, sizeof(*v), cmp_int);
	for (int i = 1; i < count && !err; i++)
		if (v[i] == v[i - 1])
			err = -EINVAL;
	scratch_free(v, stackv);
	return err;
}

/* The system call, with explicit ranges when the shadow knows every
 * container; otherwise the kernel judges the ids (and its own data regions
 * stand for offs/lens NULL). */
static ssize_t kwrite(int fd, int count, const int *cids, const int *offs,
		      const int *lens, struct krange *v, bool file)
{
	int stacki[2 * KCS_STACK], *ko = NULL, *kl;
	uint32_t stackg[KCS_STACK], *gens;
	ssize_t r;

	if (!(gens = scratch((size_t)count, sizeof(*gens), stackg)))
		return -ENOMEM;
	shadow_gens(count, cids, gens);
	if (resolve(count, cids, offs, lens, v) == 0 &&
	    (ko = scratch(2 * (size_t)count, sizeof(int), stacki))) {
		kl = ko + count;
		for (int i = 0; i < count; i++) {
			ko[i] = v[i].off;
			kl[i] = v[i].len;
		}
		offs = ko;
		lens = kl;
	}
	r = ksys(ZC_KNR_WRITE, fd, count, (long)cids, (long)offs, (long)lens, 0);
	if (ko)
		scratch_free(ko, stacki);
	if (r >= 0) {
		shadow_drop(count, cids, gens);
		if (file)
			zc_stat_copy((uint64_t)r);
		else
			zc_stat_ref((uint64_t)r);
	}
	scratch_free(gens, stackg);
	return r;
}

/* Channel: one pool buffer per range, the bytes at the same offset within
 * the page (the receiver sees the same offsets), descriptors sent. */
static int bridge_channel(zc_channel *ch, int count, void **addrs,
			  const struct krange *v)
{
	zc_agg *agg = NULL;
	int err = zc_agg_create(&agg);

	for (int i = 0; !err && i < count; i++) {
		size_t at = (size_t)v[i].off % zc_page_size();
		zc_buf *b;

		if (!v[i].len)
			continue;
		err = zc_cs_alloc_buf(at + (size_t)v[i].len, &b);
		if (err)
			break;
		memcpy((char *)zc_buf_wptr(b) + at,
		       (char *)addrs[i] + v[i].off, (size_t)v[i].len);
		err = zc_buf_publish(b, at + (size_t)v[i].len);
		if (!err)
			err = zc_agg_append_buf(agg, b, at, (size_t)v[i].len);
		zc_buf_release(b);
	}
	if (!err && zc_agg_len(agg))
		err = zc_channel_send(ch, agg);
	if (!err)
		zc_stat_copy(zc_agg_len(agg));
	zc_agg_release(agg);
	return err;
}

/* Anything else: write from the mappings (sendmsg without SIGPIPE where
 * the descriptor is a socket).  A container goes whole or not at all, so
 * once part went out, EAGAIN waits for room. */
static ssize_t bridge_stream(int fd, int count, void **addrs,
			     const struct krange *v)
{
	size_t total = 0, done = 0;
	bool sock = true;

	for (int i = 0; i < count; i++)
		total += (size_t)v[i].len;
	while (done < total) {
		struct iovec iov[64];
		size_t skip = done;
		int n = 0;
		ssize_t r = -1;

		for (int i = 0; i < count && n < 64; i++) {
			if (skip >= (size_t)v[i].len) {
				skip -= (size_t)v[i].len;
				continue;
			}
			iov[n].iov_base = (char *)addrs[i] + v[i].off + skip;
			iov[n].iov_len = (size_t)v[i].len - skip;
			skip = 0;
			n++;
		}
		if (sock) {
			struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };

			r = sendmsg(fd, &mh, MSG_NOSIGNAL);
			if (r < 0 && errno == ENOTSOCK)
				sock = false;
		}
		if (!sock)
			r = writev(fd, iov, n);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r == 0)
			return -EIO;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && done) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, -1);
			continue;
		}
		return -errno;
	}
	zc_stat_copy(total);
	return (ssize_t)total;
}

/* Channels and other descriptors: the kernel vouches for the ids (mapping
 * them), the shadow for the ranges; nothing is given away before all of it
 * went out. */
static ssize_t bridge_write(int fd, enum zc_fdkind kind, int count,
			    const int *cids, const int *offs, const int *lens,
			    struct krange *v)
{
	void *stacka[KCS_STACK], **addrs;
	uint32_t stackg[KCS_STACK], *gens;
	ssize_t r;

	addrs = scratch((size_t)count, sizeof(*addrs), stacka);
	gens = scratch((size_t)count, sizeof(*gens), stackg);
	r = addrs && gens ? 0 : -ENOMEM;
	if (!r)
		r = check_unique(count, cids);
	if (!r)
		r = zc_kcs_map(count, cids, addrs);
	if (!r)
		r = resolve(count, cids, offs, lens, v);
	if (r)
		goto out;
	shadow_gens(count, cids, gens);
	if (kind == ZC_FD_CHANNEL) {
		r = bridge_channel(zc_channel_from_fd(fd), count, addrs, v);
		if (!r)
			for (int i = 0; i < count; i++)
				r += v[i].len;
	} else {
		r = bridge_stream(fd, count, addrs, v);
	}
	if (r >= 0) {
		long err = ksys(ZC_KNR_FREE, count, (long)cids, 0, 0, 0, 0);

		if (err)
			r = err;	/* another thread freed one meanwhile */
		else
			shadow_drop(count, cids, gens);
	}
out:
	if (addrs)
		scratch_free(addrs, stacka);
	if (gens)
		scratch_free(gens, stackg);
	return r;
}

ssize_t zc_kcs_write(int fd, int count, const int *cids, const int *offs,
		     const int *lens)
{
	enum zc_fdkind kind = zc_fdkind_of(fd);
	struct krange stackv[KCS_STACK], *v;
	ssize_t r;

	if (kind == ZC_FD_BAD)
		return -EBADF;
	if (count > KCS_MAX_COUNT)
		return -EINVAL;
	if (!(v = scratch((size_t)count, sizeof(*v), stackv)))
		return -ENOMEM;
	switch (kind) {
	case ZC_FD_PIPE:
	case ZC_FD_FILE:
	case ZC_FD_TCP:
	case ZC_FD_UNIX:
		r = kwrite(fd, count, cids, offs, lens, v, kind == ZC_FD_FILE);
		break;
	default:
		r = bridge_write(fd, kind, count, cids, offs, lens, v);
		break;
	}
	scratch_free(v, stackv);
	return r;
}

/* ---------------------------------------------------------------- cs_read */

/* One container a read made, to hand back in args. */
struct kmade {
	int cid;
	int off, len, size;
	void *addr;
};

static void fill_args(cs_args *args, const struct kmade *m, int n,
		      bool mapall)
{
	for (int i = 0; i < n; i++) {
		args->cids[i] = m[i].cid;
		if (args->offs)
			args->offs[i] = m[i].off;
		if (args->lens)
			args->lens[i] = m[i].len;
		if (args->sizes)
			args->sizes[i] = m[i].size;
		if (args->addrs)
			args->addrs[i] = mapall ? m[i].addr : NULL;
	}
}

/* A new mapped container of off + len bytes; its data region is
 * [off, off + len).  The caller fills it.  Its size is reported as
 * off + len, what the portable backend reports for a received buffer (the
 * bytes up to the data's end); the pages behind it are zero. */
static int make_one(size_t off, size_t len, struct kmade *m)
{
	if (off + len > INT_MAX)
		return -EOVERFLOW;
	m->cid = zc_kcs_alloc((int)(off + len), &m->addr, CS_MAPNOW);
	if (m->cid < 0)
		return m->cid;
	m->off = (int)off;
	m->len = (int)len;
	m->size = (int)(off + len);
	shadow_set(m->cid, off + len, off, len);
	return 0;
}

/* Unmap what the caller did not ask to see mapped; on error, free all. */
static int finish(struct kmade *m, int n, int err, bool mapall)
{
	for (int i = 0; i < n && !err && !mapall; i++)
		err = zc_kcs_unmap(1, &m[i].cid);
	for (int i = 0; i < n && err; i++)
		zc_kcs_free(1, &m[i].cid);
	return err;
}

/* A channel message: each slice copied into a container of its own. */
static int bridge_read_channel(int fd, zc_channel *ch, int size, int maxcon,
			       cs_args *args, bool mapall)
{
	struct kmade stackm[KCS_STACK], *m;
	size_t pos = 0;
	zc_agg *agg;
	int n = 0, r, err = 0;

	r = zc_cs_channel_recv(fd, ch, (size_t)size, (size_t)maxcon, &agg);
	if (r <= 0)
		return r;
	r = (int)zc_agg_nslices(agg);
	if (!(m = scratch((size_t)r, sizeof(*m), stackm)))
		err = -ENOMEM;
	for (; !err && n < r; n++) {
		struct zc_slice s;
		ssize_t got;

		zc_agg_slice(agg, (size_t)n, &s);
		err = make_one(s.off % zc_page_size(), s.len, &m[n]);
		if (err)
			break;
		got = zc_agg_copyout(agg, pos, (char *)m[n].addr + m[n].off,
				     s.len);
		if (got >= 0 && (size_t)got != s.len)
			got = -ESTALE;
		if (got < 0)
			err = (int)got;
		pos += s.len;
	}
	zc_agg_release(agg);
	if (m) {
		err = finish(m, n, err, mapall);
		if (!err) {
			zc_stat_copy(pos);
			fill_args(args, m, r, mapall);
		}
		scratch_free(m, stackm);
	}
	return err ? err : r;
}

/* Another descriptor: read straight into a new container, as big as what
 * is queued (FIONREAD) or a default when that is unknown. */
static int bridge_read_stream(int fd, int size, cs_args *args, bool mapall)
{
	struct kmade m;
	size_t want = (size_t)size;
	int avail = 0, err;
	ssize_t r;

	if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
		if ((size_t)avail < want)
			want = (size_t)avail;
	} else if (want > BRIDGE_RECV_DEFAULT) {
		want = BRIDGE_RECV_DEFAULT;
	}
	err = make_one(0, want, &m);
	if (err)
		return err;
	do
		r = read(fd, m.addr, want);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		err = r < 0 ? -errno : 0;
		zc_kcs_free(1, &m.cid);
		return err;
	}
	/* The data is what arrived; the rest of the pages stays zero. */
	m.len = (int)r;
	shadow_set(m.cid, (size_t)m.size, 0, (size_t)m.len);
	err = finish(&m, 1, 0, mapall);
	if (err)
		return err;
	zc_stat_copy((uint64_t)r);
	fill_args(args, &m, 1, mapall);
	return 1;
}

/* The system call, into arrays of our own (the shadow needs every
 * container's region, and the caller's arrays need only hold n entries,
 * as on the portable backend, where the kernel wants room for maxcon). */
static int kread(int fd, enum zc_fdkind kind, int size, int maxcon,
		 cs_args *args, int options)
{
	int stacki[4 * KCS_STACK], *v;
	void *stacka[KCS_STACK], **addrs;
	struct kmade stackm[KCS_STACK], *m = NULL;
	size_t max = (size_t)(maxcon < KCS_MAX_COUNT ? maxcon : KCS_MAX_COUNT);
	cs_args ka;
	long r;

	v = scratch(4 * max, sizeof(int), stacki);
	addrs = scratch(max, sizeof(*addrs), stacka);
	r = v && addrs ? 0 : -ENOMEM;
	if (!r) {
		ka = (cs_args){ v, v + max, v + 2 * max, v + 3 * max, addrs };
		r = ksys(ZC_KNR_READ, fd, size, (long)max, (long)&ka, options,
			 0);
	}
	if (r > 0 && !(m = scratch((size_t)r, sizeof(*m), stackm))) {
		/* The data is consumed; without memory to report it, the
		 * containers can only go. */
		ksys(ZC_KNR_FREE, r, (long)ka.cids, 0, 0, 0, 0);
		r = -ENOMEM;
	}
	for (long i = 0; r > 0 && i < r; i++) {
		m[i] = (struct kmade){ ka.cids[i], ka.offs[i], ka.lens[i],
				       ka.sizes[i], ka.addrs[i] };
		shadow_set(m[i].cid, (size_t)m[i].size, (size_t)m[i].off,
			   (size_t)m[i].len);
		/* Regular files share the page cache; pipes move pages where
		 * they can (the kernel's counters say how much); sockets are
		 * received with one copy. */
		if (kind == ZC_FD_FILE)
			zc_stat_ref((uint64_t)m[i].len);
		else if (kind != ZC_FD_PIPE)
			zc_stat_copy((uint64_t)m[i].len);
	}
	if (r > 0)
		fill_args(args, m, (int)r, options & CS_MAPALL);
	if (m)
		scratch_free(m, stackm);
	if (v)
		scratch_free(v, stacki);
	if (addrs)
		scratch_free(addrs, stacka);
	return (int)r;
}

int zc_kcs_read(int fd, int size, int maxcon, cs_args *args, int options)
{
	enum zc_fdkind kind = zc_fdkind_of(fd);
	bool mapall = options & CS_MAPALL;

	switch (kind) {
	case ZC_FD_BAD:
		return -EBADF;
	case ZC_FD_CHANNEL:
		return bridge_read_channel(fd, zc_channel_from_fd(fd), size,
					   maxcon, args, mapall);
	case ZC_FD_PIPE:
	case ZC_FD_FILE:
	case ZC_FD_TCP:
	case ZC_FD_UNIX:
		return kread(fd, kind, size, maxcon, args, options);
	default:
		return bridge_read_stream(fd, size, args, mapall);
	}
}
