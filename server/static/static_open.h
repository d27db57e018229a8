/*
 * static_open.h - opening the file a request names, below its site's
 * root, without ever leaving it; and asking the kernel, without waiting,
 * whether that can be done from memory.
 *
 * Path safety is layered: uri_normalize_path() removes dot-segments and
 * refuses anything that climbs above the root; then the kernel resolves the
 * name with openat2(RESOLVE_BENEATH), which also refuses symlinks (and
 * "magic" /proc links) that lead outside the root, without a check-then-use
 * race.  Without openat2 (ENOSYS) the path is walked a component at a
 * time with O_NOFOLLOW, which refuses every symlink.
 * --follow-symlinks-outside turns the second check off.
 *
 * In line or on a helper.  Every call takes `cached_only`: the event loop
 * asks for the lookup to be served from the dentry cache alone
 * (openat2's RESOLVE_CACHED, Linux 5.12) and gets -EAGAIN where it would
 * have to read the disk -- or where this kernel cannot promise that (no
 * openat2, no RESOLVE_CACHED): then the helper threads do it, as Flash's
 * helpers did only for what was not in memory.  Helper threads pass
 * false and may block.
 */
#ifndef ZC_STATIC_OPEN_H
#define ZC_STATIC_OPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stat;
struct zh_worker;

/* The status to answer for an errno of opening (404, 403, 414, 503...). */
int static_status_for_errno(int err);

/* Open `rel` (relative, normalized) below dirfd: the fd, or -errno
 * (-EAGAIN: cached_only and it would block). */
int static_open_beneath(const struct zh_worker *w, int dirfd, const char *rel,
			bool cached_only);

/* Open the file a request names (normalized `path`), following a directory
 * to its index.html, and fstat it (the one stat of a miss: the cache entry
 * takes both).  Fills fs_path.  Returns the fd; -EAGAIN (cached_only and
 * it would block); or -1 with *status set to the status to answer (301: a
 * directory named without its slash). */
int static_open_target(const struct zh_worker *w, int rootfd,
		       const char *path, size_t path_len, bool trailing_slash,
		       char *fs_path, size_t fs_size, struct stat *st,
		       bool cached_only, int *status);

/* The precompressed files next to fs_path, as a mask of 1 << coding:
 * regular files that open below the root like any request would; -EAGAIN
 * as above. */
int static_find_variants(const struct zh_worker *w, int rootfd,
			 const char *fs_path, bool cached_only);

/* Is all of [0, len) of fd in the page cache?  cachestat(2) (Linux 6.5);
 * false where the kernel cannot say, so that the caller reads ahead on a
 * helper as it would without the question. */
bool static_resident(int fd, uint64_t len);

#endif
