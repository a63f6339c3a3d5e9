/*-------------------------------------------------------------------------
 *
 * worker.h
 *		Internals of the worker process: its session and loop (worker.c),
 *		the request layer between libzookeeper's threads and the main
 *		thread (requests.c), and the lock recipe it runs for each slot
 *		(recipe.c, and semaphore.c for semaphores).  worker.c calls into
 *		the others, recipe.c and semaphore.c into each other and into
 *		requests.c; requests.c calls back nothing.  Only the worker
 *		includes this.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WORKER_H
#define ZKLOCK_WORKER_H

#include <zookeeper/zookeeper.h>

#include "zklock.h"

/* What a completion or watch reports; packed into the callback context. */
typedef enum zkl_event_kind
{
	ZKL_EV_SESSION = 0,			/* global watcher: session state change */
	ZKL_EV_IGNORE,				/* result nobody needs (parent creates) */
	ZKL_EV_CREATED,				/* our contender node */
	ZKL_EV_CHILDREN,			/* listing of the lock directory */
	ZKL_EV_RECOVER_CHILDREN,	/* listing to find a node after connection
								 * loss */
	ZKL_EV_RECOVER_STAT,		/* czxid of a node found that way */
	ZKL_EV_PRED_EXISTS,			/* watch set on the predecessor */
	ZKL_EV_PRED_STAT,			/* ... with exists: one we may not read */
	ZKL_EV_PRED_WATCH,			/* the predecessor changed or vanished */
	ZKL_EV_DELETED,				/* our node is gone */
	ZKL_EV_OWN_EXISTS,			/* watch set on our own node (a completion) */
	ZKL_EV_OWN_WATCH,			/* our node changed or vanished (a watch) */
	ZKL_EV_HEARTBEAT,			/* proof that the session is alive */
	ZKL_EV_INSPECT_CHILDREN,	/* zk_lock_contenders: the directory */
	ZKL_EV_INSPECT_DATA,		/* ... and each child's data, in order */
	ZKL_EV_INSPECT_STAT,		/* ... or the stat of a child we may not read */
	ZKL_EV_REVOKE_SET,			/* zk_lock_revoke: the holder's node written */
	ZKL_EV_LEASE_CREATED,		/* a semaphore's lease (semaphore.c) */
	ZKL_EV_LEASES,				/* listing of a semaphore's leases/ */
	ZKL_EV_LEASES_WATCH,		/* leases/ changed */
	ZKL_EV_LEASE_STAT,			/* czxid of our lease */
	ZKL_EV_UNLOCKED,			/* the semaphore's mutex given up */
	ZKL_EV_PUBLISHED,			/* a backend's wait published (deadlock.c) */
	ZKL_EV_READER_DATA,			/* a read node behind a waiter, after a peer's
								 * write ahead of it went */
	ZKL_EV_BATCHED,				/* issue 32: one operation's share of a
								 * multi's answer (write_batch.c) */
	ZKL_EV_LOG					/* a line the library logged (in path) */
} zkl_event_kind;

/*
 * Filled with malloc on a libzookeeper thread, consumed on the main thread.
 * Nothing of PostgreSQL is touched until then.
 */
typedef struct zkl_event
{
	struct zkl_event *next;
	zkl_event_kind kind;
	int			slotno;
	uint32		opgen;
	int			rc;
	int			type;			/* watch events */
	int			state;			/* session events */
	int64		czxid;
	int64		owner;			/* getData: the node's ephemeralOwner */
	int64		ctime;			/* getData: when the node was created (ms) */
	char	   *path;
	int			nchildren;
	char	  **children;
	int32		cversion;		/* getChildren2: the directory's cversion */
	int32		num_children;	/* getChildren2: and its numChildren */
	int64		pzxid;			/* getChildren2: and its pzxid */
	bool		zklock_data;	/* READER_DATA, PRED_EXISTS: the data is
								 * zklock's */
	bool		revoke_message; /* OWN_EXISTS: the data asks us to give up */
	char	   *data;			/* node data (getData), data_len bytes */
	int			data_len;
} zkl_event;

/* Where the worker is with one slot; private to the worker. */
typedef enum zkl_phase
{
	ZKL_PH_IDLE = 0,			/* nothing in flight */
	ZKL_PH_CREATING,			/* create + listing sent */
	ZKL_PH_RECOVERING,			/* create outcome unknown; searching by uuid */
	ZKL_PH_LISTING,				/* node known, listing sent */
	ZKL_PH_WATCHING,			/* waiting for the predecessor to go */
	ZKL_PH_HELD,
	ZKL_PH_INSPECTING,			/* not a lock (zkl_slot_op): requests in
								 * flight */
	ZKL_PH_DELETING,
	ZKL_PH_LEASING,				/* semaphore: a lease request in flight */
	ZKL_PH_LEASE_WAITING,		/* semaphore: leases/ full and watched */
	ZKL_PH_UNLOCKING,			/* semaphore: its mutex being given up */
	ZKL_PH_PUBLISHED			/* a backend's wait node exists */
} zkl_phase;

typedef struct zkl_work
{
	uint32		opgen;			/* bumped when the slot's work restarts */
	zkl_phase	phase;
	bool		retry;			/* last request hit a connection loss */
	bool		pending;		/* in the worker's to-do list */
	bool		pred_was_last;	/* the predecessor was the only node we wait
								 * for */
	bool		numbers_repeat; /* the last decision saw equal numbers, or
								 * ours at the counter's top */
	bool		equal_logged;	/* the equal numbers were logged */
	bool		revoke_seen;	/* our waiting node carries the revocation
								 * message: acted on at the grant */
	bool		waited;			/* watched a predecessor since the create */
	bool		handoff;		/* the predecessor went; not yet granted */
	uint32		own_watch_gen;	/* opgen for which our node's watch is set */
	int			parent_attempts;
	bool		lease_unsure;	/* semaphore: our lease may exist unseen */
	bool		lease_watched;	/* semaphore: the last listing set a watch */
	int64		lease_czxid;	/* semaphore: our lease's, 0 if unknown */
	int64		granted_mono;	/* the grant, on zkl_now()'s clock (clock.h):
								 * what zklock.max_hold_time counts from */
	int			fail_rc;		/* failure to report once our node is deleted */
	char		pred[ZKL_MAX_NODE_LEN];
	int64		pred_owner;		/* the predecessor's session, once watched, if
								 * it is a peer's node */
	/* A peer's write ahead of us went: did it leave a read behind us? */
	int64		downgrade_owner;	/* that write's session, 0 if none */
	int64		downgrade_pzxid;	/* the first listing after it: pzxid */
	bool		downgrade_read; /* the read nodes behind us were read */
	int			nlisting;		/* that listing, while they are read */
	char	  **listing;
	int			ncandidates;	/* of it, the read nodes behind us */
	int			next_candidate;
	char	  **candidates;
	int			nheld_behind;	/* of them, the downgrades: they hold */
	char	  **held_behind;
	char		mapped_node[ZKL_MAX_NODE_LEN];	/* our node in recipe.c's map */
	struct zkl_inspection *inspection;	/* ZKL_PH_INSPECTING only */
} zkl_work;

/* requests.c: libzookeeper's callbacks and the queue to the main thread */
extern void zkl_string_stat_done(int rc, const char *value, const struct Stat *stat, const void *data);
extern void zkl_strings_done(int rc, const struct String_vector *strings, const void *data);
extern void zkl_strings_stat_done(int rc, const struct String_vector *strings,
								  const struct Stat *stat, const void *data);
extern void zkl_stat_done(int rc, const struct Stat *stat, const void *data);
extern void zkl_void_done(int rc, const void *data);
extern void zkl_void_string_done(int rc, const char *value, const void *data);
extern void zkl_data_done(int rc, const char *value, int value_len, const struct Stat *stat, const void *data);
extern void zkl_node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
extern void zkl_session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
extern void zkl_library_log(const char *message);
extern int	zkl_events_init(void);
extern zkl_event *zkl_events_take(void);
extern void zkl_event_free(zkl_event *ev);
extern const void *zkl_request_ctx(zkl_event_kind kind, int slotno, uint32 opgen);

/* issue 32: write_batch.c's multi completion posts its own events */
extern zkl_event *zkl_event_new(const void *data, int rc);
extern void zkl_event_post(zkl_event *ev);

/* worker.c: the session */
extern zhandle_t *zkl_zh;

/* recipe.c: steps that semaphore.c shares */
extern const void *zkl_ctx(zkl_event_kind kind, int slotno);
extern void zkl_check_sent(int slotno, int rc);
extern void zkl_send_sync(int slotno, const char *path);
extern struct ACL_vector *zkl_acl(void);
extern void zkl_send_delete(int slotno, zkl_slot *slot);
extern void zkl_request_failed(int slotno, int rc);
extern void zkl_remember_node(int slotno, const char *node);
extern void zkl_grant(int slotno, zkl_slot *slot);
extern void zkl_watch_own_node(int slotno, zkl_slot *slot);
extern void zkl_give_up_busy(int slotno, zkl_slot *slot);
extern void zkl_set_behind(zkl_slot *slot);

/* recipe.c: issue 32, what write_batch.c sends through recipe.c's path */
extern void zkl_send_contender(int slotno, zkl_slot *slot);
extern void zkl_send_create_listing(int slotno);

/* semaphore.c: the semaphore recipe */
extern char *zkl_lease_path(const zkl_slot *slot);
extern void zkl_sem_mutex_held(int slotno, zkl_slot *slot, bool wanted);
extern void zkl_sem_redo(int slotno, zkl_slot *slot);
extern void zkl_on_lease_created(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);
extern void zkl_on_leases(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);
extern void zkl_on_lease_stat(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);
extern void zkl_on_leases_watch(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);
extern void zkl_on_unlocked(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);

/* recipe.c: each slot's work */
extern zkl_work *zkl_works;
extern void zkl_recipe_init(void);
extern void zkl_mark_pending(int slotno);
extern bool zkl_work_pending(void);
extern void zkl_run_pending(void);
extern void zkl_dispatch(int slotno, bool connected);
extern void zkl_handle_event(zkl_event *ev);
extern void zkl_session_lost(void);
extern void zkl_adopt_slots(void);
extern void zkl_reap_dead_backends(void);
extern void zkl_check_holds(void);

#endif							/* ZKLOCK_WORKER_H */
