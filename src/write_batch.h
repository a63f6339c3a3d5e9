/*-------------------------------------------------------------------------
 *
 * write_batch.h
 *		The worker's coalesced writes (write_batch.c): the setting, the
 *		pass's batch, and the hooks recipe.c and worker.c call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WRITE_BATCH_H
#define ZKLOCK_WRITE_BATCH_H

#include "zklock.h"

struct zkl_event;

extern bool zkl_batch_enabled;

extern void zkl_batch_define_settings(void);

/* worker.c: around each pass of the loop, and a multi's answers */
extern void zkl_batch_begin(void);
extern void zkl_batch_flush(void);
extern void zkl_batch_answered(struct zkl_event *ev);

/* recipe.c: a write that may wait for the end of the pass */
extern bool zkl_batch_take_create(int slotno, zkl_slot *slot, const char *prefix);
extern bool zkl_batch_take_delete(int slotno, zkl_slot *slot, const char *path);

#endif							/* ZKLOCK_WRITE_BATCH_H */
