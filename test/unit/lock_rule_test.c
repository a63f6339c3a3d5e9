/*-------------------------------------------------------------------------
 *
 * lock_rule_test.c
 *		Unit tests of the lock rule (src/rules/lock_rule.c), without ZooKeeper or
 *		PostgreSQL: name parsing of every layout zklock reads, serial-number
 *		order across the counter's wrap, and the decision (held, the node to
 *		watch, deadlock, absent) for shared and exclusive queues, a
 *		backend's own other node, mixed layouts, malformed and duplicate
 *		names.  Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lock_rule.h"
#include "unit_tap.h"

/* A contender of a random directory (test_holders). */
struct queued
{
	char		node[64];
	const char *owner;
	zkl_contender_name name;
};


/* ---- names ---- */

static void
check_parse(const char *name, int valid, int32_t seq, int shared)
{
	zkl_contender_name c = {0, false};
	int			got = zkl_contender_parse(name, &c);
	char		what[256];

	if (valid)
		snprintf(what, sizeof(what), "parse %s: seq %d, %s", name, (int) seq,
				 shared ? "shared" : "exclusive");
	else
		snprintf(what, sizeof(what), "parse %s: not a contender", name);
	check(valid ? (got && c.seq == seq && c.shared == (shared != 0)) : !got, what);
}

static void
test_names(void)
{
	/* Every layout zklock reads. */
	check_parse("_c_0f1e2d3c-4b5a-4969-8877-665544332211-lock-0000000001", 1, 1, 0);
	check_parse("_c_0f1e2d3c-4b5a-4969-8877-665544332211-__WRIT__0000000002", 1, 2, 0);
	check_parse("_c_0f1e2d3c-4b5a-4969-8877-665544332211-__READ__0000000003", 1, 3, 1);
	check_parse("4f1b2a7c9d8e4c3ba1b2c3d4e5f60718__lock__0000000004", 1, 4, 0);
	check_parse("4f1b2a7c9d8e4c3ba1b2c3d4e5f60718__rlock__0000000005", 1, 5, 1);
	check_parse("_c_x-lock-2147483647", 1, 2147483647, 0);
	/* After the wrap ZooKeeper prints %010d of a negative number. */
	check_parse("_c_x-lock--2147483648", 1, INT32_MIN, 0);
	check_parse("_c_x-__READ__-2147483647", 1, -2147483647, 1);
	check_parse("_c_x-lock--000000001", 1, -1, 0);
	/* The last marker counts: what comes before it may contain anything. */
	check_parse("_c_a-lock-b__READ__0000000007", 1, 7, 1);
	check_parse("id__rlock__x-lock-0000000008", 1, 8, 0);
	check_parse("_c_a-lock-0000000001-lock-0000000009", 1, 9, 0);

	/* Not contenders: refused, not guessed at. */
	check_parse("", 0, 0, 0);
	check_parse("readme", 0, 0, 0);
	check_parse("lock-0000000001", 0, 0, 0);
	check_parse("_c_x-lock-", 0, 0, 0);
	check_parse("_c_x-lock-123", 0, 0, 0);
	check_parse("_c_x-lock-00000000012", 0, 0, 0);
	check_parse("_c_x-lock-000000001a", 0, 0, 0);
	check_parse("_c_x-lock-+000000001", 0, 0, 0);
	check_parse("_c_x-lock- 000000001", 0, 0, 0);
	check_parse("_c_x-lock-2147483648", 0, 0, 0);
	check_parse("_c_x-lock--2147483649", 0, 0, 0);
	check_parse("_c_x-lock--12345678", 0, 0, 0);
	check_parse("_c_x-lock-0000000001x", 0, 0, 0);
	check_parse("_c_x-LOCK-0000000001", 0, 0, 0);
	/* What %010d never writes (found by test/fuzz's node_name_fuzz). */
	check_parse("\x14__Wk__READ__-0421020583", 0, 0, 0);
	check_parse("_c_x-lock--0000000001", 0, 0, 0);
	check_parse("_c_x-lock--000000000", 0, 0, 0);
	check_parse("_c_x-lock--1000000000", 1, -1000000000, 0);
}

static void
check_lease(const char *name, int valid, int32_t seq)
{
	zkl_contender_name c = {0, false};
	int			got = zkl_lease_parse(name, &c);
	char		what[256];

	if (valid)
		snprintf(what, sizeof(what), "lease %s: seq %d", name, (int) seq);
	else
		snprintf(what, sizeof(what), "lease %s: not a lease", name);
	check(valid ? (got && c.seq == seq && !c.shared) : !got, what);
}

static void
test_leases(void)
{
	/* Curator's InterProcessSemaphoreV2, protected or not. */
	check_lease("_c_0f1e2d3c-4b5a-4969-8877-665544332211-lease-0000000001", 1, 1);
	check_lease("lease-0000000007", 1, 7);
	check_lease("lease-2147483647", 1, 2147483647);
	/* After the wrap, as the lock's nodes. */
	check_lease("_c_x-lease--000000001", 1, -1);
	check_lease("_c_x-lease--2147483648", 1, INT32_MIN);
	/* Any other name that ends in a sequence. */
	check_lease("other0000000003", 1, 3);
	check_lease("", 0, 0);
	check_lease("lease-", 0, 0);
	check_lease("lease-000000001", 0, 0);
	check_lease("lease-000000001x", 0, 0);
	/* Beyond the counter (found by test/fuzz's lease_name_fuzz). */
	check_lease("88888888888888888", 0, 0);
	check_lease("lease-4294967297", 0, 0);
	check_lease("lease-0000000001-lease-x", 0, 0);
}

/* ---- serial-number order ---- */

static void
test_order(void)
{
	check(zkl_seq_compare(1, 2) < 0, "order: 1 is ahead of 2");
	check(zkl_seq_compare(2, 1) > 0, "order: 2 is behind 1");
	check(zkl_seq_compare(7, 7) == 0, "order: 7 is 7");
	check(zkl_seq_compare(2147483646, 2147483647) < 0, "order: 2147483646 is ahead of 2147483647");
	check(zkl_seq_compare(2147483647, INT32_MIN) < 0, "order: 2147483647 is ahead of -2147483648 (the wrap)");
	check(zkl_seq_compare(INT32_MIN, 2147483647) > 0, "order: -2147483648 is behind 2147483647");
	check(zkl_seq_compare(INT32_MIN, -2147483647) < 0, "order: -2147483648 is ahead of -2147483647");
	check(zkl_seq_compare(2147483646, -2147483647) < 0, "order: 2147483646 is ahead of -2147483647");
	check(zkl_seq_compare(-1, 0) < 0, "order: -1 is ahead of 0");
	check(zkl_seq_compare(-5, 5) < 0, "order: -5 is ahead of 5");
}

/* ---- the decision ---- */

static void
check_decision(const char *what, const char *const *children, int n, const char *own,
			   const char *const *ours, int nours, zkl_verdict verdict, const char *watch,
			   int blockers)
{
	zkl_decision d = zkl_decide(children, n, own, ours, nours);
	int			ok = d.verdict == verdict && d.blockers == blockers;

	if (verdict == ZKL_VERDICT_WAIT || verdict == ZKL_VERDICT_DEADLOCK)
		ok = ok && d.watch >= 0 && d.watch < n && strcmp(children[d.watch], watch) == 0;
	else
		ok = ok && d.watch == -1;
	if (!ok)
		printf("# %s: got verdict %d, watch %s, blockers %d\n", what, (int) d.verdict,
			   d.watch >= 0 && d.watch < n ? children[d.watch] : "-", d.blockers);
	check(ok, what);
}

#define N(a) ((int) (sizeof(a) / sizeof((a)[0])))

static void
test_queues(void)
{
	const char *alone[] = {"_c_me-lock-0000000001"};
	const char *two[] = {"_c_me-lock-0000000002", "_c_a-lock-0000000001"};
	const char *three[] = {"_c_b-lock-0000000002", "_c_me-lock-0000000003", "_c_a-lock-0000000001"};
	const char *readers[] = {"_c_a-__READ__0000000001", "_c_me-__READ__0000000002"};
	const char *rw[] = {"_c_w-__WRIT__0000000001", "_c_me-__READ__0000000002"};
	const char *rwr[] = {"_c_r1-__READ__0000000001", "_c_w-__WRIT__0000000002",
	"_c_r2-__READ__0000000003", "_c_me-__READ__0000000004"};
	const char *rrw[] = {"_c_r1-__READ__0000000001", "_c_r2-__READ__0000000002",
	"_c_me-__WRIT__0000000003"};
	const char *later[] = {"_c_me-lock-0000000005", "_c_a-lock-0000000006", "_c_b-__READ__0000000007"};

	check_decision("queue: alone, held", alone, N(alone), alone[0], NULL, 0, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("queue: behind one writer, watch it", two, N(two), two[0], NULL, 0,
				   ZKL_VERDICT_WAIT, two[1], 1);
	check_decision("queue: behind two writers, watch the nearest", three, N(three), three[1], NULL, 0,
				   ZKL_VERDICT_WAIT, three[0], 2);
	check_decision("queue: the first of three holds", three, N(three), three[2], NULL, 0,
				   ZKL_VERDICT_HELD, NULL, 0);
	check_decision("shared: readers share", readers, N(readers), readers[1], NULL, 0,
				   ZKL_VERDICT_HELD, NULL, 0);
	check_decision("shared: a reader waits for a writer ahead", rw, N(rw), rw[1], NULL, 0,
				   ZKL_VERDICT_WAIT, rw[0], 1);
	check_decision("shared: a reader waits for the writer between readers", rwr, N(rwr), rwr[3], NULL, 0,
				   ZKL_VERDICT_WAIT, rwr[1], 1);
	check_decision("shared: the reader behind a waiting writer waits too", rwr, N(rwr), rwr[2], NULL, 0,
				   ZKL_VERDICT_WAIT, rwr[1], 1);
	check_decision("shared: the writer waits for every reader ahead", rrw, N(rrw), rrw[2], NULL, 0,
				   ZKL_VERDICT_WAIT, rrw[1], 2);
	check_decision("queue: nodes behind do not count", later, N(later), later[0], NULL, 0,
				   ZKL_VERDICT_HELD, NULL, 0);
}

static void
test_own_nodes(void)
{
	const char *read_then_write[] = {"_c_me-__READ__0000000001", "_c_me2-lock-0000000002"};
	const char *write_then_read[] = {"_c_me-lock-0000000001", "_c_me2-__READ__0000000002"};
	const char *upgrade[] = {"_c_me-__READ__0000000001", "_c_w-lock-0000000002", "_c_me2-lock-0000000003"};
	const char *writer_first[] = {"_c_w-lock-0000000001", "_c_me-__READ__0000000002", "_c_me2-lock-0000000003"};
	const char *two_readers[] = {"_c_r-__READ__0000000001", "_c_me-__READ__0000000002",
	"_c_w-lock-0000000003", "_c_me2-lock-0000000004"};
	const char *no_node[] = {NULL};
	const char *write_queued_read[] = {"_c_me-__WRIT__0000000001", "_c_w-__WRIT__0000000002",
	"_c_me2-__READ__0000000003"};
	const char *kazoo_queued[] = {"_c_me-lock-0000000001", "k__lock__0000000002", "k__rlock__0000000003",
	"_c_me2-__READ__0000000004"};

	check_decision("own: our own read ahead is not waited for", read_then_write, N(read_then_write),
				   read_then_write[1], &read_then_write[0], 1, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("own: without it, the same read blocks", read_then_write, N(read_then_write),
				   read_then_write[1], NULL, 0, ZKL_VERDICT_WAIT, read_then_write[0], 1);
	check_decision("own: our own write ahead is not waited for", write_then_read, N(write_then_read),
				   write_then_read[1], &write_then_read[0], 1, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("deadlock: a writer queued behind our read, and we behind it", upgrade, N(upgrade),
				   upgrade[2], &upgrade[0], 1, ZKL_VERDICT_DEADLOCK, upgrade[1], 1);
	check_decision("deadlock: none when the writer came before our read", writer_first, N(writer_first),
				   writer_first[2], &writer_first[1], 1, ZKL_VERDICT_WAIT, writer_first[0], 1);
	check_decision("deadlock: another reader ahead does not change it", two_readers, N(two_readers),
				   two_readers[3], &two_readers[1], 1, ZKL_VERDICT_DEADLOCK, two_readers[2], 2);
	check_decision("deadlock: a NULL among our nodes is ignored", upgrade, N(upgrade), upgrade[2],
				   no_node, 1, ZKL_VERDICT_WAIT, upgrade[1], 2);
	check_decision("own: holding it exclusive, our read holds at once past a queued writer", write_queued_read,
				   N(write_queued_read), write_queued_read[2], &write_queued_read[0], 1, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("own: so it does past a queued kazoo writer and reader", kazoo_queued,
				   N(kazoo_queued), kazoo_queued[3], &kazoo_queued[0], 1, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("own: without our write, the read waits for the queued writer", write_queued_read,
				   N(write_queued_read), write_queued_read[2], NULL, 0, ZKL_VERDICT_WAIT, write_queued_read[1], 2);
	check_decision("own: the queued writer waits for our write, not for our read behind it", write_queued_read,
				   N(write_queued_read), write_queued_read[1], NULL, 0, ZKL_VERDICT_WAIT, write_queued_read[0], 1);
	check_decision("own: an own read does not make our write hold at once", write_queued_read,
				   N(write_queued_read), write_queued_read[1], &write_queued_read[2], 1, ZKL_VERDICT_WAIT,
				   write_queued_read[0], 1);
}

static void
test_layouts(void)
{
	const char *kazoo_first[] = {"k1__lock__0000000001", "_c_me-lock-0000000002"};
	const char *curator_rw[] = {"_c_c-__WRIT__0000000001", "_c_me-lock-0000000002"};
	const char *mixed_readers[] = {"k__rlock__0000000001", "_c_c-__READ__0000000002",
	"_c_me-__READ__0000000003"};
	const char *mixed[] = {"k__rlock__0000000001", "_c_c-__READ__0000000002", "k2__lock__0000000003",
	"_c_me-__READ__0000000004"};

	check_decision("layouts: a kazoo lock ahead blocks a zklock writer", kazoo_first, N(kazoo_first),
				   kazoo_first[1], NULL, 0, ZKL_VERDICT_WAIT, kazoo_first[0], 1);
	check_decision("layouts: a Curator writer ahead blocks a mutex request", curator_rw, N(curator_rw),
				   curator_rw[1], NULL, 0, ZKL_VERDICT_WAIT, curator_rw[0], 1);
	check_decision("layouts: kazoo and Curator readers share with ours", mixed_readers, N(mixed_readers),
				   mixed_readers[2], NULL, 0, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("layouts: a kazoo writer between readers blocks ours", mixed, N(mixed), mixed[3],
				   NULL, 0, ZKL_VERDICT_WAIT, mixed[2], 1);

	/* Whose layout a peer's node follows, by the one table of layouts. */
	check(strcmp(zkl_node_client("k1__lock__0000000001"), "kazoo") == 0,
		  "layouts: a kazoo lock's node is kazoo's");
	check(strcmp(zkl_node_client("_c_x-__rlock__0000000001"), "kazoo") == 0,
		  "layouts: a kazoo marker wins over Curator's prefix");
	check(strcmp(zkl_node_client("_c_c-__WRIT__0000000001"), "curator") == 0,
		  "layouts: a protected Curator node is Curator's");
	check(strcmp(zkl_node_client("x-lock-0000000001"), "other") == 0,
		  "layouts: an unprotected mutex node is another client's");
	check(strcmp(zkl_node_layouts[ZKL_NODE_MUTEX].marker, "-lock-") == 0 &&
		  strcmp(zkl_node_layouts[ZKL_NODE_WRITE].marker, "__WRIT__") == 0 &&
		  strcmp(zkl_node_layouts[ZKL_NODE_READ].marker, "__READ__") == 0 &&
		  zkl_node_layouts[ZKL_NODE_READ].shared && !zkl_node_layouts[ZKL_NODE_WRITE].shared,
		  "layouts: zklock writes Curator's mutex and read-write markers");
}

static void
test_odd_listings(void)
{
	const char *malformed[] = {"readme", "_c_x-lock-12", "_c_y-lock-000000001a", "lock-0000000001",
	"_c_me-lock-0000000005"};
	const char *dup_blocker[] = {"_c_a-lock-0000000001", "_c_a-lock-0000000001", "_c_me-lock-0000000002"};
	const char *dup_self[] = {"_c_me-lock-0000000002", "_c_me-lock-0000000002"};
	const char *gone[] = {"_c_a-lock-0000000001", "_c_b-lock-0000000003"};
	const char *same_seq[] = {"_c_odd-lock-0000000002", "_c_me-lock-0000000002"};
	const char *bad_self[] = {"_c_me-lock-12"};

	check_decision("odd: names that are not contenders are ignored", malformed, N(malformed),
				   malformed[4], NULL, 0, ZKL_VERDICT_HELD, NULL, 0);
	check_decision("odd: a name listed twice counts twice", dup_blocker, N(dup_blocker), dup_blocker[2],
				   NULL, 0, ZKL_VERDICT_WAIT, dup_blocker[0], 2);
	check_decision("odd: our node listed twice is ours", dup_self, N(dup_self), dup_self[0], NULL, 0,
				   ZKL_VERDICT_HELD, NULL, 0);
	check_decision("odd: our node missing from the listing", gone, N(gone), "_c_me-lock-0000000002",
				   NULL, 0, ZKL_VERDICT_ABSENT, NULL, 0);
	check_decision("odd: an empty listing", NULL, 0, "_c_me-lock-0000000002", NULL, 0,
				   ZKL_VERDICT_ABSENT, NULL, 0);
	check_decision("odd: our own name not a contender", bad_self, N(bad_self), bad_self[0], NULL, 0,
				   ZKL_VERDICT_ABSENT, NULL, 0);
	check_decision("odd: another node with our sequence number is in our way", same_seq, N(same_seq),
				   same_seq[1], NULL, 0, ZKL_VERDICT_WAIT, same_seq[0], 1);
	check_decision("odd: and we in its", same_seq, N(same_seq),
				   same_seq[0], NULL, 0, ZKL_VERDICT_WAIT, same_seq[1], 1);
}

/* ---- the counter's top: ZooKeeper numbers every child 2147483647 ---- */

static void
test_top(void)
{
	const char *top[] = {"_c_h-lock-2147483646", "_c_a-lock-2147483647", "k__lock__2147483647",
	"_c_b-lock-2147483647"};
	const char *after[] = {"_c_a-lock-2147483647", "k__lock__2147483647", "_c_b-lock-2147483647"};
	const char *readers[] = {"_c_a-__READ__2147483647", "k__rlock__2147483647"};
	const char *lower[] = {"_c_a-lock-0000000005", "_c_b-lock-0000000005", "_c_c-lock-0000000006"};
	const char *mine[] = {"_c_me-__READ__0000000005", "_c_me2-lock-0000000005"};
	const char *past[] = {"_c_x-lock--2147483648"};
	int			held = 0;
	zkl_decision d;

	check_decision("top: the holder below the top holds", top, N(top), top[0], NULL, 0,
				   ZKL_VERDICT_HELD, NULL, 0);
	check_decision("top: a node at the top waits for the holder and the equal nodes, watching an equal one", top, N(top), top[1],
				   NULL, 0, ZKL_VERDICT_WAIT, top[2], 3);
	d = zkl_decide(top, N(top), top[1], NULL, 0);
	check(d.equal && d.at_top, "top: the decision tells of equal numbers, at the top");
	d = zkl_decide(top, N(top), top[0], NULL, 0);
	check(!d.equal && !d.at_top, "top: the holder below sees no equal number");
	for (int i = 0; i < N(after); i++)
		held += zkl_decide(after, N(after), after[i], NULL, 0).verdict == ZKL_VERDICT_HELD;
	check(held == 0, "top: once the holder went, none of the equal nodes holds (zklock, kazoo, zklock)");
	check_decision("top: equal readers block each other too", readers, N(readers), readers[0], NULL, 0,
				   ZKL_VERDICT_WAIT, readers[1], 1);
	check_decision("equal: below the top, equal numbers block", lower, N(lower), lower[0], NULL, 0,
				   ZKL_VERDICT_WAIT, lower[1], 1);
	check_decision("equal: a node behind waits for both", lower, N(lower), lower[2], NULL, 0,
				   ZKL_VERDICT_WAIT, lower[0], 2);
	d = zkl_decide(lower, N(lower), lower[2], NULL, 0);
	check(!d.equal && !d.at_top, "equal: the node behind is no anomaly itself");
	check_decision("equal: our own other node with our number is ours", mine, N(mine), mine[1], &mine[0], 1,
				   ZKL_VERDICT_HELD, NULL, 0);
	d = zkl_decide(after, N(after), "_c_x-lock--2147483648", NULL, 0);
	check(d.verdict == ZKL_VERDICT_ABSENT && !d.equal, "top: absent: no anomaly reported");
	d = zkl_decide(past, N(past), past[0], NULL, 0);
	check(d.verdict == ZKL_VERDICT_HELD && d.at_top, "top: a number past the top is at the top");

	check(!zkl_counter_near_top(0), "counter: 0 is far from the top");
	check(!zkl_counter_near_top(ZKL_COUNTER_WARN - 1), "counter: just below the warning");
	check(zkl_counter_near_top(ZKL_COUNTER_WARN), "counter: the warning from 2^30");
	check(zkl_counter_near_top(INT32_MAX), "counter: at the top");

	/*
	 * The Stat's cversion is twice the creates less the children, in 32 bits
	 * (values read from ZooKeeper 3.8): it turns negative half way.
	 */
	check(zkl_next_sequence(0, 0) == 0, "next: an empty new directory numbers from 0");
	check(zkl_next_sequence(5, 1) == 3, "next: 3 creates, 2 deletes, 1 child");
	check(zkl_next_sequence(1999, 1) == 1000, "next: 1000 creates, 1 child");
	check(zkl_next_sequence(-9, 1) == 2147483644, "next: a negative cversion near the top");
	check(zkl_next_sequence(-7, 5) == 2147483647, "next: at the top");
	check(zkl_next_sequence(INT32_MIN, 0) == ZKL_COUNTER_WARN,
		  "next: 2^30 creates, none left: cversion -2^31");
	check(zkl_next_sequence(-3, 1) == INT32_MAX, "next: cversion -3 with a child is the top");
	check(!zkl_counter_near_top(zkl_next_sequence(ZKL_COUNTER_WARN, 0)),
		  "next: cversion 2^30 is only 2^29 creates");
}

/* ---- a peer's downgrade: Curator's write lock, then its read lock ---- */

static void
test_downgrade(void)
{
	/* Curator 5.4: W (session 7) holds, our Z queued, W's read R behind Z. */
	const char *dir54[] = {"_c_w-__WRIT__0000000000", "_c_z-__WRIT__0000000001", "_c_r-__READ__0000000002"};
	const char *after54[] = {"_c_z-__WRIT__0000000001", "_c_r-__READ__0000000002"};
	const char *held_r[] = {"_c_r-__READ__0000000002"};
	const char *zr[] = {"_c_z-__READ__0000000001", "_c_r-__READ__0000000002"};
	zkl_contender_name q54[3];
	const char *owners54[3] = {NULL, "zklock:z", NULL};
	int64_t		sessions54[3] = {7, 0, 7};
	int64_t		other54[3] = {7, 0, 8};

	/* Curator 5.5: R named with W's number, Z behind both. */
	zkl_contender_name q55[3];
	const char *dir55[] = {"_c_w-__WRIT__0000000004", "_c_r-__READ__0000000004", "_c_z-lock-0000000005"};
	const char *owners55[3] = {NULL, NULL, "zklock:z"};
	int64_t		sessions55[3] = {7, 7, 0};
	bool		held[3];
	bool		equal[3];
	const char *const *scratch[3];

	check(zkl_may_downgrade("_c_w-__WRIT__0000000000"), "downgrade: a Curator write node may downgrade");
	check(!zkl_may_downgrade("_c_w-lock-0000000000"), "downgrade: a mutex node does not");
	check(!zkl_may_downgrade("k__lock__0000000000"), "downgrade: nor kazoo's");
	check(!zkl_may_downgrade("_c_w-__READ__0000000000"), "downgrade: nor a read node");
	check(!zkl_may_downgrade("_c_w-__WRIT__x"), "downgrade: nor a malformed one");
	check(zkl_is_curator_rw(dir54[0]) && zkl_is_curator_rw(dir54[2]), "downgrade: Curator's read-write layout");
	check(!zkl_is_curator_rw("k__rlock__0000000002") && !zkl_is_curator_rw("_c_m-lock-0000000002"),
		  "downgrade: kazoo's and the mutex's layouts are not");
	check(zkl_downgrade_candidate(dir54[2], dir54[1]), "downgrade: a read behind us is a candidate");
	check(!zkl_downgrade_candidate(dir54[2], "_c_q-lock-0000000003"), "downgrade: not one ahead of us");
	check(!zkl_downgrade_candidate("k__rlock__0000000002", dir54[1]), "downgrade: nor kazoo's read");

	check(zkl_is_downgrade(7, 100, false, 7, 101), "downgrade: same session, created before the last change");
	check(!zkl_is_downgrade(7, 101, false, 7, 101), "downgrade: created at the last change: after the delete");
	check(!zkl_is_downgrade(8, 100, false, 7, 101), "downgrade: another session's read waits");
	check(!zkl_is_downgrade(7, 100, true, 7, 101), "downgrade: zklock's read waits (zklock keeps its write)");
	check(!zkl_is_downgrade(0, 100, false, 0, 101), "downgrade: no session known, none");

	/* The waiter's decision, once the write went. */
	check_decision("downgrade: without it, our writer holds beside the read", after54, N(after54), after54[0],
				   NULL, 0, ZKL_VERDICT_HELD, NULL, 0);
	{
		zkl_decision d = zkl_decide_with(after54, N(after54), after54[0], NULL, 0, held_r, 1);

		check(d.verdict == ZKL_VERDICT_WAIT && d.watch == 1 && d.blockers == 1,
			  "downgrade: with it, our writer waits for the read behind it, watching it");
		d = zkl_decide_with(dir54, N(dir54), dir54[1], NULL, 0, held_r, 1);
		check(d.verdict == ZKL_VERDICT_WAIT && d.watch == 0 && d.blockers == 2,
			  "downgrade: a node ahead is watched before the read behind");
		d = zkl_decide_with(zr, N(zr), zr[0], NULL, 0, held_r, 1);
		check(d.verdict == ZKL_VERDICT_HELD, "downgrade: a reader does not wait for it");
	}

	/* The whole directory (zk_lock_contenders) while the write is there. */
	for (int i = 0; i < 3; i++)
		if (!zkl_contender_parse(dir54[i], &q54[i]) || !zkl_contender_parse(dir55[i], &q55[i]))
			abort();
	zkl_holders(q54, owners54, NULL, 3, held, equal, scratch);
	check(held[0] && !held[1] && !held[2], "holders: without sessions, the downgrade's read waits");
	zkl_holders(q54, owners54, sessions54, 3, held, equal, scratch);
	check(held[0] && !held[1] && held[2] && !equal[2], "holders: the write's read behind our writer holds");
	zkl_holders(q54, owners54, other54, 3, held, equal, scratch);
	check(held[0] && !held[1] && !held[2], "holders: another session's read waits");
	zkl_holders(q55, owners55, NULL, 3, held, equal, scratch);
	check(!held[0] && !held[1] && equal[0] && equal[1], "holders: without sessions, Curator 5.5's pair is an anomaly");
	zkl_holders(q55, owners55, sessions55, 3, held, equal, scratch);
	check(held[0] && held[1] && !equal[0] && !equal[1] && !held[2],
		  "holders: Curator 5.5's pair (one session, one number) holds, no anomaly");
	sessions55[1] = 8;
	zkl_holders(q55, owners55, sessions55, 3, held, equal, scratch);
	check(!held[0] && !held[1] && equal[0] && equal[1], "holders: two sessions at one number stay an anomaly");
}

/* ---- past the top, in every order: a burst of creates pipelined at the top ---- */

static void
test_wrap(void)
{
	/*
	 * Numbers a burst of creates at the top may get from the server's not yet
	 * applied counter.
	 */
	const char *nodes[] = {
		"_c_a-lock-2147483646",
		"_c_b-__READ__2147483647",
		"k__lock__-2147483648",
		"_c_d-lock--2147483647",
	};

	/* What each, in that order, waits for: index watched, blockers. */
	const int	watch[] = {-1, 0, 1, 2};
	const int	blockers[] = {0, 1, 2, 3};
	int			perm[4] = {0, 1, 2, 3};
	int			all_ok = 1;
	int			orders = 0;
	char		what[128];

	/* All 24 orders of the listing (Heap's algorithm). */
	int			c[4] = {0, 0, 0, 0};
	int			i = 0;

	for (;;)
	{
		const char *listing[4];

		for (int k = 0; k < 4; k++)
			listing[k] = nodes[perm[k]];
		for (int own = 0; own < 4; own++)
		{
			zkl_decision d = zkl_decide(listing, 4, nodes[own], NULL, 0);
			int			ok;

			if (watch[own] < 0)
				ok = d.verdict == ZKL_VERDICT_HELD && d.blockers == 0;
			else
				ok = d.verdict == ZKL_VERDICT_WAIT && d.blockers == blockers[own] &&
					strcmp(listing[d.watch], nodes[watch[own]]) == 0;
			if (!ok && all_ok)
				printf("# wrap: order %d %d %d %d, own %s: verdict %d, watch %s, blockers %d\n",
					   perm[0], perm[1], perm[2], perm[3], nodes[own], (int) d.verdict,
					   d.watch >= 0 ? listing[d.watch] : "-", d.blockers);
			all_ok = all_ok && ok;
		}
		orders++;

		/* next permutation */
		while (i < 4 && c[i] >= i)
		{
			c[i] = 0;
			i++;
		}
		if (i >= 4)
			break;
		{
			int			a = i % 2 == 0 ? 0 : c[i];
			int			t = perm[a];

			perm[a] = perm[i];
			perm[i] = t;
		}
		c[i]++;
		i = 0;
	}
	snprintf(what, sizeof(what),
			 "wrap: 2147483646, 2147483647, -2147483648, -2147483647 queue in that order, in all %d listing orders",
			 orders);
	check(all_ok && orders == 24, what);

	/* The newest node after the wrap is not granted while the holder holds. */
	{
		const char *holder_and_newest[] = {"_c_new-lock--2147483648", "_c_old-lock-2147483647"};

		check_decision("wrap: the node after the wrap waits for the one before it", holder_and_newest, 2,
					   holder_and_newest[0], NULL, 0, ZKL_VERDICT_WAIT, holder_and_newest[1], 1);
		check_decision("wrap: the node before the wrap holds", holder_and_newest, 2, holder_and_newest[1],
					   NULL, 0, ZKL_VERDICT_HELD, NULL, 0);
	}
}

/* ---- a whole directory at once (zkl_holders) ---- */

static int
cmp_queue(const void *a, const void *b)
{
	const zkl_contender_name *x = &((const struct queued *) a)->name;
	const zkl_contender_name *y = &((const struct queued *) b)->name;

	return zkl_seq_compare(x->seq, y->seq);
}

/*
 * zkl_holders gives, for every contender, the answer of zkl_decide with
 * the other nodes of its owner as ours: random directories of mixed modes
 * and owners (some of none), equal sequence numbers and a counter that
 * wraps among them.
 */
static void
test_holders(void)
{
	static const char *const owner_names[] = {"a", "b", "c"};
	int			mismatches = 0;
	int			held_total = 0;
	int			rounds = 2000;

	srand(23);
	for (int round = 0; round < rounds; round++)
	{
		struct queued q[12];
		const char *names[12];
		const char *owners[12];
		const char *ours[12];
		zkl_contender_name queue[12];
		bool		held[12];
		bool		equal[12];
		const char *const *scratch[12];
		int			n = 1 + rand() % 12;
		int32_t		base = round % 2 ? INT32_MAX - 5 : 1;

		memset(q, 0, sizeof(q));
		for (int i = 0; i < n; i++)
		{
			int			o = rand() % 4;
			bool		shared = rand() % 2;
			int32_t		seq = (int32_t) ((uint32_t) base + (uint32_t) (rand() % 10));

			q[i].owner = o < 3 ? owner_names[o] : NULL;
			snprintf(q[i].node, sizeof(q[i].node), "_c_%d-%s%010d", i,
					 shared ? "__READ__" : "-lock-", (int) seq);
			if (!zkl_contender_parse(q[i].node, &q[i].name))
				abort();
		}
		qsort(q, n, sizeof(q[0]), cmp_queue);
		for (int i = 0; i < n; i++)
		{
			names[i] = q[i].node;
			owners[i] = q[i].owner;
			queue[i] = q[i].name;
		}
		zkl_holders(queue, owners, NULL, n, held, equal, scratch);
		for (int i = 0; i < n; i++)
		{
			int			nours = 0;
			zkl_decision d;

			for (int j = 0; j < n; j++)
				if (j != i && owners[i] && owners[j] && strcmp(owners[i], owners[j]) == 0)
					ours[nours++] = names[j];
			d = zkl_decide(names, n, names[i], ours, nours);
			if ((d.verdict == ZKL_VERDICT_HELD) != held[i] || d.equal != equal[i])
				mismatches++;
			held_total += held[i];
		}
	}
	check(mismatches == 0, "holders: a whole directory at once answers as zkl_decide for each node (held, and an equal number)");
	check(held_total > rounds, "holders: ... over directories with many holders");
}

static void
test_handoff(void)
{
	check(zkl_holds_after_predecessor(true, false, false), "handoff: the only node in the way went: held");
	check(zkl_holds_after_predecessor(false, true, false), "handoff: an exclusive grant went: held");
	check(zkl_holds_after_predecessor(true, true, false), "handoff: both: held");
	check(!zkl_holds_after_predecessor(false, false, false), "handoff: otherwise list and decide again");
	check(!zkl_holds_after_predecessor(true, false, true), "handoff: where numbers repeat, list again (only blocker)");
	check(!zkl_holds_after_predecessor(false, true, true),
		  "handoff: where numbers repeat, list again (exclusive grant)");
}

/*
 * A handoff at release inside this cluster (zkl_hands_over_at_release): the
 * waiter holds before the delete leaves only where the deletion would have
 * granted it, and only when the released node cannot stay and the session
 * is proven alive.
 */
static void
test_local_handoff(void)
{
	zkl_local_handoff_case base = {
		.released_by_backend = true,
		.exclusive_grant = true,
		.delete_sure = true,
		.semaphore = false,
		.connected = true,
		.proof_fresh = true,
		.events_current = true,
		.waiter_watches_it = true,
		.downgrade_possible = false,
		.predecessor_was_only_blocker = false,
		.numbers_repeat = false,
	};
	zkl_local_handoff_case c;

	check(zkl_hands_over_at_release(&base), "local handoff: a released exclusive grant, the waiter watching it: held at once");
	c = base;
	c.predecessor_was_only_blocker = true;
	check(zkl_hands_over_at_release(&c), "local handoff: ... also when it was the waiter's only blocker");
	c = base;
	c.released_by_backend = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not for a hold taken away, a failed request or a try");
	c = base;
	c.exclusive_grant = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not after a shared hold, or one with its backend's read beside it");
	c = base;
	c.delete_sure = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not when the delete may be refused (the node would stay)");
	c = base;
	c.semaphore = true;
	check(!zkl_hands_over_at_release(&c), "local handoff: not for a semaphore's mutex");
	c = base;
	c.connected = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not while the session is not connected");
	c = base;
	c.proof_fresh = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not without a fresh proof (the session may have expired)");
	c = base;
	c.events_current = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not without a recent answer (an event of the waiter's own deletion may be on its way)");
	c = base;
	c.waiter_watches_it = false;
	check(!zkl_hands_over_at_release(&c), "local handoff: not for a waiter watching another node");
	c = base;
	c.downgrade_possible = true;
	check(!zkl_hands_over_at_release(&c), "local handoff: not where a downgrade may hide a read lock");
	c = base;
	c.numbers_repeat = true;
	check(!zkl_hands_over_at_release(&c), "local handoff: not where numbers repeat");
	c = base;
	c.numbers_repeat = true;
	c.predecessor_was_only_blocker = true;
	check(!zkl_hands_over_at_release(&c), "local handoff: not where numbers repeat, even after the only blocker");
}

/*
 * Issue 41, point 7: a directory that mixes Curator's mutex layout and its
 * read-write lock's across zklock's node, which one of the Curator clients
 * cannot see (the worker warns once per directory).
 */
static void
test_layouts_mixed(void)
{
	const char *rw[] = {"_c_c-__READ__0000000001", "_c_me-lock-0000000002"};
	const char *writer[] = {"_c_c-__WRIT__0000000001", "_c_me-lock-0000000002"};
	const char *mutex[] = {"_c_c-lock-0000000001", "_c_me-__WRIT__0000000002"};
	const char *same[] = {"_c_c-lock-0000000001", "_c_me-lock-0000000002", "k__lock__0000000003"};
	const char *same_rw[] = {"_c_c-__READ__0000000001", "_c_me-__WRIT__0000000002"};
	const char *odd[] = {"x-__READ__", "y-__WRIT__12", "_c_me-lock-0000000002"};
	const char *kazoo[] = {"k__rlock__0000000001", "_c_me-lock-0000000002"};

	check(zkl_layouts_mixed(rw, N(rw), rw[1]), "mixed: a Curator reader beside zklock's mutex node");
	check(zkl_layouts_mixed(writer, N(writer), writer[1]), "mixed: a Curator writer beside zklock's mutex node");
	check(zkl_layouts_mixed(mutex, N(mutex), mutex[1]), "mixed: a Curator mutex node beside zklock's writer");
	check(!zkl_layouts_mixed(same, N(same), same[1]), "mixed: mutex nodes only (and kazoo's), not mixed");
	check(!zkl_layouts_mixed(same_rw, N(same_rw), same_rw[1]), "mixed: read-write nodes only, not mixed");
	check(!zkl_layouts_mixed(odd, N(odd), odd[2]), "mixed: names that are no contender do not count");
	check(!zkl_layouts_mixed(kazoo, N(kazoo), kazoo[1]), "mixed: kazoo's readers are not Curator's layout");
	check(!zkl_layouts_mixed(rw, N(rw), "no-marker"), "mixed: an own node of no layout: nothing to say");
	check(!zkl_layouts_mixed(mutex, N(mutex), "_c_me-__READ__0000000002"),
		  "mixed: a reader's node: the exclusive layout is not in question");
}

int
main(void)
{
	test_names();
	test_leases();
	test_order();
	test_queues();
	test_own_nodes();
	test_layouts();
	test_odd_listings();
	test_top();
	test_downgrade();
	test_wrap();
	test_handoff();
	test_local_handoff();
	test_holders();
	test_layouts_mixed();
	return tap_done();
}
