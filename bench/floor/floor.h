/*
 * floor.h - what zcfloor's two event loops share: the canned responses read
 * from --root at start and the lookup of one by a request head.
 */
#ifndef ZC_FLOOR_H
#define ZC_FLOOR_H

#include <stddef.h>

#define IN_CAP 8192

/* If in[0..in_len) holds a whole request head: its length, the canned
 * response for its target (exact match of the target between the first two
 * spaces; a canned 404 otherwise), and whether it asked for
 * "Connection: close" (then the response says so too).  0 if not whole. */
int next_response(const char *in, size_t in_len, size_t *head_len,
		  const char **out, size_t *out_len, int *close_after);

/* perror(what) and exit(1). */
void die(const char *what);
/* A non-blocking listener on HOST:PORT (IPv4), or exit. */
int floor_listen(const char *addr);
/* serve(lfd) in this process and workers - 1 children that end with it
 * (SIGPIPE ignored in all). */
void floor_run(int workers, void (*serve)(int lfd), int lfd);

/* --event io_uring: serve lfd from one io_uring until killed (floor_uring.c). */
void serve_uring(int lfd);

#endif
