/* access_log.h - Combined Log Format, buffered per worker. */
#ifndef ZC_ACCESS_LOG_H
#define ZC_ACCESS_LOG_H

#include <stdint.h>
#include <sys/socket.h>

#include "http_parser.h"

struct access_log;

/* Open `path` for appending ("-" = a duplicate of standard output): a
 * descriptor or a negative errno.  The master does this before it drops
 * privileges, so a log only root may write still works under --user. */
int access_log_open_fd(const char *path);
/* Take over fd (from access_log_open_fd; closed by access_log_close).
 * fd < 0: logging off, and every call below is a no-op. */
int access_log_adopt(int fd, struct access_log **out);
/* One line; req NULL for a request that could not be parsed; `proto`
 * the protocol field ("HTTP/2.0"; NULL: HTTP/1.x, from req). */
void access_log_request_proto(struct access_log *log,
			      const struct sockaddr_storage *peer,
			      const struct http_request *req,
			      const char *proto, int status, uint64_t bytes);
/* The same, with the upstream that answered a proxied request and its
 * time in milliseconds after the Combined fields (" upstream=ADDR
 * upstream_time=S.mmm", as nginx's $upstream_addr and
 * $upstream_response_time); upstream NULL: none. */
void access_log_request_upstream(struct access_log *log,
				 const struct sockaddr_storage *peer,
				 const struct http_request *req,
				 const char *proto, int status, uint64_t bytes,
				 const char *upstream, uint64_t upstream_ms);
static inline void access_log_request(struct access_log *log,
				      const struct sockaddr_storage *peer,
				      const struct http_request *req,
				      int status, uint64_t bytes)
{
	access_log_request_proto(log, peer, req, NULL, status, bytes);
}
/* Write out what is buffered (called before the loop sleeps). */
void access_log_flush(struct access_log *log);
/* Write out what is buffered, then append to `path` from now on (SIGUSR1,
 * after logrotate moved the file away).  On failure (-errno) the log goes
 * on to the old file: lines are not lost. */
int access_log_reopen(struct access_log *log, const char *path);
void access_log_close(struct access_log *log);

#endif
