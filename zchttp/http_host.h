/*
 * http_host.h - the site name a request asks for (virtual hosts).
 *
 * Part of `zchttp`: no allocation, no I/O.  The Host field is attacker
 * input; the result is bounded by the caller's buffer and never longer
 * than HTTP_HOST_MAX.
 */
#ifndef ZC_HTTP_HOST_H
#define ZC_HTTP_HOST_H

#include <stddef.h>
#include <sys/types.h>

/* A DNS name is at most 253 characters (255 octets on the wire); an
 * IP-literal is shorter.  Anything longer names no site of ours. */
#define HTTP_HOST_MAX 255

/*
 * The host of a Host field value or an absolute-form target's authority
 * ("Example.COM.:8080" -> "example.com"): the port removed, ASCII letters
 * lower-cased, one trailing dot dropped (the root label: "example.com."
 * is the same name); an IP-literal keeps its brackets ("[::1]:80" ->
 * "[::1]").  Written NUL-terminated to out.  Returns its length, 0 for no
 * host (an empty value, or just "."), -1 when the value is not a host
 * (characters outside reg-name / IP-literal, a bad port) or the name does
 * not fit in cap - 1 or HTTP_HOST_MAX bytes.
 */
ssize_t http_host_name(const char *p, size_t n, char *out, size_t cap);

#endif
