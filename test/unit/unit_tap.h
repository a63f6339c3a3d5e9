/*-------------------------------------------------------------------------
 *
 * unit_tap.h
 *		The TAP output that zklock's unit tests share: check() prints one
 *		numbered "ok" or "not ok" line, and tap_done() the plan and the
 *		exit status.  Each test program includes it once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_UNIT_TAP_H
#define ZKLOCK_UNIT_TAP_H

#include <stdio.h>

static int	tests = 0;
static int	failures = 0;

static void
check(int ok, const char *what)
{
	tests++;
	if (!ok)
		failures++;
	printf("%sok %d - %s\n", ok ? "" : "not ", tests, what);
}

/* Print the plan (after the tests, as TAP allows); the exit status. */
static int
tap_done(void)
{
	printf("1..%d\n", tests);
	if (failures)
		printf("# %d of %d tests failed\n", failures, tests);
	return failures ? 1 : 0;
}

#endif							/* ZKLOCK_UNIT_TAP_H */
