/*
 * netns.h - a veth pair between network namespaces with tx checksumming
 * off, for the guest's checksum tests: t11_csum.c (Container Shipping
 * sends) and tests/zchttpd/vethpair.c (zchttpd end to end).  Netlink and
 * ioctls only: the guest has no iproute2 or ethtool, and musl ships no
 * kernel headers.  Also TCP's error counters of the current namespace,
 * and switching tail loss probes off.
 */
#ifndef ZC_GUEST_NETNS_H
#define ZC_GUEST_NETNS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The uapi bits needed here. */
#define NL_ROUTE		0
#define RTM_NEWLINK_		16
#define NLMSG_ERROR_		2
#define NLM_F_REQUEST_		0x001
#define NLM_F_ACK_		0x004
#define NLM_F_EXCL_		0x200
#define NLM_F_CREATE_		0x400
#define IFLA_IFNAME_		3
#define IFLA_LINKINFO_		18
#define IFLA_NET_NS_FD_		28
#define IFLA_INFO_KIND_		1
#define IFLA_INFO_DATA_		2
#define VETH_INFO_PEER_		1
#define SIOCETHTOOL_		0x8946
#define ETHTOOL_GTXCSUM_	0x16
#define ETHTOOL_STXCSUM_	0x17

struct nl_hdr {
	uint32_t len;
	uint16_t type, flags;
	uint32_t seq, pid;
};

struct if_info {
	uint8_t family, pad;
	uint16_t type;
	int32_t index;
	uint32_t flags, change;
};

struct rt_attr {
	uint16_t len, type;
};

struct sockaddr_netlink {
	sa_family_t family;
	unsigned short pad;
	uint32_t pid, groups;
};

struct ethtool_val {
	uint32_t cmd, data;
};

/* ------------------------------------------------------------ netlink */

static char nlbuf[512];
static size_t nlused;

static inline struct rt_attr *nl_put(int type, const void *data, size_t len)
{
	struct rt_attr *a;

	nlused = (nlused + 3) & ~(size_t)3;
	if (nlused + sizeof(*a) + len > sizeof(nlbuf))
		return NULL;
	a = (struct rt_attr *)(nlbuf + nlused);
	a->type = (uint16_t)type;
	a->len = (uint16_t)(sizeof(*a) + len);
	if (len)
		memcpy(a + 1, data, len);
	nlused += sizeof(*a) + len;
	return a;
}

static inline void nl_end(struct rt_attr *nest)
{
	nest->len = (uint16_t)(nlbuf + nlused - (char *)nest);
}

/* Create veth pair a (here) <-> b (in the netns peer_ns); 0 or -errno. */
static inline int veth_add(const char *a, const char *b, int peer_ns)
{
	struct sockaddr_netlink sa = { .family = AF_NETLINK };
	struct nl_hdr *h = (struct nl_hdr *)nlbuf;
	struct rt_attr *li, *data, *peer;
	struct if_info ifi = { 0 };
	uint32_t nsfd = (uint32_t)peer_ns;
	char reply[512];
	ssize_t r;
	int fd, err = -EIO;

	memset(nlbuf, 0, sizeof(nlbuf));
	h->type = RTM_NEWLINK_;
	h->flags = NLM_F_REQUEST_ | NLM_F_ACK_ | NLM_F_CREATE_ | NLM_F_EXCL_;
	h->seq = 1;
	nlused = sizeof(*h);
	memcpy(nlbuf + nlused, &ifi, sizeof(ifi));
	nlused += sizeof(ifi);
	if (!nl_put(IFLA_IFNAME_, a, strlen(a) + 1))
		return -ENOSPC;
	li = nl_put(IFLA_LINKINFO_, NULL, 0);
	if (!li || !nl_put(IFLA_INFO_KIND_, "veth", 5))
		return -ENOSPC;
	data = nl_put(IFLA_INFO_DATA_, NULL, 0);
	peer = data ? nl_put(VETH_INFO_PEER_, NULL, 0) : NULL;
	if (!peer)
		return -ENOSPC;
	memcpy(nlbuf + nlused, &ifi, sizeof(ifi));
	nlused += sizeof(ifi);
	if (!nl_put(IFLA_IFNAME_, b, strlen(b) + 1) ||
	    !nl_put(IFLA_NET_NS_FD_, &nsfd, sizeof(nsfd)))
		return -ENOSPC;
	nl_end(peer);
	nl_end(data);
	nl_end(li);
	h->len = (uint32_t)nlused;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NL_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, nlbuf, nlused, 0, (void *)&sa, sizeof(sa)) < 0) {
		err = -errno;
	} else {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 10000) == 1 &&
		    (r = recv(fd, reply, sizeof(reply), 0)) >=
		    (ssize_t)(sizeof(struct nl_hdr) + sizeof(int)) &&
		    ((struct nl_hdr *)reply)->type == NLMSG_ERROR_)
			memcpy(&err, reply + sizeof(struct nl_hdr), sizeof(int));
	}
	close(fd);
	return err;
}

/* ----------------------------------------------------------- ifconfig */

/* A socket for interface ioctls, and ifr zeroed and naming name; -1. */
static inline int ifreq_socket(struct ifreq *ifr, const char *name)
{
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, IFNAMSIZ, "%s", name);
	return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

/* Bring interface name up, with addr/24 unless addr is NULL (lo). */
static inline int if_up(const char *name, const char *addr)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	int fd = ifreq_socket(&ifr, name);
	int ret = -1;

	if (fd < 0)
		return -1;
	sin->sin_family = AF_INET;
	if (addr) {
		inet_pton(AF_INET, addr, &sin->sin_addr);
		if (ioctl(fd, SIOCSIFADDR, &ifr))
			goto out;
		inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr);
		if (ioctl(fd, SIOCSIFNETMASK, &ifr))
			goto out;
	}
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		goto out;
	ifr.ifr_flags |= IFF_UP;
	ret = ioctl(fd, SIOCSIFFLAGS, &ifr);
out:
	close(fd);
	return ret;
}

/* Switch tx checksumming off; returns the setting read back (0 = off). */
static inline int tx_csum_off(const char *name)
{
	struct ethtool_val ev = { ETHTOOL_STXCSUM_, 0 };
	struct ifreq ifr;
	int fd = ifreq_socket(&ifr, name);
	int ret = -1;

	if (fd < 0)
		return -1;
	ifr.ifr_data = (void *)&ev;
	if (ioctl(fd, SIOCETHTOOL_, &ifr) == 0) {
		ev.cmd = ETHTOOL_GTXCSUM_;
		ev.data = 1;
		if (ioctl(fd, SIOCETHTOOL_, &ifr) == 0)
			ret = (int)ev.data;
	}
	close(fd);
	return ret;
}

/* --------------------------------------------------------------- snmp */

struct snmp {
	long long retrans, csum_err, in_err, probes, timeouts;
};

/* The counter name of the line pair proto in file (current netns); -1. */
static inline long long proto_stat(const char *file, const char *proto,
			    const char *name)
{
	char names[4096], vals[4096];
	char *n, *v, *sn, *sv;
	FILE *f = fopen(file, "r");
	size_t plen = strlen(proto);
	long long val = -1;

	if (!f)
		return -1;
	while (val < 0 && fgets(names, sizeof(names), f)) {
		if (strncmp(names, proto, plen) || !fgets(vals, sizeof(vals), f))
			continue;
		for (n = strtok_r(names, " \n", &sn), v = strtok_r(vals, " \n", &sv);
		     n && v;
		     n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv))
			if (!strcmp(n, name)) {
				val = atoll(v);
				break;
			}
	}
	fclose(f);
	return val;
}

/* TCP's error and retransmit counters of the current netns. */
static inline int snmp_read(struct snmp *s)
{
	s->retrans = proto_stat("/proc/net/snmp", "Tcp:", "RetransSegs");
	s->csum_err = proto_stat("/proc/net/snmp", "Tcp:", "InCsumErrors");
	s->in_err = proto_stat("/proc/net/snmp", "Tcp:", "InErrs");
	s->probes = proto_stat("/proc/net/netstat", "TcpExt:", "TCPLossProbes");
	s->timeouts = proto_stat("/proc/net/netstat", "TcpExt:", "TCPTimeouts");
	return s->retrans >= 0 && s->csum_err >= 0 && s->in_err >= 0 ? 0 : -1;
}

/*
 * No tail loss probes in this netns: under TCG a delayed ACK can outlast
 * the probe timeout (min 10 ms) and a probe counts as a retransmit; the
 * retransmits this test must see at zero are the ones a bad checksum
 * causes (drop, then RTO).
 */
static inline int no_tlp(void)
{
	int fd = open("/proc/sys/net/ipv4/tcp_early_retrans", O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

#endif
