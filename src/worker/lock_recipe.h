/*-------------------------------------------------------------------------
 *
 * lock_recipe.h
 *		The lock recipe (lock_recipe.c): its requests and its routes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_LOCK_RECIPE_H
#define ZKLOCK_LOCK_RECIPE_H

#include "worker/slot_steps.h"

extern void zkl_send_create(int slotno, zkl_slot *slot, bool with_parents);
extern void zkl_send_listing(int slotno, zkl_slot *slot, zkl_event_kind kind);
extern void zkl_send_contender(int slotno, zkl_slot *slot);
extern void zkl_retry_stranded(void);
extern void zkl_hand_over_at_release(int slotno, zkl_slot *slot);

/* Its handlers of ZooKeeper's answers, by phase. */
extern const zkl_event_route zkl_lock_routes[];

#endif							/* ZKLOCK_LOCK_RECIPE_H */
