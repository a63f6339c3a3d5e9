/*-------------------------------------------------------------------------
 *
 * json_fields_test.c
 *		Unit tests of the reading of node data as JSON (src/rules/json_fields.c),
 *		built as frontend code against PostgreSQL's libpgcommon, without a
 *		server: zklock's description and a published wait are read field by
 *		field, escapes decoded to UTF-8, a later duplicate deciding; and the
 *		hostile data that the fuzz targets (test/fuzz) found harms nothing:
 *		what a reading keeps allocated grows no more than linearly with the
 *		data (a backend keeps it all until its query ends, for every node
 *		of a directory), and JSON nested as deep as ZooKeeper's 1 MB of
 *		data allows is refused without recursing into it.  Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <malloc.h>

#include "mb/pg_wchar.h"

#include "rules/json_fields.h"
#include "unit_tap.h"

static const char *const keys[] = {"system_identifier", "pid", "cluster", "host", "port"};

#define NKEYS ((int) lengthof(keys))

static int
field_is(char *const *f, int k, const char *want)
{
	return want == NULL ? f[k] == NULL : f[k] != NULL && strcmp(f[k], want) == 0;
}

static void
test_description(void)
{
	const char *d = "{\"cluster\":\"caf\\u00e9 \\ud83d\\udd12\",\"system_identifier\":\"7311447301416251424\","
	"\"host\":\"h\\\"1\\\\\",\"port\":5432,\"pid\":48211,\"mode\":\"exclusive\"}";
	char	   *f[NKEYS];

	check(zkl_is_zklock_json(d, strlen(d), PG_UTF8), "description: zklock's");
	check(zkl_json_fields(d, strlen(d), keys, f, NKEYS) &&
		  field_is(f, 0, "7311447301416251424") && field_is(f, 1, "48211") &&
		  field_is(f, 2, "caf\xc3\xa9 \xf0\x9f\x94\x92") && field_is(f, 3, "h\"1\\") &&
		  field_is(f, 4, "5432"), "description: every field, escapes as UTF-8");

	d = "{\"pid\":1,\"pid\":2,\"host\":\"a\",\"host\":{\"x\":1}}";
	check(zkl_json_fields(d, strlen(d), keys, f, NKEYS) && field_is(f, 1, "2") && field_is(f, 3, NULL),
		  "description: a later duplicate decides");
	d = "{\"host\":\"a\\u0000b\",\"pid\":[1]}";
	check(zkl_json_fields(d, strlen(d), keys, f, NKEYS) && field_is(f, 3, NULL) && field_is(f, 1, NULL),
		  "description: no U+0000, no array for a field");
	d = "127.0.0.1";
	check(!zkl_is_zklock_json(d, strlen(d), PG_UTF8) && !zkl_json_fields(d, strlen(d), keys, f, NKEYS) &&
		  f[0] == NULL, "description: Curator's data is none");
	d = "{\"system_identifier\":\"1\"";
	check(!zkl_is_zklock_json(d, strlen(d), PG_UTF8) && !zkl_json_fields(d, strlen(d), keys, f, NKEYS),
		  "description: cut short, none");
}

/* How much the reading of data keeps allocated. */
static size_t
kept_by_reading(const char *data, int len)
{
	char	   *f[NKEYS];
	size_t		before = mallinfo2().uordblks;

	if (!zkl_is_zklock_json(data, len, PG_UTF8) ||
		!zkl_json_fields(data, len, keys, f, NKEYS))
		return (size_t) -1;		/* the test's data is valid */
	return mallinfo2().uordblks - before;
}

/* A JSON object of about size bytes: start, then ",piece" after ",piece". */
static char *
repeated(const char *start, const char *piece, const char *end, int size)
{
	char	   *s = malloc(size + 1);
	int			n = 0;

	n += sprintf(s, "%s", start);
	while (n + strlen(piece) + strlen(end) + 1 < (size_t) size)
		n += sprintf(s + n, ",%s", piece);
	sprintf(s + n, "%s", end);
	return s;
}

static void
test_memory(void)
{
	int			size = 256 * 1024;
	char	   *keys_only = repeated("{\"system_identifier\":\"1\"", "\"a\":0", "}", size);
	char	   *dup_values = repeated("{\"system_identifier\":\"1\"", "\"pid\":\"a\"", "}", size);
	char	   *broken_keys = repeated("{\"system_identifier\":\"1\"", "\"\\udd1f\":0", "}", size);
	size_t		bound = 2 * (size_t) size + 65536;

	check(kept_by_reading(keys_only, strlen(keys_only)) <= bound,
		  "memory: 256 kB of keys keep at most twice their size (fuzz: contender_json_fuzz)");
	check(kept_by_reading(dup_values, strlen(dup_values)) <= bound,
		  "memory: 256 kB of duplicate fields keep at most twice their size (fuzz: waits_fuzz)");
	check(kept_by_reading(broken_keys, strlen(broken_keys)) <= bound,
		  "memory: 256 kB of keys with a broken escape keep at most twice their size (fuzz: contender_json_fuzz)");
	free(keys_only);
	free(dup_values);
	free(broken_keys);
}

static void
test_depth(void)
{
	int			depth = 500000;
	const char *start = "{\"system_identifier\":\"1\",\"x\":";
	char	   *s = malloc(strlen(start) + 2 * depth + 2);
	int			n = sprintf(s, "%s", start);
	char	   *f[NKEYS];
	const char *ok = "{\"system_identifier\":\"1\",\"x\":[[[{\"y\":[1]}]]],\"pid\":3}";

	memset(s + n, '[', depth);
	memset(s + n + depth, ']', depth);
	strcpy(s + n + 2 * depth, "}");
	check(!zkl_is_zklock_json(s, strlen(s), PG_UTF8), "depth: 500000 levels are no description");
	check(!zkl_json_fields(s, strlen(s), keys, f, NKEYS) && f[0] == NULL,
		  "depth: 500000 levels have no fields");
	check(zkl_is_zklock_json(ok, strlen(ok), PG_UTF8) &&
		  zkl_json_fields(ok, strlen(ok), keys, f, NKEYS) && field_is(f, 1, "3"),
		  "depth: a few levels are read");
	free(s);
}

int
main(void)
{
	/* A crash (the stack, on deep JSON) must not swallow the lines before it. */
	setvbuf(stdout, NULL, _IONBF, 0);
	test_description();
	test_memory();
	test_depth();
	return tap_done();
}
