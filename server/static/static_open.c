/*
 * static_open.c - opening a request's file below its site's root (see
 * static_open.h): in line from the dentry cache, or blocking on a helper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache.h"
#include "static_open.h"
#include "zchttpd.h"

#ifndef RESOLVE_CACHED
#define RESOLVE_CACHED 0x20		/* Linux 5.12 */
#endif
#ifndef SYS_cachestat
#define SYS_cachestat 451		/* Linux 6.5, the same on every arch */
#endif

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

int static_status_for_errno(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return 404;
	case EACCES:
	case EPERM:
	case EXDEV:	/* RESOLVE_BENEATH: would leave the root */
	case ELOOP:
		return 403;
	case ENAMETOOLONG:
		return 414;
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return 503;
	default:
		return 500;
	}
}

/*
 * Where openat2 is missing (kernels before 5.6, seccomp filters that do not
 * know it, valgrind), walk the normalized path one component at a time with
 * O_NOFOLLOW: no symlink is followed at all, which is stricter than
 * RESOLVE_BENEATH (a link inside the root is refused too) but never looser.
 */
static int open_nofollow_walk(int dirfd, const char *rel)
{
	char comp[NAME_MAX + 1];
	int dfd = dirfd, fd;

	for (;;) {
		const char *slash = strchr(rel, '/');
		size_t n = slash ? (size_t)(slash - rel) : strlen(rel);

		if (n > NAME_MAX) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		if (!slash) {
			fd = openat(dfd, comp, OPEN_FLAGS | O_NOFOLLOW);
			fd = fd < 0 ? -errno : fd;
			break;
		}
		fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0) {
			struct stat st;

			/* A symlink fails with ENOTDIR here; it is a refusal
			 * (403) as with openat2, not a missing file (404). */
			fd = -errno;
			if (fd == -ENOTDIR &&
			    fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				fd = -ELOOP;
			break;
		}
		if (dfd != dirfd)
			close(dfd);
		dfd = fd;
		rel = slash + 1;
	}
	if (dfd != dirfd)
		close(dfd);
	return fd;
}

/* What this kernel lacks, learnt once per process (helpers included). */
static _Atomic bool no_openat2, no_resolve_cached, no_cachestat;

int static_open_beneath(const struct zh_worker *w, int dirfd, const char *rel,
			bool cached_only)
{
	struct open_how how = {
		.flags = OPEN_FLAGS,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (w->cfg->follow_symlinks_outside)
		how.resolve = 0;
	if (cached_only) {
		if (no_openat2 || no_resolve_cached)
			return -EAGAIN;
		how.resolve |= RESOLVE_CACHED;
	} else if (no_openat2) {
		if (!w->cfg->follow_symlinks_outside)
			return open_nofollow_walk(dirfd, rel);
		fd = openat(dirfd, rel, OPEN_FLAGS);
		return fd < 0 ? -errno : fd;
	}
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	fd = -errno;
	if (fd == -ENOSYS) {
		no_openat2 = true;
		return cached_only ? -EAGAIN
				   : static_open_beneath(w, dirfd, rel, false);
	}
	if (fd == -EINVAL && cached_only) {	/* no RESOLVE_CACHED here */
		no_resolve_cached = true;
		return -EAGAIN;
	}
	return fd;
}

int static_open_target(const struct zh_worker *w, int rootfd,
		       const char *path, size_t path_len, bool trailing_slash,
		       char *fs_path, size_t fs_size, struct stat *st,
		       bool cached_only, int *status)
{
	int fd, dfd, err;

	fd = static_open_beneath(w, rootfd, path_len ? path : ".", cached_only);
	if (fd == -EAGAIN)
		return -EAGAIN;
	if (fd < 0) {
		*status = static_status_for_errno(-fd);
		return -1;
	}
	if (fstat(fd, st) < 0)
		goto fail;
	if (S_ISDIR(st->st_mode)) {
		if (!trailing_slash) {
			close(fd);
			*status = 301;
			return -1;
		}
		dfd = fd;
		fd = static_open_beneath(w, dfd, "index.html", cached_only);
		close(dfd);
		if (fd == -EAGAIN)
			return -EAGAIN;
		if (fd < 0) {
			/* No listing of directories. */
			*status = fd == -ENOENT ? 403
						: static_status_for_errno(-fd);
			return -1;
		}
		if (fstat(fd, st) < 0)
			goto fail;
		snprintf(fs_path, fs_size, "%s%sindex.html", path,
			 path_len ? "/" : "");
	} else if (trailing_slash) {
		/* "/file.txt/" names no directory: 404, as nginx says. */
		close(fd);
		*status = 404;
		return -1;
	} else {
		/* As snprintf("%s") would, without its 580 instructions
		 * on every miss. */
		size_t n = strnlen(path, fs_size - 1);

		memcpy(fs_path, path, n);
		fs_path[n] = '\0';
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		*status = 403;
		return -1;
	}
	return fd;
fail:
	err = errno;
	close(fd);
	*status = static_status_for_errno(err);
	return -1;
}

int static_find_variants(const struct zh_worker *w, int rootfd,
			 const char *fs_path, bool cached_only)
{
	int mask = 0;

	for (unsigned c = 1; c < CACHE_NCODINGS; c++) {
		char p[ZH_PATH_MAX + 32];
		struct stat st;
		int fd;

		if ((size_t)snprintf(p, sizeof(p), "%s%s", fs_path,
				     cache_codings[c].suffix) >= sizeof(p))
			continue;
		fd = static_open_beneath(w, rootfd, p, cached_only);
		if (fd == -EAGAIN)
			return -EAGAIN;
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			mask |= 1 << c;
		close(fd);
	}
	return mask;
}

struct zh_cachestat_range { uint64_t off, len; };
struct zh_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted;
	uint64_t nr_recently_evicted;
};

bool static_resident(int fd, uint64_t len)
{
	struct zh_cachestat_range r = { 0, len };
	struct zh_cachestat cs;
	long ps = sysconf(_SC_PAGESIZE);

	if (no_cachestat || !len)
		return !len;
	if (syscall(SYS_cachestat, fd, &r, &cs, 0) < 0) {
		if (errno == ENOSYS)
			no_cachestat = true;
		return false;
	}
	return cs.nr_cache >= (len + (uint64_t)ps - 1) / (uint64_t)ps;
}
