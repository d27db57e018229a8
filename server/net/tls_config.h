/*
 * tls_config.h - what the configuration and the counters say about HTTPS
 * (the types zchttpd.h embeds); the calls are tls.h's, for the socket
 * layer (sock_tls.c) and the master.
 */
#ifndef ZC_TLS_CONFIG_H
#define ZC_TLS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

/* One certificate chain and its key (PEM); key NULL: in the same file. */
struct zh_tls_cert {
	const char *cert;
	const char *key;
};

struct zh_tls_config {
	const char *listen;		/* HTTPS address; NULL: no HTTPS */
	struct zh_tls_cert *certs;	/* the first is the default */
	unsigned ncerts;
	const char *ciphers;		/* TLS 1.2 list; NULL: our default */
	bool ktls;			/* give the records to the kernel */
	bool h2;			/* ALPN offers h2 (--http2) */
};

/* Counters, per worker (summed by the status endpoint). */
struct tls_stats {
	uint64_t handshakes;		/* completed */
	uint64_t resumed;		/* ... of which resumed a session */
	uint64_t failed;		/* refused or broken handshakes */
	uint64_t kernel_send;		/* connections the kernel encrypts */
	uint64_t user_send;		/* connections we encrypt */
	uint64_t user_bytes;		/* bytes encrypted here */
};

#endif
