/*
 * fcgi_stdio.c - the FCGI_* calls of libfcgi's fcgi_stdio.h: stdio for
 * programs that may run as CGI or FastCGI.
 *
 * An FCGI_FILE wraps either a stdio FILE or an FCGX_Stream.  FCGI_Accept
 * binds FCGI_stdin/stdout/stderr (_fcgi_sF) to the request's streams; in
 * CGI mode (fd 0 is not a listening socket) its first call binds them to
 * the process's stdio and returns 0, later calls -1.  Until the first
 * FCGI_Accept the three mean the process's stdio.
 */
#define _GNU_SOURCE
#define NO_FCGI_DEFINES
#define HAVE_FPOS 1
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgi_stdio.h>

#include "internal.h"

FCGI_FILE _fcgi_sF[3];

static int accept_calls;
static int cgi_mode;
static char **orig_environ;
extern char **environ;

/* The stdio stream behind fp: one of _fcgi_sF never bound means the
 * process's own stdin, stdout or stderr. */
static FILE *std_of(FCGI_FILE *fp)
{
	if (fp->stdio_stream || fp->fcgx_stream)
		return fp->stdio_stream;
	if (fp == &_fcgi_sF[0])
		return stdin;
	if (fp == &_fcgi_sF[1])
		return stdout;
	if (fp == &_fcgi_sF[2])
		return stderr;
	return NULL;
}

static void bind_std(void)
{
	_fcgi_sF[0] = (FCGI_FILE){ stdin, NULL };
	_fcgi_sF[1] = (FCGI_FILE){ stdout, NULL };
	_fcgi_sF[2] = (FCGI_FILE){ stderr, NULL };
}

int FCGI_Accept(void)
{
	FCGX_Stream *in, *out, *err;
	FCGX_ParamArray envp;
	int rc;

	if (accept_calls++ == 0) {
		orig_environ = environ;
		if (FCGX_IsCGI()) {
			cgi_mode = 1;
			bind_std();
			return 0;
		}
	}
	if (cgi_mode)
		return -1;
	/* The previous request's environment goes away in FCGX_Accept. */
	environ = orig_environ;
	rc = FCGX_Accept(&in, &out, &err, &envp);
	if (rc < 0) {
		environ = orig_environ;
		_fcgi_sF[0] = _fcgi_sF[1] = _fcgi_sF[2] =
			(FCGI_FILE){ NULL, NULL };
		return rc;
	}
	_fcgi_sF[0] = (FCGI_FILE){ NULL, in };
	_fcgi_sF[1] = (FCGI_FILE){ NULL, out };
	_fcgi_sF[2] = (FCGI_FILE){ NULL, err };
	environ = envp;
	return 0;
}

void FCGI_Finish(void)
{
	if (cgi_mode || accept_calls == 0)
		return;
	FCGX_Finish();
	_fcgi_sF[0].fcgx_stream = NULL;
	_fcgi_sF[1].fcgx_stream = NULL;
	_fcgi_sF[2].fcgx_stream = NULL;
	environ = orig_environ;
}

int FCGI_StartFilterData(void)
{
	if (!FCGI_stdin->fcgx_stream)
		return -1;
	return FCGX_StartFilterData(FCGI_stdin->fcgx_stream);
}

void FCGI_SetExitStatus(int status)
{
	if (FCGI_stdin->fcgx_stream)
		FCGX_SetExitStatus(status, FCGI_stdin->fcgx_stream);
}

/* ----------------------------------------------------------------- files */

static FCGI_FILE *wrap(FILE *f, int (*closer)(FILE *))
{
	FCGI_FILE *fp;

	if (!f)
		return NULL;
	if (!(fp = malloc(sizeof(*fp)))) {
		closer(f);
		return NULL;
	}
	fp->stdio_stream = f;
	fp->fcgx_stream = NULL;
	return fp;
}

static int is_std(FCGI_FILE *fp)
{
	return fp >= &_fcgi_sF[0] && fp <= &_fcgi_sF[2];
}

FCGI_FILE *FCGI_fopen(const char *path, const char *mode)
{
	return wrap(fopen(path, mode), fclose);
}

FCGI_FILE *FCGI_fdopen(int fd, const char *mode)
{
	return wrap(fdopen(fd, mode), fclose);
}

FCGI_FILE *FCGI_tmpfile(void)
{
	return wrap(tmpfile(), fclose);
}

FCGI_FILE *FCGI_popen(const char *cmd, const char *type)
{
	return wrap(popen(cmd, type), pclose);
}

int FCGI_pclose(FCGI_FILE *fp)
{
	int r = -1;

	if (fp->stdio_stream)
		r = pclose(fp->stdio_stream);
	fp->stdio_stream = NULL;
	if (!is_std(fp))
		free(fp);
	return r;
}

int FCGI_fclose(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);
	int r = EOF;

	if (f) {
		r = fclose(f);
		fp->stdio_stream = NULL;
	} else if (fp->fcgx_stream) {
		r = FCGX_FClose(fp->fcgx_stream);
		fp->fcgx_stream = NULL;
	}
	if (!is_std(fp))
		free(fp);
	return r;
}

FCGI_FILE *FCGI_freopen(const char *path, const char *mode, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f) {
		if (!(f = freopen(path, mode, f)))
			return NULL;
	} else {
		if (fp->fcgx_stream)
			FCGX_FClose(fp->fcgx_stream);
		fp->fcgx_stream = NULL;
		if (!(f = fopen(path, mode)))
			return NULL;
	}
	fp->stdio_stream = f;
	return fp;
}

int FCGI_fflush(FCGI_FILE *fp)
{
	FILE *f;

	if (!fp)
		return fflush(NULL);
	if ((f = std_of(fp)))
		return fflush(f);
	return fp->fcgx_stream ? FCGX_FFlush(fp->fcgx_stream) : EOF;
}

int FCGI_setvbuf(FCGI_FILE *fp, char *buf, int bufmode, size_t size)
{
	FILE *f = std_of(fp);

	return f ? setvbuf(f, buf, bufmode, size) : -1;
}

void FCGI_setbuf(FCGI_FILE *fp, char *buf)
{
	FILE *f = std_of(fp);

	if (f)
		setbuf(f, buf);
}

/* A FastCGI stream has no position. */
int FCGI_fseek(FCGI_FILE *fp, long offset, int whence)
{
	FILE *f = std_of(fp);

	if (f)
		return fseek(f, offset, whence);
	errno = ESPIPE;
	return -1;
}

int FCGI_ftell(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return (int)ftell(f);
	errno = ESPIPE;
	return -1;
}

void FCGI_rewind(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		rewind(f);
	else
		errno = ESPIPE;
}

int FCGI_fgetpos(FCGI_FILE *fp, fpos_t *pos)
{
	FILE *f = std_of(fp);

	if (f)
		return fgetpos(f, pos);
	errno = ESPIPE;
	return -1;
}

int FCGI_fsetpos(FCGI_FILE *fp, const fpos_t *pos)
{
	FILE *f = std_of(fp);

	if (f)
		return fsetpos(f, pos);
	errno = ESPIPE;
	return -1;
}

/* ----------------------------------------------------------------- input */

int FCGI_fgetc(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return fgetc(f);
	return fp->fcgx_stream ? FCGX_GetChar(fp->fcgx_stream) : EOF;
}

int FCGI_getchar(void)
{
	return FCGI_fgetc(FCGI_stdin);
}

int FCGI_ungetc(int c, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return ungetc(c, f);
	return fp->fcgx_stream ? FCGX_UnGetChar(c, fp->fcgx_stream) : EOF;
}

char *FCGI_fgets(char *str, int size, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return fgets(str, size, f);
	return fp->fcgx_stream ? FCGX_GetLine(str, size, fp->fcgx_stream)
			       : NULL;
}

/* gets(3): a line without its newline, unbounded (as the interface is). */
char *FCGI_gets(char *str)
{
	char *p = str;
	int c;

	while ((c = FCGI_getchar()) != EOF && c != '\n')
		*p++ = (char)c;
	if (c == EOF && p == str)
		return NULL;
	*p = 0;
	return str;
}

/* fread/fwrite on a FastCGI stream: items moved, in pieces of at most
 * INT_MAX bytes (the FCGX calls take an int). */
static size_t fcgx_items(void *ptr, size_t size, size_t nmemb,
			 FCGX_Stream *s, bool writing)
{
	size_t want, done = 0;

	if (!s || size == 0 || nmemb == 0 || nmemb > SIZE_MAX / size)
		return 0;
	want = size * nmemb;
	while (done < want) {
		int k = want - done > INT32_MAX ? INT32_MAX : (int)(want - done);
		int n = writing ? FCGX_PutStr((char *)ptr + done, k, s)
				: FCGX_GetStr((char *)ptr + done, k, s);

		if (n <= 0)
			break;
		done += (size_t)n;
		if (n < k)
			break;
	}
	return done / size;
}

size_t FCGI_fread(void *ptr, size_t size, size_t nmemb, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return fread(ptr, size, nmemb, f);
	return fcgx_items(ptr, size, nmemb, fp->fcgx_stream, false);
}

/* ---------------------------------------------------------------- output */

int FCGI_fputc(int c, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return fputc(c, f);
	return fp->fcgx_stream ? FCGX_PutChar(c, fp->fcgx_stream) : EOF;
}

int FCGI_putchar(int c)
{
	return FCGI_fputc(c, FCGI_stdout);
}

int FCGI_fputs(const char *str, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return fputs(str, f);
	return fp->fcgx_stream ? FCGX_PutS(str, fp->fcgx_stream) : EOF;
}

int FCGI_puts(const char *str)
{
	if (FCGI_fputs(str, FCGI_stdout) == EOF)
		return EOF;
	return FCGI_fputc('\n', FCGI_stdout);
}

size_t FCGI_fwrite(void *ptr, size_t size, size_t nmemb, FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return fwrite(ptr, size, nmemb, f);
	return fcgx_items(ptr, size, nmemb, fp->fcgx_stream, true);
}

int FCGI_vfprintf(FCGI_FILE *fp, const char *format, va_list ap)
{
	FILE *f = std_of(fp);

	if (f)
		return vfprintf(f, format, ap);
	return fp->fcgx_stream ? FCGX_VFPrintF(fp->fcgx_stream, format, ap)
			       : EOF;
}

int FCGI_vprintf(const char *format, va_list ap)
{
	return FCGI_vfprintf(FCGI_stdout, format, ap);
}

int FCGI_fprintf(FCGI_FILE *fp, const char *format, ...)
{
	int r;

	ZCF_VARARGS(r, format, FCGI_vfprintf(fp, format, zcf_ap));
	return r;
}

int FCGI_printf(const char *format, ...)
{
	int r;

	ZCF_VARARGS(r, format, FCGI_vfprintf(FCGI_stdout, format, zcf_ap));
	return r;
}

void FCGI_perror(const char *str)
{
	const char *msg = strerror(errno);

	if (str && *str)
		FCGI_fprintf(FCGI_stderr, "%s: %s\n", str, msg);
	else
		FCGI_fprintf(FCGI_stderr, "%s\n", msg);
}

/* ------------------------------------------------------------- the state */

int FCGI_feof(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return feof(f);
	return fp->fcgx_stream ? FCGX_HasSeenEOF(fp->fcgx_stream) : 0;
}

int FCGI_ferror(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		return ferror(f);
	return fp->fcgx_stream ? FCGX_GetError(fp->fcgx_stream) : 0;
}

void FCGI_clearerr(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	if (f)
		clearerr(f);
	else if (fp->fcgx_stream)
		FCGX_ClearError(fp->fcgx_stream);
}

int FCGI_fileno(FCGI_FILE *fp)
{
	FILE *f = std_of(fp);

	return f ? fileno(f) : -1;
}
