/*-------------------------------------------------------------------------
 *
 * recent_read.c
 *		Readings of a directory shared by the deadlock checks of this
 *		cluster's backends.  Runs in backends.
 *
 * With N backends of a cluster waiting for one lock, each runs a check
 * every deadlock_timeout, and each check reads the published waits and
 * the lock's directory, every child with its data: some 2N requests a
 * check, 2N^2 a round.  A check's first reading may instead be one that
 * any backend of the cluster began at most max_age ago (the rule is
 * rules/recent_read.c): the segment holding the worker's reply stays
 * pinned in an entry of zkl_shared->recent, and the other checks attach
 * it.  While one backend reads a directory anew, the others wait for its
 * reading (recent_cv) rather than read it too, so a directory is read
 * about once per max_age whatever the number of waiters.
 *
 * Only a first reading may be old: a cycle formed since it was made is
 * found by a later check, and one it shows that is gone is refuted by the
 * second reading, which deadlock_check.c always makes afresh (max_age 0).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/condition_variable.h"

#include "backend/contenders.h"
#include "backend/recent_read.h"
#include "pg_compat.h"
#include "rules/clock.h"
#include "rules/recent_read.h"
#include "shared/shmem.h"
#include "shared/wait_events.h"

/* What the rule says for dir; called with zkl_shared->lock held. */
static zkl_recent_verdict
zkl_recent_verdict_of(const char *dir, int64 now, int64 max_age_us, int *index)
{
	zkl_recent_view views[ZKL_RECENT_READS];

	for (int i = 0; i < ZKL_RECENT_READS; i++)
	{
		const zkl_recent_entry *e = &zkl_shared->recent[i];

		views[i].same_dir = e->dir[0] != '\0' && strcmp(e->dir, dir) == 0;
		views[i].has_reading = e->handle != 0;
		views[i].read_at = e->read_at;
		views[i].filling_since = e->filling_since;
		views[i].used_at = e->used_at;
	}
	return zkl_recent_choose(views, ZKL_RECENT_READS, now, max_age_us, index);
}

/*
 * Attach the reading handle of entry index, of dir; NULL when the entry
 * let it go meanwhile.  While the entry holds it, its pin keeps it alive
 * and no other segment has its handle: what was attached is that reading.
 */
static dsm_segment *
zkl_recent_attach(int index, const char *dir, uint32 handle)
{
	dsm_segment *seg = dsm_attach(handle);
	const zkl_recent_entry *e = &zkl_shared->recent[index];
	bool		held;

	if (seg == NULL)
		return NULL;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	held = e->handle == handle && strcmp(e->dir, dir) == 0;
	LWLockRelease(zkl_shared->lock);
	if (!held)
	{
		dsm_detach(seg);
		return NULL;
	}
	return seg;
}

/*
 * Leave the reading in handle in entry index, whose filling this backend
 * began at began, and wake the backends that wait for it.  Returns the
 * handle to unpin: the entry's reading before, or this one when another
 * backend took the entry over meanwhile.
 */
static uint32
zkl_recent_end_fill(int index, const char *dir, int64 began, uint32 handle)
{
	zkl_recent_entry *e = &zkl_shared->recent[index];
	uint32		old = handle;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (e->filler_pid == MyProcPid && e->filling_since == began && strcmp(e->dir, dir) == 0)
	{
		old = e->handle;
		e->handle = handle;
		e->read_at = began;
		e->filling_since = 0;
		e->filler_pid = 0;
	}
	LWLockRelease(zkl_shared->lock);
	ConditionVariableBroadcast(&zkl_shared->recent_cv);
	return old;
}

/*
 * Read dir afresh for entry index (-1: for this check alone), then leave
 * the reading in the entry for the others.  Should the reading fail, the
 * entry stays marked as being filled: the others take that filling for
 * abandoned once it is twice max_age old, and read the directory.
 */
static dsm_segment *
zkl_recent_fill(const char *name, const char *dir, int index, int64 began)
{
	dsm_segment *seg = zkl_fetch_directory(name, dir);
	uint32		old;

	if (index < 0)
		return seg;
	dsm_pin_segment(seg);
	old = zkl_recent_end_fill(index, dir, began, dsm_segment_handle(seg));
	if (old != 0)
		dsm_unpin_segment(old);
	return seg;
}

/*
 * The worker's reply for directory dir (of lock name, for messages), as
 * zkl_fetch_directory gives it, begun at most max_age_us ago: a reading
 * another backend shared, one it makes now, or one made here and shared.
 * max_age_us 0: always a reading made afresh.
 */
dsm_segment *
zkl_fetch_recent(const char *name, const char *dir, int64 max_age_us)
{
	if (max_age_us <= 0 || strlen(dir) >= ZKL_MAX_DIR_LEN)
		return zkl_fetch_directory(name, dir);
	for (;;)
	{
		int64		now = zkl_now();
		int			index;
		zkl_recent_verdict verdict;
		uint32		handle = 0;
		uint32		evicted = 0;
		dsm_segment *seg;

		CHECK_FOR_INTERRUPTS();
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		verdict = zkl_recent_verdict_of(dir, now, max_age_us, &index);
		if (index >= 0)
		{
			zkl_recent_entry *e = &zkl_shared->recent[index];

			e->used_at = now;
			if (verdict == ZKL_RECENT_USE)
				handle = e->handle;
			else if (verdict == ZKL_RECENT_FILL)
			{
				if (strcmp(e->dir, dir) != 0)
				{
					evicted = e->handle;
					e->handle = 0;
					strlcpy(e->dir, dir, sizeof(e->dir));
				}
				e->filling_since = now;
				e->filler_pid = MyProcPid;
			}
		}
		LWLockRelease(zkl_shared->lock);
		if (evicted != 0)
			dsm_unpin_segment(evicted);

		if (verdict == ZKL_RECENT_FILL)
		{
			ConditionVariableCancelSleep();
			return zkl_recent_fill(name, dir, index, now);
		}
		if (verdict == ZKL_RECENT_USE)
		{
			ConditionVariableCancelSleep();
			/* Replaced since: a reading of this check's own, not shared. */
			seg = zkl_recent_attach(index, dir, handle);
			return seg != NULL ? seg : zkl_fetch_directory(name, dir);
		}
		/* Wait for the reading under way, then ask again. */
		(void) ConditionVariableTimedSleep(&zkl_shared->recent_cv,
										   Max(max_age_us / 1000, 1),
										   zkl_wait_event(ZKL_WAIT_WORKER));
	}
}
