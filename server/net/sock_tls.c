/*
 * sock_tls.c - the socket's TLS record layer (sock_int.h): HTTPS through
 * tls.h (OpenSSL, or tls_none.c's refusal in the static image).
 *
 * The handshake runs before the first read, within whatever time the
 * owner gives a request head.  Input always goes through SSL_read, which
 * may decode more than the reader had room for: those bytes wake no
 * epoll, so they are reported as decoded (sock_in.h) and taken before the
 * socket is waited for.  Output goes where it costs least: where OpenSSL
 * installed the keys into the kernel (kTLS), iol_write sends as on a plain
 * socket -- heads by sendmsg, file extents by sendfile, and the kernel
 * encrypts -- else tls_send copies up to four records' worth into the
 * worker's bounce buffer, SSL_writes it into the connection's batch of
 * records and sends that with one call.  A request body is decrypted through the
 * same buffer (it is free between sends) into the body's aggregate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "sock_int.h"
#include "tls.h"

int sock_tls_env_init(struct sock_env *env)
{
	env->bounce = malloc(TLS_BOUNCE);
	return env->bounce ? 0 : -ENOMEM;
}

int sock_tls_open(struct zh_sock *s)
{
	return tls_conn_new(s->env->tls, s->fd, &s->tls);
}

static ssize_t tls_layer_recv(void *ctx, void *buf, size_t len)
{
	struct zh_sock *s = ctx;

	return tls_recv(s->tls, buf, len);
}

static bool tls_layer_decoded(void *ctx)
{
	struct zh_sock *s = ctx;

	return tls_pending(s->tls);
}

static ssize_t tls_layer_read_agg(struct zh_sock *s, zc_agg **agg,
				  size_t want)
{
	char *bounce = s->env->bounce;
	ssize_t n = tls_recv(s->tls, bounce,
			     want < TLS_BOUNCE ? want : TLS_BOUNCE);

	if (n > 0 && ((!*agg && zc_agg_create(agg)) ||
		      zc_agg_append_bytes(*agg, NULL, bounce, (size_t)n)))
		return -ENOMEM;
	return n;
}

static ssize_t tls_layer_send(struct zh_sock *s, zc_agg *out)
{
	if (tls_kernel_sends(s->tls))
		return iol_write_sink(&s->sink, out);
	return tls_send(s->tls, out, s->env->bounce, s->env->tls_stats);
}

static int tls_layer_handshake(struct zh_sock *s)
{
	return tls_handshake(s->tls, s->env->tls_stats);
}

static void tls_layer_shutdown(struct zh_sock *s)
{
	tls_conn_notify_close(s->tls);
}

static void tls_layer_close(struct zh_sock *s)
{
	tls_conn_free(s->tls);	/* close_notify first, if it can */
	s->tls = NULL;
}

static bool tls_layer_by_reference(const struct zh_sock *s)
{
	return !s->handshake && tls_kernel_sends(s->tls);
}

const struct sock_layer sock_tls_layer = {
	.by_reference = tls_layer_by_reference,
	.recv = tls_layer_recv,
	.decoded = tls_layer_decoded,
	.read_agg = tls_layer_read_agg,
	.send = tls_layer_send,
	.handshake = tls_layer_handshake,
	.shutdown = tls_layer_shutdown,
	.close = tls_layer_close,
};
