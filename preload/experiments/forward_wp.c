/*
 * forward_wp.c - the experiment behind the forward conversion's verdict
 * (preload/forward.c, docs/preload.md "forward").
 *
 *   forward_wp MODE BLOCK FILE > pipe
 *
 * copies FILE to stdout (a pipe) in BLOCK-byte read()s, the way cat does,
 * and forwards each block in one of these ways:
 *
 *   copy        write(1, buf, n): the plain program
 *   wp-fault    buf is registered with userfaultfd in asynchronous
 *               write-protect mode (UFFD_FEATURE_WP_ASYNC, Linux 6.7+);
 *               after each read PAGEMAP_SCAN re-protects it, before the
 *               write PAGEMAP_SCAN asks whether any page was written since;
 *               unwritten blocks are spliced from the file, written ones
 *               copied.  Every store is seen, the kernel's too - and the
 *               next read() takes one write fault per page.
 *   wp-lift     the same, but the protection is lifted before each read
 *               (UFFDIO_WRITEPROTECT off) and set after it, so the read
 *               takes no faults.  A signal handler that stores into buf
 *               between the read's return and the re-protection would go
 *               unseen: this mode measures, it does not prove.
 *   splice      splice from the file without any check: the upper bound,
 *               and wrong for a program that modifies its buffer.
 *
 * With CHECK=1 in the environment the program stores one byte into every
 * third block between read and write: the wp modes must copy exactly those
 * blocks (and the output stays the file's bytes with that byte changed).
 * It prints "spliced N copied M" on stderr.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.7 uapi, absent from older headers. */
struct zc_page_region {
	uint64_t start, end, categories;
};
struct zc_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
#define ZC_PAGEMAP_SCAN _IOWR('f', 16, struct zc_pm_scan_arg)
#define ZC_PM_SCAN_WP_MATCHING 1
#define ZC_PM_SCAN_CHECK_WPASYNC 2
#define ZC_PAGE_IS_WPALLOWED 1
#define ZC_PAGE_IS_WRITTEN 2
#define ZC_UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#define ZC_UFFD_FEATURE_WP_ASYNC (1 << 15)
#define ZC_UFFD_USER_MODE_ONLY 1

static int pagemap, uffd = -1;

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* arm: write-protect [b, b+n); else: count its written pages. */
static int scan(char *b, size_t n, int arm)
{
	struct zc_page_region r[64];
	struct zc_pm_scan_arg a = {
		.size = sizeof(a),
		.flags = ZC_PM_SCAN_CHECK_WPASYNC |
			 (arm ? ZC_PM_SCAN_WP_MATCHING : 0),
		.start = (uintptr_t)b,
		.end = (uintptr_t)b + n,
		.vec = (uintptr_t)r,
		.vec_len = 64,
		.category_mask = arm ? ZC_PAGE_IS_WPALLOWED : ZC_PAGE_IS_WRITTEN,
		.return_mask = ZC_PAGE_IS_WRITTEN,
	};
	int k = ioctl(pagemap, ZC_PAGEMAP_SCAN, &a);

	if (k < 0)
		die("PAGEMAP_SCAN");
	return k;
}

static void protect(char *b, size_t n, int on)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)b, n },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		die("UFFDIO_WRITEPROTECT");
}

static void setup_wp(char *buf, size_t n)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = ZC_UFFD_FEATURE_WP_ASYNC |
			    ZC_UFFD_FEATURE_WP_UNPOPULATED,
	};
	struct uffdio_register reg = {
		.range = { (uintptr_t)buf, n },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | ZC_UFFD_USER_MODE_ONLY);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("userfaultfd");
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (pagemap < 0)
		die("pagemap");
}

static void out_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(1, p, n);

		if (w <= 0)
			die("write");
		p += w;
		n -= w;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 3 ? argv[1] : "";
	size_t bs = argc > 3 ? strtoul(argv[2], NULL, 0) : 0;
	int in = argc > 3 ? open(argv[3], O_RDONLY) : -1;
	int check = getenv("CHECK") && atoi(getenv("CHECK"));
	int wp = !strcmp(mode, "wp-fault") || !strcmp(mode, "wp-lift");
	int lift = !strcmp(mode, "wp-lift");
	long spliced = 0, copied = 0, block = 0;
	char *buf;
	off_t off = 0;

	if (in < 0 || !bs || (!wp && strcmp(mode, "copy") && strcmp(mode, "splice"))) {
		fprintf(stderr, "usage: %s copy|wp-fault|wp-lift|splice BLOCK FILE\n",
			argv[0]);
		return 2;
	}
	buf = aligned_alloc(4096, (bs + 4095) & ~(size_t)4095);
	if (!buf)
		die("alloc");
	memset(buf, 0, bs);
	if (wp)
		setup_wp(buf, (bs + 4095) & ~(size_t)4095);
	for (;; block++) {
		ssize_t n;

		if (lift)
			protect(buf, bs, 0);
		n = read(in, buf, bs);
		if (n < 0)
			die("read");
		if (n == 0)
			break;
		if (lift)
			protect(buf, bs, 1);
		else if (wp)
			scan(buf, n, 1);
		/* ... the program would run here ... */
		if (check && block % 3 == 1)
			buf[n / 2] ^= 1;
		if (!strcmp(mode, "copy") || (wp && scan(buf, n, 0) > 0)) {
			out_all(buf, n);
			copied++;
		} else {
			loff_t o = off;
			size_t left = n;

			while (left) {
				ssize_t s = splice(in, &o, 1, NULL, left, 0);

				if (s <= 0)
					die("splice");
				left -= s;
			}
			spliced++;
		}
		off += n;
	}
	fprintf(stderr, "spliced %ld copied %ld\n", spliced, copied);
	return 0;
}
