/*-------------------------------------------------------------------------
 *
 * pass_budget_test.c
 *		Unit tests of the bound on one pass of the worker's loop
 *		(rules/pass_budget.c), with the write batch's grouping
 *		(rules/write_batch_rule.c) that each pass runs on what it
 *		dispatched.  Work is counted, never timed.
 *
 * A herd of 2,000 creates of one lock is driven through a model of the
 * worker's loop: each pass handles answers, dispatches slots (each a create
 * and its listing), groups the pass's writes and then reaches its
 * heartbeat.  Between two heartbeats the loop may handle at most
 * HEARTBEAT_OPS operations: an operation is an answer handled (at worst a
 * decision on a listing of the whole herd) or a slot dispatched (a few
 * requests queued), tens of microseconds at most, so HEARTBEAT_OPS of them
 * stay well inside the shortest heartbeat interval (100 ms,
 * ZKL_MIN_HEARTBEAT_MS in worker.c).  A rule that takes the whole herd in
 * one pass fails, and so does a grouping that is quadratic in a pass's
 * writes.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>

#include "rules/pass_budget.h"
#include "rules/write_batch_rule.h"
#include "unit_tap.h"

#define HERD			2000
#define HEARTBEAT_OPS	1024

static zkl_wb_kind kinds[HERD];
static const char *dirs[HERD];
static int	group[HERD];
static void *scratch_words[ZKL_WB_GROUP_SCRATCH(HERD) / sizeof(void *) + 1];

/* floor(log2(n)) + 1, for the grouping's n log n bound. */
static uint64_t
log2_ceil(uint64_t n)
{
	uint64_t	l = 1;

	while (n > 1)
	{
		n >>= 1;
		l++;
	}
	return l;
}

static void
test_take(void)
{
	check(zkl_pass_take(0) == 0, "nothing waiting: nothing taken");
	check(zkl_pass_take(5) == 5, "a few waiting: all taken in one pass");
	check(zkl_pass_take(HERD) > 0, "a herd waiting: some taken (the loop progresses)");
	check(zkl_pass_take(HERD) <= HEARTBEAT_OPS / 2,
		  "a herd waiting: no more than half the operations a heartbeat interval allows");
	check(zkl_pass_take(1000000) == zkl_pass_take(HERD),
		  "the share does not grow with the herd");
	check(zkl_pass_may_handle(0), "a pass may handle a first answer");
	check(!zkl_pass_may_handle(HEARTBEAT_OPS / 2),
		  "a pass stops taking answers before half the operations a heartbeat interval allows");
}

/*
 * The model: `pending` slots wait for dispatch (each one create of the
 * herd's lock, plus its listing: two answers); answers wait to be
 * handled.  Every waiter but the first, once listed, sets a watch (one more
 * answer).  Answers of a pass's sends arrive for the next pass.
 */
static void
test_herd(void)
{
	int			pending = HERD;
	int			listings = 0;	/* listings' answers waiting */
	int			others = 0;		/* creates' and watches' answers waiting */
	int			listed = 0;
	int			passes = 0;
	int			worst_ops = 0;
	uint64_t	worst_steps = 0;
	uint64_t	worst_bound = 0;
	int			steps_over = 0;
	int			created = 0;
	uint64_t	total_ops = 0;

	for (int i = 0; i < HERD; i++)
		dirs[i] = "/zklock/job";
	while ((pending > 0 || listings > 0 || others > 0) && passes < 10 * HERD)
	{
		int			handled = 0;
		int			take;
		int			watches = 0;
		int			ops;

		passes++;
		/* The answers first; each waiter's listing sets its watches. */
		while ((listings > 0 || others > 0) && zkl_pass_may_handle(handled))
		{
			handled++;
			if (others > 0)
				others--;
			else
			{
				listings--;
				if (listed++ > 0)
					watches++;
			}
		}
		/* Then the slots with something to do. */
		take = zkl_pass_take(pending);
		pending -= take;
		for (int i = 0; i < take; i++)
			kinds[i] = ZKL_WB_CREATE;
		/* The pass's writes grouped, as zkl_batch_flush does. */
		if (take > 0)
		{
			uint64_t	bound = 4 * (uint64_t) take * log2_ceil((uint64_t) take);

			zkl_wb_group_steps = 0;
			(void) zkl_wb_group(kinds, dirs, take, group, scratch_words);
			if (zkl_wb_group_steps > bound)
				steps_over++;
			if (zkl_wb_group_steps > worst_steps)
			{
				worst_steps = zkl_wb_group_steps;
				worst_bound = bound;
			}
		}
		created += take;
		/* The heartbeat's turn: what the loop did since the last one. */
		ops = handled + take;
		if (ops > worst_ops)
			worst_ops = ops;
		total_ops += (uint64_t) ops;
		/* The pass's sends are answered for the next pass. */
		others += take + watches;
		listings += take;
	}
	check(created == HERD && pending == 0 && listings == 0 && others == 0,
		  "2,000 ready creates of one lock: every one dispatched and every answer handled");
	check(worst_ops <= HEARTBEAT_OPS,
		  "2,000 ready creates of one lock: at most HEARTBEAT_OPS operations between two heartbeats");
	check(steps_over == 0, "each pass's grouping within 4 n log2 n steps of its writes");
	check(total_ops <= 5 * (uint64_t) HERD,
		  "2,000 ready creates of one lock: the operations grow linearly with the herd");
	check(passes <= 2 + 5 * HERD / ZKL_PASS_MAX_OPS,
		  "2,000 ready creates of one lock: no pass idles while work is left");
	printf("# 2,000 ready creates of one lock: %d passes, at most %d operations and %llu grouping steps (bound %llu) between two heartbeats, %llu operations in all\n",
		   passes, worst_ops, (unsigned long long) worst_steps,
		   (unsigned long long) worst_bound, (unsigned long long) total_ops);
}

int
main(void)
{
	test_take();
	test_herd();
	return tap_done();
}
