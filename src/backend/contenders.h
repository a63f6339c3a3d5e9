/*-------------------------------------------------------------------------
 *
 * contenders.h
 *		A lock's contenders as the worker read them (contenders.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_CONTENDERS_H
#define ZKLOCK_CONTENDERS_H

#include "fmgr.h"
#include "storage/dsm.h"

#include "rules/lock_rule.h"

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
								 * as waits_graph.c names backends; NULL for
								 * any other */
} zkl_contender;

extern dsm_segment *zkl_fetch_directory(const char *name, const char *dir);
extern zkl_contender *zkl_read_contenders(const char *name, const char *dir, bool leases,
										  bool describe, int *count);
extern zkl_contender *zkl_contenders_in(dsm_segment *seg, bool leases, bool describe,
										int *count);
extern const char *zkl_client_of(const zkl_contender *c, bool is_zklock);
extern void zkl_list_contenders(FunctionCallInfo fcinfo, text *name);
extern bool zkl_verify_token(text *name, int64 token);
extern int	zkl_revoke_holders(text *name);
extern void zkl_list_semaphore(FunctionCallInfo fcinfo, text *name);

#endif							/* ZKLOCK_CONTENDERS_H */
