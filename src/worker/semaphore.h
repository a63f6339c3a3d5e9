/*-------------------------------------------------------------------------
 *
 * semaphore.h
 *		The semaphore recipe, in Curator's layout (semaphore.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SEMAPHORE_H
#define ZKLOCK_SEMAPHORE_H

#include "worker/slot_steps.h"

extern char *zkl_lease_path(const zkl_slot *slot);
extern void zkl_sem_find_lease(int slotno, zkl_slot *slot);
extern void zkl_sem_mutex_held(int slotno, zkl_slot *slot, bool wanted);
extern void zkl_sem_redo(int slotno, zkl_slot *slot);

/* Its handlers of ZooKeeper's answers, by phase. */
extern const zkl_event_route zkl_semaphore_routes[];

#endif							/* ZKLOCK_SEMAPHORE_H */
