/*-------------------------------------------------------------------------
 *
 * zk_events.h
 *		What ZooKeeper answers the worker, as events (zk_events.c): the
 *		callbacks libzookeeper runs inside its calls, the queue that brings
 *		their results to the worker's loop, and the session handle.
 *		The lowest layer of the worker: it calls nothing of the others.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_ZK_EVENTS_H
#define ZKLOCK_ZK_EVENTS_H

#include <zookeeper/zookeeper.h>

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
	ZKL_EV_PUBLISHED,			/* a backend's wait published
								 * (deadlock_check.c) */
	ZKL_EV_READER_DATA,			/* a read node behind a waiter, after a peer's
								 * write ahead of it went */
	ZKL_EV_BATCHED,				/* one operation's share of a multi's answer
								 * (write_batch.c) */
	ZKL_EV_LOG,					/* a line the library logged (in path) */
	ZKL_EV_DIR_ACL,				/* a lock directory's ACL, before the first
								 * create there (undeletable.c) */
	ZKL_EV_WAITS_WATCH			/* <root>/.waits changed, or the session did
								 * (a watch; inspect.c) */
} zkl_event_kind;

/* One entry of a directory's ACL (ZKL_EV_DIR_ACL), malloc'd. */
typedef struct zkl_event_acl
{
	int32		perms;
	char	   *scheme;
	char	   *id;
} zkl_event_acl;

/*
 * Filled with malloc inside a libzookeeper call, consumed by the loop.
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
	bool		dir_stat;		/* getChildren2, a multi's create: the
								 * directory's data version and length below */
	int32		dir_version;	/* ... its data's version */
	int32		dir_data_len;	/* ... and its data's length */
	bool		zklock_data;	/* READER_DATA, PRED_EXISTS: the data is
								 * zklock's */
	bool		revoke_message; /* OWN_EXISTS: the data asks us to give up */
	bool		multi_end;		/* ZKL_EV_BATCHED: the multi's last share */
	int64		multi_sent_at;	/* ... and when its multi left (zkl_now()) */
	uint32		multi_handle;	/* ... and the handle it left on */
	bool		dir_refused;	/* ZKL_EV_BATCHED: its create's directory
								 * refused the multi's setData (ZNOAUTH) */
	bool		dir_stale;		/* ... or its data's version was not the one
								 * known (ZBADVERSION) */
	char	   *data;			/* node data (getData), data_len bytes */
	int			data_len;
	int			nacl;			/* ZKL_EV_DIR_ACL: the directory's ACL */
	zkl_event_acl *acl;
} zkl_event;

extern void zkl_string_stat_done(int rc, const char *value, const struct Stat *stat, const void *data);
extern void zkl_strings_done(int rc, const struct String_vector *strings, const void *data);
extern void zkl_strings_stat_done(int rc, const struct String_vector *strings,
								  const struct Stat *stat, const void *data);
extern void zkl_stat_done(int rc, const struct Stat *stat, const void *data);
extern void zkl_void_done(int rc, const void *data);
extern void zkl_void_string_done(int rc, const char *value, const void *data);
extern void zkl_acl_done(int rc, struct ACL_vector *acl, struct Stat *stat, const void *data);
extern void zkl_data_done(int rc, const char *value, int value_len, const struct Stat *stat, const void *data);
extern void zkl_node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
extern void zkl_session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
extern void zkl_session_event_post(int state, uint32 handle);
extern void zkl_library_log(const char *message);
extern bool zkl_events_queued(void);
extern void zkl_events_closing_to_reattach(bool closing);
extern zkl_event *zkl_events_take(void);
extern void zkl_event_free(zkl_event *ev);
extern const void *zkl_request_ctx(zkl_event_kind kind, int slotno, uint32 opgen);

/* write_batch.c's multi completion posts its own events */
extern zkl_event *zkl_event_new(const void *data, int rc);
extern void zkl_event_post(zkl_event *ev);

/* The session's handle (worker.c opens and closes it). */
extern zhandle_t *zkl_zh;

#endif							/* ZKLOCK_ZK_EVENTS_H */
