/*
 * nochannel.c - the preload's answer to "is this descriptor a libzc
 * channel?": never.
 *
 * libzc-preload compiles libzc's fdkind.c in, but not libzc's channels (it
 * does not link libzc: it must not export or pull in anything beyond its
 * hooks), and it never creates a channel.  fdkind.c asks
 * zc_channel_from_fd first; this is the preload's definition.  Hidden, like
 * everything in the preload but its hooks.
 */
#include <stddef.h>

#include "internal.h"

zc_channel *zc_channel_from_fd(int fd)
{
	(void)fd;
	return NULL;
}
