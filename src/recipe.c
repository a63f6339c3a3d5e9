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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "utils/timestamp.h"

#include "worker.h"

/* Markers after which contenders carry their sequence number. */
static const char *const zkl_markers[] = {
	"-lock-",					/* Curator InterProcessMutex, zklock */
	"__lock__",					/* kazoo Lock */
	"__rlock__",				/* kazoo ReadLock */
	"__READ__",					/* Curator InterProcessReadWriteLock */
	"__WRIT__"
};

static void zkl_send_create(int slotno, zkl_slot *slot, bool with_parents);
static void zkl_send_listing(int slotno, zkl_slot *slot, zkl_event_kind kind);
static void zkl_send_delete(int slotno, zkl_slot *slot);

/*
 * Sequence number of a contender node, compared as a number: the uuid
 * prefixes differ, so whole names do not sort.  -1 when the child is not a
 * contender of any layout we know.
 */
int64
zkl_sequence_of(const char *child)
{
	const char *digits = NULL;
	int64		seq = 0;

	for (int i = 0; i < lengthof(zkl_markers); i++)
	{
		const char *p = child;
		const char *hit;

		while ((hit = strstr(p, zkl_markers[i])) != NULL)
		{
			p = hit + strlen(zkl_markers[i]);
			if (digits == NULL || p > digits)
				digits = p;
		}
	}
	if (digits == NULL || *digits == '\0')
		return -1;
	for (const char *p = digits; *p; p++)
	{
		if (*p < '0' || *p > '9' || seq > (PG_INT64_MAX - 9) / 10)
			return -1;
		seq = seq * 10 + (*p - '0');
	}
	return seq;
}

static char *
zkl_child_path(zkl_slot *slot, const char *child)
{
	return psprintf("%s/%s", slot->dir, child);
}

static struct ACL_vector *
zkl_acl(void)
{
	return (zkl_auth && zkl_auth[0] != '\0') ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}

/*
 * A request that could not even be queued by the client (the session is
 * going away) is retried once the session is usable again.
 */
static void
zkl_check_sent(int slotno, int rc)
{
	zkl_count_request();
	if (rc != ZOK)
	{
		zkl_works[slotno].retry = true;
		zkl_mark_pending(slotno);
	}
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

	work->opgen++;
	work->phase = ZKL_PH_IDLE;
	work->retry = false;
	work->fail_rc = 0;
	work->parent_attempts = 0;
}

/* Report a final outcome to the waiting backend, which frees the slot. */
static void
zkl_fail_slot(int slotno, int rc)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];

	/* A node of ours may exist: it goes first, or it would block everyone. */
	if (slot->node[0] != '\0')
	{
		work->fail_rc = rc;
		zkl_send_delete(slotno, slot);
		return;
	}

	work->opgen++;
	work->phase = ZKL_PH_IDLE;
	work->retry = false;
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
 * A held lock is gone.  Caller holds the lock exclusively.  The backend is
 * woken and, as zklock.on_lock_lost says, its statement cancelled or the
 * backend terminated at once; its commit fails in any case.
 */
static void
zkl_mark_lost(zkl_slot *slot, const char *cause)
{
	slot->state = ZKL_SLOT_LOST;
	slot->node[0] = '\0';
	zkl_shared->n_lost++;
	zkl_wake_backend(slot);
	ereport(LOG,
			(errmsg("zklock: backend %d lost ZooKeeper lock \"%s\": %s",
					slot->pid, slot->name, cause)));
	if (zkl_on_lock_lost == ZKL_ON_LOST_CANCEL)
		kill(slot->pid, SIGINT);
	else if (zkl_on_lock_lost == ZKL_ON_LOST_TERMINATE)
		kill(slot->pid, SIGTERM);
}

/* Watch our own held node, so that a deletion by anyone is noticed. */
static void
zkl_watch_own_node(int slotno, zkl_slot *slot)
{
	char	   *path = zkl_child_path(slot, slot->node);

	zkl_check_sent(slotno, zoo_awexists(zkl_zh, path, zkl_node_watcher,
										(void *) zkl_ctx(ZKL_EV_OWN_WATCH, slotno),
										zkl_stat_done, zkl_ctx(ZKL_EV_OWN_WATCH, slotno)));
	pfree(path);
}

static void
zkl_grant(int slotno, zkl_slot *slot)
{
	bool		wanted;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	if (wanted)
	{
		slot->state = ZKL_SLOT_HELD;
		slot->granted_at = GetCurrentTimestamp();
		zkl_shared->n_acquired++;
		zkl_wake_backend(slot);
	}
	LWLockRelease(zkl_shared->lock);

	zkl_works[slotno].phase = ZKL_PH_HELD;
	if (!wanted)
		zkl_send_delete(slotno, slot);
	else
		zkl_watch_own_node(slotno, slot);
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
	char	   *prefix;

	if (with_parents)
	{
		char	   *path = pstrdup(slot->dir);

		/* The root's components persist; they are shared by every lock. */
		for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/'))
		{
			*p = '\0';
			zkl_check_sent(slotno, zoo_acreate(zkl_zh, path, NULL, -1, zkl_acl(), ZOO_PERSISTENT,
											   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
			*p = '/';
		}
		zkl_check_sent(slotno, zoo_acreate(zkl_zh, slot->dir, NULL, -1, zkl_acl(), ZOO_CONTAINER,
										   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
		pfree(path);
	}

	prefix = psprintf("%s/_c_%s-lock-", slot->dir, slot->uuid);
	zkl_works[slotno].phase = ZKL_PH_CREATING;
	zkl_check_sent(slotno, zoo_acreate2(zkl_zh, prefix, slot->data, strlen(slot->data), zkl_acl(),
										ZOO_EPHEMERAL_SEQUENTIAL, zkl_string_stat_done,
										zkl_ctx(ZKL_EV_CREATED, slotno)));
	zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
	pfree(prefix);
}

static void
zkl_send_listing(int slotno, zkl_slot *slot, zkl_event_kind kind)
{
	if (kind == ZKL_EV_CHILDREN && zkl_works[slotno].phase != ZKL_PH_CREATING)
		zkl_works[slotno].phase = ZKL_PH_LISTING;
	zkl_check_sent(slotno, zoo_aget_children(zkl_zh, slot->dir, 0, zkl_strings_done,
											 zkl_ctx(kind, slotno)));
}

static void
zkl_send_delete(int slotno, zkl_slot *slot)
{
	char	   *path = zkl_child_path(slot, slot->node);

	zkl_works[slotno].phase = ZKL_PH_DELETING;
	zkl_check_sent(slotno, zoo_adelete(zkl_zh, path, -1, zkl_void_done,
									   zkl_ctx(ZKL_EV_DELETED, slotno)));
	pfree(path);
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
			zkl_send_listing(slotno, slot, ZKL_EV_RECOVER_CHILDREN);
			break;
		case ZKL_PH_LISTING:
		case ZKL_PH_WATCHING:
			zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
			break;
		case ZKL_PH_DELETING:
			zkl_send_delete(slotno, slot);
			break;
		case ZKL_PH_HELD:
			zkl_watch_own_node(slotno, slot);
			break;
		default:
			break;
	}
}

/*
 * The backend gave the slot up.  Returns true when that settled what to do;
 * false when the slot's in-flight request must finish first.
 */
static bool
zkl_release(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];

	switch (work->phase)
	{
		case ZKL_PH_IDLE:
			/* Never sent, or already failed/lost: nothing exists in ZooKeeper. */
			if (slot->state == ZKL_SLOT_RELEASING)
				zkl_free_slot(slotno);
			return true;
		case ZKL_PH_LISTING:
		case ZKL_PH_WATCHING:
		case ZKL_PH_HELD:
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
			zkl_release(slotno, slot);
		else
			zkl_mark_pending(slotno);
		return;
	}

	if (!wanted && zkl_release(slotno, slot))
		return;
	if (work->phase == ZKL_PH_IDLE && state == ZKL_SLOT_WAITING)
		zkl_send_create(slotno, slot, false);
	else if (work->retry)
		zkl_redo(slotno, slot);
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
	return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE;
}

/*
 * Decide from a listing that contains our node: lowest holds; a try gives
 * up; anyone else watches only its immediate predecessor.
 */
static void
zkl_evaluate(int slotno, zkl_slot *slot, zkl_event *ev)
{
	zkl_work   *work = &zkl_works[slotno];
	int64		own = zkl_sequence_of(slot->node);
	int64		pred_seq = -1;
	const char *pred = NULL;
	int			lower = 0;
	bool		found_self = false;
	char	   *path;

	for (int i = 0; i < ev->nchildren; i++)
	{
		int64		seq = zkl_sequence_of(ev->children[i]);

		if (seq < 0)
			continue;
		if (strcmp(ev->children[i], slot->node) == 0)
		{
			found_self = true;
			continue;
		}
		if (seq < own)
		{
			lower++;
			if (seq > pred_seq)
			{
				pred_seq = seq;
				pred = ev->children[i];
			}
		}
	}

	if (!found_self)
	{
		/* Someone deleted our waiting node: queue again rather than wait on nothing. */
		work->opgen++;
		work->phase = ZKL_PH_IDLE;
		slot->node[0] = '\0';
		zkl_mark_pending(slotno);
		return;
	}
	if (lower == 0)
	{
		zkl_grant(slotno, slot);
		return;
	}
	if (slot->try_only)
	{
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		slot->state = ZKL_SLOT_BUSY;
		zkl_wake_backend(slot);
		LWLockRelease(zkl_shared->lock);
		zkl_send_delete(slotno, slot);
		return;
	}

	work->phase = ZKL_PH_WATCHING;
	work->pred_was_lowest = (lower == 1);
	strlcpy(work->pred, pred, sizeof(work->pred));
	path = zkl_child_path(slot, pred);
	/* getData, not exists: a vanished predecessor leaves no watch behind. */
	zkl_check_sent(slotno, zoo_awget(zkl_zh, path, zkl_node_watcher,
									 (void *) zkl_ctx(ZKL_EV_PRED_WATCH, slotno),
									 zkl_data_done, zkl_ctx(ZKL_EV_PRED_EXISTS, slotno)));
	pfree(path);
}

/*
 * The predecessor is gone.  If it was the lowest, we are lowest now:
 * sequence numbers only grow, so no re-read is needed.
 */
static void
zkl_predecessor_gone(int slotno, zkl_slot *slot)
{
	if (zkl_works[slotno].pred_was_lowest)
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
}

void
zkl_handle_event(zkl_event *ev)
{
	int			slotno = ev->slotno;
	zkl_slot   *slot;
	zkl_work   *work;
	bool		wanted;

	if (slotno < 0 || slotno >= zkl_shared->nslots)
		return;
	slot = &zkl_shared->slots[slotno];
	work = &zkl_works[slotno];

	if (ev->kind == ZKL_EV_PRED_WATCH && ev->type != ZOO_SESSION_EVENT)
		zkl_shared->n_watch_events++;
	if (ev->opgen != work->opgen)
		return;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	wanted = slot->wanted;
	LWLockRelease(zkl_shared->lock);

	switch (ev->kind)
	{
		case ZKL_EV_CREATED:
			if (work->phase != ZKL_PH_CREATING)
				break;
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
			else if (!zkl_connection_trouble(slotno, ev->rc))
				zkl_fail_slot(slotno, ev->rc);
			break;

		case ZKL_EV_CHILDREN:
			/* In CREATING this is the listing of a create that failed. */
			if (work->phase != ZKL_PH_LISTING)
				break;
			if (ev->rc == ZOK)
				zkl_evaluate(slotno, slot, ev);
			else if (!zkl_connection_trouble(slotno, ev->rc))
				zkl_fail_slot(slotno, ev->rc);
			break;

		case ZKL_EV_RECOVER_CHILDREN:
			if (work->phase != ZKL_PH_RECOVERING)
				break;
			if (ev->rc == ZOK || ev->rc == ZNONODE)
			{
				char		mark[ZKL_UUID_LEN + 8];
				const char *found = NULL;

				snprintf(mark, sizeof(mark), "_c_%s-", slot->uuid);
				for (int i = 0; i < ev->nchildren && !found; i++)
					if (strncmp(ev->children[i], mark, strlen(mark)) == 0)
						found = ev->children[i];

				if (found)
				{
					char	   *path = zkl_child_path(slot, found);

					zkl_found_node(slotno, slot, found, 0);
					zkl_check_sent(slotno, zoo_aexists(zkl_zh, path, 0, zkl_stat_done,
													   zkl_ctx(ZKL_EV_RECOVER_STAT, slotno)));
					pfree(path);
				}
				else if (!wanted)
					zkl_free_slot(slotno);
				else
					zkl_send_create(slotno, slot, false);
			}
			else if (!zkl_connection_trouble(slotno, ev->rc))
				zkl_fail_slot(slotno, ev->rc);
			break;

		case ZKL_EV_RECOVER_STAT:
			if (work->phase != ZKL_PH_RECOVERING)
				break;
			if (ev->rc == ZOK)
			{
				zkl_found_node(slotno, slot, slot->node, ev->czxid);
				if (!wanted)
					zkl_send_delete(slotno, slot);
				else
					zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
			}
			else if (ev->rc == ZNONODE)
				zkl_send_listing(slotno, slot, ZKL_EV_RECOVER_CHILDREN);
			else if (!zkl_connection_trouble(slotno, ev->rc))
				zkl_fail_slot(slotno, ev->rc);
			break;

		case ZKL_EV_PRED_EXISTS:
			if (work->phase != ZKL_PH_WATCHING)
				break;
			if (ev->rc == ZNONODE)
				zkl_predecessor_gone(slotno, slot);
			else if (ev->rc != ZOK && !zkl_connection_trouble(slotno, ev->rc))
				zkl_fail_slot(slotno, ev->rc);
			break;

		case ZKL_EV_PRED_WATCH:
			if (work->phase != ZKL_PH_WATCHING || ev->type == ZOO_SESSION_EVENT)
				break;
			if (ev->type == ZOO_DELETED_EVENT)
				zkl_predecessor_gone(slotno, slot);
			else
				zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
			break;

		case ZKL_EV_OWN_WATCH:
			if (work->phase != ZKL_PH_HELD || ev->type == ZOO_SESSION_EVENT)
				break;
			if (ev->type == ZOO_DELETED_EVENT || (ev->type == 0 && ev->rc == ZNONODE))
			{
				LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
				if (slot->state == ZKL_SLOT_HELD)
					zkl_mark_lost(slot, "its node was deleted");
				LWLockRelease(zkl_shared->lock);
				work->opgen++;
				work->phase = ZKL_PH_IDLE;
			}
			else if (ev->type != 0)
				zkl_watch_own_node(slotno, slot);	/* data changed: watch again */
			else if (ev->rc != ZOK)
				zkl_connection_trouble(slotno, ev->rc);
			break;

		case ZKL_EV_DELETED:
			if (work->phase != ZKL_PH_DELETING)
				break;
			if (ev->rc != ZOK && ev->rc != ZNONODE && !zkl_connection_trouble(slotno, ev->rc))
			{
				/* Nothing more to try: the ephemeral node lasts until the session ends. */
				ereport(LOG,
						(errmsg("zklock could not delete ZooKeeper node \"%s/%s\": %s",
								slot->dir, slot->node, zerror(ev->rc))));
				ev->rc = ZOK;
			}
			if (ev->rc == ZOK || ev->rc == ZNONODE)
			{
				int			fail_rc = work->fail_rc;

				if (fail_rc != 0)
				{
					/* The node of a failed request is gone: now report the failure. */
					work->fail_rc = 0;
					LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
					slot->node[0] = '\0';
					LWLockRelease(zkl_shared->lock);
					zkl_fail_slot(slotno, fail_rc);
					break;
				}
				LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
				if (slot->state == ZKL_SLOT_RELEASING && slot->granted_at != 0)
					zkl_shared->n_released++;
				LWLockRelease(zkl_shared->lock);
				zkl_free_slot(slotno);
			}
			break;

		default:
			break;
	}
}

/*
 * The session is gone and every node of ours with it.  Holders lose their
 * locks and are told; waiters queue again in the next session.
 */
void
zkl_session_lost(void)
{
	for (int i = 0; i < zkl_shared->nslots; i++)
	{
		zkl_slot   *slot = &zkl_shared->slots[i];
		zkl_work   *work = &zkl_works[i];
		bool		free_it = false;

		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		switch (slot->state)
		{
			case ZKL_SLOT_HELD:
				zkl_mark_lost(slot, "the ZooKeeper session ended");
				break;
			case ZKL_SLOT_WAITING:
				if (slot->wanted)
				{
					slot->node[0] = '\0';
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

		work->opgen++;
		work->phase = ZKL_PH_IDLE;
		work->retry = false;
		work->fail_rc = 0;
		work->parent_attempts = 0;
		if (free_it)
			zkl_free_slot(i);
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

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	reattach = zkl_shared->session_id != 0;
	LWLockRelease(zkl_shared->lock);

	if (!reattach)
	{
		zkl_session_lost();
		return;
	}

	for (int i = 0; i < zkl_shared->nslots; i++)
	{
		zkl_slot   *slot = &zkl_shared->slots[i];
		zkl_work   *work = &zkl_works[i];
		bool		known = slot->node[0] != '\0';

		work->opgen = 1;
		switch (slot->state)
		{
			case ZKL_SLOT_HELD:
				/* The old worker's watch on the node went with it. */
				work->phase = ZKL_PH_HELD;
				work->retry = true;
				break;
			case ZKL_SLOT_WAITING:
				work->phase = known ? ZKL_PH_LISTING : ZKL_PH_RECOVERING;
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
}
