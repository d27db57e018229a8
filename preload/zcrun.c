/*
 * zcrun - run a program under libzc-preload.so.
 *
 *   zcrun [--stats] [--stats-file=F] [--disable=LIST] [--enable=LIST]
 *         [--no-follow] -- prog [args...]
 *
 * It only prepares the environment (LD_PRELOAD and the ZC_* variables of
 * docs/preload.md) and executes prog in its own place, so prog's exit
 * status, signals and descriptors are its own.  Before that it looks at
 * the file and says (on stderr; prog still runs) when the preload cannot
 * take effect:
 *
 *   - statically linked: no dynamic loader, nothing to preload into;
 *   - set-user-ID / set-group-ID, or with file capabilities: when it gains
 *     privileges the loader runs in secure-execution mode and ignores
 *     LD_PRELOAD.
 *
 * musl programs are run with the preload: it loads there (the musl loader
 * maps our libc.so.6 dependency onto itself) and converts what does not
 * depend on glibc (pipe, mapwrite); stdio passes through.
 *
 * The preload is found next to zcrun (the build tree: both are built into
 * <builddir>/preload/) or at its installed path.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "conv_names.h"

#ifndef ZC_PRELOAD_INSTALLED
#define ZC_PRELOAD_INSTALLED "/usr/local/lib/libzc-preload.so"
#endif

#define NAME(e, name) name,
static const char *const conversions[] = { ZCP_CONVERSIONS(NAME) NULL };
#undef NAME
/* Conversions with cases that only ZC_ENABLE switches on. */
static const char *const optins[] = { "mapwrite", NULL };

static void usage(FILE *to)
{
	fputs("Usage: zcrun [--stats] [--stats-file=FILE] [--disable=LIST] [--enable=LIST]\n"
	      "             [--no-follow] -- PROGRAM [ARGS...]\n"
	      "Run PROGRAM with libzc-preload.so (zero-copy conversions of unmodified programs).\n"
	      "  --stats            per-conversion table on stderr when each process ends\n"
	      "  --stats-file=FILE  append one JSON object per process to FILE\n"
	      "  --disable=LIST     switch conversions off: pipe,mapwrite,forward,stdio or all\n"
	      "  --enable=LIST      also convert the cases not proven identical: mapwrite\n"
	      "  --no-follow        programs PROGRAM executes run without the preload\n"
	      "See docs/preload.md.\n", to);
}

static bool in_list(const char *const *names, const char *s, size_t n)
{
	for (; *names; names++)
		if (strlen(*names) == n && !strncmp(*names, s, n))
			return true;
	return false;
}

/* Every name of a comma list is known (or "all"). */
static bool valid_list(const char *list, const char *const *names)
{
	if (!*list)
		return false;
	while (*list) {
		size_t n = strcspn(list, ",");

		if (!(n == 3 && !strncmp(list, "all", 3)) &&
		    !in_list(names, list, n))
			return false;
		list += n;
		if (*list == ',')
			list++;
	}
	return true;
}

static const char *find_preload(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	char *slash;

	if (n > 0) {
		path[n] = '\0';
		slash = strrchr(path, '/');
		if (slash) {
			strcpy(slash + 1, "libzc-preload.so");
			if (access(path, R_OK) == 0)
				return path;
		}
	}
	if (access(ZC_PRELOAD_INSTALLED, R_OK) == 0)
		return ZC_PRELOAD_INSTALLED;
	return NULL;
}

/* The file execvp would run for prog, or NULL. */
static const char *resolve(const char *prog, char *buf, size_t cap)
{
	const char *path = getenv("PATH"), *p;

	if (strchr(prog, '/'))
		return prog;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p += strcspn(p, ":") + 1) {
		size_t n = strcspn(p, ":");

		if (snprintf(buf, cap, "%.*s%s%s", (int)n, p, n ? "/" : "",
			     prog) < (int)cap &&
		    access(buf, X_OK) == 0)
			return buf;
		if (!p[n])
			return NULL;
	}
}

enum link { L_UNKNOWN, L_STATIC, L_DYNAMIC };

/* ELF with a PT_INTERP is dynamic; one without is static. */
static enum link elf_link(int fd, char *interp, size_t cap)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	interp[0] = '\0';
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph))
		return L_UNKNOWN;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return L_UNKNOWN;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) !=
		    sizeof(ph))
			return L_UNKNOWN;
		if (ph.p_type == PT_INTERP) {
			size_t n = ph.p_filesz < cap ? ph.p_filesz : cap - 1;

			if (pread(fd, interp, n, ph.p_offset) != (ssize_t)n)
				return L_UNKNOWN;
			interp[n] = '\0';
			return L_DYNAMIC;
		}
	}
	return L_STATIC;
}

/* Warn about what keeps the preload from taking effect in file. */
static void inspect(const char *file, int depth)
{
	char interp[PATH_MAX], line[PATH_MAX + 3];
	struct stat st;
	int fd;
	ssize_t n;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return; /* exec will say what is wrong */
	}
	if (st.st_mode & (S_ISUID | S_ISGID))
		fprintf(stderr,
			"zcrun: warning: %s is %s: when it runs with raised privileges the "
			"loader ignores LD_PRELOAD (secure-execution mode), so it runs "
			"without the preload\n",
			file, (st.st_mode & S_ISUID) ? "setuid (set-user-ID)"
						     : "setgid (set-group-ID)");
	else if (fgetxattr(fd, "security.capability", NULL, 0) > 0)
		fprintf(stderr,
			"zcrun: warning: %s has file capabilities: the loader ignores "
			"LD_PRELOAD for it (secure-execution mode), so it runs without "
			"the preload\n", file);
	switch (elf_link(fd, interp, sizeof(interp))) {
	case L_STATIC:
		fprintf(stderr,
			"zcrun: warning: %s is statically linked: there is no dynamic "
			"loader to load the preload, so zcrun cannot help it; running it "
			"unchanged\n", file);
		break;
	case L_DYNAMIC:
		break;
	case L_UNKNOWN:
		/* A script: the interpreter is what gets loaded. */
		n = pread(fd, line, sizeof(line) - 1, 0);
		if (depth == 0 && n > 2 && line[0] == '#' && line[1] == '!') {
			char *p = line + 2, *e;

			line[n] = '\0';
			p += strspn(p, " \t");
			e = p + strcspn(p, " \t\n");
			*e = '\0';
			if (*p)
				inspect(p, depth + 1);
		}
		break;
	}
	close(fd);
}

/* name=value, prepending to a list variable (value first). */
static void prepend_env(const char *name, const char *value, char sep)
{
	const char *old = getenv(name);
	char *v;

	if (!old || !*old || strstr(old, value)) {
		if (!old || !*old)
			setenv(name, value, 1);
		return;
	}
	if (asprintf(&v, "%s%c%s", value, sep, old) < 0) {
		perror("zcrun");
		exit(127);
	}
	setenv(name, v, 1);
	free(v);
}

int main(int argc, char **argv)
{
	const char *stats_file = NULL, *disable = NULL, *enable = NULL;
	bool stats = false, nofollow = false;
	char buf[PATH_MAX];
	const char *preload, *file;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "--stats")) {
			stats = true;
		} else if (!strncmp(a, "--stats-file=", 13) && a[13]) {
			stats_file = a + 13;
		} else if (!strncmp(a, "--disable=", 10) &&
			   valid_list(a + 10, conversions)) {
			disable = a + 10;
		} else if (!strncmp(a, "--enable=", 9) &&
			   valid_list(a + 9, optins)) {
			enable = a + 9;
		} else if (!strcmp(a, "--no-follow")) {
			nofollow = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-') {
			fprintf(stderr, "zcrun: bad option '%s'\n", a);
			usage(stderr);
			return 2;
		} else {
			break; /* the program, without "--" */
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}

	preload = find_preload();
	if (!preload) {
		fprintf(stderr, "zcrun: libzc-preload.so not found next to zcrun "
			"nor at %s\n", ZC_PRELOAD_INSTALLED);
		return 127;
	}
	file = resolve(argv[i], buf, sizeof(buf));
	if (file)
		inspect(file, 0);

	prepend_env("LD_PRELOAD", preload, ':');
	if (stats)
		setenv("ZC_STATS", "1", 1);
	if (stats_file) {
		/* Absolute: the program and its children may change directory. */
		char *abs = NULL, cwd[PATH_MAX];

		if (stats_file[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
		    asprintf(&abs, "%s/%s", cwd, stats_file) < 0)
			abs = NULL;
		setenv("ZC_STATS_FILE", abs ? abs : stats_file, 1);
		free(abs);
	}
	if (disable)
		prepend_env("ZC_DISABLE", disable, ',');
	if (enable)
		prepend_env("ZC_ENABLE", enable, ',');
	if (nofollow)
		setenv("ZC_NOFOLLOW", "1", 1);

	execvp(argv[i], argv + i);
	fprintf(stderr, "zcrun: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
