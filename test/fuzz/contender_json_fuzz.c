/*-------------------------------------------------------------------------
 *
 * contender_json_fuzz.c
 *		Fuzz target of the reading of contenders' node data
 *		(src/rules/json_fields.c, PostgreSQL's JSON lexer from its frontend
 *		libpgcommon): whether data is zklock's description, and its
 *		fields, as zk_lock_contenders, zk_semaphore_contenders and
 *		deadlock detection read them.  The input is the node's data (at
 *		most 1 MB, ZooKeeper's jute.maxbuffer).
 *
 * Properties, beyond the sanitizers: the fields of data that is no JSON
 * object are all NULL; each field found is a NUL-terminated string; the
 * description of an UTF-8 database is the same of SQL_ASCII's when the
 * data is ASCII; what the reading keeps allocated (all of which a backend
 * keeps until the end of its query) grows no more than linearly with the
 * data, FUZZ_MEMORY_BOUND.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "mb/pg_wchar.h"

#include <sanitizer/allocator_interface.h>

#include "fuzz_util.h"
#include "rules/json_fields.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"system_identifier", "pid", "cluster", "host", "port"};
	char	   *s = fuzz_cstring(data, size);
	char	   *f[lengthof(keys)];
	bool		is_zklock;
	bool		ascii = true;
	bool		ok;
	size_t		before;

	if (size > 1024 * 1024)
	{
		free(s);
		return 0;
	}
	before = __sanitizer_get_current_allocated_bytes();
	is_zklock = zkl_is_zklock_json(s, (int) size, PG_UTF8);
	fuzz_assert(__sanitizer_get_current_allocated_bytes() - before <= FUZZ_MEMORY_BOUND(size));
	for (size_t i = 0; i < size && ascii; i++)
		ascii = !IS_HIGHBIT_SET(s[i]);
	if (ascii)
		fuzz_assert(zkl_is_zklock_json(s, (int) size, PG_SQL_ASCII) == is_zklock);

	before = __sanitizer_get_current_allocated_bytes();
	ok = zkl_json_fields(s, (int) size, keys, f, lengthof(keys));
	fuzz_assert(__sanitizer_get_current_allocated_bytes() - before <= FUZZ_MEMORY_BOUND(size));
	if (ok)
	{
		fuzz_assert(size > 0 && s[0] == '{');
		for (int k = 0; k < (int) lengthof(keys); k++)
			if (f[k] != NULL)
			{
				(void) strlen(f[k]);
				pfree(f[k]);
			}
	}
	else
		for (int k = 0; k < (int) lengthof(keys); k++)
			fuzz_assert(f[k] == NULL);
	free(s);
	return 0;
}
