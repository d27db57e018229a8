/*
 * addr_text.h - a peer's address as text, for the access log and the
 * forwarding fields a proxy writes (X-Forwarded-For, Forwarded).
 *
 * IPv4 is formatted by hand: inet_ntop formats it with sprintf, 1,670
 * instructions a call (callgrind), which a proxied request paid twice
 * (once per field).  IPv6 goes to inet_ntop.
 */
#ifndef ZC_ADDR_TEXT_H
#define ZC_ADDR_TEXT_H

#include <stddef.h>
#include <sys/socket.h>

/* Room for any address (INET6_ADDRSTRLEN). */
#define ADDR_TEXT_MAX 46

/* The address of ss into buf (ADDR_TEXT_MAX bytes, NUL-terminated): its
 * length, or 0 for a family without one (a UNIX socket; buf is then ""). */
size_t addr_text(const struct sockaddr_storage *ss, char *buf);

#endif
