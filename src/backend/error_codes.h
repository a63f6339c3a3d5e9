/*-------------------------------------------------------------------------
 *
 * error_codes.h
 *		zklock's own SQLSTATE class "ZK", for failures that only ZooKeeper
 *		or a fencing token can cause.  Raised in the backends; the worker
 *		reports nothing to a client.  doc/failures.md and doc/fencing.md say
 *		when each is raised.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_ERROR_CODES_H
#define ZKLOCK_ERROR_CODES_H

/* ZooKeeper refused or failed a request. */
#define ERRCODE_ZKLOCK_ERROR			MAKE_SQLSTATE('Z','K','0','0','0')
/* No ZooKeeper session to ask: the worker is connecting or cut off. */
#define ERRCODE_ZKLOCK_UNAVAILABLE		MAKE_SQLSTATE('Z','K','0','0','1')
/* A lock was lost, or its hold cannot be proven at commit. */
#define ERRCODE_ZKLOCK_LOST				MAKE_SQLSTATE('Z','K','0','0','2')
/* A fencing token older than one already accepted for its resource. */
#define ERRCODE_ZKLOCK_STALE_TOKEN		MAKE_SQLSTATE('Z','K','0','0','3')
/* A token that would advance a fence and is no holder's of its lock. */
#define ERRCODE_ZKLOCK_UNPROVEN_TOKEN	MAKE_SQLSTATE('Z','K','0','0','4')

#endif							/* ZKLOCK_ERROR_CODES_H */
