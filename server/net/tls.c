/*
 * tls.c - HTTPS with OpenSSL 3 (tls.h).
 *
 * The record layer goes to the kernel where it can: with
 * SSL_OP_ENABLE_KTLS, OpenSSL installs the session keys into the socket's
 * "tls" upper-layer protocol after the handshake, and from then on what is
 * written to the socket is encrypted by the kernel.  conn.c then sends
 * exactly as it does for plain HTTP -- sendmsg for heads, sendfile for file
 * extents -- and file bodies never enter user space.  Where the kernel has
 * no tls ULP (this machine's host kernel lists only mptcp), tls_send copies
 * up to four records' worth of the response into a bounce buffer
 * (zc_agg_copyout: memory slices and file extents alike) and SSL_writes it
 * record by record into a batch (tls_batch.h) that leaves with one send:
 * a write per record cost a 100 KB response over h2 91 against 74 us of
 * CPU (docs/bench-static.md).  Encryption has to
 * read every byte anyway, so that copy is the least a user-space record
 * layer can do.  Input always goes through SSL_read, which itself uses the
 * kernel's receive side when OpenSSL enabled it.
 *
 * Protocol choices, as current guidance for a general-purpose server: TLS
 * 1.2 and 1.3 only; for 1.2 only ECDHE with AEAD ciphers (OpenSSL's 1.3
 * suites are all AEAD); no renegotiation; ALPN offers h2 (with --http2,
 * preferred) and http/1.1 (a client that offers neither and not nothing
 * is refused, RFC 7301); a
 * session cache per worker and session tickets whose keys the master's
 * contexts share with every worker (tls.h); SNI picks the first
 * certificate whose names match (X509_check_host: subjectAltName, then
 * the common name; wildcards as browsers take them), else the first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls.h"
#include "tls_batch.h"

#define DEFAULT_CIPHERS \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

struct zh_tls {
	SSL_CTX **ctx;			/* one per certificate */
	unsigned n;
	bool h2;			/* ALPN offers h2 */
	char layer[96];			/* tls_record_layer() */
};

struct tls_conn {
	SSL *ssl;
	bool established;
	bool kernel;			/* kTLS sends */
	bool broken;			/* a fatal error: no close_notify */
	bool notified;			/* close_notify sent */
	bool buffered;			/* read ahead: records may wait in
					 * OpenSSL's buffer, unseen by epoll */
	size_t retry_len;		/* an SSL_write to repeat as it was */
	struct tls_batch b;		/* records on their way (user space) */
};

/* OpenSSL's reason for a failure -- the first error queued is the cause,
 * later ones only say where it surfaced -- and its queue emptied. */
static void ssl_reason(char *buf, size_t n)
{
	unsigned long e = ERR_peek_error();

	if (e)
		ERR_error_string_n(e, buf, n);
	else
		snprintf(buf, n, "%s", strerror(errno));
	ERR_clear_error();
}

/* Ours in our order of preference: SSL_select_next_proto takes the
 * first of ours the client offers, whatever its own order (HTTP/2 is
 * cheaper for us and for it: one connection). */
static int alpn_select(SSL *s, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned inlen, void *arg)
{
	static const unsigned char with_h2[] = "\x02h2\x08http/1.1";
	static const unsigned char h1[] = "\x08http/1.1";
	const struct zh_tls *t = arg;
	unsigned char *sel;

	(void)s;
	if (SSL_select_next_proto(&sel, outlen,
				  t->h2 ? with_h2 : h1,
				  t->h2 ? sizeof(with_h2) - 1 : sizeof(h1) - 1,
				  in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static int sni_select(SSL *s, int *alert, void *arg)
{
	struct zh_tls *t = arg;
	const char *name = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);

	(void)alert;
	if (!name)
		return SSL_TLSEXT_ERR_OK;	/* the default certificate */
	for (unsigned i = 0; i < t->n; i++) {
		X509 *x = SSL_CTX_get0_certificate(t->ctx[i]);

		if (x && X509_check_host(x, name, 0, 0, NULL) == 1) {
			if (i)
				SSL_set_SSL_CTX(s, t->ctx[i]);
			break;
		}
	}
	return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *ctx_create(struct zh_tls *t, const struct zh_tls_config *cfg,
			   const struct zh_tls_cert *tc, char *err, size_t n)
{
	static const unsigned char sid_ctx[] = "zchttpd";
	const char *key = tc->key ? tc->key : tc->cert;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char why[256];
	const char *what = "setting up TLS";

	ERR_clear_error();
	if (!ctx)
		goto fail;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* EOF without close_notify is how most clients end a keep-alive
	 * connection: an end, not an attack, since HTTP frames its bodies. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
			    SSL_OP_IGNORE_UNEXPECTED_EOF |
			    SSL_OP_NO_COMPRESSION |
			    (cfg->ktls ? SSL_OP_ENABLE_KTLS : 0));
	/* tls_send may repeat a write from a fresh copy of the same bytes. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
			 SSL_MODE_RELEASE_BUFFERS);
	if (!SSL_CTX_set_cipher_list(ctx, cfg->ciphers ? cfg->ciphers
						       : DEFAULT_CIPHERS)) {
		what = "--tls-ciphers";
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, tc->cert) != 1) {
		what = tc->cert;
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		what = key;
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		/* OpenSSL files a key of another type under another slot
		 * and then reports "no certificate assigned": say it plainly. */
		ERR_clear_error();
		snprintf(err, n, "%s: the key does not match the certificate "
			 "in %s", key, tc->cert);
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, t);
	SSL_CTX_set_tlsext_servername_callback(ctx, sni_select);
	SSL_CTX_set_tlsext_servername_arg(ctx, t);
	return ctx;
fail:
	ssl_reason(why, sizeof(why));
	snprintf(err, n, "%s: %s", what, why);
	SSL_CTX_free(ctx);
	return NULL;
}

/* Whether this kernel lists the tls upper-layer protocol.  (A kernel with
 * CONFIG_TLS=m may load it on first use; then the per-connection counters,
 * not this, tell the truth.) */
static bool kernel_has_tls_ulp(void)
{
	char buf[256];
	int fd = open("/proc/sys/net/ipv4/tcp_available_ulp",
		      O_RDONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return false;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return false;
	buf[k] = '\0';
	for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
		if (!strcmp(tok, "tls"))
			return true;
	return false;
}

int tls_create(const struct zh_tls_config *cfg, struct zh_tls **out,
	       char *err, size_t errlen)
{
	struct zh_tls *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!cfg->ncerts) {
		snprintf(err, errlen, "--tls-listen needs a --tls-cert");
		free(t);
		return -1;
	}
	if (t)
		t->ctx = calloc(cfg->ncerts, sizeof(*t->ctx));
	if (!t || !t->ctx) {
		snprintf(err, errlen, "out of memory");
		tls_free(t);
		return -1;
	}
	t->h2 = cfg->h2;
	for (; t->n < cfg->ncerts; t->n++) {
		t->ctx[t->n] = ctx_create(t, cfg, &cfg->certs[t->n], err,
					  errlen);
		if (!t->ctx[t->n]) {
			tls_free(t);
			return -1;
		}
	}
	if (!cfg->ktls)
		snprintf(t->layer, sizeof(t->layer), "user (--tls-ktls off)");
	else if (!kernel_has_tls_ulp())
		snprintf(t->layer, sizeof(t->layer),
			 "user (the kernel offers no tls ULP)");
	else
		snprintf(t->layer, sizeof(t->layer), "kernel");
	*out = t;
	return 0;
}

void tls_free(struct zh_tls *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->n; i++)
		SSL_CTX_free(t->ctx[i]);
	free(t->ctx);
	free(t);
}

const char *tls_record_layer(const struct zh_tls *t)
{
	return t->layer;
}

int tls_conn_new(struct zh_tls *t, int fd, struct tls_conn **out)
{
	struct tls_conn *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return -ENOMEM;
	tc->ssl = SSL_new(t->ctx[0]);
	if (!tc->ssl || SSL_set_fd(tc->ssl, fd) != 1) {
		ERR_clear_error();
		SSL_free(tc->ssl);
		free(tc);
		return -ENOMEM;
	}
	SSL_set_accept_state(tc->ssl);
	*out = tc;
	return 0;
}

void tls_conn_notify_close(struct tls_conn *tc)
{
	/* Never after a fatal error (OpenSSL's rule), once only. */
	if (!tc->established || tc->broken || tc->notified)
		return;
	tc->notified = true;
	if (SSL_shutdown(tc->ssl) < 0)
		ERR_clear_error();
}

void tls_conn_free(struct tls_conn *tc)
{
	if (!tc)
		return;
	tls_conn_notify_close(tc);
	SSL_free(tc->ssl);
	tls_batch_fini(&tc->b);
	free(tc);
}

/* An SSL_ERROR_* that is not "wait": the session is over. */
static int broken(struct tls_conn *tc, int e)
{
	int err = e == SSL_ERROR_SYSCALL && errno ? -errno : -EPROTO;

	tc->broken = true;
	ERR_clear_error();
	return err;
}

int tls_handshake(struct tls_conn *tc, struct tls_stats *st)
{
	int r, e;

	ERR_clear_error();
	r = SSL_do_handshake(tc->ssl);
	if (r == 1) {
#ifdef BIO_get_ktls_send
		tc->kernel = BIO_get_ktls_send(SSL_get_wbio(tc->ssl));
#endif
		/* The handshake wrote through OpenSSL's socket BIO, which
		 * installs kTLS keys when it can; where it did not, records
		 * are gathered from now on (tls_batch.h). */
		if (!tc->kernel) {
			BIO *w = tls_batch_bio(&tc->b, SSL_get_fd(tc->ssl));

			if (!w) {
				st->failed++;
				tc->broken = true;
				return -ENOMEM;
			}
			SSL_set0_wbio(tc->ssl, w);
		}
		tc->established = true;
		/* From here on OpenSSL reads what the socket has, not a
		 * record's 5-byte header and then its rest: one read per
		 * record or fewer (several requests' records at once).  Not
		 * during the handshake, whose keys the kernel may take over
		 * for receiving only if nothing past it was read; not where
		 * it did (kTLS receive reads records itself). */
#ifdef BIO_get_ktls_recv
		if (!BIO_get_ktls_recv(SSL_get_rbio(tc->ssl)))
#endif
			SSL_set_read_ahead(tc->ssl, 1);
		st->handshakes++;
		if (SSL_session_reused(tc->ssl))
			st->resumed++;
		if (tc->kernel)
			st->kernel_send++;
		else
			st->user_send++;
		return 0;
	}
	e = SSL_get_error(tc->ssl, r);
	if (e == SSL_ERROR_WANT_READ)
		return -EAGAIN;
	if (e == SSL_ERROR_WANT_WRITE)
		return -EINPROGRESS;
	st->failed++;
	return broken(tc, e);
}

bool tls_kernel_sends(const struct tls_conn *tc)
{
	return tc->kernel;
}

bool tls_alpn_h2(const struct tls_conn *tc)
{
	const unsigned char *p;
	unsigned n;

	SSL_get0_alpn_selected(tc->ssl, &p, &n);
	return n == 2 && p[0] == 'h' && p[1] == '2';
}

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

/*
 * Is the kernel still doing this connection's records?  criu (3.17)
 * restores a kTLS socket as plain TCP -- it does not know the tls ULP --
 * while OpenSSL's state, restored with our memory, still says the kernel
 * encrypts: whatever we sent then would go out in the clear, and what we
 * read on TLS 1.2 would be ciphertext taken for records.  Checked before
 * every read, so before every request on a kTLS connection (one
 * getsockopt); such a connection is closed, without close_notify.
 */
static bool kernel_tls_intact(const struct tls_conn *tc)
{
	char ulp[16] = "";
	socklen_t len = sizeof(ulp) - 1;

	if (getsockopt(SSL_get_fd(tc->ssl), IPPROTO_TCP, TCP_ULP, ulp,
		       &len) < 0)
		return false;
	return strcmp(ulp, "tls") == 0;
}

ssize_t tls_recv(struct tls_conn *tc, void *buf, size_t len)
{
	int r, e;

	if (tc->broken)
		return -EPROTO;
	if (tc->kernel && !kernel_tls_intact(tc)) {
		tc->broken = true;
		return -EPROTO;
	}
	ERR_clear_error();
	errno = 0;
	r = SSL_read(tc->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	/* Raw bytes read ahead may hold whole records: the caller reads
	 * again before it waits.  After a read that needed the socket and
	 * found it empty, what is held is at most part of a record, whose
	 * rest the socket's readiness will announce. */
	tc->buffered = r > 0 && SSL_has_pending(tc->ssl);
	if (r > 0)
		return r;
	e = SSL_get_error(tc->ssl, r);
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:	/* a key update waits to be sent */
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:	/* close_notify, or EOF (see above) */
		return 0;
	default:
		return broken(tc, e);
	}
}

bool tls_pending(const struct tls_conn *tc)
{
	/* Decrypted bytes, or raw ones read ahead since the last read that
	 * made progress (tls_recv says why that is enough). */
	return !tc->broken && (SSL_pending(tc->ssl) > 0 || tc->buffered);
}

/* Records sent since the last call: their plaintext is trimmed from agg
 * and counted. */
static size_t release(struct tls_conn *tc, zc_agg *agg, struct tls_stats *st)
{
	size_t n = tls_batch_released(&tc->b);

	zc_agg_trim_front(agg, n);
	st->user_bytes += n;
	return n;
}

/*
 * tls_send through the batch: what earlier calls made goes first; once it
 * all left, the next copy-out is encrypted into the batch and sent with
 * one call.  Plaintext counts as sent when its records have left, so agg
 * keeps what is not on the wire yet (the caller waits for the socket).
 */
static ssize_t send_batched(struct tls_conn *tc, zc_agg *agg, char *bounce,
			    size_t len, struct tls_stats *st)
{
	size_t done = 0, released;
	ssize_t k;
	int err = tls_batch_flush(&tc->b), r, e;

	released = release(tc, agg, st);
	if (err || !tls_batch_empty(&tc->b))
		goto out;
	if (released)
		return (ssize_t)released;	/* agg changed: call again */
	k = zc_agg_copyout(agg, 0, bounce, len);
	if (k < 0)
		return k;
	if ((size_t)k != len)
		return -EIO;	/* a file shrank under its response */
	while (done < len && tc->b.nmarks < TLS_BATCH_MARKS) {
		ERR_clear_error();
		errno = 0;
		r = SSL_write(tc->ssl, bounce + done, (int)(len - done));
		if (r > 0) {
			tc->retry_len = 0;
			tls_batch_mark(&tc->b, (size_t)r);
			done += (size_t)r;
			continue;
		}
		e = SSL_get_error(tc->ssl, r);
		if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
			/* Offered again, from agg's front once the records
			 * before it have left. */
			tc->retry_len = len - done;
			break;
		}
		err = broken(tc, e);
		break;
	}
	if (!err)
		err = tls_batch_flush(&tc->b);
	released = release(tc, agg, st);
out:
	if (err && err != -EAGAIN)
		tc->broken = true;
	return released ? (ssize_t)released : err ? err : -EAGAIN;
}

ssize_t tls_send(struct tls_conn *tc, zc_agg *agg, char *bounce,
		 struct tls_stats *st)
{
	size_t len = zc_agg_len(agg);

	if (tc->broken)
		return -EPIPE;
	if (tc->retry_len) {
		/* OpenSSL wants the same bytes again; they are the front of
		 * agg once the records before them have left, unless an
		 * error page replaced what we had started to send: then
		 * there is no honest way on. */
		if (len < tc->retry_len)
			return -EIO;
		len = tc->retry_len;
	} else if (len > TLS_BOUNCE) {
		len = TLS_BOUNCE;
	}
	return send_batched(tc, agg, bounce, len, st);
}
