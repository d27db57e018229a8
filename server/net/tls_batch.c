/*
 * tls_batch.c - records gathered before they go to the socket (tls_batch.h).
 *
 * A custom BIO (BIO_meth_new) in place of OpenSSL's socket BIO for writing;
 * reading stays a socket BIO.  Used only where OpenSSL makes the records
 * (no kernel TLS): kTLS needs OpenSSL's own socket BIO to install keys.
 *
 * The buffer is taken when the first record comes and handed back as soon
 * as everything left, so an idle connection holds none; one emptied buffer
 * is kept for the next connection (a worker is one thread).  Nothing is
 * moved inside it: records are only added while the socket takes them, and
 * tls_send adds a copy-out's records only to an empty buffer, so the
 * buffer never holds more than one copy-out and a flight or an alert.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tls_batch.h"

/* A copy-out (64 KiB of plaintext: four records and their ~100 bytes of
 * headers and tags) and room for a handshake flight or alerts besides. */
#define BATCH_CAP ((size_t)96 << 10)

static unsigned char *spare;
static BIO_METHOD *method;

static int take_buffer(struct tls_batch *b)
{
	if (b->buf)
		return 0;
	b->buf = spare ? spare : malloc(BATCH_CAP);
	spare = NULL;
	if (!b->buf)
		return -ENOMEM;
	b->cap = BATCH_CAP;
	b->len = b->sent = 0;
	return 0;
}

static void give_back(struct tls_batch *b)
{
	if (!spare)
		spare = b->buf;
	else
		free(b->buf);
	b->buf = NULL;
	b->len = b->sent = 0;
	b->nmarks = 0;
}

/* Marks whose records have left become released plaintext. */
static void settle(struct tls_batch *b)
{
	unsigned k = 0;

	while (k < b->nmarks && b->marks[k].end <= b->sent)
		b->released += b->marks[k++].plain;
	if (k) {
		memmove(b->marks, b->marks + k,
			(b->nmarks - k) * sizeof(b->marks[0]));
		b->nmarks -= k;
	}
	if (b->buf && b->sent == b->len && !b->nmarks)
		give_back(b);
}

int tls_batch_flush(struct tls_batch *b)
{
	int err = 0;

	while (b->sent < b->len) {
		ssize_t n = send(b->fd, b->buf + b->sent, b->len - b->sent,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno == EWOULDBLOCK ? -EAGAIN : -errno;
			break;
		}
		b->sent += (size_t)n;
	}
	settle(b);
	return err;
}

bool tls_batch_mark(struct tls_batch *b, size_t plain)
{
	if (b->nmarks == TLS_BATCH_MARKS)
		return false;
	b->marks[b->nmarks].end = b->len;
	b->marks[b->nmarks].plain = plain;
	b->nmarks++;
	return true;
}

size_t tls_batch_released(struct tls_batch *b)
{
	size_t n;

	settle(b);
	n = b->released;
	b->released = 0;
	return n;
}

void tls_batch_fini(struct tls_batch *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------ the BIO */

static int bio_write(BIO *bio, const char *data, int n)
{
	struct tls_batch *b = BIO_get_data(bio);

	BIO_clear_retry_flags(bio);
	if (n <= 0)
		return 0;
	if (take_buffer(b)) {
		errno = ENOMEM;
		return -1;
	}
	if ((size_t)n > b->cap - b->len) {
		/* Full: what is there must leave first (OpenSSL offers
		 * the same record again). */
		BIO_set_retry_write(bio);
		return -1;
	}
	memcpy(b->buf + b->len, data, (size_t)n);
	b->len += (size_t)n;
	return n;
}

static long bio_ctrl(BIO *bio, int cmd, long num, void *ptr)
{
	struct tls_batch *b = BIO_get_data(bio);
	int err;

	(void)num;
	(void)ptr;
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		/* The end of a handshake flight, an alert, a ticket. */
		BIO_clear_retry_flags(bio);
		err = tls_batch_flush(b);
		if (!err)
			return 1;
		if (err == -EAGAIN)
			BIO_set_retry_write(bio);
		else
			errno = -err;
		return -1;
	case BIO_CTRL_WPENDING:
		return (long)(b->len - b->sent);
	case BIO_CTRL_PENDING:
		return 0;
	default:
		return 0;	/* no kTLS, no descriptor of its own */
	}
}

static int bio_create(BIO *bio)
{
	BIO_set_init(bio, 1);
	return 1;
}

BIO *tls_batch_bio(struct tls_batch *b, int fd)
{
	BIO *bio;

	if (!method) {
		method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
				      "zchttpd record batch");
		if (!method || !BIO_meth_set_write(method, bio_write) ||
		    !BIO_meth_set_ctrl(method, bio_ctrl) ||
		    !BIO_meth_set_create(method, bio_create)) {
			BIO_meth_free(method);
			method = NULL;
			return NULL;
		}
	}
	memset(b, 0, sizeof(*b));
	b->fd = fd;
	bio = BIO_new(method);
	if (bio)
		BIO_set_data(bio, b);
	return bio;
}
