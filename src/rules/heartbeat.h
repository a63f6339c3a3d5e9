/*-------------------------------------------------------------------------
 *
 * heartbeat.h
 *		When the worker sends a heartbeat and what its answer proves, as
 *		pure decisions (heartbeat.c): plain C, no PostgreSQL or ZooKeeper,
 *		proven by unit tests (test/unit).  The worker (worker.c) sends the
 *		heartbeat, a sync, and publishes the proof in shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_HEARTBEAT_H
#define ZKLOCK_HEARTBEAT_H

#include <stdbool.h>
#include <stdint.h>

/* Times are zkl_now()'s (clock.h); 0 means never. */
typedef struct zkl_beat
{
	int64_t		sent;			/* the last heartbeat left */
	bool		in_flight;		/* its answer is awaited */
	bool		at_once;		/* one is due now: the session (re)connected */
	int64_t		retry_at;		/* a send the library refused goes again */
	int64_t		proof;			/* the last answered heartbeat left */
} zkl_beat;

/* Retry delay of a heartbeat the library would not send, ms. */
#define ZKL_BEAT_RETRY_MS	100

extern void zkl_beat_connected(zkl_beat *beat, bool same_session, int64_t handle_opened,
							   int timeout_ms, int64_t now);
extern int	zkl_judged_timeout(int previous_ms, int negotiated_ms);
extern void zkl_beat_session_ended(zkl_beat *beat);
extern bool zkl_beat_due(const zkl_beat *beat, bool asked, int interval_ms, int64_t now);
extern int64_t zkl_beat_next(const zkl_beat *beat, int interval_ms, int64_t now);
extern void zkl_beat_sent(zkl_beat *beat, bool accepted, int64_t now);
extern bool zkl_beat_answered(zkl_beat *beat, bool ok);

#endif							/* ZKLOCK_HEARTBEAT_H */
