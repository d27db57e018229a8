/*
 * http_date.c - HTTP-date parsing and formatting (http_parser.h).
 *
 * Calendar arithmetic is done here on integers, proleptic Gregorian, UTC:
 * no timegm (not in C11, and it consults the time zone machinery), no
 * strptime/strftime (locale), no struct tm limits.  days_from_civil and
 * civil_from_days are the well-known era/day-of-era formulas (a 400-year
 * era has exactly 146097 days; counting years from March puts the leap
 * day last).  Every value is range-checked before arithmetic, so nothing
 * here can overflow.
 */
#include <string.h>
#include <time.h>

#include "http_parser.h"

static const char wday_short[7][4] = {
	"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat",
};
static const char *const wday_long[7] = {
	"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
	"Saturday",
};
static const char month_name[12][4] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);			/* 0..399 */
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;	/* 0..365 */
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;		/* 0..146096 */
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
	static const unsigned char dim[12] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31,
	};

	return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* Exactly n digits at s; -1 if any is not a digit. */
static int digits(const char *s, int n)
{
	int x = 0, i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	return x;
}

static int month_of(const char *s)
{
	int i;

	for (i = 0; i < 12; i++)
		if (memcmp(s, month_name[i], 3) == 0)
			return i + 1;
	return -1;
}

static int is_wday_short(const char *s)
{
	int i;

	for (i = 0; i < 7; i++)
		if (memcmp(s, wday_short[i], 3) == 0)
			return 1;
	return 0;
}

/* "HH:MM:SS" -> seconds into the day; -1 if malformed. */
static int64_t time_of_day(const char *s)
{
	int h = digits(s, 2), m = digits(s + 3, 2), sec = digits(s + 6, 2);

	if (s[2] != ':' || s[5] != ':' || h < 0 || m < 0 || sec < 0 ||
	    h > 23 || m > 59 || sec > 60)
		return -1;
	return h * 3600 + m * 60 + sec;
}

static int assemble(int64_t y, int m, int d, int64_t tod, int64_t *t)
{
	if (y < 0 || m < 1 || d < 1 || tod < 0 ||
	    (unsigned)d > days_in_month(y, (unsigned)m))
		return -1;
	*t = days_from_civil(y, (unsigned)m, (unsigned)d) * 86400 + tod;
	return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int http_date_parse_at(const char *s, size_t n, int64_t now, int64_t *t)
{
	int64_t tod, y;
	int m, d, i;

	if (n < 24)
		return -1;
	if (s[3] == ',') {
		/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
		if (n != 29 || !is_wday_short(s) || s[4] != ' ' ||
		    s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
		    s[25] != ' ' || memcmp(s + 26, "GMT", 3) != 0)
			return -1;
		d = digits(s + 5, 2);
		m = month_of(s + 8);
		y = digits(s + 12, 4);
		tod = time_of_day(s + 17);
		return assemble(y, m, d, tod, t);
	}
	if (s[3] == ' ') {
		/* asctime: "Sun Nov  6 08:49:37 1994" */
		if (n != 24 || !is_wday_short(s) || s[7] != ' ' ||
		    s[10] != ' ' || s[19] != ' ')
			return -1;
		m = month_of(s + 4);
		d = s[8] == ' ' ? digits(s + 9, 1) : digits(s + 8, 2);
		tod = time_of_day(s + 11);
		y = digits(s + 20, 4);
		return assemble(y, m, d, tod, t);
	}
	/* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
	for (i = 0; i < 7; i++) {
		size_t k = strlen(wday_long[i]);

		if (n != k + 24 || memcmp(s, wday_long[i], k) != 0)
			continue;
		s += k;
		if (s[0] != ',' || s[1] != ' ' || s[4] != '-' || s[8] != '-' ||
		    s[11] != ' ' || s[20] != ' ' || memcmp(s + 21, "GMT", 3) != 0)
			return -1;
		d = digits(s + 2, 2);
		m = month_of(s + 5);
		y = digits(s + 9, 2);
		tod = time_of_day(s + 12);
		if (y >= 0) {
			/* RFC 9110 5.6.7: more than 50 years ahead means the
			 * previous century */
			int64_t cy, cur;
			unsigned cm, cd;

			civil_from_days(floor_div(now, 86400), &cur, &cm, &cd);
			cy = cur - cur % 100 + y;
			if (cy > cur + 50)
				cy -= 100;
			y = cy;
		}
		return assemble(y, m, d, tod, t);
	}
	return -1;
}

int http_date_parse(const char *s, size_t n, int64_t *t)
{
	return http_date_parse_at(s, n, (int64_t)time(NULL), t);
}

static void put2(char *o, unsigned v)
{
	o[0] = (char)('0' + v / 10);
	o[1] = (char)('0' + v % 10);
}

size_t http_date_format(int64_t t, char *out)
{
	/* 0000-01-01T00:00:00Z .. 9999-12-31T23:59:59Z */
	const int64_t lo = -62167219200, hi = 253402300799;
	int64_t days, y, wd;
	unsigned m, d, sod;

	if (t < lo || t > hi)
		return 0;
	days = floor_div(t, 86400);
	sod = (unsigned)(t - days * 86400);
	civil_from_days(days, &y, &m, &d);
	wd = (days % 7 + 11) % 7;	/* 1970-01-01 was a Thursday (4) */

	memcpy(out, wday_short[wd], 3);
	memcpy(out + 3, ", ", 2);
	put2(out + 5, d);
	out[7] = ' ';
	memcpy(out + 8, month_name[m - 1], 3);
	out[11] = ' ';
	put2(out + 12, (unsigned)(y / 100));
	put2(out + 14, (unsigned)(y % 100));
	out[16] = ' ';
	put2(out + 17, sod / 3600);
	out[19] = ':';
	put2(out + 20, sod / 60 % 60);
	out[22] = ':';
	put2(out + 23, sod % 60);
	memcpy(out + 25, " GMT", 5);	/* with the NUL */
	return HTTP_DATE_LEN;
}
