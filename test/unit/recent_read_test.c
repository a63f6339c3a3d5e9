/*-------------------------------------------------------------------------
 *
 * recent_read_test.c
 *		Unit tests of recent_read.c: a reading no older than the bound is
 *		taken, one under way is waited for, an old or abandoned one is
 *		read again, a bound of 0 always reads afresh, a new directory takes
 *		a free entry or the least recently used one that nobody fills; and,
 *		over a simulated round of many checkers, that a directory is read
 *		about once per bound, not once per checker.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "rules/recent_read.h"
#include "unit_tap.h"

static zkl_recent_view
entry(bool same, bool has, int64_t read_at, int64_t filling, int64_t used)
{
	zkl_recent_view e;

	memset(&e, 0, sizeof(e));
	e.same_dir = same;
	e.has_reading = has;
	e.read_at = read_at;
	e.filling_since = filling;
	e.used_at = used;
	return e;
}

static void
test_same_directory(void)
{
	zkl_recent_view v[2];
	int			i;

	v[0] = entry(false, true, 1000, 0, 1000);
	v[1] = entry(true, true, 1000, 0, 1000);
	check(zkl_recent_choose(v, 2, 1100, 100, &i) == ZKL_RECENT_USE && i == 1,
		  "a reading exactly max_age old is taken");
	check(zkl_recent_choose(v, 2, 1101, 100, &i) == ZKL_RECENT_FILL && i == 1,
		  "an older one is read again, into its entry");
	check(zkl_recent_choose(v, 2, 1050, 0, &i) == ZKL_RECENT_FILL && i == -1,
		  "max_age 0: always read afresh, alone");
	check(zkl_recent_choose(v, 2, 900, 100, &i) == ZKL_RECENT_FILL && i == 1,
		  "a reading from the future (clock set back) is not taken");
	v[1] = entry(true, true, 1000, 1150, 1150);
	check(zkl_recent_choose(v, 2, 1200, 100, &i) == ZKL_RECENT_AWAIT && i == 1,
		  "an old reading with a new one under way: wait for it");
	check(zkl_recent_choose(v, 2, 1350, 100, &i) == ZKL_RECENT_AWAIT && i == 1,
		  "one under way for twice max_age is still waited for");
	check(zkl_recent_choose(v, 2, 1351, 100, &i) == ZKL_RECENT_FILL && i == 1,
		  "one under way for longer is abandoned: read it");
	v[1] = entry(true, false, 0, 1150, 1150);
	check(zkl_recent_choose(v, 2, 1160, 100, &i) == ZKL_RECENT_AWAIT && i == 1,
		  "the first reading under way: wait for it");
}

static void
test_new_directory(void)
{
	zkl_recent_view v[3];
	int			i;

	v[0] = entry(false, true, 1000, 0, 1000);
	v[1] = entry(false, false, 0, 0, 0);
	v[2] = entry(false, true, 500, 0, 500);
	check(zkl_recent_choose(v, 3, 1050, 100, &i) == ZKL_RECENT_FILL && i == 1,
		  "a new directory takes an unused entry");
	v[1] = entry(false, true, 900, 0, 900);
	check(zkl_recent_choose(v, 3, 1050, 100, &i) == ZKL_RECENT_FILL && i == 2,
		  "else the least recently used");
	v[2] = entry(false, true, 500, 1040, 1040);
	check(zkl_recent_choose(v, 3, 1050, 100, &i) == ZKL_RECENT_FILL && i == 1,
		  "but not one that a backend fills now");
	v[0] = entry(false, true, 1000, 1045, 1045);
	v[1] = entry(false, true, 900, 1030, 1030);
	check(zkl_recent_choose(v, 3, 1050, 100, &i) == ZKL_RECENT_FILL && i == -1,
		  "all being filled: read alone");
	v[1] = entry(false, true, 900, 800, 800);
	check(zkl_recent_choose(v, 3, 1050, 100, &i) == ZKL_RECENT_FILL && i == 1,
		  "an abandoned fill frees its entry");
}

/*
 * N checkers of one directory, each checking every period, their checks
 * spread or all at once; a reading takes `takes`.  Count the readings.
 */
static int
simulate(int n, int64_t period, int64_t takes, bool at_once, int rounds)
{
	zkl_recent_view v[1];
	int			reads = 0;
	int64_t		fill_done = -1;

	v[0] = entry(true, false, 0, 0, 0);
	for (int r = 0; r < rounds; r++)
		for (int c = 0; c < n; c++)
		{
			int64_t		now = r * period + (at_once ? 1 : c * period / n) + 1;
			int			i;
			zkl_recent_verdict verdict;

			/* A fill under way ends when its reading is done. */
			if (v[0].filling_since != 0 && now >= fill_done)
			{
				v[0].has_reading = true;
				v[0].read_at = v[0].filling_since;
				v[0].filling_since = 0;
			}
			verdict = zkl_recent_choose(v, 1, now, period / 2, &i);
			if (verdict == ZKL_RECENT_FILL)
			{
				reads++;
				v[0].filling_since = now;
				fill_done = now + takes;
			}
		}
	return reads;
}

int
main(void)
{
	int			spread;
	int			at_once;

	test_same_directory();
	test_new_directory();
	spread = simulate(100, 200000, 5000, false, 10);
	at_once = simulate(100, 200000, 5000, true, 10);
	check(spread <= 3 * 10, "100 checkers spread over the period: at most 3 readings a period");
	check(at_once <= 10, "100 checkers at once: one reading a period, the others wait for it");
	return tap_done();
}
