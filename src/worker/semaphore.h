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

extern void zkl_sem_mutex_held(int slotno, zkl_slot *slot, bool wanted);
extern void zkl_sem_redo(int slotno, zkl_slot *slot);

/* Its handlers of ZooKeeper's answers, by phase. */
extern const zkl_event_route zkl_semaphore_routes[];

#endif							/* ZKLOCK_SEMAPHORE_H */
