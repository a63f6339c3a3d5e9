/*-------------------------------------------------------------------------
 *
 * session.h
 *		The worker's ZooKeeper session (session.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SESSION_H
#define ZKLOCK_SESSION_H

#include "datatype/timestamp.h"

#include "rules/heartbeat.h"

/* The hosts of the session in use, as zklock.hosts said when it opened. */
extern char *zkl_current_hosts;

/* When to try to connect again (zkl_now()), after a failure. */
extern int64 zkl_next_connect;

/* The previous incarnation's session is being closed (session_file.c). */
extern bool zkl_closing_previous;

/* Heartbeats prove the session alive to committing backends. */
extern zkl_beat zkl_heartbeat_state;
extern TimestampTz zkl_heartbeat_sent_wall;

extern uint32 zkl_handle_number;
extern void zkl_close_session(void);
extern int64 zkl_reattach_after_drop(void);
extern void zkl_open_session(void);
extern void zkl_handle_session_event(int state, uint32 handle);
extern void zkl_session_restart(void);
extern int64 zkl_session_give_up_at(void);
extern void zkl_check_session_proof(void);
extern void zkl_session_heard(int64 sent);
extern int64 zkl_session_heard_sent(void);

#endif							/* ZKLOCK_SESSION_H */
