/*
 * page_drop.h - drop a file's pages from the page cache, again later for
 * the pages that were still in use the first time.
 *
 * posix_fadvise(POSIX_FADV_DONTNEED) leaves pages that something still
 * holds: a response sent with sendfile holds its pages until the client
 * has read them, well after our last send returned.  So a file whose pages
 * the cache lets go is dropped at once (most pages go) and kept open in a
 * small queue to be dropped again after 100 ms, 1 s and 5 s; then it is
 * released.  A full queue releases without the retries (best effort: the
 * pages then go the kernel's way).
 */
#ifndef ZC_PAGE_DROP_H
#define ZC_PAGE_DROP_H

#include <stdint.h>

#include "zc.h"

#define PAGE_DROP_MAX 256

struct page_drop_queue {
	struct page_drop {
		zc_file *f;
		uint64_t dev, ino;
		uint64_t due_ms;
		unsigned tries;
	} q[PAGE_DROP_MAX];
	unsigned n;
};

/* Drop f's pages now and queue it (taking a reference) for the retries. */
void page_drop(struct page_drop_queue *q, zc_file *f, uint64_t now_ms);
/* The file came back into use (the cache admitted it again): forget the
 * retries queued for the same file (device and inode), which would drop
 * the pages it is now served from. */
void page_drop_cancel(struct page_drop_queue *q, uint64_t dev, uint64_t ino);
/* Retry what is due; milliseconds until the next is due, -1 if none. */
int page_drop_run(struct page_drop_queue *q, uint64_t now_ms);
/* Release everything queued (no more dropping). */
void page_drop_clear(struct page_drop_queue *q);

#endif
