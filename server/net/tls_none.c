/*
 * tls_none.c - tls.h for a build without OpenSSL (the static musl image:
 * Debian has no musl libssl).  HTTPS is refused at start with this reason;
 * nothing else here is reachable, since no HTTPS connection can exist.
 */
#include <errno.h>
#include <stdio.h>

#include "tls.h"

int tls_create(const struct zh_tls_config *cfg, struct zh_tls **out,
	       char *err, size_t errlen)
{
	(void)cfg;
	*out = NULL;
	snprintf(err, errlen, "this zchttpd was built without OpenSSL "
		 "(the static image); HTTPS needs the regular build");
	return -1;
}

void tls_free(struct zh_tls *t)
{
	(void)t;
}

const char *tls_record_layer(const struct zh_tls *t)
{
	(void)t;
	return "none";
}

int tls_conn_new(struct zh_tls *t, int fd, struct tls_conn **out)
{
	(void)t;
	(void)fd;
	*out = NULL;
	return -ENOTSUP;
}

void tls_conn_free(struct tls_conn *tc)
{
	(void)tc;
}

void tls_conn_notify_close(struct tls_conn *tc)
{
	(void)tc;
}

int tls_handshake(struct tls_conn *tc, struct tls_stats *st)
{
	(void)tc;
	(void)st;
	return -ENOTSUP;
}

bool tls_kernel_sends(const struct tls_conn *tc)
{
	(void)tc;
	return false;
}

bool tls_alpn_h2(const struct tls_conn *tc)
{
	(void)tc;
	return false;
}

ssize_t tls_recv(struct tls_conn *tc, void *buf, size_t len)
{
	(void)tc;
	(void)buf;
	(void)len;
	return -ENOTSUP;
}

bool tls_pending(const struct tls_conn *tc)
{
	(void)tc;
	return false;
}

ssize_t tls_send(struct tls_conn *tc, zc_agg *agg, char *bounce,
		 struct tls_stats *st)
{
	(void)tc;
	(void)agg;
	(void)bounce;
	(void)st;
	return -ENOTSUP;
}
