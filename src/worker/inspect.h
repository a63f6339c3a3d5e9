/*-------------------------------------------------------------------------
 *
 * inspect.h
 *		The worker's services other than a lock (inspect.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_INSPECT_H
#define ZKLOCK_INSPECT_H

#include "worker/slot_steps.h"

extern void zkl_inspect_start(int slotno, zkl_slot *slot);

/* Its handlers of ZooKeeper's answers, by phase. */
extern const zkl_event_route zkl_inspect_routes[];

#endif							/* ZKLOCK_INSPECT_H */
