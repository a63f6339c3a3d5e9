/*-------------------------------------------------------------------------
 *
 * slot_recovery.c
 *		What the worker does with every slot at once: when the session
 *		expires (zkl_session_lost), when a new worker adopts its
 *		predecessor's slots (zkl_adopt_slots), when a backend died with
 *		slots (zkl_reap_dead_backends), and on each heartbeat tick for the
 *		holds (zkl_check_holds).  Runs in the worker's loop only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "rules/clock.h"
#include "worker/slot_recovery.h"
#include "worker/slot_steps.h"

/* The slots in use now, for a pass that may free some of them. */
static int *
zkl_used_slots(int *n)
{
	int		   *used;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	used = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	*n = 0;
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
		used[(*n)++] = i;
	LWLockRelease(zkl_shared->lock);
	return used;
}

/*
 * The session is gone and every node of ours with it (or the worker gave it
 * up before ZooKeeper could expire it: cause says which).  Holders lose
 * their locks and are told; waiters queue again in the next session.
 * Returns the number of holds lost.
 */
int
zkl_session_lost(const char *cause)
{
	int			lost = 0;
	int			n;
	int		   *used = zkl_used_slots(&n);

	for (int k = 0; k < n; k++)
	{
		int			i = used[k];
		zkl_slot   *slot = &zkl_shared->slots[i];
		zkl_work   *work = &zkl_works[i];
		zkl_slot_state state;
		bool		free_it = false;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		state = slot->state;
		switch (state)
		{
			case ZKL_SLOT_WAITING:
				if (slot->wanted)
				{
					slot->node[0] = '\0';
					slot->lease[0] = '\0';
					zkl_mark_pending(i);
				}
				else
					free_it = true;
				break;
			case ZKL_SLOT_RELEASING:
			case ZKL_SLOT_BUSY:
				free_it = true;
				break;
			case ZKL_SLOT_LOST:
				/* A stranded node of a hold lost went with the session. */
				if (slot->stranded)
				{
					slot->stranded = false;
					slot->node[0] = '\0';
					free_it = !slot->wanted;
				}
				break;
			default:
				break;
		}
		LWLockRelease(zkl_shared->lock);

		/* A read's answer or a published wait (inspect) is no lock to lose. */
		if (state == ZKL_SLOT_HELD && !slot->inspect && zkl_mark_lost(i, cause))
			lost++;
		zkl_end_work(work);
		work->lease_unsure = false;
		if (free_it)
			zkl_free_slot(i);
	}
	pfree(used);
	return lost;
}

/*
 * A hold its predecessor left: the old worker's watch on the node went with
 * it, and what a flag promised is done now.
 */
static void
zkl_adopt_hold(zkl_slot *slot, zkl_work *work)
{
	work->phase = ZKL_PH_HELD;
	/* Its grant's time, as far as the wall clock tells. */
	work->granted_mono = zkl_after_ms(zkl_now(),
									  -((GetCurrentTimestamp() - slot->granted_at) / 1000));

	/*
	 * A revocation its predecessor saw under on_revoke = cancel is obeyed
	 * now, if it was not yet: the flag promised it.  Not from a committing
	 * transaction: it waits for its end (zkl_take_away), and zkl_check_holds
	 * obeys it then.
	 */
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->revoke_requested && slot->on_revoke == ZKL_ON_REVOKE_CANCEL &&
		slot->wanted && slot->take_reason == ZKL_TAKE_NONE)
	{
		if (slot->committing)
			slot->take_deferred = true;
		else
			slot->take_reason = ZKL_TAKE_REVOKED;
	}
	LWLockRelease(zkl_shared->lock);
	/* A hold being taken away has its node deleted again. */
	if (slot->take_reason != ZKL_TAKE_NONE)
		work->phase = ZKL_PH_DELETING;
	work->retry = true;
}

/*
 * Where a slot that is no lock (zkl_slot_op) resumes: a published wait stays
 * until it is given up, then is deleted; a read of a directory, or a
 * publication not yet made, starts over.  Whether it has something to do.
 */
static bool
zkl_adopt_service(zkl_slot *slot, zkl_work *work, zkl_slot_state state, bool known)
{
	if (slot->op == ZKL_OP_PUBLISH && known && state != ZKL_SLOT_WAITING)
	{
		work->phase = state == ZKL_SLOT_HELD ? ZKL_PH_PUBLISHED : ZKL_PH_DELETING;
		work->retry = state != ZKL_SLOT_HELD;
		return work->retry;
	}
	return state == ZKL_SLOT_WAITING || state == ZKL_SLOT_RELEASING;
}

/*
 * Where a lock request resumes: a hold goes on (zkl_adopt_hold), a waiter
 * lists its directory again, a release deletes its node, and one whose node
 * the old worker never learnt finds it by its uuid first.  Whether it has
 * something to do.
 */
static bool
zkl_adopt_request(int slotno, zkl_slot *slot, zkl_work *work, zkl_slot_state state, bool known)
{
	if (known)
		zkl_remember_node(slotno, slot->node);
	switch (state)
	{
		case ZKL_SLOT_HELD:
			zkl_adopt_hold(slot, work);
			return true;
		case ZKL_SLOT_WAITING:
			work->phase = known ? ZKL_PH_LISTING : ZKL_PH_RECOVERING;
			/* The old worker may have made a lease it never saw. */
			work->lease_unsure = slot->permits > 0;
			work->retry = true;
			return true;
		case ZKL_SLOT_RELEASING:
		case ZKL_SLOT_BUSY:
			work->phase = known ? ZKL_PH_DELETING : ZKL_PH_RECOVERING;
			/* As for a waiter: a lease may exist that it never saw. */
			work->lease_unsure = zkl_lease_pending(slot);
			work->retry = true;
			return true;
		case ZKL_SLOT_LOST:
			/* A hold taken away whose node stays: its delete goes on. */
			if (!slot->stranded || !known)
				return false;
			work->phase = ZKL_PH_STRANDED;
			work->retry = true;
			return true;
		default:
			return false;
	}
}

/*
 * A new worker finds the slots of its predecessor.  With a session to
 * reattach to, each slot resumes where it stood; the session's fate
 * (connected or expired) then decides, as for any reconnection.
 */
void
zkl_adopt_slots(void)
{
	bool		reattach;
	int			n;
	int		   *used;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	reattach = zkl_shared->session_id != 0;
	LWLockRelease(zkl_shared->lock);

	if (!reattach)
	{
		(void) zkl_session_lost("the ZooKeeper session ended");
		return;
	}

	used = zkl_used_slots(&n);
	for (int k = 0; k < n; k++)
	{
		int			i = used[k];
		zkl_slot   *slot = &zkl_shared->slots[i];
		zkl_work   *work = &zkl_works[i];
		zkl_slot_state state;
		bool		known;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		state = slot->state;
		known = slot->node[0] != '\0';
		LWLockRelease(zkl_shared->lock);

		work->opgen = 1;
		if (slot->inspect ? zkl_adopt_service(slot, work, state, known) :
			zkl_adopt_request(i, slot, work, state, known))
			zkl_mark_pending(i);
	}
	pfree(used);
}

/*
 * A new handle on the same session (zkl_reattach_after_drop) has none of
 * the old handle's watches: every slot whose phase rests on one does its
 * phase's requests again (zkl_redo), which set them.  A holder watches its
 * node again, a waiter its node and, through the listing, its
 * predecessor, a semaphore's waiter the leases.  Slots with a request in
 * flight get its failure as a lost answer and redo it anyway.
 */
void
zkl_rewatch_all(void)
{
	int			n;
	int		   *used = zkl_used_slots(&n);

	for (int k = 0; k < n; k++)
	{
		zkl_work   *work = &zkl_works[used[k]];

		if (work->phase != ZKL_PH_HELD && work->phase != ZKL_PH_LISTING &&
			work->phase != ZKL_PH_WATCHING && work->phase != ZKL_PH_LEASE_WAITING)
			continue;
		work->own_watch_gen = 0;
		work->retry = true;
		zkl_mark_pending(used[k]);
	}
	pfree(used);
}

/*
 * What the worker does for lasting holds, with each periodic heartbeat (a
 * sixth of the session timeout):
 *
 * - Arm the own-node watch of every hold granted at once that is still
 *   held: an uncontended acquire and release then costs a create, a listing
 *   and a delete, and no notification, while an operator's deletion of a
 *   held node, or a revocation request, is still noticed within one
 *   heartbeat interval plus a round trip.
 * - Take away every hold that has lasted longer than the
 *   zklock.max_hold_time its request was made with.
 */
void
zkl_check_holds(void)
{
	int		   *watch;
	int		   *expired;
	int		   *revoked;
	int			nwatch = 0;
	int			nexpired = 0;
	int			nrevoked = 0;
	int64		now = zkl_now();

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	watch = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	expired = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	revoked = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
	{
		zkl_slot   *slot = &zkl_shared->slots[i];

		if (slot->state != ZKL_SLOT_HELD || zkl_works[i].phase != ZKL_PH_HELD)
			continue;
		if (slot->max_hold_ms > 0 && slot->take_reason == ZKL_TAKE_NONE &&
			now >= zkl_after_ms(zkl_works[i].granted_mono, slot->max_hold_ms))
			expired[nexpired++] = i;
		else if (slot->take_deferred && !slot->committing &&
				 slot->take_reason == ZKL_TAKE_NONE && slot->revoke_requested &&
				 slot->on_revoke == ZKL_ON_REVOKE_CANCEL)
			revoked[nrevoked++] = i;	/* waited for a commit's end */
		else if (zkl_works[i].own_watch_gen != zkl_works[i].opgen)
			watch[nwatch++] = i;
	}
	LWLockRelease(zkl_shared->lock);

	for (int k = 0; k < nwatch; k++)
		zkl_watch_own_node(watch[k], &zkl_shared->slots[watch[k]]);
	for (int k = 0; k < nexpired; k++)
		zkl_take_away(expired[k], &zkl_shared->slots[expired[k]], ZKL_TAKE_HOLD_LIMIT);
	for (int k = 0; k < nrevoked; k++)
		zkl_take_away(revoked[k], &zkl_shared->slots[revoked[k]], ZKL_TAKE_REVOKED);
	pfree(watch);
	pfree(expired);
	pfree(revoked);
}

/*
 * Second line of defence: a backend gives its slots back on every way out
 * (its exit hook, its transaction callbacks), but slots whose backend no
 * longer exists are given up here, as that backend would have: its
 * requests are cancelled and its holds released, its nodes deleted.  A
 * backend is gone when its PGPROC no longer carries its pid.
 */
void
zkl_reap_dead_backends(void)
{
	int		   *dead;
	int			ndead = 0;
	int			reaped = 0;
	int			last_pid = 0;

	/* One pass under the shared lock finds them; each is then settled alone. */
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	dead = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
	{
		zkl_slot   *slot = &zkl_shared->slots[i];

		if (slot->pid != 0 && ProcGlobal->allProcs[slot->procno].pid != slot->pid)
			dead[ndead++] = i;
	}
	LWLockRelease(zkl_shared->lock);

	for (int k = 0; k < ndead; k++)
	{
		int			i = dead[k];
		zkl_slot   *slot = &zkl_shared->slots[i];
		bool		give_up = false;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		if (slot->state != ZKL_SLOT_FREE && slot->pid != 0 &&
			ProcGlobal->allProcs[slot->procno].pid != slot->pid)
		{
			switch (slot->state)
			{
				case ZKL_SLOT_WAITING:
				case ZKL_SLOT_HELD:
					slot->state = ZKL_SLOT_RELEASING;
					slot->wanted = false;
					give_up = true;
					reaped++;
					last_pid = slot->pid;
					break;
				case ZKL_SLOT_LOST:
					/* A stranded node: the worker deletes it, then frees. */
					if (slot->stranded)
					{
						reaped += slot->wanted ? 1 : 0;
						last_pid = slot->pid;
						slot->wanted = false;
						break;
					}
					/* FALLTHROUGH */
				case ZKL_SLOT_FAILED:
					reaped++;
					last_pid = slot->pid;
					zkl_slot_clear(slot);
					break;
				default:
					/* BUSY and RELEASING are on their way out already. */
					break;
			}
		}
		LWLockRelease(zkl_shared->lock);
		if (give_up)
			zkl_mark_pending(i);
	}
	pfree(dead);
	if (reaped > 0)
		ereport(LOG,
				(errmsg("gave up %d lock slots of backends that exited without giving them back (last pid %d)",
						reaped, last_pid)));
}
