/*
 * channel_registry.c - every channel of this process: the fd -> channel
 * table and the list of all channels.
 *
 * The table is how iol_write/cs_write on zc_channel_fd() find the channel,
 * so its lookup sits on every write's path: two levels of lazily allocated
 * chunks, lookups lock-free (two acquire loads), and chunks never move, so
 * a lookup never races with growth.  4M descriptors.
 *
 * The list is how zc_channel_reclaim and the reaper (channel.c) find the
 * channels with buffers out on loan, including closed ones that linger
 * until their buffers come back and so are in no table slot any more.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>

#include "channel_int.h"

#define REG_CHUNK 1024
#define REG_TOP 4096

typedef _Atomic(zc_channel *) reg_slot;
static _Atomic(reg_slot *) reg_top[REG_TOP];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static zc_channel *all_head;

void zc_ch_registry_forked(void)
{
	/* Another thread may have held these at fork time. */
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&all_lock, NULL);
}

/* ------------------------------------------------------------ fd table */

int zc_ch_reg_set(int fd, zc_channel *expect, zc_channel *ch)
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

/* -------------------------------------------------------- all channels */

void zc_ch_list_add(zc_channel *ch)
{
	pthread_mutex_lock(&all_lock);
	ch->next = all_head;
	if (all_head)
		all_head->prev = ch;
	all_head = ch;
	pthread_mutex_unlock(&all_lock);
}

void zc_ch_list_del(zc_channel *ch)
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

/* The list lock is taken and dropped here, so that the caller's releases
 * may free channels (which takes it again). */
zc_channel **zc_ch_snapshot_lending(void)
{
	zc_channel **v;
	size_t n = 0, i = 0;

	pthread_mutex_lock(&all_lock);
	for (zc_channel *c = all_head; c; c = c->next)
		n++;
	v = malloc((n + 1) * sizeof(*v));
	for (zc_channel *c = all_head; v && c; c = c->next) {
		if (zc_ch_owned(c) && (atomic_load(&c->lent_n) ||
				       atomic_load(&c->lingering)) &&
		    zc_ch_tryget(c))
			v[i++] = c;
	}
	if (v)
		v[i] = NULL;
	pthread_mutex_unlock(&all_lock);
	return v;
}
