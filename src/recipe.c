/*-------------------------------------------------------------------------
 *
 * recipe.c
 *		The lock recipe the worker runs for each slot: create a sequential
 *		ephemeral child, list the directory, watch only the predecessor,
 *		delete on release.  Runs on the worker's main thread only.
 *
 * Every request carries the slot's "opgen" in its callback context; a
 * result whose opgen no longer matches belongs to abandoned work and is
 * dropped, so late completions and stale watches cannot disturb a slot that
 * has moved on or been reused.
 *
 * A slot's work is a small state machine (zkl_phase).  Completions answer a
 * request; watches (PRED_WATCH, OWN_WATCH) report a change.  Any request
 * that fails with a connection loss is sent again once the session is back
 * (zkl_redo); an expiry ends every slot's work at once (zkl_session_lost);
 * other failures fail the slot (zkl_request_failed).  The backend giving the
 * slot up (wanted = false) turns any phase into DELETING once the request
 * in flight has answered (zkl_release).
 *
 *	phase		event				-> action, next phase
 *	IDLE		request posted		-> create + listing, CREATING
 *				(zk_lock_contenders)-> listing, INSPECTING
 *	CREATING	CREATED ok			-> LISTING
 *				CREATED ZNONODE		-> create the parents, create again
 *				CREATED lost		-> RECOVERING (find our node by uuid)
 *	RECOVERING	RECOVER_CHILDREN	-> found: RECOVER_STAT; else create again
 *				RECOVER_STAT ok		-> listing, LISTING
 *	LISTING		CHILDREN			-> zkl_decide(): HELD: grant, HELD;
 *									   WAIT: watch our node and the node
 *									   ahead, WATCHING
 *									   (a try: DELETING, busy);
 *									   DEADLOCK: DELETING, then fail;
 *									   ABSENT: IDLE, queued again
 *	WATCHING	PRED_EXISTS ZNONODE,
 *				PRED_WATCH deleted	-> nothing else ahead: grant, HELD;
 *									   else listing, LISTING
 *				PRED_WATCH changed	-> listing, LISTING
 *	LISTING, WATCHING, HELD
 *				OWN_EXISTS ZNONODE,
 *				OWN_WATCH deleted	-> waiting: IDLE, queued again;
 *									   holding: the lock is lost
 *				OWN_EXISTS with the revocation message, waiting
 *									-> kept, and asked of the hold at the
 *									   grant
 *	HELD		heartbeat tick		-> own-node watch, if not set;
 *									   past zklock.max_hold_time: taken
 *									   away (delete, DELETING, then lost)
 *				OWN_EXISTS with the revocation message
 *									-> as zklock.on_revoke says (cancel:
 *									   taken away)
 *				released			-> delete, DELETING
 *	DELETING	DELETED				-> slot freed (a failure is reported first)
 *	INSPECTING	INSPECT_CHILDREN, INSPECT_DATA -> reply written, IDLE
 *				REVOKE_SET			-> answer given, IDLE
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "storage/dsm.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "lock_rule.h"
#include "worker.h"
#include "write_batch.h"		/* issue 32 */

/* The root's components were created (or found) by this worker. */
static bool zkl_root_made = false;

zkl_work   *zkl_works = NULL;

/* Slots with something to do once the session is usable. */
static int *zkl_pending = NULL;
static int	zkl_npending = 0;

/* The worker's state of every slot, before the first request. */
void
zkl_recipe_init(void)
{
	zkl_works = MemoryContextAllocZero(TopMemoryContext, sizeof(zkl_work) * zkl_shared->nslots);
	/* opgen 0 is "never": an own-node watch noted for it would match. */
	for (int i = 0; i < zkl_shared->nslots; i++)
		zkl_works[i].opgen = 1;
	zkl_pending = MemoryContextAlloc(TopMemoryContext, sizeof(int) * zkl_shared->nslots);
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

/* Dispatch every pending slot. */
void
zkl_run_pending(void)
{
	int			n = zkl_npending;
	bool		connected = zkl_zh != NULL &&
	zkl_shared->session_state == ZKL_SESSION_CONNECTED;

	/* Dispatch may mark slots pending again; those wait for the next round. */
	zkl_npending = 0;
	for (int i = 0; i < n; i++)
	{
		int			slotno = zkl_pending[i];

		zkl_works[slotno].pending = false;
		zkl_dispatch(slotno, connected);
	}
}


/*
 * The nodes of this cluster's slots, by name: a waiter whose predecessor
 * goes learns at once whether it was one of ours, without a scan of the
 * slots.  An entry lives from the moment the worker learns the node's name
 * until the slot's work ends (zkl_end_work).
 */
typedef struct zkl_node_entry
{
	char		node[ZKL_MAX_NODE_LEN];
	int			slotno;
} zkl_node_entry;

static HTAB *zkl_node_map = NULL;

static void zkl_forget_node(zkl_work *work);

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

/* What our own requests create, by zkl_node_kind. */
static const char *const zkl_node_markers[] = {"-lock-", "__WRIT__", "__READ__"};

static void zkl_send_create(int slotno, zkl_slot *slot, bool with_parents);
static void zkl_send_listing(int slotno, zkl_slot *slot, zkl_event_kind kind);
static void zkl_downgrade_forget(zkl_work *work);
static void zkl_inspect_start(int slotno, zkl_slot *slot);
static void zkl_inspect_free(zkl_work *work);
static void zkl_publish_wait(int slotno, zkl_slot *slot, bool overwrite);

/*
 * Reads of children in flight at once for one zk_lock_contenders, at
 * most.  ZooKeeper answers a session's requests in order: a burst of one
 * read per child would queue the session's own traffic (the heartbeat,
 * other backends' creates and deletes) behind thousands of reads.  With a
 * window of reads, a request sent meanwhile waits for at most this many.
 */
#define ZKL_MAX_INSPECT_READS	32

/* What zk_lock_contenders has read so far of one directory. */
typedef struct zkl_inspection
{
	int			nchildren;
	int			nread;			/* children whose getData was sent */
	int			nsent;			/* requests sent, getData and exists */
	int			nreplied;		/* answers taken: they come in the order sent */
	int		   *sent;			/* the child of each request, in order */
	char	  **children;
	int64	   *czxid;
	int64	   *owner;			/* ephemeralOwner */
	int64	   *ctime;
	char	  **data;
	int		   *data_len;
	bool	   *gone;			/* deleted between the listing and the read */
	bool	   *unreadable;		/* getData refused (ZNOAUTH): data unknown */
} zkl_inspection;

static char *
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
 * work) or the connection is down.  Anything else (bad arguments, no
 * memory for the request) would be refused again.
 */
static bool
zkl_refusal_passes(int rc)
{
	return rc == ZINVALIDSTATE || rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
		rc == ZCLOSING || rc == ZSESSIONEXPIRED;
}

/*
 * The slot's only request in flight was sent (rc): refused at once, its
 * work starts again once the session is usable, or the slot fails with the
 * library's answer when sending again cannot help.  Nothing of the slot is
 * in flight then, so no answer is waited for.  False when refused.
 */
static void zkl_fail_slot(int slotno, int rc);

static bool
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
				(errmsg("zklock: the ZooKeeper client library refused a request of lock \"%s\": %s",
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
static void
zkl_end_work(zkl_work *work)
{
	zkl_forget_node(work);
	work->opgen++;
	work->phase = ZKL_PH_IDLE;
	work->retry = false;
	work->fail_rc = 0;
	work->parent_attempts = 0;
	work->waited = work->handoff = false;
	work->numbers_repeat = work->equal_logged = work->revoke_seen = false;
	work->lease_watched = false;
	work->lease_czxid = 0;
	zkl_downgrade_forget(work);
	zkl_inspect_free(work);
}

/* Forget the slot: only done once no node of it can exist any more. */
static void
zkl_free_slot(int slotno)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_slot_clear(slot);
	LWLockRelease(zkl_shared->lock);
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
static bool
zkl_owns_node(const zkl_slot *slot)
{
	return slot->node[0] != '\0' && (!slot->inspect || slot->op == ZKL_OP_PUBLISH);
}

/* Report a final outcome to the waiting backend, which frees the slot. */
static void
zkl_fail_slot(int slotno, int rc)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];

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
	zkl_wake_backend(slot);
	LWLockRelease(zkl_shared->lock);
}

/*
 * A held lock is gone, if the slot still held it.  The backend is woken
 * and, as zklock.on_lock_lost says, its statement cancelled or the backend
 * terminated at once; its commit fails in any case.  The log line and the
 * signal are sent after the lock is released.
 */
static void
zkl_mark_lost(int slotno, const char *cause)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	bool		held;
	bool		commit_waiting = false;
	bool		fence_row = false;
	int			pid = 0;
	zkl_take_reason reason = ZKL_TAKE_NONE;
	char		name[ZKL_MAX_NAME_LEN + 1];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	held = slot->state == ZKL_SLOT_HELD;
	if (held)
	{
		reason = slot->take_reason;
		slot->state = ZKL_SLOT_LOST;
		slot->node[0] = '\0';
		pid = slot->pid;
		commit_waiting = slot->commit_waiting;
		fence_row = slot->fence_row;
		strlcpy(name, slot->name, sizeof(name));
		zkl_wake_backend(slot);
	}
	LWLockRelease(zkl_shared->lock);
	if (!held)
		return;

	zkl_count(lost);
	ConditionVariableBroadcast(&zkl_shared->contact_cv);
	ereport(LOG,
			(errmsg("zklock: backend %d lost ZooKeeper lock \"%s\": %s",
					pid, name, cause)));
	/* A commit waiting for proof reports the loss itself, as ZK002. */
	if (commit_waiting)
		return;

	/*
	 * A transaction that locked a fence row with this hold's token would keep
	 * the next holder's fence waiting for as long as it stays open, and
	 * PostgreSQL ignores a cancel while the backend is idle in it: whatever
	 * zklock.on_lock_lost says, the backend is terminated (it could never
	 * commit), as pg_terminate_backend would.
	 */
	if (fence_row)
	{
		ereport(LOG,
				(errmsg("zklock: terminating backend %d: its transaction holds a fence row of ZooKeeper lock \"%s\", which it lost",
						pid, name)));
		kill(pid, SIGTERM);
		return;
	}
	/* A revocation obeyed by zklock.on_revoke = cancel cancels. */
	if (reason == ZKL_TAKE_REVOKED || zkl_on_lock_lost == ZKL_ON_LOST_CANCEL)
		kill(pid, SIGINT);
	else if (zkl_on_lock_lost == ZKL_ON_LOST_TERMINATE)
		kill(pid, SIGTERM);
}

/*
 * Take a hold away from its backend (zkl_take_reason): from now on the
 * backend counts it lost and its commit fails; its node is deleted, and once
 * it is gone the loss is reported as any other (zkl_on_deleted).
 */
static void
zkl_take_away(int slotno, zkl_slot *slot, zkl_take_reason reason)
{
	bool		taken;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	taken = slot->state == ZKL_SLOT_HELD && slot->wanted && slot->take_reason == ZKL_TAKE_NONE;
	if (taken)
		slot->take_reason = reason;
	LWLockRelease(zkl_shared->lock);
	if (!taken)
		return;
	/* A committing backend looks again. */
	ConditionVariableBroadcast(&zkl_shared->contact_cv);
	zkl_send_delete(slotno, slot);
}

/*
 * A holder's node carries Curator's revocation message: do what
 * zklock.on_revoke said when the lock was asked for.  Once per hold.
 */
static void
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

	ereport(LOG,
			(errmsg("zklock: backend %d was asked to give up ZooKeeper lock \"%s\"", pid, name),
			 errdetail(action == ZKL_ON_REVOKE_IGNORE ? "zklock.on_revoke is \"ignore\": the backend keeps the lock." :
					   action == ZKL_ON_REVOKE_CANCEL ? "zklock.on_revoke is \"cancel\": the lock is given up and the backend's statement cancelled." :
					   "zklock.on_revoke is \"terminate\": the backend is terminated.")));
	if (action == ZKL_ON_REVOKE_CANCEL)
		zkl_take_away(slotno, slot, ZKL_TAKE_REVOKED);
	else if (action == ZKL_ON_REVOKE_TERMINATE)
		kill(pid, SIGTERM);
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

	if (zkl_works[slotno].own_watch_gen == zkl_works[slotno].opgen)
		return;
	zkl_works[slotno].own_watch_gen = zkl_works[slotno].opgen;
	path = zkl_child_path(slot, slot->node);

	/* getData, so that a holder reads a revocation request with the watch. */
	zkl_check_sent(slotno, zoo_awget(zkl_zh, path, zkl_node_watcher,
									 (void *) zkl_ctx(ZKL_EV_OWN_WATCH, slotno),
									 zkl_data_done, zkl_ctx(ZKL_EV_OWN_EXISTS, slotno)));
	pfree(path);
}

void
zkl_grant(int slotno, zkl_slot *slot)
{
	bool		wanted;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	/* A semaphore's mutex is only the way to its lease (semaphore.c). */
	if (slot->permits > 0 && zkl_works[slotno].phase != ZKL_PH_UNLOCKING)
	{
		LWLockRelease(zkl_shared->lock);
		zkl_sem_mutex_held(slotno, slot, wanted);
		return;
	}
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
		zkl_wake_backend(slot);
	}
	LWLockRelease(zkl_shared->lock);

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
static void
zkl_requeue(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];

	zkl_end_work(work);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	slot->node[0] = '\0';
	LWLockRelease(zkl_shared->lock);
	zkl_mark_pending(slotno);
}

/*
 * Create our contender and list the directory back to back: ZooKeeper
 * answers one session in order, so the listing already has our node and an
 * uncontended acquire costs one round trip.  Parents are created only after
 * a ZNONODE, the lock directory as a container that ZooKeeper removes once
 * it is empty.
 */
static void
zkl_send_create(int slotno, zkl_slot *slot, bool with_parents)
{
	if (with_parents)
	{
		char	   *path = pstrdup(slot->dir);
		char	   *sem_dir = NULL;

		/* A semaphore's directory holds its locks/ and leases/: a container. */
		if (slot->permits > 0)
		{
			*strrchr(path, '/') = '\0';
			sem_dir = pstrdup(path);
		}

		/*
		 * The root's components persist; they are shared by every lock. Once
		 * one lock's parents were made, only a later attempt (the root
		 * deleted under us) makes them again.
		 */
		for (char *p = strchr(path + 1, '/'); p && (!zkl_root_made || zkl_works[slotno].parent_attempts > 1);
			 p = strchr(p + 1, '/'))
		{
			*p = '\0';
			zkl_check_sent(slotno, zoo_acreate(zkl_zh, path, NULL, -1, zkl_acl(), ZOO_PERSISTENT,
											   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
			*p = '/';
		}
		zkl_root_made = true;
		if (sem_dir)
		{
			zkl_check_sent(slotno, zoo_acreate(zkl_zh, sem_dir, NULL, -1, zkl_acl(), ZOO_CONTAINER,
											   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
			pfree(sem_dir);
		}
		zkl_check_sent(slotno, zoo_acreate(zkl_zh, slot->dir, NULL, -1, zkl_acl(), ZOO_CONTAINER,
										   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
		pfree(path);
	}

	zkl_send_contender(slotno, slot);
}

/* The contender's create and the listing after it (see zkl_send_create). */
void
zkl_send_contender(int slotno, zkl_slot *slot)
{
	char	   *prefix;

	/* "_c_<uuid>-" then the marker: Curator's protected-mode names. */
	prefix = psprintf("%s/_c_%s-%s", slot->dir, slot->uuid,
					  zkl_node_markers[slot->kind] + (slot->kind == ZKL_NODE_MUTEX ? 1 : 0));
	zkl_works[slotno].phase = ZKL_PH_CREATING;
	/* issue 32 hook: it may travel in a multi (write_batch.c) */
	if (zkl_batch_take_create(slotno, slot, prefix))
	{
		pfree(prefix);
		return;
	}
	/* Refused at once: nothing was created, nothing is to be waited for. */
	if (zkl_sent_alone(slotno, zoo_acreate2(zkl_zh, prefix, slot->data, strlen(slot->data), zkl_acl(),
											ZOO_EPHEMERAL_SEQUENTIAL, zkl_string_stat_done,
											zkl_ctx(ZKL_EV_CREATED, slotno))))
		zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
	pfree(prefix);
}

static void
zkl_send_listing(int slotno, zkl_slot *slot, zkl_event_kind kind)
{
	if (kind == ZKL_EV_CHILDREN && zkl_works[slotno].phase != ZKL_PH_CREATING)
		zkl_works[slotno].phase = ZKL_PH_LISTING;
	/* With the directory's Stat: its child counter, for zkl_check_counter. */
	zkl_check_sent(slotno, zoo_aget_children2(zkl_zh, slot->dir, 0, zkl_strings_stat_done,
											  zkl_ctx(kind, slotno)));
}

/*
 * Delete our node.  A semaphore request given up before its grant has a
 * lease too: it goes first, and the node's answer tells of both.
 */
void
zkl_send_delete(int slotno, zkl_slot *slot)
{
	char	   *path = zkl_child_path(slot, slot->node);

	/* Only a lock request or a publication ever has a node of its own. */
	Assert(!slot->inspect || slot->op == ZKL_OP_PUBLISH);
	if (slot->permits > 0 && slot->lease[0] != '\0')
	{
		char	   *lease = zkl_lease_path(slot);

		zkl_check_sent(slotno, zoo_adelete(zkl_zh, lease, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_IGNORE, slotno)));
		pfree(lease);
	}
	zkl_works[slotno].phase = ZKL_PH_DELETING;
	/* issue 32 hook: it may travel in a multi (write_batch.c) */
	if (!zkl_batch_take_delete(slotno, slot, path))
		zkl_check_sent(slotno, zoo_adelete(zkl_zh, path, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_DELETED, slotno)));
	pfree(path);
}

/* issue 32 hook: the listing after a create that went in a multi. */
void
zkl_send_create_listing(int slotno)
{
	zkl_send_listing(slotno, &zkl_shared->slots[slotno], ZKL_EV_CHILDREN);
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
			zkl_send_delete(slotno, slot);
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
		case ZKL_PH_LISTING:
		case ZKL_PH_WATCHING:
		case ZKL_PH_HELD:
		case ZKL_PH_LEASE_WAITING:
		case ZKL_PH_PUBLISHED:
			work->retry = false;
			zkl_send_delete(slotno, slot);
			return true;
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

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	state = slot->state;
	wanted = slot->wanted;
	LWLockRelease(zkl_shared->lock);

	if (state == ZKL_SLOT_FREE || state == ZKL_SLOT_FAILED || state == ZKL_SLOT_LOST)
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

/* Whether rc is the session's failure (the connection's, or its end), not the request's. */
static bool
zkl_session_trouble(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
		rc == ZCLOSING || rc == ZINVALIDSTATE;
}

/* A request failed because the connection dropped: try again later. */
static bool
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
static bool
zkl_own_node_watched(const zkl_work *work)
{
	return work->phase == ZKL_PH_HELD || work->phase == ZKL_PH_LISTING ||
		work->phase == ZKL_PH_WATCHING;
}

/*
 * Our node is gone, deleted by someone else: a waiter queues again (a
 * slot given up meanwhile is freed), a holder has lost its lock.
 */
static void
zkl_own_node_gone(int slotno, zkl_slot *slot, bool wanted)
{
	if (zkl_works[slotno].phase != ZKL_PH_HELD)
	{
		if (wanted)
			zkl_requeue(slotno, slot);
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
static bool
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
	zkl_wake_backend(slot);
	LWLockRelease(zkl_shared->lock);
	zkl_send_delete(slotno, slot);
}

/* From now on the request waits for another holder: its timeout runs. */
void
zkl_set_behind(zkl_slot *slot)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (!slot->behind)
	{
		slot->behind = true;
		zkl_wake_backend(slot);
	}
	LWLockRelease(zkl_shared->lock);
}

/*
 * Decide from a listing that contains our node.  An exclusive request waits
 * for every lower node, a shared one only for lower writers, so a writer
 * that asked first is served before later readers.  The owner's own hold of
 * the other mode does not count.  A try gives up; anyone else watches only
 * the nearest node it waits for.
 */
static void
zkl_evaluate(int slotno, zkl_slot *slot, char **children, int nchildren)
{
	zkl_work   *work = &zkl_works[slotno];
	char		sibling_node[ZKL_MAX_NODE_LEN];
	const char *ours[1] = {NULL};
	zkl_decision d;
	const char *pred;
	char	   *path;

	if (zkl_sibling_node(slot, sibling_node))
		ours[0] = sibling_node;
	d = zkl_decide_with((const char *const *) children, nchildren, slot->node, ours, 1,
						(const char *const *) work->held_behind, work->nheld_behind);
	if (d.equal && !work->equal_logged)
	{
		work->equal_logged = true;
		ereport(LOG,
				(errmsg("zklock: lock directory \"%s\" has contenders with equal sequence numbers", slot->dir),
				 errdetail("Node \"%s\" shares its number with another contender: neither is granted while both exist.",
						   slot->node),
				 errhint("ZooKeeper numbers every child 2147483647 once a directory's child counter reaches its top; the counter starts again only when the directory is emptied and removed.")));
	}

	switch (d.verdict)
	{
		case ZKL_VERDICT_ABSENT:

			/*
			 * Someone deleted our waiting node: queue again rather than wait
			 * on nothing.
			 */
			zkl_requeue(slotno, slot);
			return;
		case ZKL_VERDICT_HELD:
			zkl_grant(slotno, slot);
			return;
		case ZKL_VERDICT_DEADLOCK:
			if (!slot->try_only)
			{
				zkl_fail_slot(slotno, ZKL_RC_DEADLOCK);
				return;
			}
			break;
		case ZKL_VERDICT_WAIT:
			break;
	}
	if (slot->try_only)
	{
		zkl_give_up_busy(slotno, slot);
		return;
	}
	pred = children[d.watch];

	/*
	 * Our node is watched before the predecessor is: ZooKeeper then tells of
	 * our node's deletion before the predecessor's, and a waiter whose node
	 * vanished queues again instead of taking the lock without a node.
	 */
	zkl_watch_own_node(slotno, slot);

	zkl_set_behind(slot);

	work->phase = ZKL_PH_WATCHING;
	work->waited = true;
	work->handoff = false;
	work->pred_was_last = (d.blockers == 1);
	work->numbers_repeat = d.equal || d.at_top;
	work->pred_owner = 0;
	strlcpy(work->pred, pred, sizeof(work->pred));
	path = zkl_child_path(slot, pred);
	/* getData, not exists: a vanished predecessor leaves no watch behind. */
	zkl_check_sent(slotno, zoo_awget(zkl_zh, path, zkl_node_watcher,
									 (void *) zkl_ctx(ZKL_EV_PRED_WATCH, slotno),
									 zkl_data_done, zkl_ctx(ZKL_EV_PRED_EXISTS, slotno)));
	pfree(path);
}

/*
 * Whether a slot of ours is, or was until its release, an exclusive grant
 * (zkl_holds_after_predecessor says what follows from that): not a shared
 * hold, nor one whose backend holds the lock shared too (its own read may
 * lie below it).  ZooKeeper sends a deletion's watch events before the
 * delete's answer, so a waiter of ours hears of its predecessor while our
 * slot still shows the release.
 */
static bool
zkl_is_exclusive_grant(const zkl_slot *holder)
{
	return holder->kind != ZKL_NODE_READ && holder->sibling_slotno < 0 &&
		holder->granted_at != 0 &&
		(holder->state == ZKL_SLOT_HELD || holder->state == ZKL_SLOT_RELEASING);
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

/* The listing and the read nodes still to be read. */
static void
zkl_downgrade_forget_listing(zkl_work *work)
{
	zkl_free_names(work->listing, work->nlisting);
	zkl_free_names(work->candidates, work->ncandidates);
	work->listing = work->candidates = NULL;
	work->nlisting = work->ncandidates = work->next_candidate = 0;
}

static void
zkl_downgrade_forget(zkl_work *work)
{
	zkl_downgrade_forget_listing(work);
	zkl_free_names(work->held_behind, work->nheld_behind);
	work->held_behind = NULL;
	work->nheld_behind = 0;
	work->downgrade_owner = work->downgrade_pzxid = 0;
	work->downgrade_read = false;
	work->pred_owner = 0;
}

/*
 * The predecessor of an exclusive request went, and it was a peer's write
 * node of Curator's read-write lock (not zklock's, and of another session,
 * known from the watch's answer; one gone before that answer is not looked
 * into): its
 * holder may
 * have taken the read lock before it let the write lock go (Curator's
 * downgrade), a read node behind us that holds although nothing in the
 * directory says so any more.  The directory is listed again instead of
 * taking the lock, and the read nodes behind us in that listing are read
 * (zkl_downgrade_read).  Costs a listing on such a handoff only.
 */
static bool
zkl_downgrade_possible(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];

	if (slot->kind == ZKL_NODE_READ ||
		work->pred_owner == 0 || work->pred_owner == zkl_shared->session_id ||
		!zkl_may_downgrade(work->pred))
		return false;
	work->downgrade_owner = work->pred_owner;
	work->downgrade_pzxid = 0;
	work->downgrade_read = false;
	return true;
}

/* A downgrade found behind us, kept for the request's later decisions. */
static void
zkl_add_held_behind(zkl_work *work, const char *node)
{
	for (int i = 0; i < work->nheld_behind; i++)
		if (strcmp(work->held_behind[i], node) == 0)
			return;
	if (work->held_behind == NULL)
		work->held_behind = MemoryContextAlloc(TopMemoryContext, sizeof(char *));
	else
		work->held_behind = repalloc(work->held_behind, sizeof(char *) * (work->nheld_behind + 1));
	work->held_behind[work->nheld_behind++] = MemoryContextStrdup(TopMemoryContext, node);
}

static void
zkl_send_reader_read(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];
	char	   *path = zkl_child_path(slot, work->candidates[work->next_candidate]);

	zkl_check_sent(slotno, zoo_aget(zkl_zh, path, 0, zkl_data_done,
									zkl_ctx(ZKL_EV_READER_DATA, slotno)));
	pfree(path);
}

/*
 * The first listing after a peer's write ahead of us went: keep it, and
 * read each read node behind us in it, one after the other, before the
 * decision.  Read nodes created after that listing came after the write
 * was deleted: no later listing needs this.  Returns whether reads were
 * sent (the decision then waits for them).
 */
static bool
zkl_downgrade_read(int slotno, zkl_slot *slot, zkl_event *ev)
{
	zkl_work   *work = &zkl_works[slotno];
	MemoryContext old;

	if (work->downgrade_owner == 0 || work->downgrade_read)
		return false;
	zkl_downgrade_forget_listing(work);
	work->downgrade_pzxid = ev->pzxid;
	old = MemoryContextSwitchTo(TopMemoryContext);
	for (int i = 0; i < ev->nchildren; i++)
		if (zkl_downgrade_candidate(ev->children[i], slot->node))
		{
			if (work->candidates == NULL)
				work->candidates = palloc(sizeof(char *) * ev->nchildren);
			work->candidates[work->ncandidates++] = pstrdup(ev->children[i]);
		}
	if (work->ncandidates > 0)
	{
		work->listing = palloc(sizeof(char *) * ev->nchildren);
		for (int i = 0; i < ev->nchildren; i++)
			work->listing[i] = pstrdup(ev->children[i]);
		work->nlisting = ev->nchildren;
	}
	MemoryContextSwitchTo(old);
	if (work->ncandidates == 0)
	{
		work->downgrade_read = true;
		return false;
	}
	zkl_send_reader_read(slotno, slot);
	return true;
}

/*
 * A read node behind us, read: a downgrade of the peer's write (lock_rule.c:
 * zkl_is_downgrade) holds, and we wait for it.  One gone meanwhile, or one
 * we may not read (its session unknown), is none.  After the last one, the
 * decision on the kept listing.
 */
static void
zkl_on_reader_data(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];
	const char *node;

	if (work->candidates == NULL || work->next_candidate >= work->ncandidates)
		return;					/* a read of a listing given up */
	node = work->candidates[work->next_candidate];
	if (ev->rc != ZOK && ev->rc != ZNONODE && ev->rc != ZNOAUTH)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	if (ev->rc == ZOK &&
		zkl_is_downgrade(ev->owner, ev->czxid, ev->zklock_data,
						 work->downgrade_owner, work->downgrade_pzxid))
	{
		zkl_add_held_behind(work, node);
		ereport(LOG,
				(errmsg("zklock: a request in lock directory \"%s\" waits for node \"%s\", read lock of the session that held the write lock ahead of it",
						slot->dir, node),
				 errdetail("A peer (Curator) took the read lock before it gave the write lock up: its read holds.")));
	}
	if (++work->next_candidate < work->ncandidates)
	{
		zkl_send_reader_read(slotno, slot);
		return;
	}
	work->downgrade_read = true;
	zkl_evaluate(slotno, slot, work->listing, work->nlisting);
	zkl_downgrade_forget_listing(work);
}

/*
 * The predecessor is gone.  If it was the only node we waited for, nothing
 * is left to wait for: sequence numbers only grow, so no re-read is needed.
 */
static void
zkl_predecessor_gone(int slotno, zkl_slot *slot)
{
	bool		pred_held_here = false;
	zkl_node_entry *entry = NULL;

	if (zkl_downgrade_possible(slotno, slot))
	{
		zkl_works[slotno].handoff = true;
		zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
		return;
	}

	/* Was the predecessor this cluster's exclusive grant? */
	if (!zkl_works[slotno].pred_was_last && !zkl_works[slotno].numbers_repeat &&
		zkl_node_map != NULL)
		entry = hash_search(zkl_node_map, zkl_works[slotno].pred, HASH_FIND, NULL);
	if (entry != NULL && entry->slotno != slotno)
	{
		zkl_slot   *other = &zkl_shared->slots[entry->slotno];

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		pred_held_here = zkl_is_exclusive_grant(other) &&
			strcmp(other->node, zkl_works[slotno].pred) == 0 &&
			strcmp(other->dir, slot->dir) == 0;
		LWLockRelease(zkl_shared->lock);
	}
	zkl_works[slotno].handoff = true;
	if (zkl_holds_after_predecessor(zkl_works[slotno].pred_was_last, pred_held_here,
									zkl_works[slotno].numbers_repeat))
		zkl_grant(slotno, slot);
	else
		zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
}

static void
zkl_found_node(int slotno, zkl_slot *slot, const char *child, int64 czxid)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	strlcpy(slot->node, child, sizeof(slot->node));
	slot->token = czxid;
	LWLockRelease(zkl_shared->lock);
	zkl_remember_node(slotno, child);
}

/* ---- zk_lock_contenders: a backend's read of one lock directory ---- */

static void
zkl_inspect_free(zkl_work *work)
{
	zkl_inspection *in = work->inspection;

	if (in == NULL)
		return;
	for (int i = 0; i < in->nchildren; i++)
	{
		pfree(in->children[i]);
		if (in->data[i])
			pfree(in->data[i]);
	}
	if (in->nchildren > 0)
	{
		pfree(in->children);
		pfree(in->czxid);
		pfree(in->owner);
		pfree(in->ctime);
		pfree(in->data);
		pfree(in->data_len);
		pfree(in->gone);
		pfree(in->unreadable);
		pfree(in->sent);
	}
	pfree(in);
	work->inspection = NULL;
}

/*
 * Start what a slot that is no lock asks (zkl_slot_op): read the directory,
 * or write the revocation message on a holder's node.
 */
static void
zkl_inspect_start(int slotno, zkl_slot *slot)
{
	zkl_works[slotno].phase = ZKL_PH_INSPECTING;
	if (slot->op == ZKL_OP_PUBLISH)
	{
		zkl_publish_wait(slotno, slot, false);
		return;
	}
	if (slot->op == ZKL_OP_REVOKE)
	{
		char	   *path = zkl_child_path(slot, slot->target);

		(void) zkl_sent_alone(slotno, zoo_aset(zkl_zh, path, ZKL_REVOKE_MESSAGE, strlen(ZKL_REVOKE_MESSAGE),
											   -1, zkl_stat_done, zkl_ctx(ZKL_EV_REVOKE_SET, slotno)));
		pfree(path);
		return;
	}
	(void) zkl_sent_alone(slotno, zoo_aget_children(zkl_zh, slot->dir, 0, zkl_strings_done,
													zkl_ctx(ZKL_EV_INSPECT_CHILDREN, slotno)));
}

/*
 * The revocation message was written (or the holder had left): tell the
 * backend.  Any other answer fails the slot, which leaves the holder's node
 * as it is (zkl_owns_node).
 */
static void
zkl_revoke_written(int slotno, zkl_slot *slot, int rc)
{
	bool		wanted;

	zkl_end_work(&zkl_works[slotno]);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	if (wanted)
	{
		slot->zk_rc = rc;
		slot->state = ZKL_SLOT_HELD;	/* the answer is ready */
		zkl_wake_backend(slot);
	}
	LWLockRelease(zkl_shared->lock);
	if (!wanted)
		zkl_free_slot(slotno);
}

/*
 * Which children of an inspected directory are a peer's downgrade that a
 * waiting writer of this cluster found (holds), and which that writer
 * (waits): once the peer's write node is gone, nothing else tells.
 */
static void
zkl_downgrade_marks(const zkl_inspection *in, bool *holds, bool *waits)
{
	if (zkl_node_map == NULL)
		return;
	for (int i = 0; i < in->nchildren; i++)
	{
		zkl_node_entry *entry;
		zkl_work   *w;

		if (in->gone[i] || strlen(in->children[i]) >= ZKL_MAX_NODE_LEN)
			continue;
		entry = hash_search(zkl_node_map, in->children[i], HASH_FIND, NULL);
		if (entry == NULL)
			continue;
		w = &zkl_works[entry->slotno];
		if (w->nheld_behind == 0 || (w->phase != ZKL_PH_LISTING && w->phase != ZKL_PH_WATCHING))
			continue;
		waits[i] = true;
		for (int k = 0; k < w->nheld_behind; k++)
			for (int j = 0; j < in->nchildren; j++)
				if (!in->gone[j] && strcmp(in->children[j], w->held_behind[k]) == 0)
					holds[j] = true;
	}
}

/* Write what was read into the backend's segment, then tell it. */
static void
zkl_inspect_finish(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];
	zkl_inspection *in = work->inspection;
	bool		wanted;
	dsm_handle	handle;
	dsm_segment *seg = NULL;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	wanted = slot->wanted;
	handle = slot->reply_handle;
	LWLockRelease(zkl_shared->lock);

	/* A backend that left has destroyed its segment: nothing to attach. */
	if (wanted)
		seg = dsm_attach(handle);
	if (seg != NULL)
	{
		zkl_inspect_reply *reply = dsm_segment_address(seg);
		char	   *out = (char *) reply + MAXALIGN(sizeof(zkl_inspect_reply));
		Size		needed = 0;
		int			n = 0;

		for (int i = 0; i < in->nchildren; i++)
			if (!in->gone[i])
				needed += MAXALIGN(sizeof(zkl_inspect_entry) + strlen(in->children[i]) + in->data_len[i]);
		reply->needed = needed;
		reply->nchildren = 0;
		if (needed <= reply->capacity)
		{
			bool	   *holds = palloc0(sizeof(bool) * Max(in->nchildren, 1));
			bool	   *waits = palloc0(sizeof(bool) * Max(in->nchildren, 1));

			zkl_downgrade_marks(in, holds, waits);
			for (int i = 0; i < in->nchildren; i++)
			{
				zkl_inspect_entry *e = (zkl_inspect_entry *) out;
				int			name_len = strlen(in->children[i]);

				if (in->gone[i])
					continue;
				e->czxid = in->czxid[i];
				e->owner = in->owner[i];
				e->ctime = in->ctime[i];
				e->name_len = name_len;
				e->data_len = in->data_len[i];
				e->unreadable = in->unreadable[i];
				e->downgrade_holds = holds[i];
				e->downgrade_waits = waits[i];
				memcpy(out + sizeof(zkl_inspect_entry), in->children[i], name_len);
				if (e->data_len > 0)
					memcpy(out + sizeof(zkl_inspect_entry) + name_len, in->data[i], e->data_len);
				out += MAXALIGN(sizeof(zkl_inspect_entry) + name_len + e->data_len);
				n++;
			}
			reply->nchildren = n;
			pfree(holds);
			pfree(waits);
		}
		dsm_detach(seg);
	}

	zkl_end_work(work);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	if (wanted)
	{
		slot->state = ZKL_SLOT_HELD;	/* for a read: the reply is ready */
		zkl_wake_backend(slot);
	}
	LWLockRelease(zkl_shared->lock);
	if (!wanted)
		zkl_free_slot(slotno);
}

/*
 * Ask for child i's data, or only its stat: a child whose data we may not
 * read (its ACL denies READ) is still a contender, and its stat is
 * anyone's (exists needs no right on the node).  Answers come in the order
 * asked.
 */
static void
zkl_inspect_ask(int slotno, zkl_slot *slot, zkl_inspection *in, int i, bool stat_only)
{
	char	   *path = zkl_child_path(slot, in->children[i]);

	in->sent[in->nsent++] = i;
	zkl_check_sent(slotno, stat_only ?
				   zoo_aexists(zkl_zh, path, 0, zkl_stat_done,
							   zkl_ctx(ZKL_EV_INSPECT_STAT, slotno)) :
				   zoo_aget(zkl_zh, path, 0, zkl_data_done,
							zkl_ctx(ZKL_EV_INSPECT_DATA, slotno)));
	pfree(path);
}

/*
 * Keep ZKL_MAX_INSPECT_READS requests in flight while children are left to
 * read; none more once the backend has given the read up.
 */
static void
zkl_inspect_send(int slotno, zkl_slot *slot, zkl_inspection *in, bool wanted)
{
	while (wanted && in->nread < in->nchildren &&
		   in->nsent - in->nreplied < ZKL_MAX_INSPECT_READS)
		zkl_inspect_ask(slotno, slot, in, in->nread++, false);
}

static void
zkl_inspect_result(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];
	zkl_inspection *in = work->inspection;

	if (ev->kind == ZKL_EV_INSPECT_CHILDREN)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		int			n = ev->rc == ZOK ? ev->nchildren : 0;

		zkl_inspect_free(work);
		in = palloc0(sizeof(zkl_inspection));
		in->nchildren = n;
		if (n > 0)
		{
			in->children = palloc(sizeof(char *) * n);
			in->czxid = palloc0(sizeof(int64) * n);
			in->owner = palloc0(sizeof(int64) * n);
			in->ctime = palloc0(sizeof(int64) * n);
			in->data = palloc0(sizeof(char *) * n);
			in->data_len = palloc0(sizeof(int) * n);
			in->gone = palloc0(sizeof(bool) * n);
			in->unreadable = palloc0(sizeof(bool) * n);
			/* A getData for each child, and an exists for an unreadable one. */
			in->sent = palloc(sizeof(int) * 2 * n);
			for (int i = 0; i < n; i++)
				in->children[i] = pstrdup(ev->children[i]);
		}
		MemoryContextSwitchTo(old);
		work->inspection = in;
	}
	else if (in != NULL && in->nreplied < in->nsent)
	{
		int			i = in->sent[in->nreplied++];

		if (ev->rc == ZNONODE)
			in->gone[i] = true; /* deleted meanwhile: not listed */
		else if (ev->rc == ZOK)
		{
			in->czxid[i] = ev->czxid;
			in->owner[i] = ev->owner;
			in->ctime[i] = ev->ctime;
			in->data_len[i] = Min(ev->data_len, ZKL_MAX_INSPECT_DATA);
			if (in->data_len[i] > 0)
			{
				in->data[i] = MemoryContextAlloc(TopMemoryContext, in->data_len[i]);
				memcpy(in->data[i], ev->data, in->data_len[i]);
			}
		}
		else
		{
			/* Listed all the same; its stat asked for, or unknown too. */
			in->unreadable[i] = true;
			if (ev->kind == ZKL_EV_INSPECT_DATA && wanted)
				zkl_inspect_ask(slotno, slot, in, i, true);
		}
	}
	if (in == NULL)
		return;
	zkl_inspect_send(slotno, slot, in, wanted);
	if (in->nreplied == in->nsent)
		zkl_inspect_finish(slotno, slot);
}

/* ---- a backend's lasting wait, published for deadlock detection ---- */

/* The waits directory was created (or found) by this worker. */
static bool zkl_waits_dir_made = false;

/*
 * A path as a JSON string: its bytes as they are (an encoded lock name is
 * ASCII; zklock.root is the configuration's text), quotes, backslashes and
 * control characters escaped.
 */
static void
zkl_json_bytes(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, '"');
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			appendStringInfo(buf, "\\%c", c);
		else if (c < 0x20 || c == 0x7F)
			appendStringInfo(buf, "\\u%04x", c);
		else
			appendStringInfoChar(buf, (char) c);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * Publish what the backend's waiting request (the slot's sibling) waits
 * for, as the ephemeral node <root>/.waits/<session>-<pid>: its data, one
 * JSON object, names the request's directory, node and czxid (lock_dir,
 * lock_node, czxid), the backend's deadlock_timeout in ms
 * (deadlock_timeout), and has the request's own description's fields.  A
 * wait that ended, or whose node is not known yet, is
 * answered with nothing published.  overwrite: the node exists (left by an
 * earlier worker in this session), so its data is written instead.
 */
static void
zkl_publish_wait(int slotno, zkl_slot *slot, bool overwrite)
{
	zkl_slot   *wait = NULL;
	StringInfoData data;
	char	   *path;
	bool		waiting;
	bool		wanted;
	char		dir[ZKL_MAX_DIR_LEN];
	char		node[ZKL_MAX_NODE_LEN];
	char		description[ZKL_MAX_DATA_LEN];
	char		timeout[12];
	int64		czxid = 0;

	if (slot->sibling_slotno >= 0 && slot->sibling_slotno < zkl_shared->nslots)
		wait = &zkl_shared->slots[slot->sibling_slotno];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	waiting = wait != NULL && wait->generation == slot->sibling_generation &&
		wait->state == ZKL_SLOT_WAITING && wait->node[0] != '\0';
	if (waiting)
	{
		strlcpy(dir, wait->dir, sizeof(dir));
		strlcpy(node, wait->node, sizeof(node));
		strlcpy(description, wait->data, sizeof(description));
		czxid = wait->token;
		strlcpy(timeout, slot->data, sizeof(timeout));
		snprintf(slot->node, sizeof(slot->node), "%016llx-%d",
				 (unsigned long long) zkl_shared->session_id, slot->pid);
	}
	else if (wanted)
		slot->state = ZKL_SLOT_HELD;	/* nothing to publish: answered */
	LWLockRelease(zkl_shared->lock);

	/*
	 * The wait ended, but an earlier create of the node (cut off by a
	 * connection loss, or of the worker before this one) may have taken
	 * effect: it is deleted, now or when the backend gives it up.
	 */
	if (!waiting && slot->node[0] != '\0')
	{
		zkl_works[slotno].phase = ZKL_PH_PUBLISHED;
		if (!wanted)
			zkl_send_delete(slotno, slot);
		return;
	}
	if (!waiting)
	{
		zkl_end_work(&zkl_works[slotno]);
		if (!wanted)
			zkl_free_slot(slotno);
		return;
	}

	initStringInfo(&data);
	appendStringInfoString(&data, "{\"lock_dir\":");
	zkl_json_bytes(&data, dir);
	appendStringInfoString(&data, ",\"lock_node\":");
	zkl_json_bytes(&data, node);
	appendStringInfo(&data, ",\"czxid\":" INT64_FORMAT, czxid);
	/* The backend's deadlock_timeout, in ms, as it wrote it (digits). */
	if (timeout[0] != '\0' && strspn(timeout, "0123456789") == strlen(timeout))
		appendStringInfo(&data, ",\"deadlock_timeout\":%s", timeout);
	/* Then the request's own description, its fields beside these. */
	if (description[0] == '{' && description[1] != '}' && description[1] != '\0')
		appendStringInfo(&data, ",%s", description + 1);
	else
		appendStringInfoChar(&data, '}');

	path = zkl_child_path(slot, slot->node);
	if (overwrite)
		zkl_check_sent(slotno, zoo_aset(zkl_zh, path, data.data, data.len, -1, zkl_stat_done,
										zkl_ctx(ZKL_EV_PUBLISHED, slotno)));
	else
	{
		if (!zkl_waits_dir_made || zkl_works[slotno].parent_attempts > 0)
			zkl_check_sent(slotno, zoo_acreate(zkl_zh, slot->dir, NULL, -1, zkl_acl(), ZOO_PERSISTENT,
											   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
		zkl_waits_dir_made = true;
		zkl_check_sent(slotno, zoo_acreate(zkl_zh, path, data.data, data.len, zkl_acl(), ZOO_EPHEMERAL,
										   zkl_void_string_done, zkl_ctx(ZKL_EV_PUBLISHED, slotno)));
	}
	pfree(path);
	pfree(data.data);
}

/* The wait node was written: the backend may give it up from now on. */
static void
zkl_on_published(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];

	/* A node of this name is ours: take it over, or delete it unwanted. */
	if (ev->rc == ZNODEEXISTS && wanted)
	{
		zkl_publish_wait(slotno, slot, true);
		return;
	}
	if ((ev->rc == ZNODEEXISTS || ev->rc == ZOK) && !wanted)
	{
		zkl_send_delete(slotno, slot);
		return;
	}
	if (ev->rc == ZNONODE && work->parent_attempts < 3)
	{
		work->parent_attempts++;
		zkl_publish_wait(slotno, slot, false);
		return;
	}
	if (ev->rc != ZOK)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	work->phase = ZKL_PH_PUBLISHED;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->state == ZKL_SLOT_WAITING)
		slot->state = ZKL_SLOT_HELD;
	LWLockRelease(zkl_shared->lock);
}

/* ---- what each event does, by the slot's phase (see the table above) ---- */

static void
zkl_on_created(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];

	if (ev->rc == ZOK)
	{
		const char *child = strrchr(ev->path, '/');

		zkl_found_node(slotno, slot, child ? child + 1 : ev->path, ev->czxid);
		work->phase = ZKL_PH_LISTING;
		if (!wanted)
			zkl_send_delete(slotno, slot);
	}
	else if (ev->rc == ZNONODE && work->parent_attempts < 3)
	{
		work->parent_attempts++;
		zkl_send_create(slotno, slot, true);
	}
	else if (ev->rc == ZCONNECTIONLOSS || ev->rc == ZOPERATIONTIMEOUT)
	{
		/* The create may have succeeded: find it by our uuid later. */
		work->phase = ZKL_PH_RECOVERING;
		zkl_connection_trouble(slotno, ev->rc);
	}
	else
		zkl_request_failed(slotno, ev->rc);
}

/*
 * Warn of a lock directory whose child counter nears its top, where no
 * request can be granted once two are queued (lock_rule.c): every such
 * listing counts in zk_status().near_top_listings, and the log says so at
 * most once an hour, naming the directory.
 */
static void
zkl_check_counter(zkl_slot *slot, zkl_event *ev)
{
	static TimestampTz last_warning = 0;
	TimestampTz now;
	int64		next = zkl_next_sequence(ev->cversion, ev->num_children);

	if (!zkl_counter_near_top(next))
		return;
	zkl_count(near_top_listings);
	now = GetCurrentTimestamp();
	if (last_warning != 0 && !TimestampDifferenceExceeds(last_warning, now, 3600 * 1000))
		return;
	last_warning = now;
	ereport(WARNING,
			(errmsg("zklock: the child counter of lock directory \"%s\" is at %lld of 2147483647",
					slot->dir, (long long) next),
			 errdetail("Every create of a lock node counts; at 2147483647 ZooKeeper gives every new node the same number, and queued requests are granted no more."),
			 errhint("Let the lock be free for a moment, so that its directory empties and is removed: the counter starts again from 0.")));
}

static void
zkl_on_children(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (ev->rc != ZOK)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	zkl_check_counter(slot, ev);
	if (zkl_downgrade_read(slotno, slot, ev))
		return;
	zkl_evaluate(slotno, slot, ev->children, ev->nchildren);
}

/* After a create cut off by a connection loss: is our node there? */
static void
zkl_on_recover_children(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	char		mark[ZKL_UUID_LEN + 8];
	const char *found = NULL;
	char	   *path;

	if (ev->rc != ZOK && ev->rc != ZNONODE)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	snprintf(mark, sizeof(mark), "_c_%s-", slot->uuid);
	for (int i = 0; i < ev->nchildren && !found; i++)
		if (strncmp(ev->children[i], mark, strlen(mark)) == 0)
			found = ev->children[i];

	if (!found)
	{
		if (!wanted)
			zkl_free_slot(slotno);
		else
			zkl_send_create(slotno, slot, false);
		return;
	}
	path = zkl_child_path(slot, found);
	zkl_found_node(slotno, slot, found, 0);
	zkl_check_sent(slotno, zoo_aexists(zkl_zh, path, 0, zkl_stat_done,
									   zkl_ctx(ZKL_EV_RECOVER_STAT, slotno)));
	pfree(path);
}

static void
zkl_on_recover_stat(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (ev->rc == ZOK)
	{
		zkl_found_node(slotno, slot, slot->node, ev->czxid);
		if (!wanted)
			zkl_send_delete(slotno, slot);
		else
		{
			zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
			zkl_watch_own_node(slotno, slot);
		}
	}
	else if (ev->rc == ZNONODE)
		zkl_send_listing(slotno, slot, ZKL_EV_RECOVER_CHILDREN);
	else
		zkl_request_failed(slotno, ev->rc);
}

static void
zkl_on_pred_exists(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (ev->rc == ZNONODE)
		zkl_predecessor_gone(slotno, slot);
	else if (ev->rc == ZNOAUTH && ev->kind == ZKL_EV_PRED_EXISTS)
	{
		/*
		 * A predecessor we may not read (its ACL denies READ) is watched all
		 * the same: exists needs no right on the node, and its watch fires on
		 * the deletion too.  Its answer comes as PRED_STAT, which fails the
		 * waiter on any error but ZNONODE.
		 */
		char	   *path = zkl_child_path(slot, zkl_works[slotno].pred);

		zkl_check_sent(slotno, zoo_awexists(zkl_zh, path, zkl_node_watcher,
											(void *) zkl_ctx(ZKL_EV_PRED_WATCH, slotno),
											zkl_stat_done, zkl_ctx(ZKL_EV_PRED_STAT, slotno)));
		pfree(path);
	}
	else if (ev->rc != ZOK)
		zkl_request_failed(slotno, ev->rc);
	else if (!ev->zklock_data)
		zkl_works[slotno].pred_owner = ev->owner;
}

static void
zkl_on_pred_watch(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (ev->type == ZOO_DELETED_EVENT)
		zkl_predecessor_gone(slotno, slot);
	else
		zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
}

static void
zkl_on_own_exists(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	/* A waiting request keeps the message for its grant (zkl_grant). */
	if (ev->rc == ZOK && ev->revoke_message && zkl_works[slotno].phase != ZKL_PH_HELD)
		zkl_works[slotno].revoke_seen = true;
	else if (ev->rc == ZOK && ev->revoke_message)
		zkl_revocation_asked(slotno, slot);
	else if (ev->rc == ZNONODE)
		zkl_own_node_gone(slotno, slot, wanted);
	else if (ev->rc != ZOK)
	{
		/* The watch was not set: set it again after the reconnection. */
		zkl_works[slotno].own_watch_gen = 0;
		zkl_connection_trouble(slotno, ev->rc);
	}
}

static void
zkl_on_own_watch(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (ev->type == ZOO_DELETED_EVENT)
		zkl_own_node_gone(slotno, slot, wanted);
	else
	{
		/* Data changed: a watch fires once, so watch again. */
		zkl_works[slotno].own_watch_gen = 0;
		zkl_watch_own_node(slotno, slot);
	}
}

static void
zkl_on_deleted(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];
	int			fail_rc = work->fail_rc;
	bool		released;
	bool		taken;

	if (ev->rc != ZOK && ev->rc != ZNONODE)
	{
		if (zkl_connection_trouble(slotno, ev->rc))
			return;

		/*
		 * Nothing more to try: the ephemeral node lasts until the session
		 * ends.
		 */
		ereport(LOG,
				(errmsg("zklock could not delete ZooKeeper node \"%s/%s\": %s",
						slot->dir, slot->node, zerror(ev->rc))));
	}
	if (fail_rc != 0)
	{
		/* The node of a failed request is gone: now report the failure. */
		work->fail_rc = 0;
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		slot->node[0] = '\0';
		slot->lease[0] = '\0';
		LWLockRelease(zkl_shared->lock);
		zkl_fail_slot(slotno, fail_rc);
		return;
	}
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	released = slot->state == ZKL_SLOT_RELEASING && slot->granted_at != 0;
	taken = slot->state == ZKL_SLOT_HELD && slot->take_reason != ZKL_TAKE_NONE;
	LWLockRelease(zkl_shared->lock);
	if (taken)
	{
		/* Taken away (zkl_take_away): the backend learns it lost the lock. */
		zkl_mark_lost(slotno, slot->take_reason == ZKL_TAKE_REVOKED ?
					  "it was revoked" : "it was held longer than zklock.max_hold_time");
		zkl_end_work(work);
		return;
	}
	if (released)
		zkl_count(released);
	zkl_free_slot(slotno);
}

static void
zkl_on_inspected(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	/* One child refused (ZNOAUTH, ...) is no failure of the directory. */
	bool		child = ev->kind == ZKL_EV_INSPECT_DATA || ev->kind == ZKL_EV_INSPECT_STAT;

	if (ev->kind == ZKL_EV_REVOKE_SET && (ev->rc == ZOK || ev->rc == ZNONODE))
		zkl_revoke_written(slotno, slot, ev->rc);
	else if (ev->rc == ZOK || ev->rc == ZNONODE || (child && !zkl_session_trouble(ev->rc)))
		zkl_inspect_result(slotno, slot, ev, wanted);
	else
		zkl_request_failed(slotno, ev->rc);
}

/* Any phase in which our node exists and is watched (LISTING, WATCHING, HELD). */
#define ZKL_PH_OWN_NODE		(-1)

typedef void (*zkl_event_handler) (int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);

/*
 * Which event is handled in which phase, and how; in any other phase it
 * belongs to work that has moved on and is dropped.  A watch's session
 * events (connection state, not a change of the node) are dropped too.
 */
static const struct
{
	zkl_event_kind kind;
	int			phase;
	bool		watch;
	zkl_event_handler handler;
}			zkl_handlers[] = {
	{ZKL_EV_CREATED, ZKL_PH_CREATING, false, zkl_on_created},
	/* In CREATING a listing belongs to a create that failed. */
	{ZKL_EV_CHILDREN, ZKL_PH_LISTING, false, zkl_on_children},
	{ZKL_EV_RECOVER_CHILDREN, ZKL_PH_RECOVERING, false, zkl_on_recover_children},
	{ZKL_EV_RECOVER_STAT, ZKL_PH_RECOVERING, false, zkl_on_recover_stat},
	{ZKL_EV_PRED_EXISTS, ZKL_PH_WATCHING, false, zkl_on_pred_exists},
	{ZKL_EV_PRED_STAT, ZKL_PH_WATCHING, false, zkl_on_pred_exists},
	{ZKL_EV_PRED_WATCH, ZKL_PH_WATCHING, true, zkl_on_pred_watch},
	{ZKL_EV_READER_DATA, ZKL_PH_LISTING, false, zkl_on_reader_data},
	{ZKL_EV_OWN_EXISTS, ZKL_PH_OWN_NODE, false, zkl_on_own_exists},
	{ZKL_EV_OWN_WATCH, ZKL_PH_OWN_NODE, true, zkl_on_own_watch},
	{ZKL_EV_DELETED, ZKL_PH_DELETING, false, zkl_on_deleted},
	{ZKL_EV_INSPECT_CHILDREN, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_INSPECT_DATA, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_INSPECT_STAT, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_REVOKE_SET, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_PUBLISHED, ZKL_PH_INSPECTING, false, zkl_on_published},
	{ZKL_EV_LEASE_CREATED, ZKL_PH_LEASING, false, zkl_on_lease_created},
	{ZKL_EV_LEASES, ZKL_PH_LEASING, false, zkl_on_leases},
	{ZKL_EV_LEASE_STAT, ZKL_PH_LEASING, false, zkl_on_lease_stat},
	{ZKL_EV_LEASES_WATCH, ZKL_PH_LEASE_WAITING, true, zkl_on_leases_watch},
	{ZKL_EV_UNLOCKED, ZKL_PH_UNLOCKING, false, zkl_on_unlocked},
};

void
zkl_handle_event(zkl_event *ev)
{
	int			slotno = ev->slotno;
	zkl_work   *work;
	bool		wanted;

	if (slotno < 0 || slotno >= zkl_shared->nslots)
		return;
	work = &zkl_works[slotno];

	if (ev->kind == ZKL_EV_PRED_WATCH && ev->type != ZOO_SESSION_EVENT)
		zkl_count(watch_events);
	if (ev->opgen != work->opgen)
		return;

	for (size_t i = 0; i < lengthof(zkl_handlers); i++)
	{
		if (zkl_handlers[i].kind != ev->kind)
			continue;
		if (zkl_handlers[i].watch && ev->type == ZOO_SESSION_EVENT)
			return;
		if (zkl_handlers[i].phase == ZKL_PH_OWN_NODE ? !zkl_own_node_watched(work) :
			(int) work->phase != zkl_handlers[i].phase)
			return;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		wanted = zkl_shared->slots[slotno].wanted;
		LWLockRelease(zkl_shared->lock);
		zkl_handlers[i].handler(slotno, &zkl_shared->slots[slotno], ev, wanted);
		return;
	}
}

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
 * The session is gone and every node of ours with it.  Holders lose their
 * locks and are told; waiters queue again in the next session.
 */
void
zkl_session_lost(void)
{
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
			default:
				break;
		}
		LWLockRelease(zkl_shared->lock);

		/* A read's answer or a published wait (inspect) is no lock to lose. */
		if (state == ZKL_SLOT_HELD && !slot->inspect)
			zkl_mark_lost(i, "the ZooKeeper session ended");
		zkl_end_work(work);
		work->lease_unsure = false;
		if (free_it)
			zkl_free_slot(i);
	}
	pfree(used);
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
		zkl_session_lost();
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
		if (slot->inspect && slot->op == ZKL_OP_PUBLISH && known && state != ZKL_SLOT_WAITING)
		{
			/* A published wait stays until given up, then is deleted. */
			work->phase = state == ZKL_SLOT_HELD ? ZKL_PH_PUBLISHED : ZKL_PH_DELETING;
			work->retry = state != ZKL_SLOT_HELD;
			if (work->retry)
				zkl_mark_pending(i);
			continue;
		}
		if (slot->inspect)
		{
			/* A read of a directory, or a publication, just starts over. */
			if (state == ZKL_SLOT_WAITING || state == ZKL_SLOT_RELEASING)
				zkl_mark_pending(i);
			continue;
		}
		if (known)
			zkl_remember_node(i, slot->node);
		switch (state)
		{
			case ZKL_SLOT_HELD:
				/* The old worker's watch on the node went with it. */
				work->phase = ZKL_PH_HELD;
				/* Its grant's time, as far as the wall clock tells. */
				work->granted_mono = zkl_after_ms(zkl_now(),
												  -((GetCurrentTimestamp() - slot->granted_at) / 1000));
				/* A hold being taken away has its node deleted again. */
				if (slot->take_reason != ZKL_TAKE_NONE)
					work->phase = ZKL_PH_DELETING;
				work->retry = true;
				break;
			case ZKL_SLOT_WAITING:
				work->phase = known ? ZKL_PH_LISTING : ZKL_PH_RECOVERING;
				/* The old worker may have made a lease it never saw. */
				work->lease_unsure = slot->permits > 0;
				work->retry = true;
				break;
			case ZKL_SLOT_RELEASING:
			case ZKL_SLOT_BUSY:
				work->phase = known ? ZKL_PH_DELETING : ZKL_PH_RECOVERING;
				work->retry = true;
				break;
			default:
				continue;
		}
		zkl_mark_pending(i);
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
	int			nwatch = 0;
	int			nexpired = 0;
	int64		now = zkl_now();

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	watch = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	expired = palloc(sizeof(int) * Max(zkl_shared->nused, 1));
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
	{
		zkl_slot   *slot = &zkl_shared->slots[i];

		if (slot->state != ZKL_SLOT_HELD || zkl_works[i].phase != ZKL_PH_HELD)
			continue;
		if (slot->max_hold_ms > 0 && slot->take_reason == ZKL_TAKE_NONE &&
			now >= zkl_after_ms(zkl_works[i].granted_mono, slot->max_hold_ms))
			expired[nexpired++] = i;
		else if (zkl_works[i].own_watch_gen != zkl_works[i].opgen)
			watch[nwatch++] = i;
	}
	LWLockRelease(zkl_shared->lock);

	for (int k = 0; k < nwatch; k++)
		zkl_watch_own_node(watch[k], &zkl_shared->slots[watch[k]]);
	for (int k = 0; k < nexpired; k++)
		zkl_take_away(expired[k], &zkl_shared->slots[expired[k]], ZKL_TAKE_HOLD_LIMIT);
	pfree(watch);
	pfree(expired);
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
				case ZKL_SLOT_FAILED:
				case ZKL_SLOT_LOST:
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
				(errmsg("zklock gave up %d lock slots of backends that exited without giving them back (last pid %d)",
						reaped, last_pid)));
}
