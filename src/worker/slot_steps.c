/*-------------------------------------------------------------------------
 *
 * slot_steps.c
 *		The steps every recipe of the worker takes with a slot: its work's
 *		state and the to-do list, the requests' contexts and their checks,
 *		the map of our nodes, grants, failures, losses, revocation and the
 *		delete of our node, with a semaphore's lease.  The lock recipe
 *		(lock_recipe.c), the semaphore (semaphore.c) and the inspection
 *		service (inspect.c) are built on these and call them; no step calls
 *		up into them.  The pass's multi (write_batch.c) plugs its sends in
 *		through zkl_step_hooks.  Runs in the worker's loop only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "rules/clock.h"
#include "worker/slot_steps.h"

static void zkl_forget_node(zkl_work *work);
static void zkl_downgrade_forget(zkl_work *work);
static void zkl_find_lease(int slotno, zkl_slot *slot);

zkl_work   *zkl_works = NULL;

zkl_step_hooks zkl_hooks;

/* Slots with something to do once the session is usable. */
int		   *zkl_pending = NULL;
int			zkl_npending = 0;

/* The worker's state of every slot, before the first request. */
void
zkl_steps_init(void)
{
	zkl_works = MemoryContextAllocZero(TopMemoryContext, sizeof(zkl_work) * zkl_shared->nslots);
	/* opgen 0 is "never": an own-node watch noted for it would match. */
	for (int i = 0; i < zkl_shared->nslots; i++)
		zkl_works[i].opgen = 1;
	zkl_pending = MemoryContextAlloc(TopMemoryContext, sizeof(int) * zkl_shared->nslots);
}

/*
 * The memory of a slot's work that outlasts a pass (what an inspection has
 * read, say), made when first asked for: one context per work, so that its
 * end frees all of it in one call, whatever the recipe put there.  Small
 * sizes: most works keep a name or two.
 */
MemoryContext
zkl_work_context(zkl_work *work)
{
	if (work->cxt == NULL)
		work->cxt = AllocSetContextCreate(TopMemoryContext, "zklock slot work",
										  ALLOCSET_SMALL_SIZES);
	return work->cxt;
}

/* The callback context of a request of the slot's current work. */
const void *
zkl_ctx(zkl_event_kind kind, int slotno)
{
	return zkl_request_ctx(kind, slotno, zkl_works[slotno].opgen);
}

/* zk_status()'s request counters, by what the slot is doing. */
static void
zkl_count_request(int slotno)
{
	zkl_count(requests);
	if (zkl_works[slotno].phase == ZKL_PH_DELETING)
		zkl_count(release_requests);
	if (zkl_works[slotno].handoff)
		zkl_count(handoff_requests);
}

void
zkl_mark_pending(int slotno)
{
	if (zkl_works[slotno].pending)
		return;
	zkl_works[slotno].pending = true;
	zkl_pending[zkl_npending++] = slotno;
}

/* Whether some slot waits to be dispatched again. */
bool
zkl_work_pending(void)
{
	return zkl_npending > 0;
}

HTAB	   *zkl_node_map = NULL;

void
zkl_remember_node(int slotno, const char *node)
{
	zkl_work   *work = &zkl_works[slotno];
	zkl_node_entry *entry;

	if (zkl_node_map == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = ZKL_MAX_NODE_LEN;
		ctl.entrysize = sizeof(zkl_node_entry);
		zkl_node_map = hash_create("zklock nodes", 256, &ctl, HASH_ELEM | HASH_STRINGS);
	}
	zkl_forget_node(work);
	entry = hash_search(zkl_node_map, node, HASH_ENTER, NULL);
	entry->slotno = slotno;
	strlcpy(work->mapped_node, node, sizeof(work->mapped_node));
}

static void
zkl_forget_node(zkl_work *work)
{
	if (work->mapped_node[0] == '\0')
		return;
	hash_search(zkl_node_map, work->mapped_node, HASH_REMOVE, NULL);
	work->mapped_node[0] = '\0';
}

char	   *
zkl_child_path(zkl_slot *slot, const char *child)
{
	return psprintf("%s/%s", slot->dir, child);
}

struct ACL_vector *
zkl_acl(void)
{
	return (zkl_auth && zkl_auth[0] != '\0') ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}

/*
 * A request that could not even be queued by the client (the session is
 * going away) is retried once the session is usable again.
 */
void
zkl_check_sent(int slotno, int rc)
{
	zkl_count_request(slotno);
	if (rc != ZOK)
	{
		zkl_works[slotno].retry = true;
		zkl_mark_pending(slotno);
	}
}

/*
 * Whether a request the library refused at once (it never left) is worth
 * sending again: the session is ending (its end restarts every slot's
 * work), the connection is down, or there was no handle to send it on (the
 * library's "bad arguments" for a handle that could not be made).
 * Anything else (bad arguments, no memory for the request) would be
 * refused again.
 */
static bool
zkl_refusal_passes(int rc)
{
	return rc == ZINVALIDSTATE || rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
		rc == ZCLOSING || rc == ZSESSIONEXPIRED || zkl_zh == NULL;
}

bool
zkl_sent_alone(int slotno, int rc)
{
	zkl_count_request(slotno);
	if (rc == ZOK)
		return true;
	zkl_works[slotno].phase = ZKL_PH_IDLE;
	if (zkl_refusal_passes(rc))
		zkl_mark_pending(slotno);
	else
	{
		ereport(LOG,
				(errmsg("the ZooKeeper client library refused a request of lock \"%s\": %s",
						zkl_shared->slots[slotno].name, zerror(rc))));
		zkl_fail_slot(slotno, rc);
	}
	return false;
}

/*
 * Before a listing that looks for a node whose create's answer was lost:
 * a server may answer from a copy that has not applied that create yet (a
 * follower behind its leader), and the node would be created a second
 * time.  A sync first makes the server catch up with the leader; ZooKeeper
 * answers one session's requests in order, so the listing comes after it.
 */
void
zkl_send_sync(int slotno, const char *path)
{
	zkl_check_sent(slotno, zoo_async(zkl_zh, path, zkl_void_string_done,
									 zkl_ctx(ZKL_EV_IGNORE, slotno)));
}

/*
 * Abandon what the worker was doing for a slot: results of requests still
 * in flight no longer match its opgen and are dropped.
 */
void
zkl_end_work(zkl_work *work)
{
	zkl_forget_node(work);
	work->opgen++;
	work->phase = ZKL_PH_IDLE;
	work->retry = false;
	work->fail_rc = 0;
	work->parent_attempts = 0;
	work->waited = work->handoff = work->watched_here = false;
	work->numbers_repeat = work->equal_logged = work->revoke_seen = false;
	work->lease_watched = false;
	work->lease_czxid = 0;

	/*
	 * All the work kept (the node ahead, the downgrade's names, an
	 * inspection) is in its context: one call frees it, and only the pointers
	 * into it are cleared after.
	 */
	if (work->cxt != NULL)
	{
		MemoryContextDelete(work->cxt);
		work->cxt = NULL;
	}
	work->pred = NULL;
	work->inspection = NULL;
	work->published = NULL;
	zkl_downgrade_forget(work);
}

/*
 * Forget the slot: only done once no node of it can exist any more.  A
 * release that waits for its delete's answer (delete_unsure) waits for the
 * slot to be free, whichever path frees it: it is woken once it is.
 */
void
zkl_free_slot(int slotno)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];
	bool		release_waits;
	int			procno;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	release_waits = slot->delete_unsure;
	procno = slot->procno;
	zkl_slot_clear(slot);
	LWLockRelease(zkl_shared->lock);
	if (release_waits)
		zkl_wake_procno(procno);
	zkl_end_work(work);
	work->lease_unsure = false;
}

/*
 * Whether the slot's node is one the slot created, and must delete when it
 * gives up: a lock request's contender (a semaphore's lease goes with it),
 * or a published wait.  A read or a revocation creates nothing; the node
 * a revocation asks is another client's (slot->target), never ours to
 * delete, whatever ZooKeeper answered.
 */
bool
zkl_owns_node(const zkl_slot *slot)
{
	return slot->node[0] != '\0' && (!slot->inspect || slot->op == ZKL_OP_PUBLISH);
}

/* Report a final outcome to the waiting backend, which frees the slot. */
void
zkl_fail_slot(int slotno, int rc)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];
	int			procno;

	/* A node of ours may exist: it goes first, or it would block everyone. */
	if (zkl_owns_node(slot))
	{
		work->fail_rc = rc;
		zkl_send_delete(slotno, slot);
		return;
	}

	zkl_end_work(work);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (!slot->wanted)
	{
		LWLockRelease(zkl_shared->lock);
		zkl_free_slot(slotno);
		return;
	}
	slot->state = ZKL_SLOT_FAILED;
	slot->zk_rc = rc;
	procno = slot->procno;
	LWLockRelease(zkl_shared->lock);
	zkl_wake_procno(procno);
}

/*
 * A held lock is gone, if the slot still held it.  The backend is woken
 * and, as zklock.on_lock_lost says, its statement cancelled or the backend
 * terminated at once; its commit fails in any case.  The log line and the
 * signal are sent after the lock is released.
 */
bool
zkl_mark_lost(int slotno, const char *cause)
{
	return zkl_mark_lost_as(slotno, cause, false);
}

/*
 * zkl_mark_lost; with stranded, the node is kept (its delete was refused:
 * it stays, "stranded" in zk_locks, and is tried again until it goes).
 */
bool
zkl_mark_lost_as(int slotno, const char *cause, bool stranded)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	bool		held;
	bool		commit_waiting = false;
	bool		fence_row = false;
	int			pid = 0;
	int			signo = 0;
	int			procno = 0;
	zkl_take_reason reason = ZKL_TAKE_NONE;
	char		name[ZKL_MAX_NAME_LEN + 1];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	held = slot->state == ZKL_SLOT_HELD;
	if (held)
	{
		reason = slot->take_reason;
		slot->state = ZKL_SLOT_LOST;
		if (stranded)
			slot->stranded = true;
		else
			slot->node[0] = '\0';
		pid = slot->pid;
		commit_waiting = slot->commit_waiting;
		fence_row = slot->fence_row;
		strlcpy(name, slot->name, sizeof(name));
		procno = slot->procno;
	}
	LWLockRelease(zkl_shared->lock);
	if (!held)
		return false;
	zkl_wake_procno(procno);

	/*
	 * The signal goes before anything that may fail or be interrupted (the
	 * log line): the state says LOST, and the action it promises is done with
	 * it, so that no death of the worker in between leaves a loss untold.
	 *
	 * A commit waiting for proof reports the loss itself, as ZK002.  A
	 * transaction that locked a fence row with this hold's token would keep
	 * the next holder's fence waiting for as long as it stays open, and
	 * PostgreSQL ignores a cancel while the backend is idle in it: whatever
	 * zklock.on_lock_lost says, the backend is terminated (it could never
	 * commit), as pg_terminate_backend would.  A revocation obeyed by
	 * zklock.on_revoke = cancel cancels.
	 */
	if (commit_waiting)
		signo = 0;
	else if (fence_row)
		signo = SIGTERM;
	else if (reason == ZKL_TAKE_REVOKED || zkl_on_lock_lost == ZKL_ON_LOST_CANCEL)
		signo = SIGINT;
	else if (zkl_on_lock_lost == ZKL_ON_LOST_TERMINATE)
		signo = SIGTERM;
	if (signo != 0)
		kill(pid, signo);

	zkl_count(lost);
	ConditionVariableBroadcast(&zkl_shared->contact_cv);
	ereport(LOG,
			(errmsg("backend %d lost ZooKeeper lock \"%s\": %s",
					pid, name, cause)));
	if (signo == SIGTERM && fence_row)
		ereport(LOG,
				(errmsg("terminating backend %d: its transaction holds a fence row of ZooKeeper lock \"%s\", which it lost",
						pid, name)));
	return true;
}

/*
 * Take a hold away from its backend (zkl_take_reason): from now on the
 * backend counts it lost and its commit fails; its node is deleted, and once
 * it is gone the loss is reported as any other (zkl_on_deleted).
 *
 * Not from a transaction that has passed its pre-commit check (committing):
 * its commit may already be durable, and another holder must not be granted
 * the lock before that commit is visible.  The take-away waits for the
 * transaction's end: zkl_check_holds tries again on its next pass (the
 * backend wakes the worker when it ends), and the log line then says so.
 */
void
zkl_take_away(int slotno, zkl_slot *slot, zkl_take_reason reason)
{
	bool		taken;
	bool		deferred = false;
	bool		waited = false;
	int			pid = 0;
	char		name[ZKL_MAX_NAME_LEN + 1];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	taken = slot->state == ZKL_SLOT_HELD && slot->wanted && slot->take_reason == ZKL_TAKE_NONE;
	if (taken && slot->committing)
	{
		deferred = !slot->take_deferred;
		slot->take_deferred = true;
		taken = false;
	}
	else if (taken)
	{
		slot->take_reason = reason;
		waited = slot->take_deferred;
	}
	pid = slot->pid;
	strlcpy(name, slot->name, sizeof(name));
	LWLockRelease(zkl_shared->lock);
	if (deferred)
		ereport(LOG,
				(errmsg("ZooKeeper lock \"%s\" of backend %d is not taken away while its transaction commits",
						name, pid),
				 errdetail("The %s waits for the end of that transaction.",
						   reason == ZKL_TAKE_REVOKED ? "revocation" : "hold limit (zklock.max_hold_time)")));
	if (!taken)
		return;
	if (waited)
		ereport(LOG,
				(errmsg("ZooKeeper lock \"%s\" taken away from backend %d after its transaction's commit ended",
						name, pid),
				 errdetail("The %s waited for that commit.",
						   reason == ZKL_TAKE_REVOKED ? "revocation" : "hold limit (zklock.max_hold_time)")));
	/* A committing backend looks again. */
	ConditionVariableBroadcast(&zkl_shared->contact_cv);
	zkl_send_delete(slotno, slot);
}

/*
 * A holder's node carries Curator's revocation message: do what
 * zklock.on_revoke said when the lock was asked for.  Once per hold.
 */
void
zkl_revocation_asked(int slotno, zkl_slot *slot)
{
	bool		first;
	zkl_on_revoke action;
	int			pid;
	char		name[ZKL_MAX_NAME_LEN + 1];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	first = slot->state == ZKL_SLOT_HELD && !slot->revoke_requested;
	if (first)
		slot->revoke_requested = true;
	action = slot->on_revoke;
	pid = slot->pid;
	strlcpy(name, slot->name, sizeof(name));
	LWLockRelease(zkl_shared->lock);
	if (!first)
		return;

	/*
	 * The action first, the log line after: revoke_requested promises it, and
	 * a worker that died in between would never act (a restarted worker also
	 * completes a cancel it finds promised: zkl_adopt_slots).
	 */
	if (action == ZKL_ON_REVOKE_CANCEL)
		zkl_take_away(slotno, slot, ZKL_TAKE_REVOKED);
	else if (action == ZKL_ON_REVOKE_TERMINATE)
		kill(pid, SIGTERM);

	ereport(LOG,
			(errmsg("backend %d was asked to give up ZooKeeper lock \"%s\"", pid, name),
			 errdetail(action == ZKL_ON_REVOKE_IGNORE ? "zklock.on_revoke is \"ignore\": the backend keeps the lock." :
					   action == ZKL_ON_REVOKE_CANCEL ? "zklock.on_revoke is \"cancel\": the lock is given up and the backend's statement cancelled." :
					   "zklock.on_revoke is \"terminate\": the backend is terminated.")));
}

/*
 * Watch our own node, so that a deletion by anyone is noticed: a waiter
 * whose node vanished queues again before its predecessor's deletion can
 * make it believe it is lowest (ZooKeeper delivers the two events in order),
 * and a holder loses its lock.  A waiter sets it with its predecessor's; a
 * hold granted at once only once it lasts (zkl_check_holds); a semaphore's
 * lease at its grant or with the lasting holds (zkl_on_unlocked).
 */
void
zkl_watch_own_node(int slotno, zkl_slot *slot)
{
	char	   *path;
	int			rc;

	if (zkl_works[slotno].own_watch_gen == zkl_works[slotno].opgen)
		return;
	path = zkl_child_path(slot, slot->node);

	/*
	 * getData, so that a holder reads a revocation request with the watch. A
	 * watch the library refused is not set: the retry sends it again.
	 */
	rc = zoo_awget(zkl_zh, path, zkl_node_watcher,
				   (void *) zkl_ctx(ZKL_EV_OWN_WATCH, slotno),
				   zkl_data_done, zkl_ctx(ZKL_EV_OWN_EXISTS, slotno));
	if (rc == ZOK)
		zkl_works[slotno].own_watch_gen = zkl_works[slotno].opgen;
	zkl_check_sent(slotno, rc);
	pfree(path);
}

void
zkl_grant(int slotno, zkl_slot *slot)
{
	bool		wanted;

	/*
	 * A semaphore's mutex is only the way to its lease: the lock recipe hands
	 * it to semaphore.c, whose grant comes once the mutex is given up.
	 */
	Assert(slot->permits == 0 || zkl_works[slotno].phase == ZKL_PH_UNLOCKING);

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	if (wanted)
	{
		slot->state = ZKL_SLOT_HELD;
		slot->granted_at = GetCurrentTimestamp();
		/* Our node is an ephemeral of the session in use. */
		slot->granted_session = zkl_shared->session_id;
		zkl_works[slotno].granted_mono = zkl_now();
		zkl_count(acquired);
		if (zkl_works[slotno].waited)
			zkl_count(handoffs);
	}
	LWLockRelease(zkl_shared->lock);
	if (wanted)
		zkl_wake_backend(slot);

	zkl_works[slotno].phase = ZKL_PH_HELD;
	zkl_works[slotno].handoff = false;
	zkl_works[slotno].waited = false;

	/*
	 * A revocation written on our node while it waited (Curator's Revoker
	 * writes on every participant's) is asked of the hold now.
	 */
	if (wanted && zkl_works[slotno].revoke_seen)
		zkl_revocation_asked(slotno, slot);

	/*
	 * A waiter's node is watched already.  A hold granted at once is not
	 * watched yet: most are released before it would pay off, and
	 * zkl_watch_lasting_holds arms the watch of those that last.
	 */
	if (!wanted)
		zkl_send_delete(slotno, slot);
}

/* Our waiting node is gone (an operator, say): queue again with a new one. */
void
zkl_requeue(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];

	/*
	 * A semaphore's lease is counted by every mutex holder: kept while this
	 * request queues for the mutex again, it could keep the holder ahead
	 * waiting for a permit that only this request's grant would free.  It
	 * goes; should the delete's answer be lost, the listing under the next
	 * mutex finds it (lease_unsure).
	 */
	if (zkl_lease_pending(slot) && slot->lease[0] != '\0')
	{
		char	   *lease = zkl_lease_path(slot);

		zkl_check_sent(slotno, zoo_adelete(zkl_zh, lease, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_IGNORE, slotno)));
		pfree(lease);
		work->lease_unsure = true;
	}
	zkl_end_work(work);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	slot->node[0] = '\0';
	slot->lease[0] = '\0';
	LWLockRelease(zkl_shared->lock);
	zkl_mark_pending(slotno);
}

/* A semaphore's leases/, from its mutex's directory ".../locks". */
char	   *
zkl_leases_dir(const zkl_slot *slot)
{
	size_t		len = strlen(slot->dir);

	Assert(len > 6 && strcmp(slot->dir + len - 6, "/locks") == 0);
	return psprintf("%.*s/leases", (int) (len - 6), slot->dir);
}

/* The path of the slot's lease. */
char	   *
zkl_lease_path(const zkl_slot *slot)
{
	char	   *dir = zkl_leases_dir(slot);
	char	   *path = psprintf("%s/%s", dir, slot->lease);

	pfree(dir);
	return path;
}

/*
 * List a semaphore's leases/ (semaphore.c takes the answer); with a watch
 * only when the request is about to wait on it.
 */
void
zkl_list_leases(int slotno, zkl_slot *slot, bool watch)
{
	char	   *dir = zkl_leases_dir(slot);

	zkl_works[slotno].phase = ZKL_PH_LEASING;
	zkl_works[slotno].lease_watched = watch;
	if (watch)
		zkl_check_sent(slotno, zoo_awget_children(zkl_zh, dir, zkl_node_watcher,
												  (void *) zkl_ctx(ZKL_EV_LEASES_WATCH, slotno),
												  zkl_strings_done, zkl_ctx(ZKL_EV_LEASES, slotno)));
	else
		zkl_check_sent(slotno, zoo_aget_children(zkl_zh, dir, 0, zkl_strings_done,
												 zkl_ctx(ZKL_EV_LEASES, slotno)));
	pfree(dir);
}

/*
 * A slot given up before its grant whose lease may exist unseen (its
 * create's answer was lost, or a worker restart came between the create
 * and its answer): sync, then list leases/ for one with our uuid; the
 * answer (semaphore.c's, not wanted) deletes it with the mutex node.  An
 * orphan lease would take a permit from every client, Curator's too, for
 * as long as the session lives.
 */
static void
zkl_find_lease(int slotno, zkl_slot *slot)
{
	char	   *dir = zkl_leases_dir(slot);

	zkl_send_sync(slotno, dir);
	pfree(dir);
	zkl_list_leases(slotno, slot, false);
}

/*
 * Whether the slot is a semaphore's request before its grant: its node is
 * in the mutex's directory (".../locks"), and a lease may be its too.
 * After the grant the lease is the node.
 */
bool
zkl_lease_pending(const zkl_slot *slot)
{
	size_t		len = strlen(slot->dir);

	return slot->permits > 0 && len > 6 && strcmp(slot->dir + len - 6, "/locks") == 0;
}

/*
 * Delete our node.  A semaphore request given up before its grant has a
 * lease too: it goes first, and the node's answer tells of both; a lease
 * that may exist unseen is looked for first (zkl_find_lease), and one
 * without a mutex node is deleted alone.
 */
void
zkl_send_delete(int slotno, zkl_slot *slot)
{
	char	   *path;
	bool		before_grant = zkl_lease_pending(slot);

	/* Only a lock request or a publication ever has a node of its own. */
	Assert(!slot->inspect || slot->op == ZKL_OP_PUBLISH);

	/* A lease that may exist unseen is looked for first. */
	if (before_grant && slot->lease[0] == '\0' && zkl_works[slotno].lease_unsure)
	{
		zkl_find_lease(slotno, slot);
		return;
	}
	if (before_grant && slot->node[0] == '\0')
	{
		/* No mutex node (any more): the lease alone, if there is one. */
		char	   *lease;

		if (slot->lease[0] == '\0')
		{
			zkl_free_slot(slotno);
			return;
		}
		lease = zkl_lease_path(slot);
		zkl_works[slotno].phase = ZKL_PH_DELETING;
		zkl_check_sent(slotno, zoo_adelete(zkl_zh, lease, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_DELETED, slotno)));
		pfree(lease);
		return;
	}
	path = zkl_child_path(slot, slot->node);
	if (slot->permits > 0 && slot->lease[0] != '\0')
	{
		char	   *lease = zkl_lease_path(slot);

		zkl_check_sent(slotno, zoo_adelete(zkl_zh, lease, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_IGNORE, slotno)));
		pfree(lease);
	}
	zkl_works[slotno].phase = ZKL_PH_DELETING;
	/* Ready with others, it travels in the pass's multi (write_batch.c). */
	if (zkl_hooks.take_delete == NULL || !zkl_hooks.take_delete(slotno, slot, path))
		zkl_check_sent(slotno, zoo_adelete(zkl_zh, path, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_DELETED, slotno)));
	pfree(path);
}

/* Whether rc is the session's failure (the connection's, or its end), not the request's. */
bool
zkl_session_trouble(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
		rc == ZCLOSING || rc == ZINVALIDSTATE;
}

/* A request failed because the connection dropped: try again later. */
bool
zkl_connection_trouble(int slotno, int rc)
{
	if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
	{
		zkl_works[slotno].retry = true;
		zkl_mark_pending(slotno);
		return true;
	}
	/* Expiry and close are handled for every slot at once. */
	return zkl_session_trouble(rc);
}

/*
 * A request of the slot failed: after a connection loss it is sent again,
 * an expiry is the session's business, anything else fails the slot.
 */
void
zkl_request_failed(int slotno, int rc)
{
	if (!zkl_connection_trouble(slotno, rc))
		zkl_fail_slot(slotno, rc);
}

/* Phases in which our node exists and is watched. */
bool
zkl_own_node_watched(const zkl_work *work)
{
	return work->phase == ZKL_PH_HELD || work->phase == ZKL_PH_LISTING ||
		work->phase == ZKL_PH_WATCHING;
}

/*
 * Our node is gone, deleted by someone else: a waiter queues again (a
 * slot given up meanwhile is freed), a holder has lost its lock.
 */
void
zkl_own_node_gone(int slotno, zkl_slot *slot, bool wanted)
{
	if (zkl_works[slotno].phase != ZKL_PH_HELD)
	{
		if (wanted)
			zkl_requeue(slotno, slot);
		else if (zkl_lease_pending(slot))
		{
			/* The mutex node is gone; a lease may not be. */
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			slot->node[0] = '\0';
			LWLockRelease(zkl_shared->lock);
			zkl_send_delete(slotno, slot);
		}
		else
			zkl_free_slot(slotno);
		return;
	}
	zkl_mark_lost(slotno, "its node was deleted");
	zkl_end_work(&zkl_works[slotno]);
}

/*
 * Copy into out the node of the owner's hold of the other mode, which is
 * never waited on; false when there is none.
 */
bool
zkl_sibling_node(zkl_slot *slot, char *out)
{
	zkl_slot   *sib;
	bool		found;

	if (slot->sibling_slotno < 0 || slot->sibling_slotno >= zkl_shared->nslots)
		return false;
	sib = &zkl_shared->slots[slot->sibling_slotno];
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	found = sib->generation == slot->sibling_generation && sib->pid == slot->pid &&
		sib->node[0] != '\0';
	if (found)
		strlcpy(out, sib->node, ZKL_MAX_NODE_LEN);
	LWLockRelease(zkl_shared->lock);
	return found;
}

/* A try found the lock (or the permits) taken: tell it, and clean up. */
void
zkl_give_up_busy(int slotno, zkl_slot *slot)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	slot->state = ZKL_SLOT_BUSY;
	LWLockRelease(zkl_shared->lock);
	zkl_wake_backend(slot);
	zkl_send_delete(slotno, slot);
}

/* From now on the request waits for another holder: its timeout runs. */
void
zkl_set_behind(zkl_slot *slot)
{
	bool		was_behind;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	was_behind = slot->behind;
	slot->behind = true;
	LWLockRelease(zkl_shared->lock);
	if (!was_behind)
		zkl_wake_backend(slot);
}

/* ---- a peer's downgrade: its read lock kept after its write lock ---- */

static void
zkl_free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		pfree(names[i]);
	if (names != NULL)
		pfree(names);
}

/*
 * The listing and the read nodes still to be read, replaced within the
 * work by the next listing (they are the work's memory: its end frees them
 * with the rest).
 */
void
zkl_downgrade_forget_listing(zkl_work *work)
{
	zkl_free_names(work->listing, work->nlisting);
	zkl_free_names(work->candidates, work->ncandidates);
	work->listing = work->candidates = NULL;
	work->nlisting = work->ncandidates = work->next_candidate = 0;
}

/* At the work's end, once its context is gone: nothing left to free. */
static void
zkl_downgrade_forget(zkl_work *work)
{
	work->listing = work->candidates = NULL;
	work->nlisting = work->ncandidates = work->next_candidate = 0;
	work->held_behind = NULL;
	work->nheld_behind = 0;
	work->downgrade_owner = work->downgrade_pzxid = 0;
	work->downgrade_read = false;
	work->pred_owner = 0;
}
