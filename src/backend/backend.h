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

#include "rules/lock_rule.h"
#include "shared/shmem.h"

/* What a backend holds of a name; the value is its key letter. */
typedef enum zkl_mode
{
	ZKL_MODE_EXCLUSIVE = 'x',
	ZKL_MODE_SHARED = 's',
	ZKL_MODE_SEMAPHORE = 'p'	/* a permit */
} zkl_mode;

extern void zkl_backend_init(void);
extern void zkl_name_key(text *name, char *key);
extern const char *zkl_mode_name(zkl_mode mode);
extern void zkl_host_name(char *host, size_t size);
extern bool zkl_acquire(text *name, zkl_mode mode, int permits, bool xact, bool try_only,
						int64 timeout_ms, int64 *token);
extern void zkl_acquire_set(const char **names, int n, bool xact, int64 timeout_ms, int64 *tokens);
extern bool zkl_release_session(text *name, zkl_mode mode);
extern void zkl_release_all_session(void);
extern bool zkl_held_token(text *name, int64 *token);
extern bool zkl_held_proven(text *name);
extern void zkl_note_fence_row(text *name);
extern bool zkl_session_proven(int *timeout_ms, TimestampTz *until, int64 *session);
extern bool zkl_checking;
extern void zkl_publish_wait(void);
extern void zkl_end_publication(void);
extern int	zkl_ask_worker(const char *name, const char *dir, zkl_slot_op op, const char *node,
						   dsm_handle reply);

/* contenders.c */
/* One child of the directory, as the worker read it. */
typedef struct zkl_contender
{
	zkl_contender_name name;	/* sequence number and mode */
	int64		czxid;
	int64		session;		/* ephemeralOwner: the owner's session */
	int64		ctime;			/* when the node was created, ms since 1970 */
	int32		pid;			/* of a zklock node's backend, else 0 */
	char	   *cluster;		/* of a zklock node: its description's */
	char	   *host;			/* cluster, host and port, UTF-8, or NULL */
	char	   *port;
	char	   *node;
	char	   *data;
	int			data_len;
	bool		is_zklock;		/* the data is zklock's description */
	bool		unreadable;		/* we may not read its data: none here */
	Datum		holder;			/* zklock's JSON as jsonb, or 0 */
	bool		held;			/* by the lock rule */
	bool		equal;			/* shares its sequence number: an anomaly */
	bool		downgrade_holds;	/* the worker knows it a peer's downgrade */
	bool		downgrade_waits;	/* ... and this node a writer that waits
									 * for it */
	char	   *owner;			/* "<session>-<pid>" of a zklock node (its
								 * ephemeralOwner and its description's pid),
								 * as deadlock.c names backends; NULL for any
								 * other */
} zkl_contender;

extern dsm_segment *zkl_fetch_directory(const char *name, const char *dir);
extern zkl_contender *zkl_read_contenders(const char *name, const char *dir, bool leases,
										  bool describe, int *count);
extern const char *zkl_client_of(const zkl_contender *c, bool is_zklock);
extern void zkl_list_contenders(FunctionCallInfo fcinfo, text *name);
extern bool zkl_verify_token(text *name, int64 token);
extern int	zkl_revoke_holders(text *name);
extern void zkl_list_semaphore(FunctionCallInfo fcinfo, text *name);

/* deadlock.c */
extern char *zkl_deadlock_check(int slotno, uint32 generation, const char *name);
extern void zkl_list_waits_for(FunctionCallInfo fcinfo);

#endif							/* ZKLOCK_BACKEND_H */
