/*
 * sock_int.h - what the parts of the socket layer share: the record layer
 * a socket speaks through (sock.c's plain one, sock_tls.c's OpenSSL one),
 * as a table the socket calls, as nginx's c->recv/c->send.
 */
#ifndef ZC_SOCK_INT_H
#define ZC_SOCK_INT_H

#include "sock.h"

struct sock_layer {
	/* Read up to len bytes (ctx: the socket; sock_in_src's form): n,
	 * 0 at the end, -EAGAIN, or -errno. */
	ssize_t (*recv)(void *ctx, void *buf, size_t len);
	/* Bytes decoded and held, which no readiness announces; NULL:
	 * never. */
	bool (*decoded)(void *ctx);
	/* sock_read_agg past what the socket holds. */
	ssize_t (*read_agg)(struct zh_sock *s, zc_agg **agg, size_t want);
	/* sock_send. */
	ssize_t (*send)(struct zh_sock *s, zc_agg *out);
	/* Before the first read (NULL: none): 0 done, -EAGAIN it needs
	 * input, -EINPROGRESS it needs room, another -errno it failed. */
	int (*handshake)(struct zh_sock *s);
	/* Our side is done (before SHUT_WR); NULL: nothing to say. */
	void (*shutdown)(struct zh_sock *s);
	/* Before close(fd); NULL: nothing to free. */
	void (*close)(struct zh_sock *s);
	/* send writes with iol_write (pipe slices allowed); NULL: always. */
	bool (*by_reference)(const struct zh_sock *s);
};

/* sock_tls.c: HTTPS on s->tls (made by sock_tls_open, with the contexts
 * in s->env); sock_tls_env_init gives env the bounce buffer. */
extern const struct sock_layer sock_tls_layer;
int sock_tls_open(struct zh_sock *s);
int sock_tls_env_init(struct sock_env *env);

#endif
