/*
 * fcgi_proto.h - the FastCGI protocol (version 1): record headers, the
 * fixed record bodies, name-value pairs, and the CGI response head.
 *
 * Part of the protocol library `zchttp` (with http_parser.h): no I/O, no
 * allocation, no libzc.  Every parser is strict and bounded, works on
 * caller-owned bytes, and never reads outside them; every encoder checks
 * its room.  Both ends of zcstack's FastCGI use it: zchttpd as the client
 * (web server) and cgi/'s application library.  The transports (a standard
 * socket, or a libzc channel whose messages concatenate to the same record
 * stream) are described in docs/fastcgi.md; this file knows only bytes.
 *
 * Record framing (FastCGI spec section 3.3):
 *
 *	version(1) type(1) requestId(2, BE) contentLength(2, BE)
 *	paddingLength(1) reserved(1)  contentData  paddingData
 *
 * Errors are negative errno values: -EPROTO for bytes that break the
 * protocol (the peer is broken or hostile: drop the connection), -ENOSPC
 * for an encoder whose buffer is too small, -E2BIG for input over a limit.
 */
#ifndef ZC_FCGI_PROTO_H
#define ZC_FCGI_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FCGI_VERSION_1 1
#define FCGI_HEADER_LEN 8
#define FCGI_MAX_CONTENT 65535u
#define FCGI_NULL_REQUEST_ID 0

enum fcgi_type {
	FCGI_BEGIN_REQUEST = 1,
	FCGI_ABORT_REQUEST = 2,
	FCGI_END_REQUEST = 3,
	FCGI_PARAMS = 4,
	FCGI_STDIN = 5,
	FCGI_STDOUT = 6,
	FCGI_STDERR = 7,
	FCGI_DATA = 8,
	FCGI_GET_VALUES = 9,
	FCGI_GET_VALUES_RESULT = 10,
	FCGI_UNKNOWN_TYPE = 11,
};

/* Roles (BEGIN_REQUEST) and its flags. */
#define FCGI_RESPONDER 1
#define FCGI_AUTHORIZER 2
#define FCGI_FILTER 3
#define FCGI_KEEP_CONN 1

/* protocolStatus of END_REQUEST. */
#define FCGI_REQUEST_COMPLETE 0
#define FCGI_CANT_MPX_CONN 1
#define FCGI_OVERLOADED 2
#define FCGI_UNKNOWN_ROLE 3

struct fcgi_header {
	uint8_t version;
	uint8_t type;
	uint16_t request_id;
	uint16_t content_length;
	uint8_t padding_length;
};

/* Decode and check 8 header bytes: version 1, type 1..11 (a type above 11
 * is -EPROTO for a client; an application answers it with UNKNOWN_TYPE, so
 * fcgi_header_decode_any keeps it; type 0 is -EPROTO for both).  Management
 * records (GET_VALUES, GET_VALUES_RESULT, UNKNOWN_TYPE, and with
 * fcgi_header_decode_any a type above 11: spec 4.2 defines unknown types
 * for management records only) must have request id 0, the others not.
 * The fixed bodies have their fixed lengths: BEGIN_REQUEST, END_REQUEST and
 * UNKNOWN_TYPE 8 bytes of content, ABORT_REQUEST none; else -EPROTO.
 * Padding may be 0..255 whatever the content length.  0 or -EPROTO; *h is
 * written only on success. */
int fcgi_header_decode(const uint8_t b[FCGI_HEADER_LEN],
		       struct fcgi_header *h);
int fcgi_header_decode_any(const uint8_t b[FCGI_HEADER_LEN],
			   struct fcgi_header *h);
/* Encode a header (version 1, reserved 0). */
void fcgi_header_encode(uint8_t b[FCGI_HEADER_LEN], uint8_t type,
			uint16_t request_id, uint16_t content_length,
			uint8_t padding_length);
/* Bytes the whole record occupies: header + content + padding. */
static inline size_t fcgi_record_len(const struct fcgi_header *h)
{
	return FCGI_HEADER_LEN + (size_t)h->content_length +
	       h->padding_length;
}

/* BEGIN_REQUEST body (8 bytes): role(2) flags(1) reserved(5). */
struct fcgi_begin {
	uint16_t role;
	uint8_t flags;
};
int fcgi_begin_decode(const uint8_t *body, size_t len, struct fcgi_begin *b);
/* A whole BEGIN_REQUEST record (16 bytes) into out. */
void fcgi_begin_encode(uint8_t out[16], uint16_t request_id, uint16_t role,
		       uint8_t flags);

/* END_REQUEST body (8 bytes): appStatus(4) protocolStatus(1) reserved(3). */
struct fcgi_end {
	uint32_t app_status;
	uint8_t protocol_status;
};
int fcgi_end_decode(const uint8_t *body, size_t len, struct fcgi_end *e);
/* A whole END_REQUEST record (16 bytes) into out. */
void fcgi_end_encode(uint8_t out[16], uint16_t request_id,
		     uint32_t app_status, uint8_t protocol_status);
/* The decoders: 0, or -EPROTO for a body that is not 8 bytes long (and for
 * END_REQUEST, a protocolStatus other than the four above).  The role is
 * not checked (an application answers an unknown one with UNKNOWN_ROLE),
 * nor are reserved bytes. */

/* UNKNOWN_TYPE body (8 bytes): type(1) reserved(7).  A whole UNKNOWN_TYPE
 * record (16 bytes, request id 0) into out: an application's answer to a
 * management record of a type it does not know. */
void fcgi_unknown_type_encode(uint8_t out[16], uint8_t type);

/*
 * Name-value pairs (PARAMS, GET_VALUES): each length is one byte (< 128)
 * or four bytes with the top bit set (31 bits).  The stream of PARAMS
 * records is one block; a pair may straddle records, so a receiver joins
 * the contents first (bounded by its own limit) and then walks the block.
 */
struct fcgi_nv {
	const char *name;	/* into the block; not NUL-terminated */
	size_t name_len;
	const char *value;
	size_t value_len;
};
#define FCGI_NV_MAX_LEN 0x7fffffffu	/* a name's or a value's length */

/* The pair at block[*off..len): 1 and *off advanced, 0 at the end of the
 * block, -EPROTO for a truncated or oversized pair (a length that runs past
 * the block; *off > len).  An empty name is -EPROTO.  A 4-byte length below
 * 128 is accepted.  Reads nothing outside block[*off..len); on an error
 * *off and *nv are left alone. */
int fcgi_nv_next(const uint8_t *block, size_t len, size_t *off,
		 struct fcgi_nv *nv);
/* Bytes fcgi_nv_encode writes for this pair. */
size_t fcgi_nv_len(size_t name_len, size_t value_len);
/* Append one pair at out[*off..cap): 0, or -ENOSPC (nothing written), or
 * -E2BIG for a length over FCGI_NV_MAX_LEN, or -EINVAL for an empty name
 * (fcgi_nv_next would refuse it).  Lengths below 128 take one byte. */
int fcgi_nv_encode(uint8_t *out, size_t cap, size_t *off, const char *name,
		   size_t name_len, const char *value, size_t value_len);

/*
 * The CGI response head an application writes at the start of its STDOUT
 * (RFC 3875 section 6): header lines up to an empty line.  Lines end in
 * CRLF or a bare LF (CGI scripts print "\n"); a bare CR, a NUL, other
 * control bytes (DEL included) in a value, obs-fold, a line without a
 * colon, whitespace before the colon, or a field name that is not a token
 * are -EPROTO.  Field names are matched case-insensitively.  Incremental
 * like http_parse_request: call again with the same bytes and more
 * appended; the parser keeps offsets only, so the buffer may move between
 * calls; feeding a head in any number of pieces gives the same result as
 * feeding it all at once.  Linear in the bytes over all calls.
 */
struct cgi_field {
	const char *name;
	size_t name_len;
	const char *value;	/* leading and trailing whitespace removed */
	size_t value_len;
};

struct cgi_head {
	struct cgi_field *fields;	/* caller's array, max_fields slots */
	size_t max_fields;
	size_t nfields;			/* fields other than the ones below */
	int status;			/* from Status: (100..999), 0: none */
	const char *reason;		/* Status: reason phrase, may be empty */
	size_t reason_len;
	const char *location;		/* Location:, NULL: none */
	size_t location_len;
	const char *content_type;	/* Content-Type:, NULL: none */
	size_t content_type_len;
	bool has_content_length;
	uint64_t content_length;
};

struct cgi_head_parser {
	size_t scanned;		/* bytes searched for line ends */
	size_t line_start;
	size_t done;		/* head length once complete */
};

#define CGI_HEAD_INCOMPLETE (-2)

void cgi_head_parser_init(struct cgi_head_parser *p);
/*
 * Parse buf[0..len).  Returns the length of the head including its empty
 * line (the body starts at buf + that), CGI_HEAD_INCOMPLETE, -EPROTO for
 * malformed input, -E2BIG when the head passes max_bytes (line ends and
 * the empty line included) or has more than max_fields other fields.
 *
 *   Status:          three digits (100..999), then nothing or SP/HTAB and
 *                    a reason (may be empty: reason_len 0): "200",
 *                    "404 Not Found"; anything else is -EPROTO.
 *   Content-Length:  1*DIGIT, at most INT64_MAX.
 *   Location, Content-Type:  not empty.
 *   Repeats:         a second Status, Location or Content-Type is -EPROTO;
 *                    a second Content-Length is accepted only with the same
 *                    value (byte for byte, as http_parse_request does).
 *   No field at all (the head is only the empty line): -EPROTO (RFC 3875
 *   6.2: one or more header fields).
 *
 * Errors come in the order of the lines: each line is checked against
 * max_bytes, then for its syntax and the format above, as soon as it is
 * complete; the rules about the whole head (repeats, no field, max_fields,
 * in that priority: any -EPROTO before -E2BIG) when the empty line arrives.
 * *h is written only when a call returns the head (or an error from those
 * whole-head rules); fields point into buf.  Once complete, further calls
 * return the head again.  After an error call cgi_head_parser_init before
 * parsing anything else.  If len is smaller than on the previous call the
 * parser starts over.
 */
ssize_t cgi_head_parse(struct cgi_head_parser *p, const char *buf, size_t len,
		       size_t max_bytes, struct cgi_head *h);

#endif /* ZC_FCGI_PROTO_H */
