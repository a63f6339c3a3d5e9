/*-------------------------------------------------------------------------
 *
 * session_auth.h
 *		The credentials the worker gives its ZooKeeper session
 *		(session_auth.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SESSION_AUTH_H
#define ZKLOCK_SESSION_AUTH_H

#include <zookeeper/zookeeper.h>

extern void zkl_auth_new_handle(zhandle_t *zh, int64 session_id);
extern void zkl_auth_session_known(int64 session_id);
extern void zkl_give_auth(zhandle_t *zh);
extern bool zkl_auth_usable(void);

#endif							/* ZKLOCK_SESSION_AUTH_H */
