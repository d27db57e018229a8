/* addr_text.c - a peer's address as text (addr_text.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "addr_text.h"

size_t addr_text(const struct sockaddr_storage *ss, char *buf)
{
	if (ss->ss_family == AF_INET) {
		const unsigned char *a = (const unsigned char *)
			&((const struct sockaddr_in *)ss)->sin_addr;
		char *o = buf;

		for (int i = 0; i < 4; i++) {
			unsigned v = a[i];

			if (i)
				*o++ = '.';
			if (v >= 100)
				*o++ = (char)('0' + v / 100);
			if (v >= 10)
				*o++ = (char)('0' + v / 10 % 10);
			*o++ = (char)('0' + v % 10);
		}
		*o = 0;
		return (size_t)(o - buf);
	}
	if (ss->ss_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr,
		      buf, ADDR_TEXT_MAX))
		return strlen(buf);
	buf[0] = 0;
	return 0;
}
