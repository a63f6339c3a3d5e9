/*-------------------------------------------------------------------------
 *
 * semaphore.c
 *		The semaphore recipe the worker runs for a slot with permits, in
 *		the layout of Curator's InterProcessSemaphoreV2, so that Curator
 *		programs and SQL sessions share one semaphore.  Under the
 *		semaphore's directory:
 *
 *		locks/	its own mutex (Curator's InterProcessMutex layout), which
 *				the ordinary lock recipe (lock_recipe.c) takes for the slot;
 *		leases/	one ephemeral sequential node "_c_<uuid>-lease-<seq>" per
 *				holder.
 *
 *		Once the mutex is ours (the lock recipe calls zkl_sem_mutex_held), we
 *		create our lease, then list leases/ until there are at most
 *		permits of them, then give the mutex up and hold the lease.  Only
 *		the mutex holder watches leases/, so a release wakes one waiter,
 *		never the herd.  Every client must agree on the permits, as
 *		Curator says of its own.
 *
 *	phase			event				-> action, next phase
 *	(mutex held)	zkl_sem_mutex_held	-> create the lease (a listing
 *										   instead when the lease may exist
 *										   already), LEASING
 *	LEASING			LEASE_CREATED ok	-> listing of leases/
 *					LEASE_CREATED ZNONODE -> leases/ made, create again
 *					LEASES, ours absent	-> create the lease
 *					LEASES, <= permits	-> (czxid unknown: LEASE_STAT)
 *										   delete the mutex, UNLOCKING
 *					LEASES, more		-> a try: busy; else list again
 *										   with a watch, then LEASE_WAITING
 *	LEASE_WAITING	LEASES_WATCH		-> listing with a watch, LEASING
 *	UNLOCKING		UNLOCKED			-> the lease is the hold: HELD (its
 *										   own watch set at once if the
 *										   request queued for the mutex)
 *
 * Giving the slot up before the grant deletes the lease and the mutex
 * node (zkl_send_delete deletes both, and first looks for a lease that
 * may exist unseen).  The lease's path and the listing of leases/ are
 * steps of slot_steps.c, which the delete takes too.  Runs in the
 * worker's loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "worker/semaphore.h"
#include "worker/slot_steps.h"

static void
zkl_set_lease(zkl_slot *slot, const char *lease)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	strlcpy(slot->lease, lease, sizeof(slot->lease));
	LWLockRelease(zkl_shared->lock);
}

static void
zkl_create_lease(int slotno, zkl_slot *slot, bool with_parent)
{
	char	   *dir = zkl_leases_dir(slot);
	char	   *prefix = psprintf("%s/" ZKL_PROTECTED_PREFIX "%s-%s", dir, slot->uuid,
								  zkl_node_layouts[ZKL_NODE_LEASE].marker);

	zkl_works[slotno].phase = ZKL_PH_LEASING;
	if (with_parent)
		zkl_check_sent(slotno, zoo_acreate(zkl_zh, dir, NULL, -1, zkl_acl(), ZOO_CONTAINER,
										   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
	zkl_check_sent(slotno, zoo_acreate2(zkl_zh, prefix, slot->data, strlen(slot->data), zkl_acl(),
										ZOO_EPHEMERAL_SEQUENTIAL, zkl_string_stat_done,
										zkl_ctx(ZKL_EV_LEASE_CREATED, slotno)));
	pfree(prefix);
	pfree(dir);
}

/* Enough leases are free: give our mutex up; the grant follows. */
static void
zkl_unlock_mutex(int slotno, zkl_slot *slot)
{
	char	   *path = psprintf("%s/%s", slot->dir, slot->node);

	zkl_works[slotno].phase = ZKL_PH_UNLOCKING;
	zkl_check_sent(slotno, zoo_adelete(zkl_zh, path, -1, zkl_void_done,
									   zkl_ctx(ZKL_EV_UNLOCKED, slotno)));
	pfree(path);
}

/* The lease's czxid, the hold's token, when its create's answer was lost. */
static void
zkl_stat_lease(int slotno, zkl_slot *slot)
{
	char	   *path = zkl_lease_path(slot);

	zkl_works[slotno].phase = ZKL_PH_LEASING;
	zkl_check_sent(slotno, zoo_aexists(zkl_zh, path, 0, zkl_stat_done,
									   zkl_ctx(ZKL_EV_LEASE_STAT, slotno)));
	pfree(path);
}

/* The recipe's lock part granted us the semaphore's mutex. */
void
zkl_sem_mutex_held(int slotno, zkl_slot *slot, bool wanted)
{
	if (!wanted)
		zkl_send_delete(slotno, slot);
	else if (slot->lease[0] != '\0' || zkl_works[slotno].lease_unsure)
		zkl_list_leases(slotno, slot, false);
	else
		zkl_create_lease(slotno, slot, false);
}

/* Redo what a connection loss cut off, in a phase of this recipe. */
void
zkl_sem_redo(int slotno, zkl_slot *slot)
{
	switch (zkl_works[slotno].phase)
	{
		case ZKL_PH_LEASING:
			/* The listing finds a lease whose create's answer was lost. */
			if (zkl_works[slotno].lease_unsure)
				zkl_send_sync(slotno, slot->dir);
			zkl_list_leases(slotno, slot, false);
			break;
		case ZKL_PH_LEASE_WAITING:
			zkl_list_leases(slotno, slot, true);
			break;
		case ZKL_PH_UNLOCKING:
			zkl_unlock_mutex(slotno, slot);
			break;
		default:
			break;
	}
}

static void
zkl_on_lease_created(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];

	if (ev->rc == ZOK)
	{
		const char *child = strrchr(ev->path, '/');

		zkl_set_lease(slot, child ? child + 1 : ev->path);
		work->lease_czxid = ev->czxid;
		work->lease_unsure = false;
		if (!wanted)
			zkl_send_delete(slotno, slot);
		else
			zkl_list_leases(slotno, slot, false);
	}
	else if (ev->rc == ZNONODE && work->parent_attempts < 3)
	{
		work->parent_attempts++;
		zkl_create_lease(slotno, slot, true);
	}
	else
	{
		/* After a connection loss the create may have succeeded. */
		work->lease_unsure = true;
		zkl_request_failed(slotno, ev->rc);
	}
}

static void
zkl_on_leases(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];
	char		mark[ZKL_UUID_LEN + 8];
	const char *ours = NULL;

	if (ev->rc != ZOK && ev->rc != ZNONODE)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	snprintf(mark, sizeof(mark), ZKL_PROTECTED_PREFIX "%s-", slot->uuid);
	for (int i = 0; i < ev->nchildren && !ours; i++)
		if (strncmp(ev->children[i], mark, strlen(mark)) == 0)
			ours = ev->children[i];
	work->lease_unsure = false;

	if (ours == NULL)
	{
		/* Never made, or deleted by someone: Curator makes another. */
		if (slot->lease[0] != '\0')
			zkl_set_lease(slot, "");
		work->lease_czxid = 0;
		if (!wanted)
			zkl_send_delete(slotno, slot);
		else
			zkl_create_lease(slotno, slot, false);
		return;
	}
	if (strcmp(slot->lease, ours) != 0)
	{
		zkl_set_lease(slot, ours);
		work->lease_czxid = 0;
	}
	if (!wanted)
		zkl_send_delete(slotno, slot);
	else if (ev->nchildren <= slot->permits)
	{
		if (work->lease_czxid == 0)
			zkl_stat_lease(slotno, slot);
		else
			zkl_unlock_mutex(slotno, slot);
	}
	else if (slot->try_only)
		zkl_give_up_busy(slotno, slot);
	else if (!work->lease_watched)
		zkl_list_leases(slotno, slot, true);
	else
	{
		work->phase = ZKL_PH_LEASE_WAITING;
		zkl_set_behind(slot);
	}
}

static void
zkl_on_lease_stat(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (ev->rc == ZOK)
	{
		zkl_works[slotno].lease_czxid = ev->czxid;
		if (!wanted)
			zkl_send_delete(slotno, slot);
		else
			zkl_unlock_mutex(slotno, slot);
	}
	else if (ev->rc == ZNONODE)
		zkl_list_leases(slotno, slot, false);
	else
		zkl_request_failed(slotno, ev->rc);
}

static void
zkl_on_leases_watch(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_list_leases(slotno, slot, true);
}

/* The mutex is given up: the lease is the hold from now on. */
static void
zkl_on_unlocked(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];
	char	   *dir;

	if (ev->rc != ZOK && ev->rc != ZNONODE)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	dir = zkl_leases_dir(slot);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	strlcpy(slot->dir, dir, sizeof(slot->dir));
	strlcpy(slot->node, slot->lease, sizeof(slot->node));
	slot->lease[0] = '\0';
	slot->token = work->lease_czxid;
	LWLockRelease(zkl_shared->lock);
	pfree(dir);
	zkl_remember_node(slotno, slot->node);

	/*
	 * The slot's node is another from now on.  What was set for the mutex
	 * node belongs to finished work: a new opgen drops its events, and the
	 * own-node watch counts as not set, so the lease gets one.  A request
	 * that queued for the mutex has it at once, as a lock waiter's node is
	 * watched from its grant on; one granted the mutex at once, with the
	 * lasting holds (zkl_check_holds).
	 */
	work->opgen++;
	if (work->waited && wanted)
		zkl_watch_own_node(slotno, slot);
	zkl_grant(slotno, slot);
}

/* The semaphore's answers, by phase (dispatch.c routes them). */
const zkl_event_route zkl_semaphore_routes[] = {
	{ZKL_EV_LEASE_CREATED, ZKL_PH_LEASING, false, zkl_on_lease_created},
	{ZKL_EV_LEASES, ZKL_PH_LEASING, false, zkl_on_leases},
	{ZKL_EV_LEASE_STAT, ZKL_PH_LEASING, false, zkl_on_lease_stat},
	{ZKL_EV_LEASES_WATCH, ZKL_PH_LEASE_WAITING, true, zkl_on_leases_watch},
	{ZKL_EV_UNLOCKED, ZKL_PH_UNLOCKING, false, zkl_on_unlocked},
	{0, 0, false, NULL}
};
