/*-------------------------------------------------------------------------
 *
 * lock_name_fuzz.c
 *		Fuzz target of the decoding of lock names from the names of lock
 *		directories (src/names/lock_name.c): the input is a directory's name as
 *		any ZooKeeper client may make it.
 *
 * Properties, beyond the sanitizers: what decodes encodes back to exactly
 * the input (one lock, one directory), within the length bound, without a
 * NUL; and the input's bytes taken as a lock name come back from their
 * encoding unchanged.
 *
 *-------------------------------------------------------------------------
 */
#include "fuzz_util.h"
#include "names/lock_name.h"

#define MAX_LEN 255				/* as ZKL_MAX_NAME_LEN */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *s = fuzz_cstring(data, size);
	char		name[MAX_LEN + 1];
	char		encoded[ZKL_ENCODED_SIZE(MAX_LEN)];
	int			len;

	len = zkl_name_decode(s, name, MAX_LEN);
	fuzz_assert(len == -1 || (len >= 1 && len <= MAX_LEN));
	if (len > 0)
	{
		fuzz_assert(memchr(name, '\0', len) == NULL && name[len] == '\0');
		fuzz_assert(zkl_name_encode(name, len, encoded) == (int) strlen(s));
		fuzz_assert(strcmp(encoded, s) == 0);
	}

	/* The bytes as a name: their encoding decodes to them. */
	len = (int) strlen(s);
	if (len >= 1 && len <= MAX_LEN)
	{
		int			n = zkl_name_encode(s, len, encoded);

		fuzz_assert(n == (int) strlen(encoded) && n <= 3 * len);
		fuzz_assert(zkl_name_decode(encoded, name, MAX_LEN) == len);
		fuzz_assert(memcmp(name, s, len) == 0);
		/* One path component, never "." or "..". */
		fuzz_assert(strchr(encoded, '/') == NULL && encoded[0] != '.');
	}
	free(s);
	return 0;
}
