/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *		Where ZooKeeper's answers reach the recipes: each event goes to the
 *		handler that the recipe owning it listed for the slot's phase
 *		(lock_recipe.c, semaphore.c, inspect.c each fill a table of
 *		routes), and each slot with something to do gets its next request
 *		(zkl_dispatch), sent again after a connection loss (zkl_redo).
 *		Runs in the worker's loop only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "rules/pass_budget.h"
#include "worker/dispatch.h"
#include "worker/inspect.h"
#include "worker/lock_recipe.h"
#include "worker/semaphore.h"
#include "worker/slot_steps.h"

/* Slots a pass left to the next (pass_budget.c), at the head of zkl_pending. */
static int	zkl_ndeferred = 0;

/*
 * Dispatch the pending slots, at most a pass's share (pass_budget.c): the
 * rest, first in the list, are dispatched by the next pass, which comes at
 * once (zkl_work_deferred).
 */
void
zkl_run_pending(void)
{
	int			n = zkl_npending;
	int			take = zkl_pass_take(n);
	int			left = n - take;
	int		   *kept = NULL;
	bool		connected = zkl_zh != NULL &&
	zkl_shared->session_state == ZKL_SESSION_CONNECTED;

	if (left > 0)
	{
		kept = palloc(sizeof(int) * left);
		memcpy(kept, zkl_pending + take, sizeof(int) * left);
	}

	/*
	 * Dispatch may mark slots pending again; those wait for the next round.
	 * Each is written at an index no higher than the one being dispatched (a
	 * slot is in the list once), so the list is not overrun.
	 */
	zkl_npending = 0;
	for (int i = 0; i < take; i++)
	{
		int			slotno = zkl_pending[i];

		zkl_works[slotno].pending = false;
		zkl_dispatch(slotno, connected);
	}

	/*
	 * Those left keep their turn, before the ones marked since.  They make
	 * the next pass come at once only while connected: without a session
	 * every slot at work is only marked pending again (zkl_dispatch), and
	 * after a reattach every holder is pending (zkl_rewatch_all), so more
	 * than a pass's worth would spin the loop until the connection is back.
	 * The CONNECTED event and the backends' latches wake it meanwhile.
	 */
	zkl_ndeferred = connected ? left : 0;
	if (left > 0)
	{
		memmove(zkl_pending + left, zkl_pending, sizeof(int) * zkl_npending);
		memcpy(zkl_pending, kept, sizeof(int) * left);
		zkl_npending += left;
		pfree(kept);
	}
}

/* Whether the last pass left slots to dispatch: the next pass comes at once. */
bool
zkl_work_deferred(void)
{
	return zkl_ndeferred > 0;
}

/* Redo the request that a connection loss cut off. */
static void
zkl_redo(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];

	work->retry = false;
	switch (work->phase)
	{
		case ZKL_PH_RECOVERING:
			zkl_send_sync(slotno, slot->dir);
			zkl_send_listing(slotno, slot, ZKL_EV_RECOVER_CHILDREN);
			break;
		case ZKL_PH_LISTING:
		case ZKL_PH_WATCHING:
			zkl_watch_own_node(slotno, slot);
			zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
			break;
		case ZKL_PH_DELETING:
		case ZKL_PH_STRANDED:
			zkl_send_delete(slotno, slot);
			break;
		case ZKL_PH_CHECKING:
			zkl_send_contender(slotno, slot);
			break;
		case ZKL_PH_HELD:
			zkl_watch_own_node(slotno, slot);
			break;
		case ZKL_PH_INSPECTING:
			/* Read the directory again from the start. */
			zkl_end_work(work);
			zkl_inspect_start(slotno, slot);
			break;
		default:
			zkl_sem_redo(slotno, slot);
			break;
	}
}

/*
 * The backend gave the slot up.  Returns true when that settled what to do;
 * false when the slot's in-flight request must finish first.
 */
static bool
zkl_release(int slotno, zkl_slot *slot, zkl_slot_state state)
{
	zkl_work   *work = &zkl_works[slotno];

	switch (work->phase)
	{
		case ZKL_PH_IDLE:

			/*
			 * Never sent, or already failed/lost: nothing exists in
			 * ZooKeeper.
			 */
			if (state == ZKL_SLOT_RELEASING)
				zkl_free_slot(slotno);
			return true;
		case ZKL_PH_HELD:
			work->retry = false;
			zkl_send_delete(slotno, slot);
			/* A waiter of this cluster behind it may hold at once. */
			zkl_hand_over_at_release(slotno, slot);
			return true;
		case ZKL_PH_LISTING:
		case ZKL_PH_WATCHING:
		case ZKL_PH_LEASE_WAITING:
		case ZKL_PH_PUBLISHED:
			work->retry = false;
			zkl_send_delete(slotno, slot);
			return true;
		case ZKL_PH_CHECKING:
			/* Nothing was created: the ACL's answer is not needed. */
			if (work->retry)
			{
				zkl_free_slot(slotno);
				return true;
			}
			return false;
		case ZKL_PH_STRANDED:
			/* Its delete is tried again with the heartbeat ticks. */
			return !work->retry;
		default:
			/* A create's or a delete's completion sees !wanted and goes on. */
			return false;
	}
}

/*
 * Do what a slot needs now.  Without a usable session only a request that
 * never reached ZooKeeper can be settled (by freeing it); the rest waits
 * for the connection.
 */
void
zkl_dispatch(int slotno, bool connected)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];
	zkl_slot_state state;
	bool		wanted;
	bool		stranded;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	state = slot->state;
	wanted = slot->wanted;
	stranded = slot->stranded;
	LWLockRelease(zkl_shared->lock);

	/* A hold lost whose node stays (zkl_strand) still has its delete to do. */
	if (state == ZKL_SLOT_FREE || state == ZKL_SLOT_FAILED ||
		(state == ZKL_SLOT_LOST && !stranded))
		return;
	if (!connected)
	{
		if (!wanted && work->phase == ZKL_PH_IDLE)
			zkl_release(slotno, slot, state);
		else
			zkl_mark_pending(slotno);
		return;
	}

	if (!wanted && zkl_release(slotno, slot, state))
		return;
	if (work->phase == ZKL_PH_IDLE && state == ZKL_SLOT_WAITING)
	{
		if (slot->inspect)
			zkl_inspect_start(slotno, slot);
		else
			zkl_send_create(slotno, slot, false);
	}
	else if (work->retry)
		zkl_redo(slotno, slot);
}

/*
 * The recipes' routes: which event is handled in which phase, and how; in
 * any other phase it belongs to work that has moved on and is dropped.  A
 * watch's session events (connection state, not a change of the node) are
 * dropped too.
 */
static const zkl_event_route *const zkl_routes[] = {
	zkl_lock_routes,
	zkl_inspect_routes,
	zkl_semaphore_routes,
};

/* The route of an event of this kind, or NULL. */
static const zkl_event_route *
zkl_route_of(zkl_event_kind kind)
{
	for (size_t t = 0; t < lengthof(zkl_routes); t++)
		for (const zkl_event_route *r = zkl_routes[t]; r->handler != NULL; r++)
			if (r->kind == kind)
				return r;
	return NULL;
}

/* The worker's state of every slot. */
void
zkl_recipe_init(void)
{
	zkl_steps_init();
}

void
zkl_handle_event(zkl_event *ev)
{
	int			slotno = ev->slotno;
	zkl_work   *work;
	const zkl_event_route *route;
	bool		wanted;

	if (slotno < 0 || slotno >= zkl_shared->nslots)
		return;
	work = &zkl_works[slotno];

	if (ev->kind == ZKL_EV_PRED_WATCH && ev->type != ZOO_SESSION_EVENT)
		zkl_count(watch_events);
	if (ev->opgen != work->opgen)
		return;

	route = zkl_route_of(ev->kind);
	if (route == NULL)
		return;
	if (route->watch && ev->type == ZOO_SESSION_EVENT)
		return;
	if (route->phase == ZKL_PH_OWN_NODE ? !zkl_own_node_watched(work) :
		(int) work->phase != route->phase)
		return;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	wanted = zkl_shared->slots[slotno].wanted;
	LWLockRelease(zkl_shared->lock);
	route->handler(slotno, &zkl_shared->slots[slotno], ev, wanted);
}
