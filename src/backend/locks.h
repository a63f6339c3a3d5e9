/*-------------------------------------------------------------------------
 *
 * locks.h
 *		This backend's holds (locks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_LOCKS_H
#define ZKLOCK_LOCKS_H

#include "utils/hsearch.h"
#include "utils/resowner.h"

#include "backend/request.h"
#include "backend/xact_holds.h"


/* This backend's slots, by mode and lock name. */
typedef struct zkl_local_lock
{
	char		key[ZKL_KEY_LEN];	/* mode letter, then the name */
	int			slotno;
	uint32		generation;
	int32		session_count;
	int32		xact_count;
	int64		token;
	TimestampTz granted_at;		/* for zk_lock_stats' hold time; 0 when
								 * zklock.track_stats was off then */
} zkl_local_lock;


extern HTAB *zkl_locks;

/*
 * A lock whose loss this transaction was told of (ZK002): it may not commit,
 * even when a savepoint or an exception block caught the error.  Empty when
 * none; cleared when the top-level transaction ends.
 */
extern char zkl_lost_in_xact[ZKL_MAX_NAME_LEN + 1];

/*
 * The ZooKeeper session that granted a cursor's hold given back on an abort
 * path while the transaction went on (0: none), and that lock's name: the
 * commit proves it.  Cleared when the top-level transaction ends.
 */
extern int64 zkl_released_session;
extern char zkl_released_name[ZKL_MAX_NAME_LEN + 1];

extern void zkl_local_init(void);
extern void zkl_make_key(char *key, const char *name, zkl_mode mode);
extern zkl_local_lock *zkl_find_local(const char *name, zkl_mode mode);
extern void zkl_drop_local_as(zkl_local_lock *lock, bool lost);
extern void zkl_drop_local(zkl_local_lock *lock);
extern void zkl_update_slot_counts(zkl_local_lock *lock);
extern void zkl_xact_hold_to_session(zkl_local_lock *lock);
extern void zkl_note_loss(const char *name);
extern void zkl_count_hold(zkl_local_lock *lock, bool xact, const char *key);
extern bool zkl_lock_is_lost(zkl_local_lock *lock);
extern void zkl_report_if_lost(zkl_local_lock *lock);
extern void zkl_report_any_loss(const char *name, zkl_mode mode);
extern bool zkl_release_session(text *name, zkl_mode mode);
extern void zkl_release_all_session(bool note_losses);
extern bool zkl_held_token(text *name, int64 *token);
extern bool zkl_held_proven(text *name);
extern void zkl_release_xact_holds(ResourceOwner owner, bool abort_path);
extern void zkl_note_lost_held(void);
extern void zkl_note_fence_row(text *name);
extern void zkl_forget_fence_rows(void);
extern void zkl_backend_exit(int code, Datum arg);

#endif							/* ZKLOCK_LOCKS_H */
