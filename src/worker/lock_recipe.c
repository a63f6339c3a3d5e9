/*-------------------------------------------------------------------------
 *
 * lock_recipe.c
 *		The lock recipe the worker runs for each slot: create a sequential
 *		ephemeral child, list the directory, watch only the predecessor,
 *		delete on release.  Runs in the worker's loop only.
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

#include "common/hashfn.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "names/encode.h"
#include "rules/clock.h"
#include "rules/lock_rule.h"
#include "worker/lock_recipe.h"
#include "worker/semaphore.h"
#include "worker/session.h"
#include "worker/slot_steps.h"
#include "worker/undeletable.h"

static bool zkl_downgrade_read(int slotno, zkl_slot *slot, zkl_event *ev);
static void zkl_check_counter(zkl_slot *slot, zkl_event *ev);

/* The root's components were created (or found) by this worker. */
static bool zkl_root_made = false;

/*
 * Create our contender and list the directory back to back: ZooKeeper
 * answers one session in order, so the listing already has our node and an
 * uncontended acquire costs one round trip.  Parents are created only after
 * a ZNONODE, the lock directory as a container that ZooKeeper removes once
 * it is empty.
 */
void
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

	zkl_dir_verdict verdict;

	/*
	 * A directory whose ACL zklock has not read lately is read first; one
	 * that would strand this node is refused before it is made.
	 */
	if (!zkl_dir_checked(slot->dir, &verdict))
	{
		zkl_works[slotno].phase = ZKL_PH_CHECKING;
		(void) zkl_sent_alone(slotno, zoo_aget_acl(zkl_zh, slot->dir, zkl_acl_done,
												   zkl_ctx(ZKL_EV_DIR_ACL, slotno)));
		return;
	}
	if (verdict == ZKL_DIR_DELETE_REFUSED)
	{
		zkl_fail_slot(slotno, ZKL_RC_DELETE_REFUSED);
		return;
	}
	if (verdict == ZKL_DIR_DELETE_UNSURE && !slot->delete_unsure)
	{
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		slot->delete_unsure = true;
		LWLockRelease(zkl_shared->lock);
	}
	/* "_c_<uuid>-" then the marker: Curator's protected-mode names. */
	prefix = psprintf("%s/" ZKL_PROTECTED_PREFIX "%s-%s", slot->dir, slot->uuid,
					  zkl_node_layouts[slot->kind].marker + (slot->kind == ZKL_NODE_MUTEX ? 1 : 0));
	zkl_works[slotno].phase = ZKL_PH_CREATING;
	/* Ready with others, it travels in the pass's multi (write_batch.c). */
	if (zkl_hooks.take_create != NULL && zkl_hooks.take_create(slotno, slot, prefix))
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

void
zkl_send_listing(int slotno, zkl_slot *slot, zkl_event_kind kind)
{
	if (kind == ZKL_EV_CHILDREN && zkl_works[slotno].phase != ZKL_PH_CREATING)
		zkl_works[slotno].phase = ZKL_PH_LISTING;
	/* With the directory's Stat: its child counter, for zkl_check_counter. */
	zkl_check_sent(slotno, zoo_aget_children2(zkl_zh, slot->dir, 0, zkl_strings_stat_done,
											  zkl_ctx(kind, slotno)));
}

/*
 * Keep the name of the node ahead in full: a name cut short is a path that
 * does not exist, and a watch on it answers ZNONODE, which would grant the
 * lock while the node ahead still holds.  ZooKeeper bounds a name only by
 * its packet size (jute.maxbuffer), so no fixed buffer would do.  It is the
 * work's memory, gone with the work; the one it replaces is freed at once,
 * as a long wait may watch many nodes in turn.
 */
static void
zkl_set_pred(zkl_work *work, const char *pred)
{
	if (work->pred != NULL)
		pfree(work->pred);
	work->pred = MemoryContextStrdup(zkl_work_context(work), pred);
}

/*
 * Our contender holds: a lock is granted; a semaphore's mutex is only the
 * way to its lease, which the semaphore's recipe takes on.
 */
static void
zkl_contender_holds(int slotno, zkl_slot *slot)
{
	bool		wanted;

	if (slot->permits == 0)
	{
		zkl_grant(slotno, slot);
		return;
	}
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	wanted = slot->wanted;
	LWLockRelease(zkl_shared->lock);
	zkl_sem_mutex_held(slotno, slot, wanted);
}

/*
 * A waiter (slotno) watches pred: when pred is a node of this cluster, its
 * slot is told, so that its release looks for waiters to hand the lock to
 * (zkl_hand_over_at_release) and a release nobody of ours waits for costs
 * no look over the slots.  A hint only: a slot it misses leaves its waiter
 * to the deletion's watch, as before.
 */
static void
zkl_note_watched_here(int slotno, const char *pred)
{
	zkl_node_entry *entry;

	/* A name longer than the map's keys is never one of ours. */
	if (zkl_node_map == NULL || strlen(pred) >= ZKL_MAX_NODE_LEN)
		return;
	entry = hash_search(zkl_node_map, pred, HASH_FIND, NULL);
	if (entry != NULL && entry->slotno != slotno)
		zkl_works[entry->slotno].watched_here = true;
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
				(errmsg("lock directory \"%s\" has contenders with equal sequence numbers", slot->dir),
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
			zkl_contender_holds(slotno, slot);
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
	zkl_set_pred(work, pred);
	zkl_note_watched_here(slotno, pred);
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
 * zkl_downgrade_may_hide says whether it may be so, and
 * zkl_downgrade_possible also readies the work for that listing.
 */
static bool
zkl_downgrade_may_hide(const zkl_slot *slot, const zkl_work *work)
{
	return slot->kind != ZKL_NODE_READ && work->pred_owner != 0 &&
		work->pred_owner != zkl_shared->session_id && zkl_may_downgrade(work->pred);
}

static bool
zkl_downgrade_possible(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];

	if (!zkl_downgrade_may_hide(slot, work))
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
		work->held_behind = MemoryContextAlloc(zkl_work_context(work), sizeof(char *));
	else
		work->held_behind = repalloc(work->held_behind, sizeof(char *) * (work->nheld_behind + 1));
	work->held_behind[work->nheld_behind++] = MemoryContextStrdup(zkl_work_context(work), node);
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
	old = MemoryContextSwitchTo(zkl_work_context(work));
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
				(errmsg("a request in lock directory \"%s\" waits for node \"%s\", read lock of the session that held the write lock ahead of it",
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
	/* A name longer than the map's keys is never one of ours. */
	if (!zkl_works[slotno].pred_was_last && !zkl_works[slotno].numbers_repeat &&
		zkl_node_map != NULL && strlen(zkl_works[slotno].pred) < ZKL_MAX_NODE_LEN)
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
		zkl_contender_holds(slotno, slot);
	else
		zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
}

/*
 * The slot's backend released it (slotno, in phase HELD until its delete
 * was queued a moment ago): each waiter of this cluster that watches its
 * node and would hold on its deletion holds now, without waiting for the
 * delete's round trip (lock_rule.c, zkl_hands_over_at_release decides).
 * The watch's event on the deletion then finds the waiter past WATCHING,
 * and is dropped (dispatch.c routes by phase).
 */
void
zkl_hand_over_at_release(int slotno, zkl_slot *slot)
{
	zkl_local_handoff_case c = {0};
	List	   *waiters = NIL;
	ListCell   *lc;

	/* Nobody of ours watches its node: nothing to look for. */
	if (!zkl_works[slotno].watched_here || slot->node[0] == '\0')
		return;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	c.released_by_backend = slot->state == ZKL_SLOT_RELEASING &&
		slot->take_reason == ZKL_TAKE_NONE;
	c.exclusive_grant = zkl_is_exclusive_grant(slot);
	c.delete_sure = !slot->delete_unsure;
	c.semaphore = slot->permits > 0;
	LWLockRelease(zkl_shared->lock);
	c.connected = zkl_zh != NULL && zkl_shared->session_state == ZKL_SESSION_CONNECTED;
	c.proof_fresh = zkl_proof_holds(zkl_heartbeat_state.proof, zkl_shared->negotiated_timeout,
									zkl_now());
	c.events_current = zkl_session_heard_sent() != 0 &&
		zkl_now() - zkl_session_heard_sent() <= ZKL_HANDOFF_HEARD_US;
	c.waiter_watches_it = true;
	if (!zkl_hands_over_at_release(&c))
		return;

	/* The waiters watching this node: in this directory, by its full name. */
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
	{
		if (i != slotno && zkl_works[i].phase == ZKL_PH_WATCHING &&
			zkl_works[i].pred != NULL &&
			strcmp(zkl_works[i].pred, slot->node) == 0 &&
			strcmp(zkl_shared->slots[i].dir, slot->dir) == 0)
			waiters = lappend_int(waiters, i);
	}
	LWLockRelease(zkl_shared->lock);

	foreach(lc, waiters)
	{
		int			w = lfirst_int(lc);
		zkl_slot   *waiter = &zkl_shared->slots[w];
		zkl_work   *work = &zkl_works[w];

		c.semaphore = slot->permits > 0 || waiter->permits > 0;
		c.downgrade_possible = zkl_downgrade_may_hide(waiter, work);
		c.predecessor_was_only_blocker = work->pred_was_last;
		c.numbers_repeat = work->numbers_repeat;
		if (!zkl_hands_over_at_release(&c))
			continue;
		ereport(DEBUG2,
				(errmsg_internal("lock \"%s\" is handed over at its release to the request waiting for node \"%s\"",
								 slot->name, slot->node)));
		work->handoff = true;
		zkl_grant(w, waiter);
	}
	list_free(waiters);
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

/* ---- what each event does, by the slot's phase (see the table above) ---- */

/*
 * The lock directory's ACL, before the first create there (undeletable.c).
 * ZNONODE: no directory yet; zklock makes it, with its own ACL.  ZNOAUTH:
 * the directory grants zklock neither READ nor ADMIN, so its listing would
 * be refused too: the request fails before anything is made, as it would
 * after its create.  A connection loss reads again; a session's end is
 * the session's business; anything else fails the request.
 */
static void
zkl_on_dir_acl(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	if (!wanted)
	{
		/* Given up before anything was made. */
		zkl_free_slot(slotno);
		return;
	}
	if (ev->rc == ZOK || ev->rc == ZNONODE)
	{
		(void) zkl_dir_acl_read(slot->dir, ev);
		zkl_works[slotno].phase = ZKL_PH_IDLE;
		zkl_send_contender(slotno, slot);
	}
	else
		zkl_request_failed(slotno, ev->rc);
}

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
			(errmsg("the child counter of lock directory \"%s\" is at %lld of 2147483647",
					slot->dir, (long long) next),
			 errdetail("Every create of a lock node counts; at 2147483647 ZooKeeper gives every new node the same number, and queued requests are granted no more."),
			 errhint("Let the lock be free for a moment, so that its directory empties and is removed: the counter starts again from 0.")));
}

/*
 * Warn of a lock directory where an exclusive request's node and another's
 * have Curator's two different lock layouts (lock_rule.c,
 * zkl_layouts_mixed): zklock waits for both, but a Curator client waits for
 * its own layout only.  Once per directory, as long as the worker remembers
 * it (the last ZKL_MIXED_DIRS, by hash).
 */
#define ZKL_MIXED_DIRS	64
static void
zkl_check_layouts(zkl_slot *slot, zkl_event *ev)
{
	static uint32 warned[ZKL_MIXED_DIRS];
	static int	next = 0;
	uint32		h;

	if (!zkl_layouts_mixed((const char *const *) ev->children, ev->nchildren, slot->node))
		return;
	h = hash_bytes((const unsigned char *) slot->dir, strlen(slot->dir)) | 1;
	for (int i = 0; i < ZKL_MIXED_DIRS; i++)
		if (warned[i] == h)
			return;
	warned[next] = h;
	next = (next + 1) % ZKL_MIXED_DIRS;
	ereport(WARNING,
			(errmsg("lock directory \"%s\" mixes the mutex and the read-write lock layouts of Curator",
					slot->dir),
			 errdetail("This request's node has the %s layout; another node there has the other. Curator's InterProcessMutex does not see read-write lock nodes, nor its InterProcessReadWriteLock mutex nodes: a Curator client may hold the lock beside this request.",
					   slot->kind == ZKL_NODE_MUTEX ? "mutex" : "read-write lock"),
			 errhint("Give zklock.exclusive_layout the layout of the Curator clients of this lock in every session that takes it.")));
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
	zkl_check_layouts(slot, ev);
	/* Whether the directory's data is empty, for the batch's setData. */
	if (ev->dir_stat && zkl_hooks.note_dir != NULL)
		zkl_hooks.note_dir(slot->dir, ev->dir_version, ev->dir_data_len);
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
	snprintf(mark, sizeof(mark), ZKL_PROTECTED_PREFIX "%s-", slot->uuid);
	for (int i = 0; i < ev->nchildren && !found; i++)
		if (strncmp(ev->children[i], mark, strlen(mark)) == 0)
			found = ev->children[i];

	if (!found)
	{
		/* A semaphore's lease may exist without a mutex node. */
		if (!wanted && zkl_lease_pending(slot))
			zkl_send_delete(slotno, slot);
		else if (!wanted)
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

/*
 * The delete of a node given up was refused for good: the node stays, and
 * so does the slot, "stranded" in zk_locks, its delete tried again with the
 * heartbeat ticks (zkl_retry_stranded) until it works or the session ends
 * (zkl_session_lost frees it with every other slot given up).  A release
 * waiting for this answer is told.  A slot given up (RELEASING, or a try's
 * BUSY; also one given up while the worker took it away) is kept so; so is
 * a hold the worker took away (zklock.max_hold_time,
 * a revocation obeyed): its backend is told the hold is lost, as for any
 * take-away, and the slot, LOST, keeps the node until it is deleted.  False
 * for any other slot.
 */
static bool
zkl_strand(int slotno, zkl_slot *slot)
{
	bool		kept;
	bool		taken;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	taken = slot->state == ZKL_SLOT_HELD && slot->take_reason != ZKL_TAKE_NONE;
	kept = slot->state == ZKL_SLOT_RELEASING || slot->state == ZKL_SLOT_BUSY ||
		(slot->state == ZKL_SLOT_LOST && slot->stranded);
	if (kept)
		slot->stranded = true;
	LWLockRelease(zkl_shared->lock);
	if (kept)
		zkl_wake_backend(slot);
	if (taken)
	{
		/* Given up by its backend meanwhile: RELEASING, kept as such. */
		if (!zkl_mark_lost_as(slotno, slot->take_reason == ZKL_TAKE_REVOKED ?
							  "it was revoked" : "it was held longer than zklock.max_hold_time",
							  true))
			return zkl_strand(slotno, slot);
		kept = true;
	}
	if (kept)
		zkl_works[slotno].phase = ZKL_PH_STRANDED;
	return kept;
}

/*
 * Each heartbeat tick, the delete of every stranded node is tried again
 * (one request each; their number is bounded: a directory that stranded
 * one is refused new requests while it lasts).
 */
void
zkl_retry_stranded(void)
{
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
		if (zkl_works[i].phase == ZKL_PH_STRANDED && !zkl_works[i].retry)
		{
			zkl_works[i].retry = true;
			zkl_mark_pending(i);
		}
	LWLockRelease(zkl_shared->lock);
}

/*
 * The node of a hold taken away and stranded (zkl_strand) is gone: the slot
 * is freed if its backend gave it up, else left LOST for the backend to
 * free once it has seen the loss.
 */
static bool
zkl_stranded_hold_gone(int slotno, zkl_slot *slot)
{
	bool		lost;
	bool		keep = false;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	lost = slot->state == ZKL_SLOT_LOST;
	if (lost)
	{
		keep = slot->wanted;
		slot->stranded = false;
		slot->node[0] = '\0';
	}
	LWLockRelease(zkl_shared->lock);
	if (!lost)
		return false;
	if (keep)
		zkl_end_work(&zkl_works[slotno]);
	else
		zkl_free_slot(slotno);
	return true;
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
		/* Refused: the node lasts until the session ends, or a retry. */
		zkl_delete_refused(slot, ev->rc);
		if (fail_rc == 0 && zkl_strand(slotno, slot))
			return;
	}
	else if (slot->stranded)
	{
		ereport(LOG,
				(errmsg("zklock deleted ZooKeeper node \"%s/%s\", which an earlier attempt could not delete",
						slot->dir, slot->node)));
		zkl_delete_worked(slot->dir);
	}
	if (zkl_stranded_hold_gone(slotno, slot))
		return;
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

	/* A release that waits for this answer learns it (zkl_free_slot). */
	zkl_free_slot(slotno);
}

/* The lock recipe's answers, by phase (dispatch.c routes them). */
const zkl_event_route zkl_lock_routes[] = {
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
	{ZKL_EV_DIR_ACL, ZKL_PH_CHECKING, false, zkl_on_dir_acl},
	{0, 0, false, NULL}
};
