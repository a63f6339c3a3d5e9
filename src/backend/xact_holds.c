/*-------------------------------------------------------------------------
 *
 * xact_holds.c
 *		This backend's transaction-scope holds, by lock and resource owner:
 *		counted, not listed, so that memory per lock stays constant whatever
 *		the number of reentrant acquires (a row trigger in a large UPDATE),
 *		as the lock manager counts advisory locks per owner.  A
 *		subtransaction or portal that commits passes its holds to its
 *		parent, merged with the parent's own; locks.c gives them back when
 *		an owner is released as an abort or the transaction ends.  Every
 *		allocation comes before a count changes (zkl_reserve_xact_hold).
 *		Runs in the backends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "backend/xact_holds.h"

zkl_xact_hold *zkl_xact_holds = NULL;

int			zkl_n_xact_holds = 0;

static int	zkl_max_xact_holds = 0;

/*
 * Room for one more entry of zkl_xact_holds, made before any count changes:
 * an allocation that fails must leave every count as it was, or a hold
 * would be counted that nothing releases.
 */
void
zkl_reserve_xact_hold(void)
{
	if (zkl_n_xact_holds < zkl_max_xact_holds)
		return;
	if (zkl_xact_holds == NULL)
		zkl_xact_holds = MemoryContextAlloc(TopMemoryContext, sizeof(zkl_xact_hold) * 16);
	else
		zkl_xact_holds = repalloc(zkl_xact_holds,
								  sizeof(zkl_xact_hold) * zkl_max_xact_holds * 2);
	zkl_max_xact_holds = Max(16, zkl_max_xact_holds * 2);
}

/* The entry of key's transaction holds that belong to owner, or -1. */
static int
zkl_find_xact_hold(const char *key, ResourceOwner owner)
{
	for (int i = zkl_n_xact_holds - 1; i >= 0; i--)
		if (zkl_xact_holds[i].owner == owner && strcmp(zkl_xact_holds[i].key, key) == 0)
			return i;
	return -1;
}

/*
 * One more transaction-scope hold of key, for the current resource owner.
 * Cannot fail once zkl_reserve_xact_hold has made room.
 */
void
zkl_remember_xact_hold(const char *key)
{
	ResourceOwner owner = CurrentResourceOwner ? CurrentResourceOwner : CurTransactionResourceOwner;
	int			i = zkl_find_xact_hold(key, owner);

	if (i >= 0)
	{
		zkl_xact_holds[i].count++;
		return;
	}
	Assert(zkl_n_xact_holds < zkl_max_xact_holds);
	strlcpy(zkl_xact_holds[zkl_n_xact_holds].key, key, ZKL_KEY_LEN);
	zkl_xact_holds[zkl_n_xact_holds].owner = owner;
	zkl_xact_holds[zkl_n_xact_holds].count = 1;
	zkl_n_xact_holds++;
}

/* Remove entry i of zkl_xact_holds, keeping the order of the others. */
static void
zkl_remove_xact_hold(int i)
{
	memmove(&zkl_xact_holds[i], &zkl_xact_holds[i + 1],
			sizeof(zkl_xact_hold) * (zkl_n_xact_holds - i - 1));
	zkl_n_xact_holds--;
}

/*
 * Take out the newest entry that belongs to owner (NULL: any), copying its
 * key and count; false when there is none.
 */
bool
zkl_take_xact_hold(ResourceOwner owner, char *key, int32 *count)
{
	int			i = zkl_n_xact_holds - 1;

	while (i >= 0 && owner != NULL && zkl_xact_holds[i].owner != owner)
		i--;
	if (i < 0)
		return false;
	strlcpy(key, zkl_xact_holds[i].key, ZKL_KEY_LEN);
	*count = zkl_xact_holds[i].count;
	zkl_remove_xact_hold(i);
	return true;
}

/* One hold less of key, from its newest entry. */
void
zkl_drop_one_xact_hold(const char *key)
{
	for (int i = zkl_n_xact_holds - 1; i >= 0; i--)
	{
		if (strcmp(zkl_xact_holds[i].key, key) != 0)
			continue;
		if (--zkl_xact_holds[i].count == 0)
			zkl_remove_xact_hold(i);
		break;
	}
}

/*
 * A subtransaction or a portal commits: its holds pass to its parent, as
 * the lock manager passes advisory locks, and are counted with the
 * parent's own holds of the same lock.
 */
void
zkl_pass_xact_holds(ResourceOwner owner, ResourceOwner parent)
{
	for (int i = zkl_n_xact_holds - 1; i >= 0; i--)
	{
		int			merged;

		if (zkl_xact_holds[i].owner != owner)
			continue;
		merged = zkl_find_xact_hold(zkl_xact_holds[i].key, parent);
		if (merged >= 0)
		{
			zkl_xact_holds[merged].count += zkl_xact_holds[i].count;
			zkl_remove_xact_hold(i);
		}
		else
			zkl_xact_holds[i].owner = parent;
	}
}

/* Remove the transaction holds of key (the lock itself is gone). */
void
zkl_forget_xact_holds(const char *key)
{
	int			kept = 0;

	for (int i = 0; i < zkl_n_xact_holds; i++)
		if (strcmp(zkl_xact_holds[i].key, key) != 0)
			zkl_xact_holds[kept++] = zkl_xact_holds[i];
	zkl_n_xact_holds = kept;
}

/* Forget every entry (the backend exits). */
void
zkl_forget_all_xact_holds(void)
{
	zkl_n_xact_holds = 0;
}
