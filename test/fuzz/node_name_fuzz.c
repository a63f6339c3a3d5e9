/*-------------------------------------------------------------------------
 *
 * node_name_fuzz.c
 *		Fuzz target of the lock rule's reading of node names
 *		(src/rules/lock_rule.c): each line of the input is a child of one lock
 *		directory, as ZooKeeper lists them (each name once).  Lines that
 *		begin with '@' are the nodes of one backend of ours; every other
 *		node is its own owner's.
 *
 * Properties, beyond the sanitizers: a contender's number is exactly the
 * sequence ZooKeeper writes ("%010d") at the end of its name; the decision
 * for every contender is sane (its own node present, the node it watches
 * one it waits for, never one of its backend's); no two owners hold at
 * once while one of them holds exclusive; and where the numbers have one
 * order (all within half the counter's range), zkl_holders, the whole
 * directory at once, agrees with zkl_decide for each node.
 *
 *-------------------------------------------------------------------------
 */
#include "fuzz_util.h"
#include "rules/lock_rule.h"

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static uint32_t order_base;
static const zkl_contender_name *order_names;

/* Indexes of contenders in serial-number order, from order_base. */
static int
cmp_from_base(const void *a, const void *b)
{
	uint32_t	x = (uint32_t) order_names[*(const int *) a].seq - order_base;
	uint32_t	y = (uint32_t) order_names[*(const int *) b].seq - order_base;

	return x < y ? -1 : x > y;
}

/*
 * Whether the numbers have one serial order: all lie within an arc of the
 * counter shorter than 2^31.  *base gets the arc's start.
 */
static int
one_order(const zkl_contender_name *q, int n, uint32_t *base)
{
	uint32_t	u[FUZZ_MAX_LINES];
	uint64_t	gap = 0;
	int			after = 0;

	if (n == 0)
		return 0;
	for (int i = 0; i < n; i++)
		u[i] = (uint32_t) q[i].seq;
	qsort(u, n, sizeof(u[0]), cmp_u32);
	for (int i = 0; i < n; i++)
	{
		uint64_t	next = i + 1 < n ? u[i + 1] : (uint64_t) u[0] + 4294967296ULL;

		if (next - u[i] >= gap)
		{
			gap = next - u[i];
			after = (i + 1) % n;
		}
	}
	*base = u[after];
	return 4294967296ULL - gap < 2147483648ULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *s = fuzz_cstring(data, size);
	char	   *lines[FUZZ_MAX_LINES];
	int			nlines = fuzz_lines(s, size, lines, FUZZ_MAX_LINES);
	const char *children[FUZZ_MAX_LINES];
	const char *ours[FUZZ_MAX_LINES];
	zkl_contender_name name[FUZZ_MAX_LINES];
	bool		is_contender[FUZZ_MAX_LINES];
	int			n = 0;
	int			nours = 0;
	int			held = 0;
	int			held_exclusive = 0;

	/* ZooKeeper lists each child once. */
	for (int i = 0; i < nlines; i++)
	{
		bool		dup = false;

		for (int j = 0; j < n && !dup; j++)
			dup = strcmp(children[j], lines[i]) == 0;
		if (!dup)
			children[n++] = lines[i];
	}

	for (int i = 0; i < n; i++)
	{
		is_contender[i] = zkl_contender_parse(children[i], &name[i]);
		if (is_contender[i])
		{
			char		printed[16];
			size_t		len = strlen(children[i]);
			int			plen = snprintf(printed, sizeof(printed), "%010d", name[i].seq);

			/* Exactly what ZooKeeper appends, and nothing else. */
			fuzz_assert((size_t) plen <= len &&
						strcmp(children[i] + len - plen, printed) == 0);
			if (children[i][0] == '@')
				ours[nours++] = children[i];
		}
	}

	/* Every node of a backend of no other node: one owner each. */
	for (int i = 0; i < n; i++)
	{
		zkl_decision d;
		int			blockers[FUZZ_MAX_LINES];
		int			nblockers;

		if (!is_contender[i] || children[i][0] == '@')
			continue;
		d = zkl_decide(children, n, children[i], NULL, 0);
		fuzz_assert(d.verdict == ZKL_VERDICT_HELD || d.verdict == ZKL_VERDICT_WAIT);
		nblockers = zkl_blockers(children, n, children[i], NULL, 0, blockers, FUZZ_MAX_LINES);
		fuzz_assert(nblockers == d.blockers);
		if (d.verdict == ZKL_VERDICT_HELD)
		{
			fuzz_assert(d.blockers == 0 && d.watch < 0);
			held++;
			if (!name[i].shared)
				held_exclusive++;
		}
		else
		{
			fuzz_assert(d.blockers > 0 && d.watch >= 0 && d.watch < n && d.watch != i);
			fuzz_assert(is_contender[d.watch]);
			for (int k = 0; k < nblockers; k++)
				fuzz_assert(blockers[k] >= 0 && blockers[k] < n && blockers[k] != i &&
							is_contender[blockers[k]]);
		}
	}
	/* An exclusive holder holds alone. */
	fuzz_assert(held_exclusive == 0 || held == 1);

	/* The nodes of our backend: never waited for by each other. */
	for (int i = 0; i < n; i++)
	{
		zkl_decision d;

		if (!is_contender[i] || children[i][0] != '@')
			continue;
		d = zkl_decide(children, n, children[i], ours, nours);
		fuzz_assert(d.verdict != ZKL_VERDICT_ABSENT);
		if (d.verdict != ZKL_VERDICT_HELD)
		{
			fuzz_assert(d.watch >= 0 && d.watch < n && d.watch != i);
			fuzz_assert(children[d.watch][0] != '@');
		}
	}

	/* The whole directory at once agrees with each decision. */
	{
		zkl_contender_name queue[FUZZ_MAX_LINES];
		int			idx[FUZZ_MAX_LINES];
		const char *owners[FUZZ_MAX_LINES];
		bool		holds[FUZZ_MAX_LINES];
		bool		equal[FUZZ_MAX_LINES];
		const char *const *scratch[FUZZ_MAX_LINES];
		int			q = 0;
		uint32_t	base;

		for (int i = 0; i < n; i++)
			if (is_contender[i])
			{
				queue[q] = name[i];
				idx[q++] = i;
			}
		if (one_order(queue, q, &base))
		{
			order_base = base;
			order_names = name;
			qsort(idx, q, sizeof(idx[0]), cmp_from_base);
			for (int k = 0; k < q; k++)
			{
				queue[k] = name[idx[k]];
				owners[k] = children[idx[k]][0] == '@' ? "@" : NULL;
			}
			/* No sessions: zkl_decide, the reference, sees none either. */
			zkl_holders(queue, owners, NULL, q, holds, equal, scratch);
			for (int k = 0; k < q; k++)
			{
				bool		mine = owners[k] != NULL;
				zkl_decision d = zkl_decide(children, n, children[idx[k]],
											mine ? ours : NULL, mine ? nours : 0);

				fuzz_assert(holds[k] == (d.verdict == ZKL_VERDICT_HELD));
				fuzz_assert(equal[k] == d.equal);
			}
		}
	}
	free(s);
	return 0;
}
