/*
 * tls_batch.h - records gathered before they go to the socket: the write
 * side of a TLS connection whose records OpenSSL makes in user space.
 *
 * OpenSSL writes each record to its write BIO as soon as it is made; on a
 * socket BIO that is a write(2) per 16 KiB record, six or seven for a
 * 100 KB response.  This BIO keeps the records in a buffer instead, and
 * tls_send sends them with one call.  Records written outside tls_send
 * (the handshake's flights, tickets, alerts) go when OpenSSL flushes the
 * BIO, as it does at the end of each flight.
 *
 * What the socket did not take stays in the buffer, ahead of anything
 * written later: a connection whose socket is full holds one buffer (96
 * KiB, at most one copy-out's records), less than the socket's own send
 * buffer holds for it in the kernel; an idle or drained one holds none.
 * tls_send reports the plaintext of a record as sent only once the
 * record's last byte left (tls_batch_mark, tls_batch_released), so the
 * caller's aggregate still holds what is not yet on the wire and the
 * caller waits for the socket as it would for a short write.
 */
#ifndef ZH_TLS_BATCH_H
#define ZH_TLS_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/bio.h>

/* Most records whose plaintext is told apart: tls_send stops encrypting
 * when they are used (a copy-out is four records). */
#define TLS_BATCH_MARKS 16

struct tls_batch {
	int fd;
	unsigned char *buf;		/* NULL while empty */
	size_t len, sent;		/* made, and of that on the wire */
	size_t cap;
	size_t released;		/* plaintext of records that left */
	unsigned nmarks;
	struct {
		size_t end;		/* where a record's bytes end in buf */
		size_t plain;		/* its plaintext */
	} marks[TLS_BATCH_MARKS];
};

/* A write BIO over b (which must outlive it) for the socket fd; NULL
 * without memory. */
BIO *tls_batch_bio(struct tls_batch *b, int fd);
/* Send what is waiting: 0 when none is left, -EAGAIN when the socket is
 * full, or another -errno. */
int tls_batch_flush(struct tls_batch *b);
static inline bool tls_batch_empty(const struct tls_batch *b)
{
	return b->sent == b->len;
}
/* The last SSL_write took `plain` bytes of plaintext and made the records
 * that now end the buffer.  False when no mark is left (stop writing). */
bool tls_batch_mark(struct tls_batch *b, size_t plain);
/* Plaintext whose records have all left since the last call. */
size_t tls_batch_released(struct tls_batch *b);
/* The buffer back (the connection is done). */
void tls_batch_fini(struct tls_batch *b);

#endif
