/*
 * tlsget - the guest's HTTP(S) client for the zchttpd tests (ktls.sh,
 * criu.sh): GETs each PATH in turn on one keep-alive connection and writes
 * each body to OUTDIR/<last path component>; the scripts compare them with
 * the files.  busybox wget has no TLS, and a body must be known complete:
 * tlsget reads exactly Content-Length bytes and fails on anything less.
 *
 *   tlsget [-n] [-2|-3] [-c LIST] [-W FILE] [-r SECONDS] HOST PORT OUTDIR PATH...
 *
 *   -n          plain HTTP (default HTTPS, certificate not verified)
 *   -2, -3      only TLS 1.2 / only TLS 1.3
 *   -c LIST     TLS 1.2 cipher list or TLS 1.3 ciphersuites
 *   -W FILE     before each request but the first, wait until FILE exists
 *               (the connection stays open and idle until then)
 *   -r SECONDS  retry for up to SECONDS while the server cannot be reached
 *               (connection refused) or closes the connection before the
 *               first byte of a response (a backlog reset by a dying
 *               listener); the request is then sent again.  A response
 *               cut after its first byte is never retried: it is a failure.
 *
 * Prints "TLS VERSION CIPHER" per connection and "GOT PATH BYTES" per
 * body; exit 0 only if every PATH came back 200 and complete.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static bool plain;
static int version;		/* 0, 12 or 13 */
static const char *ciphers;
static double retry_for;
static const char *wait_file;

struct conn {
	int fd;
	SSL *ssl;
	char buf[65536 + 1];	/* + 1: a NUL after the data */
	size_t have, off;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void conn_close(struct conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->have = c->off = 0;
}

/* 0, or -1 with errno (ECONNREFUSED is worth a retry). */
static int conn_open(struct conn *c, SSL_CTX *ctx, const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((unsigned short)port) };
	int one = 1;

	c->fd = -1;
	c->ssl = NULL;
	c->have = c->off = 0;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		conn_close(c);
		errno = e;
		return -1;
	}
	if (plain)
		return 0;
	c->ssl = SSL_new(ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    SSL_connect(c->ssl) != 1) {
		ERR_print_errors_fp(stderr);
		conn_close(c);
		errno = ECONNRESET;
		return -1;
	}
	printf("TLS %s %s\n", SSL_get_version(c->ssl),
	       SSL_CIPHER_get_name(SSL_get_current_cipher(c->ssl)));
	return 0;
}

static int conn_write(struct conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t k = c->ssl ? SSL_write(c->ssl, p, (int)n)
				   : write(c->fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* More bytes into c->buf; 0 at end of stream, -1 on error. */
static ssize_t conn_fill(struct conn *c)
{
	ssize_t k;

	if (c->off) {
		memmove(c->buf, c->buf + c->off, c->have - c->off);
		c->have -= c->off;
		c->off = 0;
	}
	if (c->have == (sizeof(c->buf) - 1))
		return -1;
	if (c->ssl) {
		k = SSL_read(c->ssl, c->buf + c->have,
			     (int)((sizeof(c->buf) - 1) - c->have));
		if (k <= 0) {
			int e = SSL_get_error(c->ssl, (int)k);
			unsigned long err = ERR_peek_error();

			/* Why, for the scripts: "unexpected eof while reading"
			 * (the peer closed) is not a broken record. */
			if (e != SSL_ERROR_ZERO_RETURN)
				fprintf(stderr, "tlsget: TLS read: %s\n",
					err ? ERR_reason_error_string(err)
					    : strerror(errno));
			ERR_clear_error();
			return e == SSL_ERROR_ZERO_RETURN ? 0 : -1;
		}
	} else {
		k = read(c->fd, c->buf + c->have, (sizeof(c->buf) - 1) - c->have);
		if (k < 0)
			return -1;
	}
	c->have += (size_t)k;
	return k;
}

/* One GET.  1 = done; 0 = nothing of a response arrived (retryable);
 * -1 = failed (message printed). */
static int get(struct conn *c, const char *path, const char *outdir)
{
	char req[1024], file[4096], *hdr_end, *p;
	const char *base = strrchr(path, '/');
	long long len = -1, got = 0;
	int status;
	FILE *out;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: guest\r\n\r\n",
		 path);
	if (conn_write(c, req, strlen(req)))
		return 0;
	for (;;) {
		c->buf[c->have] = '\0';
		hdr_end = memmem(c->buf + c->off, c->have - c->off, "\r\n\r\n", 4);
		if (hdr_end)
			break;
		ssize_t k = conn_fill(c);

		if (k <= 0) {
			if (c->have == c->off)
				return 0;
			fprintf(stderr, "tlsget: %s: head cut short\n", path);
			return -1;
		}
	}
	if (sscanf(c->buf + c->off, "HTTP/1.%*d %d", &status) != 1 ||
	    status != 200) {
		fprintf(stderr, "tlsget: %s: not 200: %.40s\n", path,
			c->buf + c->off);
		return -1;
	}
	for (p = c->buf + c->off; p < hdr_end; p++)
		if ((p == c->buf + c->off || p[-1] == '\n') &&
		    !strncasecmp(p, "Content-Length:", 15))
			len = atoll(p + 15);
	if (len < 0) {
		fprintf(stderr, "tlsget: %s: no Content-Length\n", path);
		return -1;
	}
	c->off = (size_t)(hdr_end + 4 - c->buf);
	snprintf(file, sizeof(file), "%s/%s", outdir, base ? base + 1 : path);
	out = fopen(file, "w");
	if (!out) {
		perror(file);
		return -1;
	}
	while (got < len) {
		size_t n = c->have - c->off;

		if (!n) {
			if (conn_fill(c) <= 0) {
				fprintf(stderr, "tlsget: %s: body cut at %lld "
					"of %lld bytes\n", path, got, len);
				fclose(out);
				return -1;
			}
			continue;
		}
		if ((long long)n > len - got)
			n = (size_t)(len - got);
		fwrite(c->buf + c->off, 1, n, out);
		c->off += n;
		got += (long long)n;
	}
	if (fclose(out)) {
		perror(file);
		return -1;
	}
	printf("GOT %s %lld\n", path, got);
	return 1;
}

int main(int argc, char **argv)
{
	SSL_CTX *ctx = NULL;
	struct conn c = { .fd = -1 };
	int opt, i, port, rc = 0;
	double deadline;

	while ((opt = getopt(argc, argv, "n23c:r:W:")) != -1) {
		switch (opt) {
		case 'n': plain = true; break;
		case '2': version = 12; break;
		case '3': version = 13; break;
		case 'c': ciphers = optarg; break;
		case 'r': retry_for = atof(optarg); break;
		case 'W': wait_file = optarg; break;
		default: goto usage;
		}
	}
	if (argc - optind < 4)
		goto usage;
	port = atoi(argv[optind + 1]);
	if (!plain) {
		ctx = SSL_CTX_new(TLS_client_method());
		if (!ctx)
			return 2;
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
		if (version) {
			int v = version == 12 ? TLS1_2_VERSION : TLS1_3_VERSION;

			SSL_CTX_set_min_proto_version(ctx, v);
			SSL_CTX_set_max_proto_version(ctx, v);
		}
		if (ciphers && (version == 13
				? !SSL_CTX_set_ciphersuites(ctx, ciphers)
				: !SSL_CTX_set_cipher_list(ctx, ciphers))) {
			fprintf(stderr, "tlsget: bad cipher list %s\n", ciphers);
			return 2;
		}
	}
	deadline = now() + retry_for;
	for (i = optind + 3; i < argc;) {
		int r = 0;

		if (c.fd < 0 && conn_open(&c, ctx, argv[optind], port) < 0) {
			if ((errno != ECONNREFUSED && errno != ECONNRESET) ||
			    now() > deadline) {
				fprintf(stderr, "tlsget: connect: %s\n",
					strerror(errno));
				rc = 1;
				break;
			}
			usleep(20000);
			continue;
		}
		if (wait_file && i > optind + 3) {
			fflush(stdout);
			while (access(wait_file, F_OK))
				usleep(50000);
		}
		r = get(&c, argv[i], argv[optind + 2]);
		if (r < 0) {
			rc = 1;
			break;
		}
		if (r == 0) {
			/* The server closed before answering: new connection,
			 * same request, while retrying is allowed. */
			conn_close(&c);
			if (now() > deadline) {
				fprintf(stderr, "tlsget: %s: connection closed "
					"without a response\n", argv[i]);
				rc = 1;
				break;
			}
			continue;
		}
		i++;
	}
	conn_close(&c);
	SSL_CTX_free(ctx);
	return rc;
usage:
	fprintf(stderr, "usage: tlsget [-n] [-2|-3] [-c LIST] [-W FILE] [-r SECONDS] "
		"HOST PORT OUTDIR PATH...\n");
	return 2;
}
