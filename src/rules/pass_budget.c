/*-------------------------------------------------------------------------
 *
 * pass_budget.c
 *		The bound on the work of one pass of the worker's loop.  A pass
 *		takes ZooKeeper's answers, then the backends' requests, dispatches
 *		the slots with something to do, sends the pass's writes
 *		(write_batch.c) and then, only then, the heartbeat that proves the
 *		session to committing transactions.  Unbounded, a herd (2,000
 *		requests of one lock ready after a session expiry, a burst of tries
 *		on one job) would be handled in one pass: thousands of sends, then
 *		thousands of answers each deciding on a listing as long as the
 *		herd, while no heartbeat leaves and no proof is renewed.
 *
 * So a pass handles at most ZKL_PASS_MAX_OPS answers and dispatches at
 * most ZKL_PASS_MAX_OPS slots; what is left waits, in its order, for the
 * next pass, which starts at once (no sleep) after the heartbeat's turn.
 * Leaving an answer to the next pass is the same to the recipes as its
 * arriving later, which any answer may; a slot left pending is the same as
 * one whose request came after the pass.  Neither ever waits more than
 * the passes needed to reach it: the left work is handled first.
 *
 *-------------------------------------------------------------------------
 */
#include "rules/pass_budget.h"

/* Whether a pass that has handled this many answers may handle one more. */
bool
zkl_pass_may_handle(int handled)
{
	return handled < ZKL_PASS_MAX_OPS;
}

/* How many of the slots waiting for dispatch this pass dispatches. */
int
zkl_pass_take(int waiting)
{
	if (waiting <= 0)
		return 0;
	return waiting < ZKL_PASS_MAX_OPS ? waiting : ZKL_PASS_MAX_OPS;
}
