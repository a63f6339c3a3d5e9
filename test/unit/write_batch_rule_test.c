/*-------------------------------------------------------------------------
 *
 * write_batch_rule_test.c
 *		Unit tests of write_batch_rule.c: which ready writes travel in one
 *		multi (never two creates of one lock directory, whose nodes would
 *		share a czxid and so a fencing token; no write before a delete
 *		ready before it; no multi past its size), and what a
 *		multi's answer means for each operation.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "rules/write_batch_rule.h"
#include "unit_tap.h"

#define C ZKL_WB_CREATE
#define D ZKL_WB_DELETE

/* Room for zkl_wb_group's work on up to 2000 operations. */
static void *scratch;

/*
 * The grouping as first written (each operation tries every group from its
 * floor, each rescanning the earlier operations: cubic), kept as the
 * reference the fast one must match.
 */
static int
reference_group(const zkl_wb_kind *kinds, const char *const *dirs, int n, int *group)
{
	int			ngroups = 0;

	for (int i = 0; i < n; i++)
	{
		int			g = 0;

		for (int j = 0; j < i; j++)
			if (kinds[j] == D && group[j] > g)
				g = group[j];
		for (;; g++)
		{
			int			size = 0;
			int			clash = 0;

			for (int j = 0; j < i; j++)
			{
				if (group[j] != g)
					continue;
				size++;
				if (kinds[i] == C && kinds[j] == C && strcmp(dirs[i], dirs[j]) == 0)
					clash = 1;
			}
			if (!clash && size < ZKL_WB_MAX_OPS)
				break;
		}
		group[i] = g;
		if (g + 1 > ngroups)
			ngroups = g + 1;
	}
	return ngroups;
}

static void
test_groups(void)
{
	zkl_wb_kind k1[] = {C};
	const char *d1[] = {"/zklock/a"};
	zkl_wb_kind k3[] = {C, C, D};
	const char *d3[] = {"/zklock/a", "/zklock/b", "/zklock/c"};
	zkl_wb_kind k4[] = {C, C, D, C};
	const char *d4[] = {"/zklock/a", "/zklock/a", "/zklock/a", "/zklock/a"};
	int			g[8];

	check(zkl_wb_group(k1, d1, 1, g, scratch) == 1 && g[0] == 0, "one write: one group of one (sent alone)");
	check(zkl_wb_group(k3, d3, 3, g, scratch) == 1 && g[0] == 0 && g[1] == 0 && g[2] == 0,
		  "creates of different locks and a delete: one multi");
	check(zkl_wb_group(k4, d4, 4, g, scratch) == 3 && g[0] == 0 && g[1] == 1 && g[2] == 0 && g[3] == 2,
		  "creates of one lock: one per group, in order; the delete in the first group");
	check(zkl_wb_group(k1, d1, 0, g, scratch) == 0, "nothing ready: no group");
}

/* Random runs: the invariants over every grouping. */
static void
test_random(void)
{
	static const char *const dirs[] = {"/zklock/a", "/zklock/b", "/zklock/c", "/zklock/d"};
	int			bad_clash = 0,
				bad_size = 0,
				bad_delete = 0,
				bad_count = 0,
				bad_reference = 0;

	srand(32);
	for (int run = 0; run < 2000; run++)
	{
		int			n = rand() % 200;
		zkl_wb_kind kinds[200];
		const char *d[200];
		int			group[200];
		int			ngroups;
		int			size[200] = {0};

		for (int i = 0; i < n; i++)
		{
			kinds[i] = rand() % 3 ? C : D;
			d[i] = dirs[rand() % (run % 2 ? 4 : 1)];
		}
		ngroups = zkl_wb_group(kinds, d, n, group, scratch);
		{
			int			ref[200];

			if (reference_group(kinds, d, n, ref) != ngroups ||
				(n > 0 && memcmp(ref, group, sizeof(int) * n) != 0))
				bad_reference++;
		}
		for (int i = 0; i < n; i++)
		{
			if (group[i] < 0 || group[i] >= ngroups)
				bad_count++;
			else
				size[group[i]]++;
			for (int j = 0; j < i; j++)
			{
				if (kinds[j] == D && group[i] < group[j])
					bad_delete++;
				if (group[i] == group[j] && kinds[i] == C && kinds[j] == C && strcmp(d[i], d[j]) == 0)
					bad_clash++;
			}
		}
		for (int g = 0; g < ngroups; g++)
			if (size[g] > ZKL_WB_MAX_OPS || size[g] == 0)
				bad_size++;
	}
	check(bad_clash == 0, "random: no group holds two creates of one lock directory");
	check(bad_delete == 0, "random: no write is sent before a delete that was ready before it");
	check(bad_size == 0, "random: no group is empty or larger than a multi may be");
	check(bad_count == 0, "random: every write is in one of the groups counted");
	check(bad_reference == 0, "random: the same groups as the first (cubic) rule's");
}

/*
 * A herd: 2,000 creates of one lock ready in one pass (after a session
 * expiry, a burst of tries on one job), then the same with deletes mixed
 * in and with many locks.  The work is counted, not timed: the rule's steps
 * (comparisons of directories, groups skipped) stay within n log n; the
 * first rule's took about n^3 / 3 (2.7e9 for 2,000: seconds of the loop).
 */
static void
test_herd(void)
{
	enum
	{
		N = 2000
	};
	static zkl_wb_kind kinds[N];
	static const char *dirs[N];
	static int	group[N];
	static char names[N][16];
	uint64_t	steps;
	int			ngroups;
	int			ordered = 1;
	uint64_t	bound = (uint64_t) N * 11 * 4;	/* 4 n log2 n */

	for (int i = 0; i < N; i++)
	{
		kinds[i] = C;
		dirs[i] = "/zklock/job";
	}
	zkl_wb_group_steps = 0;
	ngroups = zkl_wb_group(kinds, dirs, N, group, scratch);
	steps = zkl_wb_group_steps;
	for (int i = 0; i < N; i++)
		if (group[i] != i)
			ordered = 0;
	check(ngroups == N && ordered, "2,000 creates of one lock: 2,000 groups, in order");
	check(steps <= bound, "2,000 creates of one lock: at most 4 n log2 n steps");
	printf("# 2,000 creates of one lock: %llu steps (bound %llu)\n",
		   (unsigned long long) steps, (unsigned long long) bound);

	for (int i = 0; i < N; i++)
	{
		kinds[i] = i % 3 == 2 ? D : C;
		snprintf(names[i], sizeof(names[i]), "/zklock/%d", i % 50);
		dirs[i] = names[i];
	}
	zkl_wb_group_steps = 0;
	(void) zkl_wb_group(kinds, dirs, N, group, scratch);
	steps = zkl_wb_group_steps;
	check(steps <= bound, "2,000 creates and deletes of 50 locks: at most 4 n log2 n steps");
	printf("# 2,000 creates and deletes of 50 locks: %llu steps\n", (unsigned long long) steps);
}

static void
test_outcomes(void)
{
	check(zkl_wb_outcome_of(ZOK) == ZKL_WB_DONE, "multi ZOK: each operation done");
	check(zkl_wb_outcome_of(ZCONNECTIONLOSS) == ZKL_WB_UNKNOWN, "connection loss: fate unknown, as a lone request's");
	check(zkl_wb_outcome_of(ZOPERATIONTIMEOUT) == ZKL_WB_UNKNOWN, "operation timeout: fate unknown");
	check(zkl_wb_outcome_of(ZSESSIONEXPIRED) == ZKL_WB_SESSION, "session expired: the session's business");
	check(zkl_wb_outcome_of(ZCLOSING) == ZKL_WB_SESSION, "closing: the session's business");
	check(zkl_wb_outcome_of(ZNODEEXISTS) == ZKL_WB_ALONE, "one node exists: nothing done, each alone");
	check(zkl_wb_outcome_of(ZNONODE) == ZKL_WB_ALONE, "ZNONODE (a delete's node gone, a create's parent): each alone");
	check(zkl_wb_outcome_of(ZNOAUTH) == ZKL_WB_ALONE, "ZNOAUTH: each alone, to get its own answer");
	check(zkl_wb_outcome_of(ZBADVERSION) == ZKL_WB_ALONE, "ZBADVERSION: each alone");
	check(zkl_wb_outcome_of(ZRUNTIMEINCONSISTENCY) == ZKL_WB_UNKNOWN,
		  "ZRUNTIMEINCONSISTENCY as the multi's code: the reply unmatched, maybe applied: fate unknown, never sent again blind");
}

static void
test_hold(void)
{
	check(!zkl_wb_hold(0, 1, true, 0), "no multi in flight: a lone write leaves at once");
	check(!zkl_wb_hold(0, 5, true, 100000), "no multi in flight: ready writes leave at once, however far");
	check(zkl_wb_hold(1, 1, true, 0), "a multi in flight, no round trip known yet: a ready write waits");
	check(zkl_wb_hold(1, 4, true, ZKL_WB_PACE_US - 1), "a multi in flight near ZooKeeper: ready writes wait for its answer");
	check(!zkl_wb_hold(1, 4, true, 4 * ZKL_WB_PACE_US), "a multi in flight four paces away: another may leave");
	check(!zkl_wb_hold(4, 4, true, 4 * ZKL_WB_PACE_US), "four paces away, four in flight: one more may leave");
	check(zkl_wb_hold(5, 4, true, 4 * ZKL_WB_PACE_US), "four paces away, five in flight: ready writes wait");
	check(zkl_wb_hold(ZKL_WB_MAX_IN_FLIGHT, 1, true, 1000000), "at the most in flight: ready writes wait");
	check(!zkl_wb_hold(3, 3, false, 0), "not connected: nothing waits, each goes alone");
	check(!zkl_wb_hold(1, 0, true, 0), "nothing ready: nothing held");
	check(zkl_wb_in_flight_limit(0) == 1, "limit: one while no round trip is known");
	check(zkl_wb_in_flight_limit(ZKL_WB_PACE_US - 1) == 1, "limit: one under a pace");
	check(zkl_wb_in_flight_limit(ZKL_WB_PACE_US) == 2, "limit: two at a pace");
	check(zkl_wb_in_flight_limit(-5) == 1, "limit: one for a round trip that cannot be");
	check(zkl_wb_in_flight_limit(INT64_MAX) == ZKL_WB_MAX_IN_FLIGHT, "limit: capped");
	/* Issue 46, point 8: a loopback ensemble, its sync and its quorum write. */
	check(zkl_wb_in_flight_limit(300) == 1 && zkl_wb_in_flight_limit(1300) == 3,
		  "limit: by a sync's round trip (300 us) one multi in flight, where a quorum write's (1.3 ms) let three");
}

static void
test_round_trips(void)
{
	zkl_wb_rtt	r = {0, 0, 0};
	int64_t		t = 1000000;

	check(zkl_wb_rtt_shortest(&r) == 0, "round trip: none known at first");
	zkl_wb_rtt_note(&r, 800, t);
	check(zkl_wb_rtt_shortest(&r) == 800, "round trip: the first sample");
	zkl_wb_rtt_note(&r, 2500, t + 10);
	check(zkl_wb_rtt_shortest(&r) == 800, "round trip: a longer one (a loaded server) does not count");
	zkl_wb_rtt_note(&r, 300, t + 20);
	check(zkl_wb_rtt_shortest(&r) == 300, "round trip: a shorter one does");
	zkl_wb_rtt_note(&r, -5, t + 30);
	zkl_wb_rtt_note(&r, 0, t + 30);
	check(zkl_wb_rtt_shortest(&r) == 300, "round trip: samples that cannot be are ignored");
	t += ZKL_WB_RTT_WINDOW_US;
	zkl_wb_rtt_note(&r, 2000, t + 40);
	check(zkl_wb_rtt_shortest(&r) == 300, "round trip: the previous window still counts");
	t += ZKL_WB_RTT_WINDOW_US;
	zkl_wb_rtt_note(&r, 2100, t + 50);
	check(zkl_wb_rtt_shortest(&r) == 2000, "round trip: after two windows a ZooKeeper that moved away is followed");
	t += 3 * (int64_t) ZKL_WB_RTT_WINDOW_US;
	zkl_wb_rtt_note(&r, 2200, t);
	check(zkl_wb_rtt_shortest(&r) == 2200, "round trip: after a long silence only the new sample counts");
	zkl_wb_rtt_note(&r, ZKL_WB_PACE_US / 2, t - 10 * (int64_t) ZKL_WB_RTT_WINDOW_US);
	check(zkl_wb_rtt_shortest(&r) == ZKL_WB_PACE_US / 2, "round trip: a clock that went back starts a new window");
	check(zkl_wb_in_flight_limit(zkl_wb_rtt_shortest(&r)) == 1, "limit from it: one near ZooKeeper");
}

/* A lone delete that may wait: connected, proof fresh, nothing behind it. */
static zkl_wb_linger_case
linger_case(int64_t waited_us, int64_t round_trip_us)
{
	zkl_wb_linger_case c = {0};

	c.lone_delete = true;
	c.connected = true;
	c.proof_fresh = true;
	c.waited_us = waited_us;
	c.round_trip_us = round_trip_us;
	return c;
}

static void
test_linger(void)
{
	zkl_wb_linger_case c;

	check(zkl_wb_linger_bound(0, 0) == 0, "linger bound: none while the distance is unknown");
	check(zkl_wb_linger_bound(0, 400) == 0, "linger bound: none while the distance is unknown, whatever the writes took");
	check(zkl_wb_linger_bound(-3, 0) == 0, "linger bound: none for a round trip that cannot be");
	check(zkl_wb_linger_bound(250, 0) == 250, "linger bound: one sync round trip near ZooKeeper, no write answered yet");
	check(zkl_wb_linger_bound(100, 450) == 450, "linger bound: one write round trip (its fsync included) where known");
	check(zkl_wb_linger_bound(300, 120) == 300, "linger bound: never below the sync's round trip");
	check(zkl_wb_linger_bound(100, -5) == 100, "linger bound: a write round trip that cannot be is ignored");
	check(zkl_wb_linger_bound(50000, 0) == ZKL_WB_LINGER_MAX_US, "linger bound: capped far from it");
	check(zkl_wb_linger_bound(200, 9000) == ZKL_WB_LINGER_MAX_US, "linger bound: capped where writes are slow");

	c = linger_case(0, 300);
	check(zkl_wb_linger_left(&c) == 300, "a lone release's delete waits one round trip for company");
	c = linger_case(100, 300);
	check(zkl_wb_linger_left(&c) == 200, "... less what it waited already");
	c = linger_case(300, 300);
	check(zkl_wb_linger_left(&c) == 0, "... and goes once the round trip is over");
	c = linger_case(5000, 300);
	check(zkl_wb_linger_left(&c) == 0, "... or long after");
	c = linger_case(-1, 300);
	check(zkl_wb_linger_left(&c) == 0, "a wait that cannot be (the clock went back): goes");
	c = linger_case(0, 0);
	check(zkl_wb_linger_left(&c) == 0, "no round trip known: goes at once");
	c = linger_case(0, 1000000);
	check(zkl_wb_linger_left(&c) == ZKL_WB_LINGER_MAX_US, "far from ZooKeeper: waits no more than the cap");
	c = linger_case(100, 80);
	c.write_round_trip_us = 500;
	check(zkl_wb_linger_left(&c) == 400, "a lone delete waits one write round trip where one is known, less what it waited");

	c = linger_case(0, 300);
	c.lone_delete = false;
	check(zkl_wb_linger_left(&c) == 0, "not a lone delete (company already there): no wait");
	c = linger_case(0, 300);
	c.neighbour = true;
	check(zkl_wb_linger_left(&c) == 0, "a waiter of this cluster behind it: goes at once, the handoff is not delayed");
	c = linger_case(0, 300);
	c.release_now = true;
	check(zkl_wb_linger_left(&c) == 0, "release_all, backend exit, a waiting release or a take-away: goes at once");
	c = linger_case(0, 300);
	c.connected = false;
	check(zkl_wb_linger_left(&c) == 0, "session not connected: goes at once");
	c = linger_case(0, 300);
	c.proof_fresh = false;
	check(zkl_wb_linger_left(&c) == 0, "the session's proof runs out: goes at once");
	c = linger_case(0, 300);
	c.shutting_down = true;
	check(zkl_wb_linger_left(&c) == 0, "the worker stops: goes at once");
	c = linger_case(0, 300);
	c.others = true;
	check(zkl_wb_linger_left(&c) == 0, "a request of another kind leaves: the delete goes before it");
}

static void
test_must_list(void)
{
	check(!zkl_wb_must_list(1), "the create's node alone in its directory: no listing, it holds");
	check(zkl_wb_must_list(2), "another child: the directory is listed");
	check(zkl_wb_must_list(1000), "many children: listed");
	check(zkl_wb_must_list(0), "no child (a count that cannot be after a create): listed");
	check(zkl_wb_must_list(-1), "a negative count: listed");
}

/* Which groups leave as a multi: two or more, or one create. */
static void
test_as_multi(void)
{
	check(zkl_wb_as_multi(ZKL_WB_CREATE, 1, true),
		  "one create: a multi of its own, whose setData answers the directory's Stat");
	check(!zkl_wb_as_multi(ZKL_WB_DELETE, 1, true), "one delete: alone");
	check(zkl_wb_as_multi(ZKL_WB_DELETE, 2, true), "two operations: one multi");
	check(zkl_wb_as_multi(ZKL_WB_CREATE, 5, true), "five operations: one multi");
	check(!zkl_wb_as_multi(ZKL_WB_CREATE, 1, false), "not connected: a create goes alone");
	check(!zkl_wb_as_multi(ZKL_WB_DELETE, 3, false), "not connected: each goes alone");
	check(!zkl_wb_as_multi(ZKL_WB_CREATE, 0, true), "an empty group: nothing to send");
}

/*
 * Issue 41, point 7: the multis in flight are counted per ZooKeeper handle.
 * A handle closed with answers outstanding (one lost in the close race)
 * must not hold the writes of the next handle for ever, and a late answer
 * of the closed handle must not count off a multi of the new one.
 */
static void
test_flight(void)
{
	zkl_wb_flight f = {0, 0};

	zkl_wb_flight_handle(&f, 1);
	f.count++;
	f.count++;
	zkl_wb_flight_answered(&f, 1);
	check(f.count == 1, "flight: an answer of the handle in use counts off its multi");
	check(zkl_wb_hold(f.count, 1, true, 0), "flight: its other multi still in flight holds ready writes");
	/* The handle is closed; the last answer is lost in the close. */
	zkl_wb_flight_handle(&f, 2);
	check(f.count == 0, "flight: a new handle starts with nothing in flight");
	check(!zkl_wb_hold(f.count, 1, true, 0), "flight: an answer lost with the closed handle holds nothing");
	f.count++;
	zkl_wb_flight_answered(&f, 1);
	check(f.count == 1, "flight: a late answer of the closed handle counts off nothing of the new one");
	zkl_wb_flight_answered(&f, 2);
	zkl_wb_flight_answered(&f, 2);
	check(f.count == 0, "flight: never below none");
	zkl_wb_flight_handle(&f, 2);
	check(f.count == 0, "flight: the same handle keeps its count");
}

int
main(void)
{
	scratch = malloc(ZKL_WB_GROUP_SCRATCH(2000));
	if (scratch == NULL)
		return 1;
	test_hold();
	test_round_trips();
	test_must_list();
	test_as_multi();
	test_linger();
	test_groups();
	test_random();
	test_outcomes();
	test_herd();
	test_flight();
	free(scratch);
	return tap_done();
}
