/*-------------------------------------------------------------------------
 *
 * backend.h
 *		Lock operations of a backend, used by the SQL functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_BACKEND_H
#define ZKLOCK_BACKEND_H

#include "zklock.h"

extern void zkl_name_key(text *name, char *key);
extern bool zkl_acquire(text *name, bool xact, bool try_only, int64 timeout_ms, int64 *token);
extern bool zkl_release_session(text *name);
extern void zkl_release_all_session(void);
extern bool zkl_held_token(text *name, int64 *token);

#endif							/* ZKLOCK_BACKEND_H */
