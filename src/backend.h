/*-------------------------------------------------------------------------
 *
 * backend.h
 *		Lock operations of a backend, used by the SQL functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_BACKEND_H
#define ZKLOCK_BACKEND_H

#include "fmgr.h"
#include "storage/dsm.h"

#include "zklock.h"

/* What a backend holds of a name; the value is its key letter. */
typedef enum zkl_mode
{
	ZKL_MODE_EXCLUSIVE = 'x',
	ZKL_MODE_SHARED = 's',
	ZKL_MODE_SEMAPHORE = 'p'	/* a permit */
} zkl_mode;

extern void zkl_name_key(text *name, char *key);
extern const char *zkl_mode_name(zkl_mode mode);
extern bool zkl_acquire(text *name, zkl_mode mode, int permits, bool xact, bool try_only,
						int64 timeout_ms, int64 *token);
extern void zkl_acquire_set(const char **names, int n, bool xact, int64 timeout_ms, int64 *tokens);
extern bool zkl_release_session(text *name, zkl_mode mode);
extern void zkl_release_all_session(void);
extern bool zkl_held_token(text *name, int64 *token);
extern bool zkl_session_proven(int *timeout_ms, TimestampTz *until);
extern int	zkl_ask_worker(const char *name, const char *dir, zkl_slot_op op, const char *node,
						   dsm_handle reply);

/* contenders.c */
extern void zkl_list_contenders(FunctionCallInfo fcinfo, text *name);
extern bool zkl_verify_token(text *name, int64 token);
extern int	zkl_revoke_holders(text *name);
extern void zkl_list_semaphore(FunctionCallInfo fcinfo, text *name);

#endif							/* ZKLOCK_BACKEND_H */
