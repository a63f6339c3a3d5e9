/*-------------------------------------------------------------------------
 *
 * lock_rule.h
 *		The rule of who holds a lock, as one pure function (lock_rule.c):
 *		plain C, no PostgreSQL, ZooKeeper or shared memory, so that it is
 *		proven by unit tests without a server (test/unit).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_LOCK_RULE_H
#define ZKLOCK_LOCK_RULE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The node layouts zklock knows, one entry of zkl_node_layouts each: the
 * marker after which a contender's (or a lease's) name carries ZooKeeper's
 * sequence number.  zklock creates the first three (a request's kind, in
 * Curator's protected form "_c_<uuid>-<marker><seq>", the mutex's marker
 * without its leading dash) and the lease; it reads all of them.  Every
 * reader and writer of a node name goes through this table: no marker is
 * spelled anywhere else.
 */
typedef enum zkl_node_kind
{
	ZKL_NODE_MUTEX = 0,			/* exclusive, Curator InterProcessMutex layout */
	ZKL_NODE_WRITE,				/* exclusive, Curator read-write lock's writer */
	ZKL_NODE_READ,				/* shared, Curator read-write lock's reader */
	ZKL_NODE_KAZOO_LOCK,		/* kazoo Lock and WriteLock (read only) */
	ZKL_NODE_KAZOO_READ,		/* kazoo ReadLock (read only) */
	ZKL_NODE_LEASE,				/* a semaphore's lease, Curator's layout */
	ZKL_NODE_LAYOUTS
} zkl_node_kind;

typedef struct zkl_node_layout
{
	const char *marker;			/* the sequence number follows it */
	bool		shared;			/* a reader's node */
	bool		lease;			/* a lease in a semaphore's leases/, not a
								 * contender of a lock directory */
	const char *client;			/* whose layout, as zk_lock_contenders says */
} zkl_node_layout;

extern const zkl_node_layout zkl_node_layouts[ZKL_NODE_LAYOUTS];

/* Curator's protected-mode names start so, then "<uuid>-". */
#define ZKL_PROTECTED_PREFIX	"_c_"

/* The data Curator's Revoker writes on a holder's node to ask for it. */
#define ZKL_REVOKE_MESSAGE		"__REVOKE__"

/* The sequence number from which zkl_counter_near_top warns: 2^30. */
#define ZKL_COUNTER_WARN	1073741824

/* What one child of a lock directory is, read from its name. */
typedef struct zkl_contender_name
{
	int32_t		seq;			/* ZooKeeper's sequence number (may be
								 * negative) */
	bool		shared;			/* a reader; else exclusive */
} zkl_contender_name;

/* What a request is to do, given the directory. */
typedef enum zkl_verdict
{
	ZKL_VERDICT_HELD,			/* nothing it waits for is ahead of it */
	ZKL_VERDICT_WAIT,			/* watch the node at watch */
	ZKL_VERDICT_DEADLOCK,		/* ahead is a writer that waits for our own
								 * read */
	ZKL_VERDICT_ABSENT			/* our node is not in the listing (deleted) */
} zkl_verdict;

typedef struct zkl_decision
{
	zkl_verdict verdict;
	int			watch;			/* WAIT, DEADLOCK: index of the nearest node
								 * ahead */
	int			blockers;		/* how many nodes ahead it waits for */
	bool		equal;			/* another contender has our sequence number:
								 * an anomaly, counted among the blockers */
	bool		at_top;			/* our number is the counter's top or past it,
								 * where numbers repeat */
} zkl_decision;

extern bool zkl_contender_parse(const char *child, zkl_contender_name *out);
extern bool zkl_layouts_mixed(const char *const *children, int nchildren, const char *own);
extern bool zkl_lease_parse(const char *child, zkl_contender_name *out);
extern int	zkl_seq_compare(int32_t a, int32_t b);
extern void zkl_holders(const zkl_contender_name *queue, const char *const *owners,
						const int64_t *sessions, int n,
						bool *held, bool *equal, const char *const **scratch);
extern bool zkl_holds_after_predecessor(bool predecessor_was_only_blocker,
										bool predecessor_was_exclusive_grant,
										bool numbers_repeat);

/* What decides a handoff at release, inside this cluster (zkl_hands_over_at_release). */
typedef struct zkl_local_handoff_case
{
	bool		released_by_backend;	/* the holder's backend gave it up
										 * (not taken away, failed, or a try) */
	bool		exclusive_grant;	/* the released slot was an exclusive
									 * grant (no read lock of its backend
									 * beside it) */
	bool		delete_sure;	/* its delete cannot be refused */
	bool		semaphore;		/* either slot is a semaphore's mutex */
	bool		connected;		/* the session is connected */
	bool		proof_fresh;	/* and its proof holds now */
	bool		events_current; /* ZooKeeper answered a request that left
								 * within ZKL_HANDOFF_HEARD_US */
	bool		waiter_watches_it;	/* the waiter watches the released node */
	bool		downgrade_possible; /* a downgrade may hide a read lock behind
									 * it */
	bool		predecessor_was_only_blocker;	/* the waiter's pred_was_last */
	bool		numbers_repeat; /* the waiter's decision saw equal numbers */
} zkl_local_handoff_case;

extern bool zkl_hands_over_at_release(const zkl_local_handoff_case *c);

/*
 * A handoff at release needs an answer to a request that left at most this
 * long ago (zkl_hands_over_at_release).
 */
#define ZKL_HANDOFF_HEARD_US	10000

extern int64_t zkl_next_sequence(int32_t cversion, int32_t num_children);
extern bool zkl_counter_near_top(int64_t next_sequence);
extern zkl_decision zkl_decide(const char *const *children, int nchildren,
							   const char *own, const char *const *ours, int nours);
extern zkl_decision zkl_decide_with(const char *const *children, int nchildren,
									const char *own, const char *const *ours, int nours,
									const char *const *held_behind, int nheld_behind);
extern const char *zkl_node_client(const char *node);
extern bool zkl_may_downgrade(const char *node);
extern bool zkl_is_curator_rw(const char *node);
extern bool zkl_downgrade_candidate(const char *child, const char *own);
extern bool zkl_is_downgrade(int64_t reader_owner, int64_t reader_czxid, bool reader_is_zklock,
							 int64_t writer_owner, int64_t listing_pzxid);
extern int	zkl_blockers(const char *const *children, int nchildren,
						 const char *own, const char *const *ours, int nours,
						 int *blockers, int max_blockers);

#endif							/* ZKLOCK_LOCK_RULE_H */
