/*
 * agg_map.c - getting bytes out of an aggregate: copyout and map.
 *
 * Both are the exceptions to zero-copy, used when a program really needs
 * contiguous bytes (a parser, a checksum, a test).  File slices are read
 * with pread (preadv for a run of them) after a version check, never
 * through a mapping, so a file that shrank yields -ESTALE instead of a
 * SIGBUS.  Pipe slices are refused (-EINVAL): their bytes can be read
 * only by taking them out of the pipe, and then iol_write could not send
 * them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/*
 * Reads owed by a copyout: extents of one file that follow each other in
 * the file (a body cut into frames with headers between them) go to their
 * places in dst with one preadv, not a pread each.
 */
struct owed {
	const zc_file *file;
	uint64_t at;			/* file offset of the first */
	uint64_t next;			/* where the next one must begin */
	int n;
	struct iovec iov[16];
};

static int owed_flush(struct owed *o)
{
	int err = o->n ? zc_preadv_exact(o->file->fd, o->at, o->iov, o->n) : 0;

	o->n = 0;
	return err;
}

/* Owe [off, off + len) of f into dst, reading what was owed first if it
 * cannot join. */
static int owe(struct owed *o, const zc_file *f, uint64_t off, void *dst,
	       size_t len)
{
	int err = 0;

	if (o->n && (f != o->file || off != o->next ||
		     o->n == (int)(sizeof(o->iov) / sizeof(o->iov[0]))))
		err = owed_flush(o);
	if (err)
		return err;
	if (!o->n) {
		o->file = f;
		o->at = off;
	}
	o->iov[o->n++] = (struct iovec){ dst, len };
	o->next = off + len;
	return 0;
}

/* File extents: checked (-ESTALE if the file changed), then read exactly
 * (-ESTALE if it ended early). */
ssize_t zc_agg_copyout(const zc_agg *agg, size_t off, void *dst, size_t len)
{
	unsigned char *out = dst;
	size_t done = 0;
	/* A file is checked against its version once per call: the extents
	 * of one file that a call copies (a response's body cut into frames
	 * with headers between them) come from the same moment. */
	const zc_file *checked = NULL;
	struct owed owed = { .n = 0 };
	int err = 0;

	if (!agg || (!dst && len))
		return -EINVAL;
	for (size_t i = 0; i < agg->n && done < len && !err; i++) {
		const struct zc_slice_int *s = &agg->s[agg->head + i];
		size_t take;

		if (off >= s->len) {
			off -= s->len;
			continue;
		}
		take = s->len - off;
		if (take > len - done)
			take = len - done;
		switch (s->kind) {
		case ZC_SLICE_BUF: {
			const unsigned char *src = zc_buf_data(s->buf);

			if (!src)
				return -ENOMEM;
			memcpy(out + done, src + s->off + off, take);
			break;
		}
		case ZC_SLICE_MEM:
			memcpy(out + done, s->mem + s->off + off, take);
			break;
		case ZC_SLICE_FILE:
			if (s->file != checked) {
				err = zc_file_check(s->file);
				checked = s->file;
			}
			if (!err)
				err = owe(&owed, s->file, s->off + off,
					  out + done, take);
			break;
		default:	/* ZC_SLICE_PIPE: see the top */
			return -EINVAL;
		}
		done += take;
		off = 0;
	}
	if (!err)
		err = owed_flush(&owed);
	return err ? err : (ssize_t)done;
}

int zc_agg_map(zc_agg *agg, zc_pool *pool, const void **data, size_t *len)
{
	static const char empty[1];
	struct zc_slice_int *s;
	zc_buf *b;
	ssize_t n;
	int err;

	if (!agg || !data)
		return -EINVAL;
	if (len)
		*len = agg->len;
	if (agg->n == 0) {
		*data = empty;
		return 0;
	}
	for (size_t i = 0; i < agg->n; i++)
		if (agg->s[agg->head + i].kind == ZC_SLICE_PIPE)
			return -EINVAL;	/* as zc_agg_copyout */
	s = &agg->s[agg->head];
	if (agg->n == 1 && s->kind == ZC_SLICE_BUF) {
		const unsigned char *base = zc_buf_data(s->buf);

		if (!base)
			return -ENOMEM;
		*data = base + s->off;
		return 0;
	}
	/* Gather into one new buffer, which then replaces the slices: the
	 * content is the same and the next map is free. */
	err = zc_buf_alloc(pool, agg->len, &b);
	if (err)
		return err;
	n = zc_agg_copyout(agg, 0, zc_buf_wptr(b), agg->len);
	if (n >= 0 && (size_t)n != agg->len)
		n = -EIO;
	if (n < 0) {
		zc_buf_release(b);
		return (int)n;
	}
	zc_buf_publish(b, agg->len);
	zc_agg_truncate(agg, 0);
	err = zc_agg_append_buf(agg, b, 0, b->len);
	zc_buf_release(b);
	if (err)
		return err;
	*data = zc_buf_data(agg->s[agg->head].buf);
	return 0;
}
