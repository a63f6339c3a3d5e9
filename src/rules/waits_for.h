/*-------------------------------------------------------------------------
 *
 * waits_for.h
 *		The waits-for graph of distributed deadlock detection, and the rule
 *		that picks a cycle's one victim, as pure functions (waits_for.c):
 *		plain C, no PostgreSQL, ZooKeeper or shared memory, proven by unit
 *		tests without a server (test/unit).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WAITS_FOR_H
#define ZKLOCK_WAITS_FOR_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A backend of any cluster: the ZooKeeper session of its cluster's worker
 * (the ephemeralOwner of its nodes) and its process id.  The session tells
 * clusters apart where the system identifier cannot (a standby has its
 * primary's).
 */
typedef struct zkl_backend_ref
{
	int64_t		session;
	int32_t		pid;
} zkl_backend_ref;

/*
 * The most edges one detection collects, and the longest cycle it looks
 * for: bounds on its ZooKeeper requests and on its work.
 */
#define ZKL_MAX_WAIT_EDGES 256
#define ZKL_MAX_CYCLE 16

/* What an edge's waiter waits on. */
typedef enum zkl_wait_kind
{
	ZKL_WAIT_ZKLOCK,			/* a zklock request, queued in ZooKeeper */
	ZKL_WAIT_HEAVYWEIGHT		/* a PostgreSQL lock of the detector's cluster */
} zkl_wait_kind;

/*
 * One edge: waiter waits for blocker.  A zklock wait carries the czxid of
 * the waiting request's node, which orders requests the same way in every
 * cluster; a heavyweight wait carries 0.  what is the caller's index of a
 * description of the wait (lock name, mode), for the error's detail.
 */
typedef struct zkl_wait_edge
{
	zkl_backend_ref waiter;
	zkl_backend_ref blocker;
	zkl_wait_kind kind;
	int64_t		czxid;
	int			what;
} zkl_wait_edge;

extern bool zkl_backend_equal(zkl_backend_ref a, zkl_backend_ref b);
extern bool zkl_wait_publisher(const char *name, int64_t owner, zkl_backend_ref *who);
extern bool zkl_wait_names_request(zkl_backend_ref publisher, const char *wait_node,
								   int64_t wait_czxid, const char *node, int64_t czxid,
								   int64_t owner);
extern int	zkl_deadlock_victim_cycle(const zkl_wait_edge *edges, int nedges,
									  zkl_backend_ref self, int64_t self_czxid,
									  int *cycle, int max_cycle);
extern int	zkl_deadlock_any_cycle(const zkl_wait_edge *edges, int nedges,
								   zkl_backend_ref self,
								   int *cycle, int max_cycle);

extern bool zkl_waits_recheck(const char *const *before, int nbefore,
							  const char *const *after, int nafter,
							  int32_t cversion0, int32_t count0, int32_t cversion, int32_t count,
							  const char *const *reach, int nreach, bool every_change);

/*
 * What a look between a wait's deadlock checks does (zkl_waits_look): check
 * again at once, read the published waits and judge by zkl_waits_recheck,
 * or nothing, since nothing was published or ended since it last read them.
 */
typedef enum zkl_waits_look_verdict
{
	ZKL_LOOK_CHECK,
	ZKL_LOOK_READ,
	ZKL_LOOK_QUIET
} zkl_waits_look_verdict;

extern zkl_waits_look_verdict zkl_waits_look(bool last_known, bool last_complete,
											 bool new_pg_wait, uint64_t quiet_gen,
											 uint64_t watch_gen);
extern bool zkl_waits_cache_usable(int32_t cversion0, int32_t count0,
								   int32_t cversion, int32_t count,
								   int fresh, int own_creates);
extern int	zkl_deadlock_standin_order(const zkl_wait_edge *edges, const int *cycle,
									   int ncycle, int *order);

#endif							/* ZKLOCK_WAITS_FOR_H */
