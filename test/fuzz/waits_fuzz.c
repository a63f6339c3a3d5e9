/*-------------------------------------------------------------------------
 *
 * waits_fuzz.c
 *		Fuzz target of the reading of published waits, as deadlock
 *		detection (src/backend/deadlock.c) reads every child of <root>/.waits: the
 *		node's name (src/rules/waits_for.c: zkl_wait_publisher) on the input's
 *		first line, its data (src/rules/json_fields.c) after it, and the lock
 *		directory and node the data names (src/names/lock_name.c).  The node's
 *		ephemeralOwner is taken to be the session its name gives, so that
 *		the data is read; a second round gives another owner.
 *
 * Properties, beyond the sanitizers: a publisher is taken only from its
 * own session's node, with a positive pid; a wait names a request only
 * of its publisher's session; what the reading of the data keeps allocated
 * grows no more than linearly with it (FUZZ_MEMORY_BOUND).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sanitizer/allocator_interface.h>

#include "fuzz_util.h"
#include "rules/json_fields.h"
#include "names/lock_name.h"
#include "rules/waits_for.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"lock_dir", "lock_node", "czxid", "mode", "cluster", "host", "port"};
	char	   *s = fuzz_cstring(data, size);
	char	   *nl = memchr(s, '\n', size);
	const char *body = nl ? nl + 1 : "";
	int			body_len = nl ? (int) (size - (nl + 1 - s)) : 0;
	int64_t		owner;
	zkl_backend_ref who;
	char	   *f[lengthof(keys)];
	bool		ok;
	size_t		before;

	if (size > 1024 * 1024)
	{
		free(s);
		return 0;
	}
	if (nl)
		*nl = '\0';
	owner = (int64_t) strtoull(s, NULL, 16);

	/* Never of another session's node. */
	fuzz_assert(!zkl_wait_publisher(s, (int64_t) ((uint64_t) owner + 1), &who));
	if (!zkl_wait_publisher(s, owner, &who))
	{
		free(s);
		return 0;
	}
	fuzz_assert(who.session == owner && owner != 0 && who.pid > 0);

	before = __sanitizer_get_current_allocated_bytes();
	ok = zkl_json_fields(body, body_len, keys, f, lengthof(keys));
	fuzz_assert(__sanitizer_get_current_allocated_bytes() - before <= FUZZ_MEMORY_BOUND(body_len));
	if (ok)
	{
		char		name[256];
		int64_t		czxid = f[2] ? strtoll(f[2], NULL, 10) : 0;

		if (f[0] != NULL && f[1] != NULL &&
			zkl_lock_dir_decode("/zklock", f[0], name, 255) > 0 &&
			zkl_node_name_ok(f[1], 96))
		{
			fuzz_assert(zkl_wait_names_request(who, f[1], czxid, f[1], czxid, owner));
			fuzz_assert(!zkl_wait_names_request(who, f[1], czxid, f[1], czxid,
												(int64_t) ((uint64_t) owner + 1)));
		}
		for (int k = 0; k < (int) lengthof(keys); k++)
			if (f[k] != NULL)
				pfree(f[k]);
	}
	free(s);
	return 0;
}
