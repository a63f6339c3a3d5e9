/*-------------------------------------------------------------------------
 *
 * stats_record_test.c
 *		Unit tests of stats_record.c: how events add to a lock's counters,
 *		which entries a full zk_lock_stats evicts, and the file that keeps
 *		the figures across a clean restart (a damaged or foreign file is
 *		refused whole, never read in part).
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/stats_record.h"
#include "unit_tap.h"

static zkl_stats_sample
sample(zkl_stats_event event, int xact, int behind, double wait_ms)
{
	zkl_stats_sample s;

	memset(&s, 0, sizeof(s));
	s.event = event;
	s.xact = xact;
	s.behind = behind;
	s.wait_ms = wait_ms;
	return s;
}

static zkl_stats_sample
hold(double ms, zkl_stats_end_kind end, int revoked)
{
	zkl_stats_sample s = sample(ZKL_STATS_HOLD_END, 0, 0, 0);

	s.hold_ms = ms;
	s.end = end;
	s.revoked = revoked;
	return s;
}

static void
test_add(void)
{
	zkl_stats_counters c;
	zkl_stats_sample s;

	memset(&c, 0, sizeof(c));
	s = sample(ZKL_STATS_GRANTED, 0, 0, 0);
	zkl_stats_add(&c, &s);
	s = sample(ZKL_STATS_GRANTED, 1, 1, 40);
	zkl_stats_add(&c, &s);
	s = sample(ZKL_STATS_TIMEOUT, 0, 1, 100);
	zkl_stats_add(&c, &s);
	s = sample(ZKL_STATS_CANCEL, 0, 0, 0);
	zkl_stats_add(&c, &s);
	s = sample(ZKL_STATS_DEADLOCK, 0, 1, 5);
	zkl_stats_add(&c, &s);
	check(c.acquired_session == 1 && c.acquired_xact == 1, "grants are counted by scope");
	check(c.granted_at_once == 1, "only the grant with no holder ahead was at once");
	check(c.waited == 3, "every request behind a holder waited, granted or not");
	check(c.total_wait_time == 145 && c.max_wait_time == 100, "wait total and maximum over the waits");
	check(c.timeouts == 1 && c.cancels == 1 && c.deadlocks == 1, "each way of giving up has its counter");
	check(c.holds == 0, "a request is no hold");
	check(zkl_stats_usage(&c) == 5, "usage counts every request");

	s = hold(10, ZKL_STATS_RELEASED, 0);
	zkl_stats_add(&c, &s);
	s = hold(30, ZKL_STATS_LOST, 0);
	zkl_stats_add(&c, &s);
	s = hold(20, ZKL_STATS_HOLD_LIMIT, 0);
	zkl_stats_add(&c, &s);
	s = hold(5, ZKL_STATS_LOST, 1);
	zkl_stats_add(&c, &s);
	check(c.holds == 4 && c.total_hold_time == 65 && c.max_hold_time == 30, "hold total and maximum");
	check(c.losses == 3 && c.hold_limit_expiries == 1 && c.revocations == 1,
		  "losses (a hold-limit expiry among them), hold-limit expiries and revocations");
	check(c.waited == 3 && zkl_stats_usage(&c) == 5, "a hold's end counts no wait and no request");
}

static void
test_victims(void)
{
	int64_t		usage[] = {5, 1, 9, 1, 0, 7};
	int64_t		last[] = {1, 20, 3, 10, 50, 2};
	int			v[6];
	int			n;

	n = zkl_stats_choose_victims(usage, last, 6, 1, v);
	check(n == 1 && v[0] == 4, "the least used goes first");
	n = zkl_stats_choose_victims(usage, last, 6, 3, v);
	check(n == 3, "three asked, three chosen");
	{
		int			seen[6] = {0};

		for (int i = 0; i < n; i++)
			seen[v[i]] = 1;
		check(seen[4] && seen[1] && seen[3] && !seen[0] && !seen[2] && !seen[5],
			  "the three least used go, no other");
	}
	n = zkl_stats_choose_victims(usage, last, 6, 2, v);
	check(n == 2 && (v[0] == 3 || v[1] == 3) && v[0] != 1 && v[1] != 1,
		  "among equally used, the least recently used goes");
	n = zkl_stats_choose_victims(usage, last, 6, 10, v);
	check(n == 6, "never more than there are");
	n = zkl_stats_choose_victims(usage, last, 0, 3, v);
	check(n == 0, "an empty table evicts nothing");
	check(zkl_stats_victim_count(1000) == 50 && zkl_stats_victim_count(10) == 1,
		  "5% of the table at once, at least one");

	/* A larger table against a plain sort. */
	{
		enum
		{
		N = 500, K = 25};
		int64_t		u[N],
					l[N];
		int			got[N];
		int			ok = 1;
		int64_t		worst_kept = -1;

		srand(7);
		for (int i = 0; i < N; i++)
		{
			u[i] = rand() % 50;
			l[i] = rand() % 1000;
		}
		n = zkl_stats_choose_victims(u, l, N, K, got);
		for (int i = 0; i < n; i++)
			if (u[got[i]] > worst_kept)
				worst_kept = u[got[i]];
		/* no entry left out is used less than a chosen one */
		for (int i = 0; i < N; i++)
		{
			int			chosen = 0;

			for (int j = 0; j < n; j++)
				chosen |= got[j] == i;
			if (!chosen && u[i] < worst_kept)
				ok = 0;
		}
		check(n == K && ok, "500 entries: the 25 chosen are the least used");
	}
}

static void
test_file(void)
{
	zkl_stats_file_header h,
				h2;
	zkl_stats_file_record r[2],
				back[2];
	char	   *buf;
	size_t		len = zkl_stats_file_size(2);
	int			n;
	const char *error = NULL;

	memset(&h, 0, sizeof(h));
	memset(r, 0, sizeof(r));
	h.magic = ZKL_STATS_FILE_MAGIC;
	h.format = ZKL_STATS_FILE_FORMAT;
	h.reset_time = 12345;
	h.evicted = 7;
	h.nentries = 2;
	r[0].kind = 'x';
	r[0].name_len = 3;
	strcpy(r[0].name, "abc");
	r[0].counters.acquired_session = 4;
	r[0].counters.granted_at_once = 3;
	r[0].counters.total_wait_time = 1.5;
	r[1].kind = 'p';
	r[1].name_len = 1;
	strcpy(r[1].name, "z");
	r[1].counters.losses = 2;
	buf = malloc(len + 1);
	zkl_stats_format(buf, &h, r, 2);

	check(zkl_stats_parse(buf, len, &h2, back, 2, &n, &error) && n == 2, "a file written is read back");
	check(h2.reset_time == 12345 && h2.evicted == 7, "with its header");
	check(strcmp(back[0].name, "abc") == 0 && back[0].kind == 'x' &&
		  back[0].counters.acquired_session == 4 && back[0].counters.total_wait_time == 1.5 &&
		  back[1].kind == 'p' && back[1].counters.losses == 2, "and its entries");
	check(zkl_stats_parse(buf, len, &h2, back, 1, &n, &error) && n == 1,
		  "a smaller table takes the first entries");
	check(!zkl_stats_parse(buf, len - 1, &h2, back, 2, &n, &error) && n == 0, "a cut file is refused");
	check(!zkl_stats_parse(buf, 3, &h2, back, 2, &n, &error), "a file shorter than its header is refused");
	buf[0] ^= 1;
	check(!zkl_stats_parse(buf, len, &h2, back, 2, &n, &error), "a foreign file is refused");
	buf[0] ^= 1;
	h.format = 99;
	zkl_stats_format(buf, &h, r, 2);
	check(!zkl_stats_parse(buf, len, &h2, back, 2, &n, &error), "another format is refused");
	h.format = ZKL_STATS_FILE_FORMAT;
	r[1].name_len = 2;
	zkl_stats_format(buf, &h, r, 2);
	check(!zkl_stats_parse(buf, len, &h2, back, 2, &n, &error) && n == 0,
		  "a name whose length is wrong is refused, and nothing is read");
	r[1].name_len = 1;
	r[1].kind = 'q';
	zkl_stats_format(buf, &h, r, 2);
	check(!zkl_stats_parse(buf, len, &h2, back, 2, &n, &error), "an unknown kind is refused");
	r[1].kind = 'p';
	r[1].counters.losses = -1;
	zkl_stats_format(buf, &h, r, 2);
	check(!zkl_stats_parse(buf, len, &h2, back, 2, &n, &error), "a negative counter is refused");
	r[1].counters.losses = 0;
	h.evicted = INT64_MAX;
	zkl_stats_format(buf, &h, r, 2);
	check(!zkl_stats_parse(buf, len, &h2, back, 2, &n, &error),
		  "an evicted count the entries left out could overflow is refused");
	h.evicted = 7;
	h.nentries = 0;
	zkl_stats_format(buf, &h, r, 0);
	check(zkl_stats_parse(buf, zkl_stats_file_size(0), &h2, back, 2, &n, &error) && n == 0,
		  "an empty table is a file too");
	free(buf);
}

int
main(void)
{
	test_add();
	test_victims();
	test_file();
	return tap_done();
}
