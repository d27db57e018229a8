/*
 * fcgi_proto.c - the FastCGI protocol: records, fixed bodies, name-value
 * pairs, and the CGI response head (see fcgi_proto.h).
 *
 * The CGI head parser is built like the request parser (http_parser.c):
 * each call searches only the bytes that are new since the last one for
 * line ends, and checks every line once, as soon as it is complete, in
 * order: its place against max_bytes first, then its syntax (and the
 * format of the values we interpret).  Only when the empty line arrives
 * are the lines parsed again, from the start, into the caller's struct
 * cgi_head, together with the rules that need the whole head (repeats,
 * max_fields).  The state between calls is offsets only, so the caller may
 * move the buffer, and the result never depends on how the bytes were cut.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "fcgi_proto.h"
#include "http_lex.h"

/* ------------------------------------------------------------ byte order */

static inline uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static inline void put16(uint8_t *b, uint16_t v)
{
	b[0] = v >> 8;
	b[1] = v & 0xff;
}

static inline void put32(uint8_t *b, uint32_t v)
{
	b[0] = v >> 24;
	b[1] = (v >> 16) & 0xff;
	b[2] = (v >> 8) & 0xff;
	b[3] = v & 0xff;
}

/* ---------------------------------------------------------------- records */

static int header_decode(const uint8_t b[FCGI_HEADER_LEN],
			 struct fcgi_header *h, bool any_type)
{
	uint8_t type = b[1];
	uint16_t id = get16(b + 2), clen = get16(b + 4);

	if (b[0] != FCGI_VERSION_1)
		return -EPROTO;
	if (type == 0 || (type > FCGI_UNKNOWN_TYPE && !any_type))
		return -EPROTO;
	/* Management records (and any type we do not know: spec 4.2) are
	 * on request id 0; application records never are. */
	if ((type >= FCGI_GET_VALUES) != (id == FCGI_NULL_REQUEST_ID))
		return -EPROTO;
	switch (type) {
	case FCGI_BEGIN_REQUEST:
	case FCGI_END_REQUEST:
	case FCGI_UNKNOWN_TYPE:
		if (clen != 8)
			return -EPROTO;
		break;
	case FCGI_ABORT_REQUEST:
		if (clen != 0)
			return -EPROTO;
		break;
	}
	h->version = b[0];
	h->type = type;
	h->request_id = id;
	h->content_length = clen;
	h->padding_length = b[6];
	return 0;
}

int fcgi_header_decode(const uint8_t b[FCGI_HEADER_LEN], struct fcgi_header *h)
{
	return header_decode(b, h, false);
}

int fcgi_header_decode_any(const uint8_t b[FCGI_HEADER_LEN],
			   struct fcgi_header *h)
{
	return header_decode(b, h, true);
}

void fcgi_header_encode(uint8_t b[FCGI_HEADER_LEN], uint8_t type,
			uint16_t request_id, uint16_t content_length,
			uint8_t padding_length)
{
	b[0] = FCGI_VERSION_1;
	b[1] = type;
	put16(b + 2, request_id);
	put16(b + 4, content_length);
	b[6] = padding_length;
	b[7] = 0;
}

int fcgi_begin_decode(const uint8_t *body, size_t len, struct fcgi_begin *b)
{
	if (len != 8)
		return -EPROTO;
	b->role = get16(body);
	b->flags = body[2];
	return 0;
}

void fcgi_begin_encode(uint8_t out[16], uint16_t request_id, uint16_t role,
		       uint8_t flags)
{
	fcgi_header_encode(out, FCGI_BEGIN_REQUEST, request_id, 8, 0);
	memset(out + FCGI_HEADER_LEN, 0, 8);
	put16(out + FCGI_HEADER_LEN, role);
	out[FCGI_HEADER_LEN + 2] = flags;
}

int fcgi_end_decode(const uint8_t *body, size_t len, struct fcgi_end *e)
{
	if (len != 8 || body[4] > FCGI_UNKNOWN_ROLE)
		return -EPROTO;
	e->app_status = get32(body);
	e->protocol_status = body[4];
	return 0;
}

void fcgi_end_encode(uint8_t out[16], uint16_t request_id,
		     uint32_t app_status, uint8_t protocol_status)
{
	fcgi_header_encode(out, FCGI_END_REQUEST, request_id, 8, 0);
	memset(out + FCGI_HEADER_LEN, 0, 8);
	put32(out + FCGI_HEADER_LEN, app_status);
	out[FCGI_HEADER_LEN + 4] = protocol_status;
}

void fcgi_unknown_type_encode(uint8_t out[16], uint8_t type)
{
	fcgi_header_encode(out, FCGI_UNKNOWN_TYPE, FCGI_NULL_REQUEST_ID, 8, 0);
	memset(out + FCGI_HEADER_LEN, 0, 8);
	out[FCGI_HEADER_LEN] = type;
}

/* ------------------------------------------------------ name-value pairs */

/* One length at block[*off..len): 1 byte below 128, else 4 bytes with the
 * top bit set. */
static int nv_length(const uint8_t *block, size_t len, size_t *off,
		     size_t *out)
{
	size_t o = *off;

	if (o >= len)
		return -EPROTO;
	if (!(block[o] & 0x80)) {
		*out = block[o];
		*off = o + 1;
		return 0;
	}
	if (len - o < 4)
		return -EPROTO;
	*out = get32(block + o) & FCGI_NV_MAX_LEN;
	*off = o + 4;
	return 0;
}

int fcgi_nv_next(const uint8_t *block, size_t len, size_t *off,
		 struct fcgi_nv *nv)
{
	size_t o = *off, nl, vl;

	if (o == len)
		return 0;
	if (o > len || nv_length(block, len, &o, &nl) < 0 ||
	    nv_length(block, len, &o, &vl) < 0)
		return -EPROTO;
	if (nl == 0 || nl > len - o || vl > len - o - nl)
		return -EPROTO;
	nv->name = (const char *)block + o;
	nv->name_len = nl;
	nv->value = (const char *)block + o + nl;
	nv->value_len = vl;
	*off = o + nl + vl;
	return 1;
}

size_t fcgi_nv_len(size_t name_len, size_t value_len)
{
	size_t n = (name_len < 128 ? 1 : 4) + (value_len < 128 ? 1 : 4);

	if (name_len > SIZE_MAX - n || value_len > SIZE_MAX - n - name_len)
		return SIZE_MAX;
	return n + name_len + value_len;
}

static uint8_t *put_nv_length(uint8_t *p, size_t n)
{
	if (n < 128) {
		*p = (uint8_t)n;
		return p + 1;
	}
	put32(p, (uint32_t)n | 0x80000000u);
	return p + 4;
}

int fcgi_nv_encode(uint8_t *out, size_t cap, size_t *off, const char *name,
		   size_t name_len, const char *value, size_t value_len)
{
	size_t need;
	uint8_t *p;

	if (name_len == 0)
		return -EINVAL;
	if (name_len > FCGI_NV_MAX_LEN || value_len > FCGI_NV_MAX_LEN)
		return -E2BIG;
	need = fcgi_nv_len(name_len, value_len);
	if (*off > cap || need > cap - *off)
		return -ENOSPC;
	p = put_nv_length(out + *off, name_len);
	p = put_nv_length(p, value_len);
	memcpy(p, name, name_len);
	if (value_len)
		memcpy(p + name_len, value, value_len);
	*off += need;
	return 0;
}

/* ------------------------------------------------------- CGI response head */

enum cgi_kind {
	CGI_OTHER,
	CGI_STATUS,
	CGI_LOCATION,
	CGI_CONTENT_TYPE,
	CGI_CONTENT_LENGTH,
};

/* One field line after splitting, with the value of a field we interpret
 * decoded. */
struct cgi_line {
	enum cgi_kind kind;
	struct http_str name, value;
	int status;
	struct http_str reason;
	uint64_t content_length;
};

static enum cgi_kind cgi_kind(struct http_str n)
{
	switch (n.len) {
	case 6:
		return http_lc_eq(n.p, n.len, "status") ? CGI_STATUS : CGI_OTHER;
	case 8:
		return http_lc_eq(n.p, n.len, "location") ? CGI_LOCATION :
							     CGI_OTHER;
	case 12:
		return http_lc_eq(n.p, n.len, "content-type") ?
			       CGI_CONTENT_TYPE : CGI_OTHER;
	case 14:
		return http_lc_eq(n.p, n.len, "content-length") ?
			       CGI_CONTENT_LENGTH : CGI_OTHER;
	}
	return CGI_OTHER;
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Status = 3DIGIT [ 1*(SP / HTAB) reason ], the value already trimmed. */
static int parse_status(struct http_str v, int *status,
			struct http_str *reason)
{
	size_t i = 3;

	if (v.len < 3 || v.p[0] < '1' || v.p[0] > '9' || !is_digit(v.p[1]) ||
	    !is_digit(v.p[2]))
		return -EPROTO;
	if (v.len > 3 && !http_is_ows(v.p[3]))
		return -EPROTO;
	while (i < v.len && http_is_ows(v.p[i]))
		i++;
	*status = (v.p[0] - '0') * 100 + (v.p[1] - '0') * 10 + (v.p[2] - '0');
	*reason = (struct http_str){ v.p + i, v.len - i };
	return 0;
}

/* A header line s..e (line end excluded): the same answer for the same
 * bytes, whatever came before it. */
static int cgi_line_parse(const char *s, const char *e, struct cgi_line *l)
{
	if (http_field_split(s, e, &l->name, &l->value))
		return -EPROTO;
	l->kind = cgi_kind(l->name);
	switch (l->kind) {
	case CGI_OTHER:
		break;
	case CGI_STATUS:
		return parse_status(l->value, &l->status, &l->reason);
	case CGI_LOCATION:
	case CGI_CONTENT_TYPE:
		if (l->value.len == 0)
			return -EPROTO;
		break;
	case CGI_CONTENT_LENGTH:
		if (http_parse_decimal(l->value, &l->content_length) < 0)
			return -EPROTO;
		break;
	}
	return 0;
}

void cgi_head_parser_init(struct cgi_head_parser *p)
{
	memset(p, 0, sizeof(*p));
}

/* A field that may appear once: the second is -EPROTO. */
static int set_once(const char **p, size_t *len, struct http_str v)
{
	if (*p)
		return -EPROTO;
	*p = v.p;
	*len = v.len;
	return 0;
}

/* The whole head is buf[0 .. end), every line in it valid: fill h. */
static ssize_t cgi_finish(const char *buf, size_t end, struct cgi_head *h)
{
	struct cgi_field *fields = h->fields;
	size_t max_fields = h->max_fields, scanned = 0, line = 0, s, e;
	size_t lines = 0;
	struct http_str cl = { NULL, 0 };
	bool too_many = false;
	struct cgi_line l;

	memset(h, 0, sizeof(*h));
	h->fields = fields;
	h->max_fields = max_fields;
	while (http_next_line(buf, end, &scanned, &line, &s, &e)) {
		if (e == s)
			break;	/* the empty line */
		if (cgi_line_parse(buf + s, buf + e, &l) < 0)
			return -EPROTO;	/* only if the caller changed the bytes */
		lines++;
		switch (l.kind) {
		case CGI_OTHER:
			if (h->nfields == max_fields) {
				too_many = true;
				break;
			}
			fields[h->nfields++] = (struct cgi_field){
				l.name.p, l.name.len, l.value.p, l.value.len
			};
			break;
		case CGI_STATUS:
			/* the reason is never NULL with a Status */
			if (set_once(&h->reason, &h->reason_len, l.reason) < 0)
				return -EPROTO;
			h->status = l.status;
			break;
		case CGI_LOCATION:
			if (set_once(&h->location, &h->location_len,
				     l.value) < 0)
				return -EPROTO;
			break;
		case CGI_CONTENT_TYPE:
			if (set_once(&h->content_type, &h->content_type_len,
				     l.value) < 0)
				return -EPROTO;
			break;
		case CGI_CONTENT_LENGTH:
			if (cl.p && (cl.len != l.value.len ||
				     memcmp(cl.p, l.value.p, cl.len) != 0))
				return -EPROTO;
			cl = l.value;
			h->has_content_length = true;
			h->content_length = l.content_length;
			break;
		}
	}
	if (lines == 0)
		return -EPROTO;	/* RFC 3875 6.2: one or more fields */
	if (too_many)
		return -E2BIG;
	return (ssize_t)end;
}

ssize_t cgi_head_parse(struct cgi_head_parser *p, const char *buf, size_t len,
		       size_t max_bytes, struct cgi_head *h)
{
	struct cgi_line l;
	size_t i, s, e;

	if (len < p->scanned)
		cgi_head_parser_init(p);
	if (p->done)
		return cgi_finish(buf, p->done, h);

	/* A head that is all there within max_bytes (the usual case: one
	 * record brings it) is parsed once, by cgi_finish, which checks every
	 * line in order as the walk below would; find its end first. */
	{
		struct cgi_head_parser probe = *p;

		while (http_next_line(buf, len, &probe.scanned,
				      &probe.line_start, &s, &e) &&
		       probe.line_start <= max_bytes) {
			if (e == s) {
				*p = probe;
				p->done = probe.line_start;
				return cgi_finish(buf, p->done, h);
			}
		}
	}
	/* Not all there, or too long: check line by line, so that a bad line
	 * fails as soon as it is complete and the answer does not depend on
	 * how the head arrived. */
	while (http_next_line(buf, len, &p->scanned, &p->line_start, &s, &e)) {
		i = p->line_start;	/* just past the line's LF */
		if (i > max_bytes)
			return -E2BIG;
		if (e == s) {
			p->done = i;
			return cgi_finish(buf, i, h);
		}
		if (cgi_line_parse(buf + s, buf + e, &l) < 0)
			return -EPROTO;
	}
	/* Every complete line is valid; the head needs at least one more
	 * byte (an LF), so at max_bytes it is already too long. */
	if (len >= max_bytes)
		return -E2BIG;
	return CGI_HEAD_INCOMPLETE;
}
