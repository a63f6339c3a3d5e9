/*-------------------------------------------------------------------------
 *
 * inspect_reply.h
 *		The reply to a read of a lock directory (zk_lock_contenders and
 *		deadlock detection), which the worker (worker/inspect.c) writes
 *		into a dynamic shared memory segment of the backend that asked
 *		(backend/contenders.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_INSPECT_REPLY_H
#define ZKLOCK_INSPECT_REPLY_H

/*
 * A header, then for each child in listing order its czxid, name and (at
 * most ZKL_MAX_INSPECT_DATA bytes of) data.  A child that vanished while it
 * was read is left out; one whose data we may not read is there, marked,
 * with its stat and no data.
 */
#define ZKL_MAX_INSPECT_DATA	4096
typedef struct zkl_inspect_reply
{
	Size		capacity;		/* bytes after the header, set by the backend */
	Size		needed;			/* bytes the full reply takes */
	int			nchildren;		/* entries written (0 when it did not fit) */
	bool		have_stat;		/* the listing's stat below is known */
	int32		cversion;		/* the directory's cversion at the listing */
	int32		num_children;	/* and its number of children */
	uint64		watch_gen;		/* <root>/.waits: the worker's waits_watch_gen
								 * as the listing set its watch; 0: no watch */
} zkl_inspect_reply;

typedef struct zkl_inspect_entry
{
	int64		czxid;
	int64		owner;			/* ephemeralOwner: the session, 0 if
								 * persistent */
	int64		ctime;			/* creation, ms since 1970 */
	int32		name_len;		/* then name_len bytes of name */
	int32		data_len;		/* then data_len bytes of data */
	bool		unreadable;		/* we may not read its data (ZNOAUTH): no data */
	bool		downgrade_holds;	/* a peer's downgrade that a writer of
									 * this cluster waits for */
	bool		downgrade_waits;	/* that writer */
} zkl_inspect_entry;

#endif							/* ZKLOCK_INSPECT_REPLY_H */
