/*-------------------------------------------------------------------------
 *
 * lease_name_fuzz.c
 *		Fuzz target of the reading of a semaphore's lease names
 *		(src/rules/lock_rule.c: zkl_lease_parse), as zk_semaphore_contenders
 *		reads every child of a semaphore's leases/.  Each line of the input
 *		is a child's name.
 *
 * Properties, beyond the sanitizers: a lease's number is the sequence at
 * the end of its name, and leases sort (as zk_semaphore_contenders sorts
 * them) without harm.
 *
 *-------------------------------------------------------------------------
 */
#include "fuzz_util.h"
#include "rules/lock_rule.h"

static int
cmp_leases(const void *a, const void *b)
{
	return zkl_seq_compare(((const zkl_contender_name *) a)->seq,
						   ((const zkl_contender_name *) b)->seq);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *s = fuzz_cstring(data, size);
	char	   *lines[FUZZ_MAX_LINES];
	int			nlines = fuzz_lines(s, size, lines, FUZZ_MAX_LINES);
	zkl_contender_name leases[FUZZ_MAX_LINES];
	int			n = 0;

	for (int i = 0; i < nlines; i++)
	{
		zkl_contender_name lease;

		if (!zkl_lease_parse(lines[i], &lease))
			continue;
		{
			char		printed[16];
			size_t		len = strlen(lines[i]);
			int			plen = snprintf(printed, sizeof(printed), "%010d", lease.seq);

			/* Exactly what ZooKeeper appends, and nothing else. */
			fuzz_assert((size_t) plen <= len &&
						strcmp(lines[i] + len - plen, printed) == 0);
		}
		fuzz_assert(!lease.shared);
		leases[n++] = lease;
	}
	qsort(leases, n, sizeof(leases[0]), cmp_leases);
	free(s);
	return 0;
}
