/*-------------------------------------------------------------------------
 *
 * write_batch_rule.h
 *		Which of the ZooKeeper writes ready in one pass of the worker travel
 *		together in one multi, and what a multi's answer means for each of
 *		them (write_batch_rule.c).  Pure: no PostgreSQL, no ZooKeeper
 *		calls, no shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WRITE_BATCH_RULE_H
#define ZKLOCK_WRITE_BATCH_RULE_H

#include <stdbool.h>
#include <stdint.h>

/* The most operations one multi carries (its lock operations). */
#define ZKL_WB_MAX_OPS		64

/*
 * Multis in flight at most before ready writes wait for an answer: one,
 * and one more for each ZKL_WB_PACE_US of ZooKeeper's shortest recent round
 * trip of a sync (its network distance, not a quorum write's), up to
 * ZKL_WB_MAX_IN_FLIGHT.
 */
#define ZKL_WB_PACE_US			500
#define ZKL_WB_MAX_IN_FLIGHT	8

/* The shortest round trip of the syncs, over ZKL_WB_RTT_WINDOW_US or more. */
#define ZKL_WB_RTT_WINDOW_US	5000000
typedef struct zkl_wb_rtt
{
	int64_t		bucket_start;	/* when the current bucket began (us) */
	int64_t		current;		/* its shortest round trip, 0: none yet */
	int64_t		previous;		/* the bucket before's, 0: none */
}			zkl_wb_rtt;

/*
 * The multis in flight on the ZooKeeper handle in use (handle: its number,
 * which grows each time a handle is closed).  An answer counts only for the
 * handle that sent its multi: closing a handle forgets what it had in
 * flight, so that an answer lost in the close can never hold later writes.
 */
typedef struct zkl_wb_flight
{
	uint32_t	handle;			/* the handle the count is of */
	int			count;			/* its multis sent and not answered */
} zkl_wb_flight;

typedef enum zkl_wb_kind
{
	ZKL_WB_CREATE,				/* a lock request's contender node */
	ZKL_WB_DELETE				/* a release's delete of its own node */
} zkl_wb_kind;

/* What one operation of an answered multi needs next. */
typedef enum zkl_wb_outcome
{
	ZKL_WB_DONE,				/* carried out: handled as its own answer, ZOK */
	ZKL_WB_UNKNOWN,				/* the connection went: carried out or not, as
								 * a lone request's lost answer */
	ZKL_WB_SESSION,				/* the session ended: every slot's business */
	ZKL_WB_ALONE				/* refused as a whole, nothing done: the
								 * operation goes again, alone */
} zkl_wb_outcome;

/* The scratch space zkl_wb_group needs for n operations, in bytes. */
#define ZKL_WB_GROUP_SCRATCH(n) \
	((size_t) (n) * (sizeof(void *) + 4 * sizeof(int)) + sizeof(int))

extern int	zkl_wb_group(const zkl_wb_kind *kinds, const char *const *dirs, int n,
						 int *group, void *scratch);
extern uint64_t zkl_wb_group_steps;
extern bool zkl_wb_must_list(int num_children);
extern bool zkl_wb_as_multi(zkl_wb_kind kind, int size, bool connected);
extern int	zkl_wb_in_flight_limit(int64_t round_trip_us);
extern bool zkl_wb_hold(int in_flight, int n, bool connected, int64_t round_trip_us);
extern void zkl_wb_rtt_note(zkl_wb_rtt * rtt, int64_t sample_us, int64_t now_us);
extern int64_t zkl_wb_rtt_shortest(const zkl_wb_rtt * rtt);
extern zkl_wb_outcome zkl_wb_outcome_of(int multi_rc);
extern void zkl_wb_flight_handle(zkl_wb_flight *flight, uint32_t handle);
extern void zkl_wb_flight_answered(zkl_wb_flight *flight, uint32_t handle);

/*
 * A lone delete waits for company at most this long, however far
 * ZooKeeper is and however slow its writes (zkl_wb_linger_bound).
 */
#define ZKL_WB_LINGER_MAX_US	1000

/* What decides whether a lone delete may wait for company (zkl_wb_linger_left). */
typedef struct zkl_wb_linger_case
{
	bool		lone_delete;	/* all that is ready: one delete */
	bool		connected;		/* the session is connected */
	bool		proof_fresh;	/* its proof holds until the wait is over */
	bool		shutting_down;	/* the worker is asked to stop */
	bool		release_now;	/* the backend asked for no wait: it releases
								 * all, exits, or waits for the answer; or the
								 * worker takes the hold away */
	bool		neighbour;		/* another request of this cluster is in the
								 * same lock directory (a waiter behind it) */
	bool		others;			/* a request that is no lock create leaves
								 * this worker in this pass */
	int64_t		waited_us;		/* since the delete became ready */
	int64_t		round_trip_us;	/* zkl_wb_rtt_shortest of the syncs */
	int64_t		write_round_trip_us;	/* zkl_wb_rtt_shortest of the multis */
}			zkl_wb_linger_case;

extern int64_t zkl_wb_linger_bound(int64_t round_trip_us, int64_t write_round_trip_us);
extern int64_t zkl_wb_linger_left(const zkl_wb_linger_case * c);

#endif							/* ZKLOCK_WRITE_BATCH_RULE_H */
