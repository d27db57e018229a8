/* probe.h - `zchttpd --probe URL`: one GET, for container health checks. */
#ifndef ZC_PROBE_H
#define ZC_PROBE_H

/* GET url ("http://HOST:PORT/PATH", HOST numeric as for --listen) with a
 * whole-exchange timeout of timeout_ms.  Returns the process exit code:
 * 0 when the status is 200, 1 otherwise (refused, timeout, other status),
 * 2 when url is not of that form. */
int probe_run(const char *url, int timeout_ms);

#endif
