/*
 * file.c - files behind file-extent slices.
 *
 * A file slice names bytes in the page cache without reading them.  Those
 * bytes are only meaningful while the file still has the version it had when
 * the slice was made, so a zc_file remembers that version (device, inode,
 * size, mtime, ctime) and every consumer checks it before using the bytes.
 * Consumers read with pread/sendfile/splice, so a file that shrinks gives
 * an error (-ESTALE), never a SIGBUS.  The one mapping (zc_file_map) is
 * read by the kernel alone, as the source of a socket write's copy: a
 * page past a shrunk end then fails that copy with EFAULT, which
 * iol_write turns into -ESTALE.  No pointer into it ever leaves libzc,
 * because a read of it in user space would be a SIGBUS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

void zc_file_version_of(const struct stat *st, struct zc_file_version *v)
{
	v->dev = (uint64_t)st->st_dev;
	v->ino = (uint64_t)st->st_ino;
	v->size = (int64_t)st->st_size;
	v->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
		      st->st_mtim.tv_nsec;
	v->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 +
		      st->st_ctim.tv_nsec;
}

/* A file for fd as st describes it; fd stays the caller's on failure. */
static int file_new(int fd, const struct stat *st, const char *path,
		    zc_file **out)
{
	zc_file *f;

	if (!S_ISREG(st->st_mode))
		return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f || (path && !(f->path = strdup(path)))) {
		free(f);
		return -ENOMEM;
	}
	atomic_init(&f->refs, 1);
	f->fd = fd;
	zc_file_version_of(st, &f->v);
	*out = f;
	return 0;
}

/* Takes ownership of fd (closed on failure). */
static int file_wrap(int fd, const char *path, zc_file **out)
{
	struct stat st;
	int err;

	err = fstat(fd, &st) < 0 ? -errno : file_new(fd, &st, path, out);
	if (err)
		close(fd);
	return err;
}

int zc_file_open(const char *path, zc_file **out)
{
	int fd;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return file_wrap(fd, path, out);
}

int zc_file_from_fd(int fd, zc_file **out)
{
	int dup;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fd < 0)
		return -EBADF;
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	return file_wrap(dup, NULL, out);
}

int zc_file_adopt(int fd, const struct stat *st, zc_file **out)
{
	struct stat own;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fd < 0)
		return -EBADF;
	if (!st) {
		if (fstat(fd, &own) < 0)
			return -errno;
		st = &own;
	}
	return file_new(fd, st, NULL, out);
}


int zc_file_version_same(const struct zc_file_version *a,
			 const struct zc_file_version *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

int zc_file_check(zc_file *file)
{
	struct zc_file_version now;
	struct stat st;

	if (!file)
		return -EINVAL;
	if (file->trusted)
		return 0;
	if (fstat(file->fd, &st) < 0)
		return -errno;
	zc_file_version_of(&st, &now);
	if (!zc_file_version_same(&now, &file->v))
		return -ESTALE;
	/* Replaced by rename: our descriptor still sees the old inode, but
	 * the name now means another file. */
	if (file->path) {
		if (stat(file->path, &st) < 0)
			return errno == ENOENT ? -ESTALE : -errno;
		if ((uint64_t)st.st_ino != file->v.ino ||
		    (uint64_t)st.st_dev != file->v.dev)
			return -ESTALE;
	}
	return 0;
}

void zc_file_trust(zc_file *file)
{
	if (file)
		file->trusted = true;
}

void zc_file_version(const zc_file *file, struct zc_file_version *v)
{
	if (!v)
		return;
	if (file)
		*v = file->v;
	else
		memset(v, 0, sizeof(*v));
}

int zc_file_fd(const zc_file *file)
{
	return file ? file->fd : -EINVAL;
}

int64_t zc_file_size(const zc_file *file)
{
	return file ? file->v.size : -EINVAL;
}

zc_file *zc_file_ref(zc_file *file)
{
	if (file)
		atomic_fetch_add_explicit(&file->refs, 1, memory_order_relaxed);
	return file;
}

int zc_file_map(zc_file *file)
{
	const unsigned char *none = NULL;
	void *m;

	if (!file)
		return -EINVAL;
	if (atomic_load_explicit(&file->map, memory_order_acquire))
		return 0;
	if (file->v.size <= 0 || (uint64_t)file->v.size > SIZE_MAX / 2)
		return -EINVAL;
	/* No MAP_POPULATE: that would read a file that is not in memory
	 * now, on the caller's thread; the copies fault pages in (16 at a
	 * time, the kernel's fault-around) as they first need them. */
	m = mmap(NULL, (size_t)file->v.size, PROT_READ, MAP_SHARED, file->fd,
		 0);
	zc_stat_call();
	if (m == MAP_FAILED)
		return -errno;
	/* Another thread may have mapped it meanwhile: one mapping stays. */
	if (!atomic_compare_exchange_strong_explicit(
		    &file->map, &none, (const unsigned char *)m,
		    memory_order_acq_rel, memory_order_acquire))
		munmap(m, (size_t)file->v.size);
	return 0;
}

void zc_file_release(zc_file *file)
{
	const unsigned char *map;

	if (!file || atomic_fetch_sub_explicit(&file->refs, 1,
					       memory_order_acq_rel) != 1)
		return;
	map = atomic_load_explicit(&file->map, memory_order_relaxed);
	if (map)
		munmap((void *)map, (size_t)file->v.size);
	close(file->fd);
	free(file->path);
	free(file);
}

int zc_pread_exact(int fd, uint64_t off, void *dst, size_t len)
{
	struct iovec iov = { dst, len };

	return zc_preadv_exact(fd, off, &iov, 1);
}

int zc_preadv_exact(int fd, uint64_t off, struct iovec *iov, int n)
{
	for (;;) {
		ssize_t got;

		while (n > 0 && !iov->iov_len) {	/* nothing to read there */
			iov++;
			n--;
		}
		if (!n)
			return 0;
		got = preadv(fd, iov, n, (off_t)off);
		zc_stat_call();
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -ESTALE;	/* the file ends first */
		zc_stat_copy((uint64_t)got);
		off += (uint64_t)got;
		/* Past what came: whole entries, then into the next one. */
		while (n > 0 && (size_t)got >= iov->iov_len) {
			got -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0 && got) {
			iov->iov_base = (char *)iov->iov_base + got;
			iov->iov_len -= (size_t)got;
		}
	}
}
