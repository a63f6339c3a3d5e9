/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		The shared table of lock slots and the worker's request queue.
 *
 * Backends fill a slot and push its index on the queue; the worker pops
 * indexes, talks to ZooKeeper and writes the outcome back into the slot.
 * One LWLock guards it all (zklock.h says which field follows which rule):
 * every critical section is a few field copies.  Free slots form a stack
 * and used slots a list, both linked through the slots, so that claiming,
 * freeing and counting cost the same at zklock.max_locks = 100000 as at 16.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"

#include "zklock.h"

zkl_shared_state *zkl_shared = NULL;

/*
 * Slots beyond zklock.max_locks for deadlock detection: a waiting backend's
 * publication (one, or two while a replaced one is being deleted) and the
 * one read it asks of the worker at a time.  Kept apart, so that detection
 * never takes a slot that a lock request could use.
 */
int
zkl_reserve_slots(void)
{
	return 3 * MaxBackends;
}

Size
zkl_shmem_size(void)
{
	Size		size;
	int			nslots = zkl_max_locks + zkl_reserve_slots();

	size = add_size(offsetof(zkl_shared_state, slots),
					mul_size(sizeof(zkl_slot), nslots));
	size = add_size(size, mul_size(sizeof(int), nslots));
	return size;
}

void
zkl_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	zkl_shared = ShmemInitStruct("zklock", zkl_shmem_size(), &found);
	if (!found)
	{
		memset(zkl_shared, 0, zkl_shmem_size());
		zkl_shared->lock = &(GetNamedLWLockTranche("zklock"))->lock;
		zkl_shared->worker_procno = -1;
		zkl_shared->session_state = ZKL_SESSION_STARTING;
		ConditionVariableInit(&zkl_shared->contact_cv);
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
	}

	/*
	 * The queue follows the slots; pointers differ per process only on
	 * EXEC_BACKEND.
	 */
	zkl_shared->queue = (int *) &zkl_shared->slots[zkl_shared->nslots];
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

void
zkl_wake_backend(zkl_slot *slot)
{
	SetLatch(&ProcGlobal->allProcs[slot->procno].procLatch);
}

/*
 * Take a free slot and put it on the used list; -1 when none is free.
 * Caller holds the lock exclusively and fills the slot in.
 */
int
zkl_slot_take(bool reserve)
{
	int		   *head = reserve ? &zkl_shared->reserve_head : &zkl_shared->free_head;
	int			slotno = *head;
	zkl_slot   *slot;

	if (slotno < 0)
		return -1;
	slot = &zkl_shared->slots[slotno];
	*head = slot->next;
	if (reserve)
		zkl_shared->nreserve_used++;
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
	}
	else
	{
		slot->next = zkl_shared->free_head;
		zkl_shared->free_head = slotno;
	}
	zkl_shared->nused--;

	slot->state = ZKL_SLOT_FREE;
	slot->generation++;
	slot->wanted = false;
	slot->commit_waiting = false;
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
