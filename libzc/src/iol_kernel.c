/*
 * iol_kernel.c - the patched kernel's IO-Lite calls (kernel-patch 0008):
 * kernel buffers in libzc's aggregates.
 *
 * A kernel buffer is a zc_buf without a pool: the kernel filled it once,
 * mapped it read-only into this process, and names it by (id, generation).
 * The iol_write system call hands its pages to pipes and sockets by
 * reference while the buffer stays ours and unchanged -- so, unlike a pool
 * buffer, it needs no detaching when it is released: the last release
 * frees it in the kernel (cs_free, which also unmaps it), and the kernel
 * keeps the pages for as long as a pipe or socket holds them.
 *
 * Where libzc uses the calls:
 *
 *   iol_read from a pipe or         kernel buffers (io_read.c): a pipe's
 *   stream socket                   pages are taken over when the kernel
 *                                   can, a socket's bytes copied once
 *   iol_read from a regular file    file extents, as on the portable
 *                                   backend (io_read.c says why)
 *   zc_buf_snapshot                 a sealed memfd's pages (snapshot.c),
 *                                   whose transmit checksums the kernel
 *                                   caches (kernel-patch 0009)
 *   iol_write of kernel buffers     the iol_write system call (io_write.c)
 *   to a pipe, stream socket or
 *   regular file
 *   anything else                   the bytes, from the mapping
 *
 * A forked child inherits neither the kernel's container table nor the
 * mappings (VM_DONTCOPY): kernel buffers it inherited must only be
 * released there, which frees nothing (the parent still owns them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "cs_kernel.h"

/* struct iol_slice of the kernel's <linux/iolite.h> (ABI version 1). */
struct kiol_slice {
	uint64_t buf;	/* buffer (container) id */
	uint64_t gen;	/* its generation */
	uint64_t off;	/* data offset in the buffer */
	uint64_t len;	/* data length */
	uint64_t addr;	/* where the buffer is mapped (read-only) */
};

#define KIOL_SLICES 64			/* slices per call here */
#define KIOL_MAX_READ ((size_t)1 << 30)	/* IOL_MAX_READ */

bool zc_kiol(void)
{
	const struct zc_kabi *k = zc_kabi();

	return k && k->iol_read > 0 && k->iol_write > 0;
}

static long kiol_call(long nr, int fd, struct kiol_slice *s, size_t n)
{
	long r = syscall(nr, fd, s, (unsigned)n, 0u);

	zc_stat_call();
	return r < 0 ? -errno : r;
}

static void kiol_free_ids(const struct kiol_slice *s, long n)
{
	for (long i = 0; i < n; i++) {
		int id = (int)s[i].buf;

		zc_kcs_call(ZC_KNR_FREE, 1, (long)&id, 0, 0, 0, 0);
	}
}

/* A zc_buf for the kernel buffer of slice s: its data is [s->off, s->off +
 * s->len) of the mapping, which must exist. */
static int kbuf_new(const struct kiol_slice *s, zc_buf **out)
{
	zc_buf *b;

	if (!s->addr || s->buf > INT32_MAX)
		return -EPROTO;
	b = zc_buf_header_new();
	if (!b)
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	atomic_init(&b->flags, ZC_BUF_KERNEL);
	b->kid = (int)s->buf;
	b->kgen = s->gen;
	b->kaddr = (const unsigned char *)(uintptr_t)s->addr;
	b->kfork = zc_fork_gen();
	b->len = (size_t)(s->off + s->len);
	b->cap = zc_page_round(b->len);
	*out = b;
	return 0;
}

void zc_kiol_free(zc_buf *buf)
{
	/* Inherited across fork: the id is the parent's (or nobody's). */
	if (buf->kfork == zc_fork_gen())
		zc_kcs_call(ZC_KNR_FREE, 1, (long)&buf->kid, 0, 0, 0, 0);
	zc_buf_header_free(buf);
}

/*
 * The buffers of one iol_read, appended in order.  If one cannot be
 * appended, it and the ones after it are freed and the error returned:
 * their bytes are lost, as a failed read(2)'s are.
 */
static ssize_t append_slices(zc_agg *agg, const struct kiol_slice *s, long n)
{
	ssize_t total = 0;

	for (long i = 0; i < n; i++) {
		zc_buf *b = NULL;
		int err = kbuf_new(&s[i], &b);

		if (!err) {
			err = zc_agg_append_buf(agg, b, (size_t)s[i].off,
						(size_t)s[i].len);
			zc_buf_release(b);	/* the aggregate's, or freed */
			b = NULL;
		} else {
			kiol_free_ids(&s[i], 1);
		}
		if (err) {
			kiol_free_ids(&s[i + 1], n - i - 1);
			zc_agg_truncate(agg, zc_agg_len(agg) - (size_t)total);
			return err;
		}
		total += (ssize_t)s[i].len;
	}
	return total;
}

ssize_t zc_kiol_read(int fd, zc_agg *agg, size_t want)
{
	struct kiol_slice s[KIOL_SLICES];
	long n;
	ssize_t got;

	s[0].len = zc_min_size(want, KIOL_MAX_READ);
	n = kiol_call(zc_kabi()->iol_read, fd, s, KIOL_SLICES);
	if (n < 0)
		return n == -EINVAL ? -EOPNOTSUPP : n;
	got = append_slices(agg, s, n);
	/* One copy for a socket; a pipe's pages may have been taken over
	 * instead (/sys/kernel/zc/iol_bytes_* has the kernel's split). */
	if (got > 0)
		zc_stat_copy((uint64_t)got);
	return got;
}

ssize_t zc_kiol_write(int fd, const struct zc_slice_int *s, size_t n,
		      size_t max, size_t *want)
{
	struct kiol_slice k[KIOL_SLICES];
	size_t i;

	*want = 0;
	for (i = 0; i < n && i < KIOL_SLICES && *want < max; i++) {
		k[i].buf = (uint64_t)s[i].buf->kid;
		k[i].gen = s[i].buf->kgen;
		k[i].off = s[i].off;
		k[i].len = zc_min_size(s[i].len, max - *want);
		k[i].addr = 0;
		*want += (size_t)k[i].len;
	}
	return kiol_call(zc_kabi()->iol_write, fd, k, i);
}

int zc_kiol_from_sealed(int memfd, size_t len, zc_buf **out)
{
	struct kiol_slice s[2];
	long n;
	int err;

	if (lseek(memfd, 0, SEEK_SET) < 0)
		return -errno;
	s[0].len = len;
	n = kiol_call(zc_kabi()->iol_read, memfd, s, 2);
	if (n < 0)
		return (int)n;
	/* One buffer with all of it (a container holds 64 MiB): anything
	 * else is not the snapshot asked for. */
	if (n != 1 || s[0].off != 0 || s[0].len != len) {
		kiol_free_ids(s, n);
		return -EOPNOTSUPP;
	}
	err = kbuf_new(&s[0], out);
	if (err)
		kiol_free_ids(s, 1);
	return err;
}
