/*-------------------------------------------------------------------------
 *
 * wait_events.h
 *		What a zklock process waits for, as pg_stat_activity shows it
 *		(wait_events.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WAIT_EVENTS_H
#define ZKLOCK_WAIT_EVENTS_H

/*
 * Each wait has its own name in pg_stat_activity.wait_event from 17 on
 * (custom wait events), and is "Extension" before.  zkl_wait_event() gives
 * the wait_event_info to pass to WaitLatch and its kin.
 */
typedef enum zkl_wait
{
	ZKL_WAIT_SESSION,			/* a backend waits for a ZooKeeper session */
	ZKL_WAIT_LOCK,				/* a backend waits for a lock */
	ZKL_WAIT_WORKER,			/* a backend waits for the worker's answer */
	ZKL_WAIT_COMMIT,			/* a commit waits for the session's proof */
	ZKL_WAIT_WORKER_MAIN,		/* the worker's main loop */
	ZKL_WAIT_COUNT
} zkl_wait;

extern uint32 zkl_wait_event(zkl_wait what);
extern void zkl_register_wait_events(void);

#endif							/* ZKLOCK_WAIT_EVENTS_H */
