/*-------------------------------------------------------------------------
 *
 * shmem.h
 *		The shared-memory protocol between the backends and the worker
 *		(shmem.c): the request slots they exchange, the request queue, the
 *		session's state and the counters, and which lock protects which
 *		field.  Read and written by every zklock process.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SHMEM_H
#define ZKLOCK_SHMEM_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"

#include "names/name_limits.h"
#include "rules/lock_rule.h"
#include "rules/session_record.h"
#include "settings.h"

/* The JSON description of the holder that a slot carries to its node. */
#define ZKL_MAX_DATA_LEN	768

/* Why the worker took a held lock away from its backend. */
typedef enum zkl_take_reason
{
	ZKL_TAKE_NONE = 0,
	ZKL_TAKE_REVOKED,			/* revoked, and zklock.on_revoke is cancel */
	ZKL_TAKE_HOLD_LIMIT			/* held longer than zklock.max_hold_time */
} zkl_take_reason;

/* What a slot asks of the worker besides a lock. */
typedef enum zkl_slot_op
{
	ZKL_OP_LOCK = 0,			/* contend for the lock (or a semaphore) */
	ZKL_OP_INSPECT,				/* zk_lock_contenders: read the directory */
	ZKL_OP_REVOKE,				/* zk_lock_revoke: ask the holder at target */
	ZKL_OP_PUBLISH				/* publish a lasting wait (deadlock_check.c):
								 * the node stays until the slot is given up */
} zkl_slot_op;

/*
 * zklock's own outcomes in a slot's zk_rc, beside ZooKeeper's error codes
 * (ZOK and its negative ZOO_ERRORS, down to ZTHROTTLEDOP, -127, in
 * zookeeper.h): counted down from a base far below every code the library
 * has, so that one int tells both kinds apart and a new ZooKeeper code
 * cannot take one of zklock's.
 */
#define ZKL_RC_OWN_BASE		(-1000)
/* A request refused because it would wait on itself. */
#define ZKL_RC_DEADLOCK		(ZKL_RC_OWN_BASE)
/* zkl_ask_worker's answer when a deadlock check found no reserve slot. */
#define ZKL_RC_NO_SLOT		(ZKL_RC_OWN_BASE - 1)
/* A request in a lock directory that refused zklock's delete. */
#define ZKL_RC_DELETE_REFUSED	(ZKL_RC_OWN_BASE - 2)

/*
 * The server a session is connected to, as zoo_get_current_server writes
 * it: a numeric address and the port, at most INET6_ADDRSTRLEN (46) and
 * six bytes; the room to spare keeps a longer form whole too.
 */
#define ZKL_SERVER_LEN		128

/*
 * The credentials given to the session (worker/session_auth.c): each
 * zklock.auth value, NUL-terminated, and an empty string after the last.
 */
#define ZKL_SESSION_AUTHS_LEN	1024

/* What the worker has established for a slot. */
typedef enum zkl_slot_state
{
	ZKL_SLOT_FREE = 0,
	ZKL_SLOT_WAITING,			/* posted or queued in ZooKeeper, not granted */
	ZKL_SLOT_HELD,				/* our node is the lowest contender */
	ZKL_SLOT_RELEASING,			/* the backend gave it up; node being deleted */
	ZKL_SLOT_LOST,				/* was held; the node vanished */
	ZKL_SLOT_BUSY,				/* a try found another holder; node being
								 * deleted */
	ZKL_SLOT_FAILED				/* ZooKeeper refused the request; see zk_rc */
} zkl_slot_state;

typedef enum zkl_session_state
{
	ZKL_SESSION_STARTING = 0,	/* worker not yet connected */
	ZKL_SESSION_CONNECTED,
	ZKL_SESSION_SUSPENDED,		/* disconnected; the session may be alive */
	ZKL_SESSION_EXPIRED			/* the session is gone; a new one is coming */
} zkl_session_state;

/*
 * Shared state and what protects it.
 *
 * zkl_shared->lock (one LWLock, "zklock") protects every field of the shared
 * state and of the slots, with these rules:
 *
 * - Request fields of a slot (name, dir, uuid, data, target, kind,
 *   try_only, inspect, op, permits, max_hold_ms, on_revoke, reply_handle,
 *   sibling_slotno, sibling_generation, pid, procno, dbid, userid,
 *   encoding, requested_at) are written by the owning backend
 *   only while it claims the slot, under the lock held exclusively, and do
 *   not change until the slot is free again.  Anyone reads them under the
 *   lock; the worker also reads them without it for a slot it has taken off
 *   the queue or adopted from its predecessor (taking it, under the lock,
 *   orders it after the writes).
 * - Outcome fields (node, lease, token, granted_at, granted_session, zk_rc,
 *   behind, revoke_requested, take_reason, delete_unsure, stranded) are
 *   written by
 *   the worker, under the lock held exclusively (the backend that claims a
 *   slot resets them while claiming).  The worker reads its own writes
 *   without the lock; everyone else reads them under the lock.
 * - state, generation, wanted, queued, commit_waiting, committing,
 *   take_deferred, fence_row,
 *   session_count and xact_count are read under the lock and written under
 *   it exclusively, by the owning backend or the worker.
 * - The session fields (session_state to proof_sent) are written by the
 *   worker under the lock held exclusively; others read them under it, the
 *   worker also without it.  heartbeat_requested is read and written under
 *   the lock exclusively.
 * - The lists of free and used slots (free_head, reserve_head, used_head,
 *   nused, nreserve_used, each slot's next and prev) and the request queue
 *   change under the lock held exclusively.  nslots, nlock_slots and
 *   nbackends are set at startup.  Claiming, freeing, counting and waking
 *   cost O(1): nothing on a lock's path scans the slot array.
 * - The counts that the limits of slot_quota.c read change under the lock
 *   held exclusively, in the same critical section as the slot lists
 *   (zkl_slot_take, zkl_slot_clear), so no two claims can both pass a
 *   limit that has room for one: the shared hash zkl_role_counts (lock
 *   slots per role, of every state until free; a slot's quota_role, set
 *   while it is taken, says which entry it counts in) and backends[] (reserve
 *   slots per backend, by procno, for the pid that took them).  Anyone reads
 *   them under the lock.
 * - worker_procno and worker_pid are written by the worker under the lock;
 *   zkl_wake_worker reads worker_procno without it (one aligned int: a stale
 *   value costs one spurious wakeup of another process, never a miss, since
 *   a starting worker looks at the queue before it sleeps).
 * - waits_watch_gen is written by the worker under the lock held
 *   exclusively; others read it under the lock, the worker also without it.
 * - The counters are atomics, read and added to without the lock.
 * - contact_cv is a condition variable: the worker broadcasts it when
 *   last_contact moves, the session state changes or a lock is lost, and a
 *   committing backend that needs fresh proof sleeps on it.
 */

/* One lock request or hold of one backend. */
typedef struct zkl_slot
{
	zkl_slot_state state;
	uint32		generation;		/* bumped on reuse, so stale handles miss */
	bool		wanted;			/* false once the backend releases or cancels */
	bool		queued;			/* index is in the worker's request queue */
	bool		try_only;		/* give up instead of queueing */
	bool		commit_waiting; /* owner waits in its pre-commit check */
	bool		committing;		/* owner's transaction passed its pre-commit
								 * check and has not ended: the worker takes
								 * nothing away from it until it ends */
	bool		take_deferred;	/* a take-away waited for such a commit */
	bool		fence_row;		/* owner's open transaction locked a fence row
								 * with this hold's token (fence.c) */
	zkl_node_kind kind;			/* MUTEX, WRITE or READ (lock_rule.h) */
	int			sibling_slotno; /* the owner's hold of the other mode, or -1 */
	uint32		sibling_generation;
	bool		inspect;		/* not a lock request: op says what it is */
	zkl_slot_op op;
	int32		permits;		/* a semaphore's permits; 0 for a lock */
	int32		max_hold_ms;	/* zklock.max_hold_time of the request; 0:
								 * none */
	zkl_on_revoke on_revoke;	/* zklock.on_revoke of the request */
	bool		revoke_requested;	/* a holder's node was asked to give up */
	Oid			quota_role;		/* a lock slot counted against this role
								 * (zkl_role_counts); InvalidOid: none */
	zkl_take_reason take_reason;	/* the worker is taking the hold away */
	uint32		reply_handle;	/* dsm_handle the worker writes the reply to */
	int			next;			/* next free slot, or next used slot */
	int			prev;			/* previous used slot */
	int			pid;
	int			procno;
	Oid			dbid;
	Oid			userid;
	int			encoding;		/* of the database that asked; names are its
								 * bytes */
	int32		session_count;	/* reentrant holds, by scope, for zk_locks */
	int32		xact_count;
	int			zk_rc;			/* ZooKeeper error of a FAILED request */
	bool		behind;			/* another holder was found ahead: it waits */
	bool		delete_unsure;	/* made in a directory whose ACL may refuse
								 * its delete (undeletable.c): the release
								 * waits for the delete's answer */
	bool		release_now;	/* its release may not wait for company in a
								 * multi (write_batch.c): zk_lock_release_all
								 * or the backend's exit gave it up */
	bool		stranded;		/* given up, its node's delete refused: the
								 * node stays (zk_locks: "stranded") */
	int64		token;			/* czxid of our node */
	TimestampTz requested_at;
	TimestampTz granted_at;
	int64		granted_session;	/* the session whose node holds: the hold
									 * lives and dies with it */
	char		uuid[ZKL_UUID_LEN + 1];
	char		name[ZKL_MAX_NAME_LEN + 1];
	char		dir[ZKL_MAX_DIR_LEN];	/* lock directory, absolute */
	char		node[ZKL_MAX_NODE_LEN]; /* our child, once created: only ever
										 * a node this slot creates, so the
										 * only one it may delete */
	char		lease[ZKL_MAX_NODE_LEN];	/* a semaphore's lease in leases/,
											 * before the grant */
	char		target[ZKL_MAX_NODE_LEN];	/* ZKL_OP_REVOKE: the holder's
											 * node in dir, another's: never
											 * ours to delete */
	char		data[ZKL_MAX_DATA_LEN];
} zkl_slot;

/* Counters of zk_status(). */
typedef struct zkl_counters
{
	pg_atomic_uint64 acquired;
	pg_atomic_uint64 released;
	pg_atomic_uint64 timeouts;
	pg_atomic_uint64 cancels;
	pg_atomic_uint64 lost;
	pg_atomic_uint64 requests;	/* ZooKeeper requests sent */
	pg_atomic_uint64 watch_events;	/* predecessor watches that fired */
	pg_atomic_uint64 release_requests;	/* of requests: deletes of our nodes */
	pg_atomic_uint64 handoffs;	/* grants to a request that had to wait */
	pg_atomic_uint64 handoff_requests;	/* requests between a predecessor's
										 * deletion and the grant */
	pg_atomic_uint64 deadlock_checks;	/* deadlock detections run by this
										 * cluster's backends */
	pg_atomic_uint64 deadlocks_found;	/* of them: cycles in which our
										 * backend was the victim */
	pg_atomic_uint64 near_top_listings; /* listings of a directory whose child
										 * counter passed 2^30 */
	pg_atomic_uint64 early_losses;	/* holds given up by the worker before
									 * ZooKeeper could expire the session */
	pg_atomic_uint64 session_expiries;	/* ZooKeeper sessions found expired */
	pg_atomic_uint64 commits_refused;	/* commits and prepares refused for a
										 * loss or for want of proof */
} zkl_counters;

#define zkl_count(field)	pg_atomic_fetch_add_u64(&zkl_shared->counters.field, 1)

/*
 * A recent reading of a directory that deadlock checks share
 * (backend/recent_read.c): a pinned segment holding the worker's reply.
 */
#define ZKL_RECENT_READS	16
typedef struct zkl_recent_entry
{
	char		dir[ZKL_MAX_DIR_LEN];	/* "": unused */
	uint32		handle;			/* dsm_handle of the reading; 0: none */
	int64		read_at;		/* when it began, on zkl_now()'s clock */
	int64		filling_since;	/* a backend reads it anew; 0: none */
	int			filler_pid;
	int64		used_at;
} zkl_recent_entry;

typedef struct zkl_shared_state
{
	LWLock	   *lock;
	int			worker_procno;	/* -1 while no worker runs */
	int			worker_pid;
	zkl_session_state session_state;
	int64		session_id;
	char		session_passwd[ZKL_SESSION_PASSWD_LEN];
	int64		auths_session;	/* the session auths were given to; 0: a new
								 * one, not yet connected */
	char		auths[ZKL_SESSION_AUTHS_LEN];	/* worker only */
	bool		auth_refused;	/* the worker starts no session: zklock.auth
								 * is not valid (the worker writes it, under
								 * the lock) */
	int			negotiated_timeout; /* ms */
	char		server[ZKL_SERVER_LEN];
	TimestampTz connected_since;
	TimestampTz disconnected_since;
	TimestampTz last_contact;	/* a heartbeat sent then was answered */
	int64		proof_sent;		/* the same, on zkl_now()'s clock (clock.h);
								 * 0: no proof in this session */
	bool		heartbeat_requested;	/* a commit wants fresh proof */
	ConditionVariable contact_cv;
	zkl_counters counters;
	int			nslots;			/* lock slots, then reserve slots */
	int			nlock_slots;	/* zklock.max_locks: for requests and holds */
	int			nused;			/* slots not free, of both kinds */
	int			nreserve_used;	/* of them, reserve slots */
	int			free_head;		/* free lock slots, linked by next; -1: none */
	int			reserve_head;	/* free reserve slots (deadlock detection's
								 * publications and reads), likewise */
	int			used_head;		/* used slots, linked by next and prev */
	int			queue_head;		/* ring of slot indexes for the worker */
	int			queue_len;
	int		   *queue;			/* nslots entries, after the slots */
	int			nbackends;		/* entries of backends: MaxBackends */
	struct zkl_backend_use *backends;	/* after the queue */
	zkl_recent_entry recent[ZKL_RECENT_READS];
	ConditionVariable recent_cv;	/* a shared reading is done or given up */
	uint64		waits_watch_gen;	/* events of the worker's watch on
									 * <root>/.waits, and of whatever may have
									 * lost it (worker/inspect.c); from 1 */
	zkl_slot	slots[FLEXIBLE_ARRAY_MEMBER];
} zkl_shared_state;

/* Reserve slots one backend uses (slot_quota.c), for the pid that took them. */
typedef struct zkl_backend_use
{
	int			pid;
	int			reserve_used;
} zkl_backend_use;

/* shmem.c */
extern zkl_shared_state *zkl_shared;
extern Size zkl_shmem_size(void);
extern void zkl_shmem_startup(void);
extern void zkl_require_shmem(void);
extern void zkl_queue_push(int slotno);
extern void zkl_waits_watch_moved(void);
extern int	zkl_reserve_slots(void);
extern int	zkl_slot_take(bool reserve, Oid role, bool role_exempt, int role_cap,
						  int *verdict, int *used);
extern void zkl_slot_clear(zkl_slot *slot);
extern void zkl_wake_worker(void);
extern void zkl_wake_procno(int procno);
extern void zkl_wake_backend(zkl_slot *slot);

#endif							/* ZKLOCK_SHMEM_H */
