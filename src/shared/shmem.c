/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		The shared table of lock slots and the worker's request queue.
 *
 * Backends fill a slot and push its index on the queue; the worker pops
 * indexes, talks to ZooKeeper and writes the outcome back into the slot.
 * One LWLock guards it all (shmem.h says which field follows which rule):
 * every critical section is a few field copies.  Free slots form a stack
 * and used slots a list, both linked through the slots, so that claiming,
 * freeing and counting cost the same at zklock.max_locks = 100000 as at 16.
 * The same critical sections keep the counts that the limits of
 * slot_quota.c read: lock slots per role, reserve slots per backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "pg_compat.h"
#include "rules/slot_quota.h"
#include "shared/shmem.h"

zkl_shared_state *zkl_shared = NULL;

/* Lock slots in use per role (counted roles only); guarded by zkl_shared->lock. */
typedef struct zkl_role_count
{
	Oid			role;			/* hash key */
	int			used;
} zkl_role_count;

static HTAB *zkl_role_counts = NULL;

/*
 * Slots beyond zklock.max_locks for what is no lock: reads and revocations
 * (zk_lock_contenders, zk_lock_verify, zk_lock_revoke, ...) and deadlock
 * detection, ZKL_RESERVE_PER_BACKEND per possible backend (slot_quota.h
 * says what for).  Kept apart, so that neither ever takes a slot that a
 * lock request could use, nor finds none when lock requests took them all.
 */
int
zkl_reserve_slots(void)
{
	return ZKL_RESERVE_PER_BACKEND * MaxBackends;
}

/*
 * The slots, the queue, the reserve use per backend, and apart from them
 * the table of roles: each entry counts at least one lock slot, so
 * zklock.max_locks entries are always enough.
 */
static Size
zkl_shmem_struct_size(void)
{
	Size		size;
	int			nslots = zkl_max_locks + zkl_reserve_slots();

	size = add_size(offsetof(zkl_shared_state, slots),
					mul_size(sizeof(zkl_slot), nslots));
	size = add_size(size, mul_size(sizeof(int), nslots));
	size = MAXALIGN(size);
	size = add_size(size, mul_size(sizeof(zkl_backend_use), MaxBackends));
	return size;
}

Size
zkl_shmem_size(void)
{
	return add_size(zkl_shmem_struct_size(),
					hash_estimate_size(zkl_max_locks, sizeof(zkl_role_count)));
}

void
zkl_shmem_startup(void)
{
	bool		found;
	HASHCTL		role_counts_info;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	zkl_shared = ShmemInitStruct("zklock", zkl_shmem_struct_size(), &found);
	if (!found)
	{
		memset(zkl_shared, 0, zkl_shmem_struct_size());
		zkl_shared->lock = &(GetNamedLWLockTranche("zklock"))->lock;
		zkl_shared->worker_procno = -1;
		zkl_shared->session_state = ZKL_SESSION_STARTING;
		ConditionVariableInit(&zkl_shared->contact_cv);
		ConditionVariableInit(&zkl_shared->recent_cv);
		zkl_shared->waits_watch_gen = 1;
		pg_atomic_init_u64(&zkl_shared->counters.acquired, 0);
		pg_atomic_init_u64(&zkl_shared->counters.released, 0);
		pg_atomic_init_u64(&zkl_shared->counters.timeouts, 0);
		pg_atomic_init_u64(&zkl_shared->counters.cancels, 0);
		pg_atomic_init_u64(&zkl_shared->counters.lost, 0);
		pg_atomic_init_u64(&zkl_shared->counters.requests, 0);
		pg_atomic_init_u64(&zkl_shared->counters.watch_events, 0);
		pg_atomic_init_u64(&zkl_shared->counters.release_requests, 0);
		pg_atomic_init_u64(&zkl_shared->counters.handoffs, 0);
		pg_atomic_init_u64(&zkl_shared->counters.handoff_requests, 0);
		pg_atomic_init_u64(&zkl_shared->counters.deadlock_checks, 0);
		pg_atomic_init_u64(&zkl_shared->counters.deadlocks_found, 0);
		pg_atomic_init_u64(&zkl_shared->counters.near_top_listings, 0);
		pg_atomic_init_u64(&zkl_shared->counters.early_losses, 0);
		pg_atomic_init_u64(&zkl_shared->counters.session_expiries, 0);
		pg_atomic_init_u64(&zkl_shared->counters.commits_refused, 0);
		zkl_shared->nlock_slots = zkl_max_locks;
		zkl_shared->nslots = zkl_max_locks + zkl_reserve_slots();
		zkl_shared->used_head = -1;
		for (int i = 0; i < zkl_shared->nslots; i++)
		{
			int			end = i < zkl_max_locks ? zkl_max_locks : zkl_shared->nslots;

			zkl_shared->slots[i].next = i + 1 < end ? i + 1 : -1;
			zkl_shared->slots[i].prev = -1;
		}
		zkl_shared->free_head = zkl_max_locks > 0 ? 0 : -1;
		zkl_shared->reserve_head = zkl_shared->nslots > zkl_max_locks ? zkl_max_locks : -1;
		zkl_shared->nbackends = MaxBackends;
	}

	/*
	 * The queue follows the slots; pointers differ per process only on
	 * EXEC_BACKEND.
	 */
	zkl_shared->queue = (int *) &zkl_shared->slots[zkl_shared->nslots];
	zkl_shared->backends = (zkl_backend_use *)
		MAXALIGN(&zkl_shared->queue[zkl_shared->nslots]);
	if (!found)
		zkl_shared->nbackends = MaxBackends;

	/* The slots each role uses, for zklock.max_locks_per_role. */
	role_counts_info.keysize = sizeof(Oid);
	role_counts_info.entrysize = sizeof(zkl_role_count);
	zkl_role_counts = ShmemInitHash("zklock slots per role",
									zkl_max_locks, zkl_max_locks,
									&role_counts_info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* Complain unless the library was preloaded, so that shared memory exists. */
void
zkl_require_shmem(void)
{
	if (zkl_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zklock must be loaded via \"shared_preload_libraries\""),
				 errhint("Add zklock to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/*
 * Hand a slot to the worker.  Caller holds the lock exclusively.  A slot is
 * in the queue at most once, so nslots entries are always enough.
 */
void
zkl_queue_push(int slotno)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];

	if (slot->queued)
		return;
	slot->queued = true;
	zkl_shared->queue[(zkl_shared->queue_head + zkl_shared->queue_len) % zkl_shared->nslots] = slotno;
	zkl_shared->queue_len++;
}

void
zkl_wake_worker(void)
{
	int			procno = zkl_shared->worker_procno;

	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/*
 * The worker wakes a slot's backend once it has released zkl_shared->lock:
 * the backend takes that lock first thing, and woken while the worker held
 * it, it would sleep again on the lock at once (one more switch each way on
 * every answer).  A slot the backend may free itself once it sees the
 * outcome (FAILED, LOST, an answered read) may be another backend's by the
 * time of the wake: its procno is read under the lock, with the outcome,
 * and zkl_wake_procno wakes that one.  zkl_wake_backend serves the slots
 * only the worker frees.  A latch set for nothing is harmless.  The one
 * wake under the lock is rare: a change of the session's state wakes every
 * waiting backend while it walks the used slots (session.c).
 */
void
zkl_wake_procno(int procno)
{
	Assert(procno >= 0 && procno < ProcGlobal->allProcCount);
	SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

void
zkl_wake_backend(zkl_slot *slot)
{
	zkl_wake_procno(slot->procno);
}

/* This backend's entry of backends[], made its own; NULL if it has none. */
static zkl_backend_use *
zkl_my_backend_use(void)
{
	zkl_backend_use *use;

	if (ZKL_MY_PROCNO < 0 || ZKL_MY_PROCNO >= zkl_shared->nbackends)
		return NULL;
	use = &zkl_shared->backends[ZKL_MY_PROCNO];
	/* A predecessor's slots still being finished no longer count here. */
	if (use->pid != MyProcPid)
	{
		use->pid = MyProcPid;
		use->reserve_used = 0;
	}
	return use;
}

/*
 * Take a free slot for this backend and put it on the used list, if the
 * limits allow (slot_quota.c): a lock slot counts against role (unless
 * role_exempt) up to role_cap, a reserve slot against this backend.
 * Returns the slot, or -1 with *verdict saying which limit refused and *used
 * how many the role or the backend has.  Caller holds the lock exclusively
 * and fills the slot in; the test and the count are one step under it.
 */
int
zkl_slot_take(bool reserve, Oid role, bool role_exempt, int role_cap,
			  int *verdict, int *used)
{
	int		   *head = reserve ? &zkl_shared->reserve_head : &zkl_shared->free_head;
	int			slotno = *head;
	zkl_slot   *slot;
	zkl_backend_use *use = reserve ? zkl_my_backend_use() : NULL;
	zkl_role_count *count = NULL;
	zkl_claim_state st;
	bool		found;

	st.reserve = reserve;
	st.pool_free = slotno >= 0;
	st.role_exempt = role_exempt;
	st.role_cap = role_cap;
	st.role_used = 0;
	st.backend_reserve_used = use ? use->reserve_used : 0;
	if (!reserve && !role_exempt)
	{
		count = hash_search(zkl_role_counts, &role, HASH_FIND, NULL);
		st.role_used = count ? count->used : 0;
	}
	*verdict = (int) zkl_claim_rule(&st);
	*used = reserve ? st.backend_reserve_used : st.role_used;
	if (reserve && use == NULL)
		*verdict = ZKL_CLAIM_BACKEND_FULL;
	if (*verdict != ZKL_CLAIM_OK)
		return -1;

	if (!reserve && !role_exempt && count == NULL)
	{
		/* One entry per role with a slot: zklock.max_locks are allocated. */
		count = hash_search(zkl_role_counts, &role, HASH_ENTER_NULL, &found);
		if (count == NULL)
		{
			*verdict = ZKL_CLAIM_POOL_FULL;
			return -1;
		}
		count->used = 0;
	}

	slot = &zkl_shared->slots[slotno];
	*head = slot->next;
	slot->pid = MyProcPid;
	slot->procno = ZKL_MY_PROCNO;
	slot->quota_role = InvalidOid;
	if (reserve)
	{
		zkl_shared->nreserve_used++;
		use->reserve_used++;
	}
	else if (count != NULL)
	{
		count->used++;
		slot->quota_role = role;
	}
	slot->prev = -1;
	slot->next = zkl_shared->used_head;
	if (slot->next >= 0)
		zkl_shared->slots[slot->next].prev = slotno;
	zkl_shared->used_head = slotno;
	zkl_shared->nused++;
	return slotno;
}

/*
 * Return a slot to the free pool.  Caller holds the lock exclusively.
 * "queued" is left alone: the index may still sit in the queue, and the
 * worker skips free slots it pops.
 */
void
zkl_slot_clear(zkl_slot *slot)
{
	int			slotno = slot - zkl_shared->slots;

	if (slot->state == ZKL_SLOT_FREE)
		return;
	if (slot->prev >= 0)
		zkl_shared->slots[slot->prev].next = slot->next;
	else
		zkl_shared->used_head = slot->next;
	if (slot->next >= 0)
		zkl_shared->slots[slot->next].prev = slot->prev;
	slot->prev = -1;
	if (slotno >= zkl_shared->nlock_slots)
	{
		slot->next = zkl_shared->reserve_head;
		zkl_shared->reserve_head = slotno;
		zkl_shared->nreserve_used--;
		/* Counted for the backend that took it, if still that one. */
		if (slot->procno >= 0 && slot->procno < zkl_shared->nbackends &&
			zkl_shared->backends[slot->procno].pid == slot->pid &&
			zkl_shared->backends[slot->procno].reserve_used > 0)
			zkl_shared->backends[slot->procno].reserve_used--;
	}
	else
	{
		slot->next = zkl_shared->free_head;
		zkl_shared->free_head = slotno;
		if (OidIsValid(slot->quota_role))
		{
			zkl_role_count *count = hash_search(zkl_role_counts, &slot->quota_role,
												HASH_FIND, NULL);

			if (count != NULL && --count->used <= 0)
				hash_search(zkl_role_counts, &slot->quota_role, HASH_REMOVE, NULL);
			slot->quota_role = InvalidOid;
		}
	}
	zkl_shared->nused--;

	slot->state = ZKL_SLOT_FREE;
	slot->generation++;
	slot->wanted = false;
	slot->release_now = false;
	slot->commit_waiting = false;
	slot->committing = false;
	slot->take_deferred = false;
	slot->inspect = false;
	slot->op = ZKL_OP_LOCK;
	slot->permits = 0;
	slot->revoke_requested = false;
	slot->take_reason = ZKL_TAKE_NONE;
	slot->lease[0] = '\0';
	slot->pid = 0;
	slot->session_count = 0;
	slot->xact_count = 0;
	slot->node[0] = '\0';
	slot->token = 0;
	slot->zk_rc = 0;
}

/*
 * The worker's watch on <root>/.waits fired, or may have been lost (a
 * session event, a new handle): readings of .waits listed before it are
 * older than its children now.  Backends compare the count between their
 * deadlock checks (deadlock_check.c); worker/inspect.c stamps each listing
 * with it.  Called in the worker's loop.
 */
void
zkl_waits_watch_moved(void)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->waits_watch_gen++;
	LWLockRelease(zkl_shared->lock);
}
