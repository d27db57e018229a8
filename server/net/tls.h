/*
 * tls.h - HTTPS for zchttpd: OpenSSL for the handshake, the kernel (kTLS)
 * or OpenSSL for the records (tls.c).
 *
 * The master builds a struct zh_tls from the configuration before it forks
 * the workers, so that every worker shares the certificates and the
 * session-ticket keys (a session resumed on another worker works), and a
 * reload that cannot load its certificates is refused before anything
 * changes.  Each HTTPS connection owns a struct tls_conn.
 *
 * Built without OpenSSL (the static musl image), tls_create() says so and
 * the options that ask for HTTPS are refused at start.
 */
#ifndef ZC_TLS_H
#define ZC_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tls_config.h"
#include "zc.h"

struct zh_tls;
struct tls_conn;

/* Largest piece tls_send copies out of a response at once: four full TLS
 * records.  One copy-out per record read each file extent it touched
 * separately (an HTTP/2 DATA frame's 9-byte header splits every 16 KiB
 * in two: 13 preads per 100 KB response); four records per copy-out read
 * each extent about once. */
#define TLS_BOUNCE (64u << 10)

/* Load every certificate and set the protocol up; on failure a message
 * naming the file and OpenSSL's reason is in err, and -1 returned. */
int tls_create(const struct zh_tls_config *cfg, struct zh_tls **out,
	       char *err, size_t errlen);
void tls_free(struct zh_tls *t);
/* "kernel" if this kernel offers the tls upper-layer protocol and kTLS is
 * on, else why records are encrypted in user space. */
const char *tls_record_layer(const struct zh_tls *t);

int tls_conn_new(struct zh_tls *t, int fd, struct tls_conn **out);
/* Sends close_notify first if the session is healthy (one try: the
 * socket is non-blocking and about to close). */
void tls_conn_free(struct tls_conn *tc);
/* close_notify now, before a half-close (LINGER). */
void tls_conn_notify_close(struct tls_conn *tc);

/* 0: established; -EAGAIN: needs input; -EINPROGRESS: needs the socket
 * writable; another negative errno: failed (close). */
int tls_handshake(struct tls_conn *tc, struct tls_stats *st);
/* After the handshake: does the kernel encrypt what is written to the
 * socket (so iol_write, sendfile included, may write it directly)? */
bool tls_kernel_sends(const struct tls_conn *tc);
/* After the handshake: did ALPN choose h2 (HTTP/2)? */
bool tls_alpn_h2(const struct tls_conn *tc);

/* Like recv(): bytes, 0 at the end, -EAGAIN, or another -errno. */
ssize_t tls_recv(struct tls_conn *tc, void *buf, size_t len);
/* Decrypted bytes waiting inside OpenSSL (epoll cannot see them: read
 * them before waiting for the socket). */
bool tls_pending(const struct tls_conn *tc);
/* Encrypt and send the front of agg (at most TLS_BOUNCE bytes, copied
 * through bounce, as records gathered into one send: tls_batch.h):
 * plaintext bytes whose records left, trimmed from agg; -EAGAIN (records
 * still wait for the socket, or it is full); or another -errno. */
ssize_t tls_send(struct tls_conn *tc, zc_agg *agg, char *bounce,
		 struct tls_stats *st);

#endif
