/*-------------------------------------------------------------------------
 *
 * pass_budget.h
 *		How much one pass of the worker's loop handles (pass_budget.c):
 *		the answers it takes and the slots it dispatches are each bounded,
 *		so that a pass facing a herd yields to the answers and the
 *		heartbeat of the next pass instead of holding the loop.  Plain C,
 *		no PostgreSQL, no ZooKeeper: test/unit proves it by counting.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_PASS_BUDGET_H
#define ZKLOCK_PASS_BUDGET_H

#include <stdbool.h>

/*
 * The answers one pass handles, and the slots it dispatches, at most (each
 * costs the worker a few requests sent or a decision: microseconds).
 */
#define ZKL_PASS_MAX_OPS	256

extern bool zkl_pass_may_handle(int handled);
extern int	zkl_pass_take(int waiting);

#endif							/* ZKLOCK_PASS_BUDGET_H */
