/* fcgi_params.h - the CGI/1.1 parameters of a request, as FastCGI records. */
#ifndef ZC_FCGI_PARAMS_H
#define ZC_FCGI_PARAMS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "http_parser.h"
#include "zc.h"

struct zh_addr_memo;

/* What a request's parameters are made of (everything borrowed). */
struct fcgi_params_in {
	const struct http_request *req;
	const char *script_name;	/* "/app", "/dir/x.php" */
	size_t script_name_len;
	const char *path_info;		/* what follows it, "" if nothing */
	size_t path_info_len;
	const char *script_filename;	/* document root + script name */
	const char *document_root;	/* absolute */
	const char *document_uri;	/* "/" + normalized path */
	const char *query;		/* raw, NULL: none */
	size_t query_len;
	const char *content_type;	/* NULL: none */
	size_t content_type_len;
	bool has_body;			/* CONTENT_LENGTH is content_length */
	uint64_t content_length;
	const struct sockaddr_storage *server;
	const struct sockaddr_storage *peer;
	struct zh_addr_memo *addr_memo;	/* the two above, encoded once per
					 * connection (request.h); NULL:
					 * encoded every time */
	const char *protocol;		/* SERVER_PROTOCOL; NULL: HTTP/1.x
					 * from req */
};

/* Append to out BEGIN_REQUEST (role responder, FCGI_KEEP_CONN if asked),
 * the PARAMS records and the empty PARAMS record that ends them, in one
 * pool buffer.  Returns 0 or a negative errno (out unchanged). */
int fcgi_params_build(const struct fcgi_params_in *in, uint16_t request_id,
		      bool keep_conn, zc_agg *out);

#endif
