/*-------------------------------------------------------------------------
 *
 * recent_read.c
 *		The rule of shared recent readings (backend/recent_read.c).  A
 *		deadlock check's first reading of a directory may be one that any
 *		backend of the cluster began at most max_age ago: it can only miss
 *		a cycle formed since (found at a later check) or show one that is
 *		gone (which the check's second, fresh, reading refutes).  While a
 *		backend reads a directory for the others, they wait for it instead
 *		of reading it too; a reading under way for longer than twice
 *		max_age is taken for abandoned.  So a directory is read about once
 *		per max_age, however many backends check: the traffic of a round
 *		of checks grows with the directories' sizes, not with their
 *		product with the number of waiters.
 *
 *-------------------------------------------------------------------------
 */
#include "rules/recent_read.h"

/*
 * Whether a reading of the entry is under way and not abandoned: one that
 * failed leaves its entry marked, and is taken for abandoned once it is
 * twice max_age old (on a slow machine, a reading may take longer than
 * max_age and still be worth waiting for).
 */
static bool
zkl_recent_filling(const zkl_recent_view *e, int64_t now, int64_t max_age)
{
	return e->filling_since != 0 && e->filling_since <= now &&
		now - e->filling_since <= 2 * max_age;
}

/*
 * What to do for a reading of a directory no older than max_age: *index
 * is the entry to take, wait for or fill (-1: fill none, read alone).
 */
zkl_recent_verdict
zkl_recent_choose(const zkl_recent_view *entries, int n, int64_t now,
				  int64_t max_age, int *index)
{
	int			victim = -1;

	*index = -1;
	if (max_age <= 0)
		return ZKL_RECENT_FILL;
	for (int i = 0; i < n; i++)
	{
		const zkl_recent_view *e = &entries[i];

		if (!e->same_dir)
			continue;
		*index = i;
		/* A reading from the future (a clock set back) is no younger. */
		if (e->has_reading && e->read_at <= now && now - e->read_at <= max_age)
			return ZKL_RECENT_USE;
		if (zkl_recent_filling(e, now, max_age))
			return ZKL_RECENT_AWAIT;
		return ZKL_RECENT_FILL;
	}
	/* A new directory: an unused entry, else the least recently used. */
	for (int i = 0; i < n; i++)
	{
		const zkl_recent_view *e = &entries[i];

		if (zkl_recent_filling(e, now, max_age))
			continue;
		if (!e->has_reading && e->filling_since == 0)
		{
			victim = i;
			break;
		}
		if (victim < 0 || e->used_at < entries[victim].used_at)
			victim = i;
	}
	*index = victim;
	return ZKL_RECENT_FILL;
}
