/*-------------------------------------------------------------------------
 *
 * write_batch.h
 *		The worker's coalesced writes (write_batch.c): the pass's batch,
 *		opened and sent by worker.c's loop, and a multi's answers.  The
 *		steps reach it through zkl_hooks (slot_steps.h), the other way a
 *		write travels besides alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WRITE_BATCH_H
#define ZKLOCK_WRITE_BATCH_H

#include "worker/zk_events.h"

extern void zkl_batch_init(void);
extern void zkl_batch_begin(void);
extern void zkl_batch_flush(void);
extern void zkl_batch_answered(zkl_event *ev);
extern void zkl_batch_distance(int64 sample_us, int64 now_us);
extern void zkl_batch_release_lingering(void);
extern int64 zkl_batch_due(void);

#endif							/* ZKLOCK_WRITE_BATCH_H */
