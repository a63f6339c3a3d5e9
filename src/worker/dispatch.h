/*-------------------------------------------------------------------------
 *
 * dispatch.h
 *		The routing of ZooKeeper's answers to the recipes, and each
 *		slot's next request (dispatch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_DISPATCH_H
#define ZKLOCK_DISPATCH_H

#include "worker/zk_events.h"

extern void zkl_recipe_init(void);
extern void zkl_run_pending(void);
extern bool zkl_work_deferred(void);
extern void zkl_dispatch(int slotno, bool connected);
extern void zkl_handle_event(zkl_event *ev);

#endif							/* ZKLOCK_DISPATCH_H */
