/*
 * h2_mem.c - the memory nghttp2 allocates for us (h2_int.h): each request
 * costs it a few small blocks (its stream, the response's queued frames,
 * the fields it copies), taken and given back within the request.  Those
 * come from free lists of a few sizes, kept per process (the worker's
 * loop is the only thread that runs nghttp2), so that a block costs a
 * pointer swap instead of malloc's and free's bookkeeping.  A list keeps
 * at most MEM_KEEP blocks; larger blocks are malloc's.
 *
 * Under AddressSanitizer nghttp2 uses malloc itself, so that a block used
 * after it is freed is still caught.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2_int.h"

#if H2_REUSE

/* Block sizes (payload), and how many of each a list keeps. */
#define MEM_MIN_SHIFT 6			/* 64 bytes */
#define MEM_CLASSES 7			/* ... to 4 KiB */
#define MEM_KEEP 32u
#define MEM_BIG MEM_CLASSES		/* malloc's own */

/* Before every block: its class (and a big one's size), 16 bytes so that
 * the payload keeps malloc's alignment. */
struct mem_head {
	size_t cls;
	size_t size;			/* payload bytes it holds */
};

struct mem_free {
	struct mem_free *next;
};

static struct mem_free *lists[MEM_CLASSES];
static unsigned counts[MEM_CLASSES];

/* The smallest class that holds size bytes, or MEM_BIG. */
static size_t class_of(size_t size)
{
	size_t cls;

	if (size <= (size_t)1 << MEM_MIN_SHIFT)
		return 0;
	cls = (size_t)(64 - __builtin_clzll((unsigned long long)size - 1)) -
	      MEM_MIN_SHIFT;
	return cls < MEM_CLASSES ? cls : MEM_BIG;
}

static void *mem_malloc(size_t size, void *user)
{
	size_t cls = class_of(size);
	struct mem_head *h;

	(void)user;
	if (cls < MEM_CLASSES && lists[cls]) {
		struct mem_free *f = lists[cls];

		lists[cls] = f->next;
		counts[cls]--;
		return f;
	}
	if (cls < MEM_CLASSES)
		size = (size_t)1 << (MEM_MIN_SHIFT + cls);
	if (size > SIZE_MAX - sizeof(*h))
		return NULL;
	h = malloc(sizeof(*h) + size);
	if (!h)
		return NULL;
	h->cls = cls;
	h->size = size;
	return h + 1;
}

static void mem_free(void *p, void *user)
{
	struct mem_head *h;

	(void)user;
	if (!p)
		return;
	h = (struct mem_head *)p - 1;
	if (h->cls < MEM_CLASSES && counts[h->cls] < MEM_KEEP) {
		struct mem_free *f = p;

		f->next = lists[h->cls];
		lists[h->cls] = f;
		counts[h->cls]++;
		return;
	}
	free(h);
}

static void *mem_calloc(size_t n, size_t size, void *user)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = mem_malloc(n * size, user);
	if (p)
		memset(p, 0, n * size);
	return p;
}

static void *mem_realloc(void *p, size_t size, void *user)
{
	struct mem_head *h;
	void *q;

	if (!p)
		return mem_malloc(size, user);
	h = (struct mem_head *)p - 1;
	if (size <= h->size)
		return p;
	q = mem_malloc(size, user);
	if (!q)
		return NULL;
	memcpy(q, p, h->size);
	mem_free(p, user);
	return q;
}

static nghttp2_mem mem = {
	.malloc = mem_malloc,
	.free = mem_free,
	.calloc = mem_calloc,
	.realloc = mem_realloc,
};

nghttp2_mem *h2_mem(void)
{
	return &mem;
}

#else

nghttp2_mem *h2_mem(void)
{
	return NULL;			/* nghttp2's: malloc */
}

#endif
