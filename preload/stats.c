/*
 * stats.c - per-conversion counters and their report.
 *
 * Counters are relaxed atomics, so any thread and any signal handler may
 * count.  Pass-through reasons are static strings kept in a small table per
 * conversion, claimed with a compare-and-swap (no lock: a hook may run in a
 * signal handler that interrupted another hook).
 *
 * The report is written when a process image ends (preload.c decides when)
 * and must itself be async-signal-safe: _exit() is often called from a
 * signal handler.  So it is formatted by hand into a stack buffer - no
 * malloc, no stdio - and each destination gets a single write(2):
 *
 *   table  on stderr, human-readable (ZC_STATS=1)
 *   JSON   one line appended to ZC_STATS_FILE, opened O_APPEND, so lines
 *          from concurrent processes never interleave:
 *          {"pid":N,"exe":"...","conversions":{"pipe":{"seen":N,
 *           "converted":N,"bytes_zero_copy":N,"passed":{"reason":N}},...}}
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

#define NREASON 24

struct reason {
	const char *_Atomic text;
	atomic_uint_fast64_t n;
};

struct counters {
	atomic_uint_fast64_t seen, converted, bytes;
	struct reason passed[NREASON];
	atomic_uint_fast64_t other; /* reasons beyond the table */
};

static struct counters stats[ZCP_NCONV];

void zcp_seen(enum zcp_conv c)
{
	atomic_fetch_add_explicit(&stats[c].seen, 1, memory_order_relaxed);
}

void zcp_converted(enum zcp_conv c, uint64_t bytes)
{
	atomic_fetch_add_explicit(&stats[c].converted, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&stats[c].bytes, bytes, memory_order_relaxed);
}

void zcp_passed(enum zcp_conv c, const char *reason)
{
	struct reason *r = stats[c].passed;
	int i;

	for (i = 0; i < NREASON; i++) {
		const char *t = atomic_load_explicit(&r[i].text,
						     memory_order_acquire);

		if (!t) {
			const char *expect = NULL;

			if (atomic_compare_exchange_strong(&r[i].text, &expect,
							   reason))
				t = reason;
			else
				t = expect; /* someone claimed it: compare */
		}
		if (t == reason || !strcmp(t, reason)) {
			atomic_fetch_add_explicit(&r[i].n, 1,
						  memory_order_relaxed);
			return;
		}
	}
	atomic_fetch_add_explicit(&stats[c].other, 1, memory_order_relaxed);
}

/* Zero the counts (fork child, after reporting at exec); keep the texts. */
void zcp_stats_reset(void)
{
	int c, i;

	for (c = 0; c < ZCP_NCONV; c++) {
		atomic_store(&stats[c].seen, 0);
		atomic_store(&stats[c].converted, 0);
		atomic_store(&stats[c].bytes, 0);
		atomic_store(&stats[c].other, 0);
		for (i = 0; i < NREASON; i++)
			atomic_store(&stats[c].passed[i].n, 0);
	}
}

bool zcp_stats_any(void)
{
	int c;

	for (c = 0; c < ZCP_NCONV; c++)
		if (atomic_load(&stats[c].seen) ||
		    atomic_load(&stats[c].converted))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Formatting without libc's formatted output.                          */

struct out {
	char *p;
	size_t len, cap;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->cap) {
		o->full = true;
		n = o->cap - o->len;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void putu(struct out *o, uint64_t v)
{
	char b[24];
	int i = sizeof(b);

	do
		b[--i] = '0' + v % 10;
	while (v /= 10);
	put(o, b + i, sizeof(b) - i);
}

/* Right-aligned in width w (the table). */
static void putu_w(struct out *o, uint64_t v, int w)
{
	char b[24];
	int i = sizeof(b);

	do
		b[--i] = '0' + v % 10;
	while (v /= 10);
	while ((int)sizeof(b) - i < w && i > 0)
		b[--i] = ' ';
	put(o, b + i, sizeof(b) - i);
}

static void put_json_str(struct out *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	put(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', c };

			put(o, e, 2);
		} else if (c < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4],
				      hex[c & 15] };

			put(o, e, 6);
		} else {
			put(o, (const char *)&c, 1);
		}
	}
	put(o, "\"", 1);
}

static void exe_path(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);

	buf[n > 0 ? n : 0] = '\0';
}

static void format_json(struct out *o, const char *exe)
{
	int c, i;

	puts_(o, "{\"pid\":");
	putu(o, getpid());
	puts_(o, ",\"exe\":");
	put_json_str(o, exe);
	puts_(o, ",\"conversions\":{");
	for (c = 0; c < ZCP_NCONV; c++) {
		struct counters *s = &stats[c];
		bool first = true;

		if (c)
			puts_(o, ",");
		put_json_str(o, zcp_conv_name(c));
		puts_(o, ":{\"seen\":");
		putu(o, atomic_load(&s->seen));
		puts_(o, ",\"converted\":");
		putu(o, atomic_load(&s->converted));
		puts_(o, ",\"bytes_zero_copy\":");
		putu(o, atomic_load(&s->bytes));
		puts_(o, ",\"passed\":{");
		for (i = 0; i < NREASON; i++) {
			const char *t = atomic_load(&s->passed[i].text);
			uint64_t n = atomic_load(&s->passed[i].n);

			if (!t || !n)
				continue;
			if (!first)
				puts_(o, ",");
			first = false;
			put_json_str(o, t);
			puts_(o, ":");
			putu(o, n);
		}
		if (atomic_load(&s->other)) {
			if (!first)
				puts_(o, ",");
			puts_(o, "\"other\":");
			putu(o, atomic_load(&s->other));
		}
		puts_(o, "}}");
	}
	puts_(o, "}}\n");
}

static void format_table(struct out *o, const char *exe)
{
	int c, i;

	puts_(o, "zc-preload: pid ");
	putu(o, getpid());
	puts_(o, " ");
	puts_(o, exe);
	puts_(o, "\nzc-preload: conversion        seen   converted  bytes_zero_copy\n");
	for (c = 0; c < ZCP_NCONV; c++) {
		struct counters *s = &stats[c];
		const char *name = zcp_conv_name(c);

		puts_(o, "zc-preload: ");
		puts_(o, name);
		put(o, "            ", 12 - strlen(name));
		putu_w(o, atomic_load(&s->seen), 10);
		putu_w(o, atomic_load(&s->converted), 12);
		putu_w(o, atomic_load(&s->bytes), 17);
		puts_(o, "\n");
		for (i = 0; i < NREASON; i++) {
			const char *t = atomic_load(&s->passed[i].text);
			uint64_t n = atomic_load(&s->passed[i].n);

			if (!t || !n)
				continue;
			puts_(o, "zc-preload:   passed ");
			putu_w(o, n, 8);
			puts_(o, "  ");
			puts_(o, t);
			puts_(o, "\n");
		}
		if (atomic_load(&s->other)) {
			puts_(o, "zc-preload:   passed ");
			putu_w(o, atomic_load(&s->other), 8);
			puts_(o, "  (other reasons)\n");
		}
	}
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = zcp_real.write ? zcp_real.write(fd, p, n)
					   : write(fd, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= w;
	}
}

void zcp_stats_emit(int table_fd, const char *json_path)
{
	char exe[1024];
	char buf[8192];
	struct out o = { .p = buf, .cap = sizeof(buf) };

	exe_path(exe, sizeof(exe));
	if (table_fd >= 0) {
		format_table(&o, exe);
		write_all(table_fd, o.p, o.len);
	}
	if (json_path) {
		int fd = open(json_path,
			      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0)
			return;
		o.len = 0;
		o.full = false;
		format_json(&o, exe);
		/* A truncated object is worse than none. */
		if (!o.full)
			(void)(zcp_real.write ? zcp_real.write(fd, o.p, o.len)
					      : write(fd, o.p, o.len));
		if (zcp_real.close)
			zcp_real.close(fd);
		else
			close(fd);
	}
}
