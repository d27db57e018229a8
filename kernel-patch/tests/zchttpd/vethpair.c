/*
 * vethpair - two network namespaces joined by a veth pair with tx
 * checksumming off at both ends, for csum.sh (zchttpd end to end on the
 * patched kernel).
 *
 *   vethpair SRV_NS CLI_NS SRV_ADDR CLI_ADDR
 *
 * Creates both namespaces and bind-mounts them on the files SRV_NS and
 * CLI_NS (which must exist), so that `nsenter --net=FILE` enters them;
 * brings lo up in each, joins them by veth zsrv (SRV_ADDR/24) <-> zcli
 * (CLI_ADDR/24), switches tx checksumming off on both (so the kernel sums
 * every byte it sends in software) and tail loss probes off in both (under
 * TCG a probe is a retransmit that no bad checksum caused).  Exit status 0
 * when all of it is done; a message on stderr otherwise.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mount.h>

#include "../netns.h"

static int fail(const char *what)
{
	fprintf(stderr, "vethpair: %s: %s\n", what, strerror(errno));
	return 1;
}

/* A new network namespace, entered, bind-mounted on path; lo up. */
static int new_ns(const char *path)
{
	if (unshare(CLONE_NEWNET))
		return fail("unshare");
	if (mount("/proc/self/ns/net", path, NULL, MS_BIND, NULL))
		return fail(path);
	if (if_up("lo", NULL))
		return fail("lo up");
	if (no_tlp())
		return fail("tcp_early_retrans");
	return 0;
}

/* In namespace file ns: interface name up with addr, tx sums off. */
static int setup_end(const char *ns, const char *name, const char *addr)
{
	int fd = open(ns, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || setns(fd, CLONE_NEWNET))
		return fail(ns);
	close(fd);
	if (if_up(name, addr))
		return fail(name);
	if (tx_csum_off(name) != 0)
		return fail("tx checksumming stays on");
	return 0;
}

int main(int argc, char **argv)
{
	int cli, err;

	if (argc != 5) {
		fprintf(stderr, "usage: vethpair SRV_NS CLI_NS SRV_ADDR CLI_ADDR\n");
		return 2;
	}
	if (new_ns(argv[2]) || new_ns(argv[1]))
		return 1;
	/* Here: the server's namespace; the peer end goes to the client's. */
	cli = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (cli < 0)
		return fail(argv[2]);
	err = veth_add("zsrv", "zcli", cli);
	if (err) {
		errno = -err;
		return fail("RTM_NEWLINK veth");
	}
	close(cli);
	return setup_end(argv[1], "zsrv", argv[3]) ||
	       setup_end(argv[2], "zcli", argv[4]);
}
