/*-------------------------------------------------------------------------
 *
 * encode_test.c
 *		Unit tests of the mapping of lock names to node names
 *		(src/names/lock_name.c), without ZooKeeper or PostgreSQL: names of every
 *		byte, in every position, and thousands of random names come back
 *		from their encoding unchanged; and decoding accepts exactly what
 *		the encoding writes: no lower-case hex, no escape of a byte that is
 *		written plain, no %00, nothing cut short, nothing longer than the
 *		longest name (an exhaustive check over short strings of the
 *		characters that matter compares the decoder with the encoder).
 *		Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names/lock_name.h"
#include "unit_tap.h"

#define MAX_LEN 255				/* as ZKL_MAX_NAME_LEN */

/* Whether name (len bytes) decodes from its encoding to itself. */
static int
round_trip(const char *name, int len)
{
	char		encoded[ZKL_ENCODED_SIZE(MAX_LEN)];
	char		decoded[MAX_LEN + 1];
	int			n = zkl_name_encode(name, len, encoded);

	if (n != (int) strlen(encoded))
		return 0;
	return zkl_name_decode(encoded, decoded, MAX_LEN) == len &&
		memcmp(decoded, name, len) == 0 && decoded[len] == '\0';
}

/* Whether encoded is refused. */
static int
refused(const char *encoded)
{
	char		decoded[MAX_LEN + 1];

	return zkl_name_decode(encoded, decoded, MAX_LEN) == -1;
}

/*
 * Whether the decoder accepts s exactly when the encoder writes it: s
 * decodes, and the name it decodes to encodes to s again.
 */
static int
canonical_iff_accepted(const char *s)
{
	char		decoded[MAX_LEN + 1];
	char		again[ZKL_ENCODED_SIZE(MAX_LEN)];
	int			n = zkl_name_decode(s, decoded, MAX_LEN);

	if (n < 0)
	{
		/* Refused: no name of 1 to MAX_LEN bytes without NUL encodes to s. */
		return 1;
	}
	if (n == 0 || memchr(decoded, '\0', n) != NULL)
		return 0;
	zkl_name_encode(decoded, n, again);
	return strcmp(again, s) == 0;
}

static void
test_round_trips(void)
{
	char		name[MAX_LEN];
	int			ok = 1;
	unsigned int seed = 23;

	/* Every byte but NUL alone, first and after another byte. */
	for (int c = 1; c < 256 && ok; c++)
	{
		name[0] = (char) c;
		ok = round_trip(name, 1);
		name[0] = 'x';
		name[1] = (char) c;
		ok = ok && round_trip(name, 2);
		name[0] = (char) c;
		name[1] = (char) c;
		ok = ok && round_trip(name, 2);
	}
	check(ok, "every byte, first and not first, comes back from its encoding");

	check(round_trip("abc.json", 8) && round_trip("a/b", 3) && round_trip("%", 1) &&
		  round_trip("%25", 3) && round_trip("..", 2) && round_trip(".", 1) &&
		  round_trip("a..b", 4) && round_trip(" ", 1) && round_trip("\xc3\xa9t\xc3\xa9", 5),
		  "names with dots, slashes, percents, spaces and UTF-8 come back");

	memset(name, '\xff', MAX_LEN);
	check(round_trip(name, MAX_LEN), "the longest name, every byte escaped, comes back");

	for (int i = 0; i < 5000 && ok; i++)
	{
		int			len;

		seed = seed * 1103515245 + 12345;
		len = 1 + (int) ((seed >> 8) % MAX_LEN);
		for (int k = 0; k < len; k++)
		{
			seed = seed * 1103515245 + 12345;
			/* Mostly the bytes that matter, sometimes any. */
			name[k] = (seed >> 16) % 4 ? ".%/aZ0_-"[(seed >> 8) % 8] : (char) (1 + (seed >> 8) % 255);
		}
		ok = round_trip(name, len);
	}
	check(ok, "5000 random names come back from their encoding");
}

static void
test_encoding(void)
{
	char		encoded[ZKL_ENCODED_SIZE(MAX_LEN)];

	zkl_name_encode(".a.b/%\xe9", 7, encoded);
	check(strcmp(encoded, "%2Ea.b%2F%25%E9") == 0,
		  "a leading dot, a slash, a percent and a high byte are escaped in upper-case hex; a later dot is not");
}

static void
test_refusals(void)
{
	check(refused(""), "an empty node name is no lock name");
	check(refused(".") && refused("..") && refused(".a"), "a leading plain dot is refused");
	check(refused("%2e") && refused("%2f") && refused("%e9") && refused("%E9%c3"),
		  "lower-case hex is refused");
	check(!refused("%2E") && !refused("%2F") && !refused("%E9"), "upper-case hex of bytes that are escaped is accepted");
	check(refused("%61") && refused("%41") && refused("%30") && refused("%5F") &&
		  refused("%2D") && refused("ab%63"),
		  "an escape of a byte that is written plain (letters, digits, _ and -) is refused");
	check(refused("a%2E") && refused("%2E%2E"),
		  "an escaped dot after the first byte is refused (a later dot is written plain)");
	check(refused("%00") && refused("a%00b"), "%00 is refused (a lock name holds no NUL)");
	check(refused("%") && refused("%2") && refused("a%") && refused("%G0") && refused("%0G"),
		  "a cut-short or non-hex escape is refused");
	check(refused("a/b") && refused("a b") && refused("a%b") && refused("\xe9"),
		  "a byte that is always escaped, written plain, is refused");

	{
		char		s[3 * (MAX_LEN + 1) + 1];

		memset(s, 'a', MAX_LEN);
		s[MAX_LEN] = '\0';
		check(!refused(s), "a node name of the longest name is accepted");
		s[MAX_LEN] = 'a';
		s[MAX_LEN + 1] = '\0';
		check(refused(s), "a node name of a name one byte too long is refused");
		for (int i = 0; i <= MAX_LEN; i++)
			zkl_name_percent(s + 3 * i, 0xE9);
		s[3 * (MAX_LEN + 1)] = '\0';
		check(refused(s), "... and so is one of escapes");
	}
}

/*
 * Every string of up to four characters over an alphabet of the
 * characters that matter is accepted exactly when the encoder writes it.
 */
static void
test_exhaustive(void)
{
	static const char alphabet[] = "%.a/0E2e6F1";
	int			k = (int) strlen(alphabet);
	int			bad = 0;
	long		total = 0;
	char		s[5];
	char		first_bad[5] = "";

	for (int len = 1; len <= 4; len++)
	{
		long		count = 1;

		for (int i = 0; i < len; i++)
			count *= k;
		for (long v = 0; v < count; v++)
		{
			long		x = v;

			for (int i = 0; i < len; i++, x /= k)
				s[i] = alphabet[x % k];
			s[len] = '\0';
			total++;
			if (!canonical_iff_accepted(s))
			{
				if (bad++ == 0)
					strcpy(first_bad, s);
			}
		}
	}
	if (bad)
		printf("# %d of %ld strings accepted though no name encodes to them, first \"%s\"\n",
			   bad, total, first_bad);
	check(bad == 0, "every string of up to 4 of \"%.a/0E2e6F1\" is accepted exactly when some name encodes to it");

	/* Every escape %XY of any two bytes, first and after a plain byte. */
	bad = 0;
	for (int hi = 1; hi < 256; hi++)
		for (int lo = 1; lo < 256; lo++)
		{
			char		t[5] = {'%', (char) hi, (char) lo, '\0', '\0'};
			char		u[5] = {'a', '%', (char) hi, (char) lo, '\0'};

			bad += !canonical_iff_accepted(t) + !canonical_iff_accepted(u);
		}
	check(bad == 0, "every %XY of any two bytes is accepted exactly when it is the escape the encoder writes");
}

int
main(void)
{
	test_round_trips();
	test_encoding();
	test_refusals();
	test_exhaustive();
	return tap_done();
}
