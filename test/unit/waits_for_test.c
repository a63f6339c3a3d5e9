/*-------------------------------------------------------------------------
 *
 * waits_for_test.c
 *		Unit tests of the waits-for graph and the victim rule
 *		(src/rules/waits_for.c), and of the lock rule's blockers (the graph's
 *		zklock edges), without ZooKeeper or PostgreSQL: cycles of two and
 *		three clusters, shared holders, waits on PostgreSQL's own locks,
 *		other clients' nodes as leaves, the bound on a cycle's length, and,
 *		on thousands of random graphs checked against a brute-force
 *		enumeration of their cycles, that a backend is a victim exactly
 *		when it is the newest zklock request of some cycle.  Prints TAP;
 *		exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lock_rule.h"
#include "unit_tap.h"
#include "rules/waits_for.h"


/* Backend n of cluster (session) c. */
static zkl_backend_ref
be(int c, int n)
{
	zkl_backend_ref r;

	r.session = 0x1000 + c;
	r.pid = 100 + n;
	return r;
}

static zkl_wait_edge
zk_edge(zkl_backend_ref waiter, zkl_backend_ref blocker, int64_t czxid)
{
	zkl_wait_edge e;

	e.waiter = waiter;
	e.blocker = blocker;
	e.kind = ZKL_WAIT_ZKLOCK;
	e.czxid = czxid;
	e.what = 0;
	return e;
}

static zkl_wait_edge
hw_edge(zkl_backend_ref waiter, zkl_backend_ref blocker)
{
	zkl_wait_edge e = zk_edge(waiter, blocker, 0);

	e.kind = ZKL_WAIT_HEAVYWEIGHT;
	return e;
}

/* Whether cycle (of len edges) is a real cycle of edges from self. */
static int
is_cycle_from(const zkl_wait_edge *edges, const int *cycle, int len,
			  zkl_backend_ref self)
{
	if (len <= 0 || !zkl_backend_equal(edges[cycle[0]].waiter, self) ||
		!zkl_backend_equal(edges[cycle[len - 1]].blocker, self))
		return 0;
	for (int i = 1; i < len; i++)
		if (!zkl_backend_equal(edges[cycle[i - 1]].blocker, edges[cycle[i]].waiter))
			return 0;
	return 1;
}

static int
victim(const zkl_wait_edge *edges, int n, zkl_backend_ref self, int64_t czxid,
	   int *cycle)
{
	return zkl_deadlock_victim_cycle(edges, n, self, czxid, cycle, ZKL_MAX_CYCLE);
}

static void
test_two_clusters(void)
{
	/* A1 holds x, waits for y (request 20); B1 holds y, waits for x (30). */
	zkl_wait_edge g[] = {zk_edge(be(1, 1), be(2, 1), 20), zk_edge(be(2, 1), be(1, 1), 30)};
	int			cycle[ZKL_MAX_CYCLE];
	int			len;

	check(victim(g, 2, be(1, 1), 20, cycle) == 0, "two clusters: the older request is no victim");
	len = victim(g, 2, be(2, 1), 30, cycle);
	check(len == 2 && is_cycle_from(g, cycle, len, be(2, 1)) && cycle[0] == 1,
		  "two clusters: the newer request is the victim, cycle of 2 from itself");
	len = zkl_deadlock_any_cycle(g, 2, be(1, 1), cycle, ZKL_MAX_CYCLE);
	check(len == 2 && is_cycle_from(g, cycle, len, be(1, 1)),
		  "two clusters: the older one sees the cycle too");
	check(victim(g, 1, be(1, 1), 20, cycle) == 0 && victim(g, 1, be(2, 1), 30, cycle) == 0,
		  "a chain is no cycle");
}

static void
test_equal_czxids(void)
{
	/*
	 * Issue 32: A1 and A2's requests were created by one multi of cluster A's
	 * worker and share their czxid (40): the higher pid is the newer.
	 */
	zkl_wait_edge g[] = {zk_edge(be(1, 1), be(1, 2), 40), zk_edge(be(1, 2), be(1, 1), 40)};
	int			cycle[ZKL_MAX_CYCLE];
	int			order[ZKL_MAX_CYCLE];
	int			len;

	check(victim(g, 2, be(1, 1), 40, cycle) == 0, "equal czxids: the lower pid is no victim");
	len = victim(g, 2, be(1, 2), 40, cycle);
	check(len == 2 && is_cycle_from(g, cycle, len, be(1, 2)),
		  "equal czxids: the higher pid is the victim, so the cycle has exactly one");
	len = zkl_deadlock_any_cycle(g, 2, be(1, 1), cycle, ZKL_MAX_CYCLE);
	check(len == 2 && zkl_deadlock_standin_order(g, cycle, len, order) == 2 &&
		  g[cycle[order[0]]].waiter.pid == be(1, 2).pid && g[cycle[order[1]]].waiter.pid == be(1, 1).pid,
		  "equal czxids: the higher pid first, the lower pid its stand-in");
}

static void
test_three_clusters(void)
{
	zkl_wait_edge g[] = {
		zk_edge(be(1, 1), be(2, 1), 5),
		zk_edge(be(2, 1), be(3, 1), 7),
		zk_edge(be(3, 1), be(1, 1), 6),
	};
	int			cycle[ZKL_MAX_CYCLE];
	int			len = victim(g, 3, be(2, 1), 7, cycle);

	check(victim(g, 3, be(1, 1), 5, cycle) == 0, "three clusters: the oldest waits on");
	check(victim(g, 3, be(3, 1), 6, cycle) == 0, "three clusters: the middle one waits on");
	len = victim(g, 3, be(2, 1), 7, cycle);
	check(len == 3 && is_cycle_from(g, cycle, len, be(2, 1)),
		  "three clusters: the newest is the victim, with all three edges");
}

static void
test_heavyweight_edge(void)
{
	/*
	 * A1 holds zklock x and waits for a row lock held by A2; A2 waits for x
	 * (request 9).
	 */
	zkl_wait_edge g[] = {hw_edge(be(1, 1), be(1, 2)), zk_edge(be(1, 2), be(1, 1), 9)};
	int			cycle[ZKL_MAX_CYCLE];
	int			len = victim(g, 2, be(1, 2), 9, cycle);

	check(len == 2 && is_cycle_from(g, cycle, len, be(1, 2)) &&
		  g[cycle[1]].kind == ZKL_WAIT_HEAVYWEIGHT,
		  "mixed cycle: the zklock waiter is the victim, through the row lock's edge");

	/* A waiter on PostgreSQL's lock alone is older than any request. */
	{
		zkl_wait_edge h[] = {
			zk_edge(be(1, 1), be(1, 2), 50),
			hw_edge(be(1, 2), be(1, 3)),
			zk_edge(be(1, 3), be(1, 1), 40),
		};

		check(victim(h, 3, be(1, 1), 50, cycle) == 3 && victim(h, 3, be(1, 3), 40, cycle) == 0,
			  "a heavyweight member never makes a zklock request older");
	}
}

static void
test_leaves_and_shared(void)
{
	int			cycle[ZKL_MAX_CYCLE];

	/* A Curator contender is a blocker with no edges of its own. */
	{
		zkl_backend_ref curator = {0x2000, 0};
		zkl_wait_edge g[] = {zk_edge(be(1, 1), curator, 10), zk_edge(be(2, 1), be(1, 1), 11)};

		check(victim(g, 2, be(1, 1), 10, cycle) == 0 && victim(g, 2, be(2, 1), 11, cycle) == 0,
			  "another client's contender is a leaf, never a cycle member");
	}

	/*
	 * A waits (request 1) for two shared holders B and C, which each wait for
	 * A: two cycles, each with its own newest request.
	 */
	{
		zkl_wait_edge g[] = {
			zk_edge(be(1, 1), be(2, 1), 1), zk_edge(be(1, 1), be(3, 1), 1),
			zk_edge(be(2, 1), be(1, 1), 5), zk_edge(be(3, 1), be(1, 1), 3),
		};

		check(victim(g, 4, be(1, 1), 1, cycle) == 0, "two cycles: the common oldest member waits on");
		check(victim(g, 4, be(2, 1), 5, cycle) == 2 && victim(g, 4, be(3, 1), 3, cycle) == 2,
			  "two cycles: each one's newest request is its victim");
	}

	/* A cycle elsewhere in the graph is not ours. */
	{
		zkl_wait_edge g[] = {
			zk_edge(be(1, 1), be(2, 1), 100),
			zk_edge(be(2, 1), be(3, 1), 2), zk_edge(be(3, 1), be(2, 1), 3),
		};

		check(victim(g, 3, be(1, 1), 100, cycle) == 0 &&
			  zkl_deadlock_any_cycle(g, 3, be(1, 1), cycle, ZKL_MAX_CYCLE) == 0,
			  "a waiter behind someone else's cycle is in none");
	}
}

static void
test_bound(void)
{
	zkl_wait_edge g[ZKL_MAX_CYCLE + 1];
	int			cycle[ZKL_MAX_CYCLE + 1];
	const int	N = ZKL_MAX_CYCLE + 1;

	for (int i = 0; i < N; i++)
		g[i] = zk_edge(be(i, 1), be((i + 1) % N, 1), i == 0 ? 1000 : i);
	check(zkl_deadlock_victim_cycle(g, N, be(0, 1), 1000, cycle, N) == N,
		  "a cycle of 17 is found when the bound allows 17");
	check(zkl_deadlock_victim_cycle(g, N, be(0, 1), 1000, cycle, ZKL_MAX_CYCLE) == 0,
		  "a cycle longer than the bound is not seen");

	/*
	 * N is first reached on a long path, where the bound cuts the search
	 * short, then on a short one, where the cycle through it fits.
	 */
	{
		zkl_wait_edge h[] = {
			zk_edge(be(0, 1), be(1, 1), 100),	/* self -> A */
			zk_edge(be(1, 1), be(2, 1), 1), /* A -> N */
			zk_edge(be(0, 1), be(2, 1), 100),	/* self -> N */
			zk_edge(be(2, 1), be(3, 1), 2), /* N -> M */
			zk_edge(be(3, 1), be(0, 1), 3), /* M -> self */
		};
		int			len = zkl_deadlock_victim_cycle(h, 5, be(0, 1), 100, cycle, 3);

		check(len == 3 && is_cycle_from(h, cycle, len, be(0, 1)),
			  "a backend cut short deep in the search is searched again when reached nearer");
	}
}

/* ---- random graphs against brute force ---- */

static uint32_t rng = 2463534242u;

static uint32_t
next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/*
 * Backends in a random graph: of one cluster, since waits on PostgreSQL
 * locks join backends of one cluster only (two clusters: below).
 */
#define NB 6

/*
 * Brute force: whether some simple cycle through self has self's request
 * as its newest zklock request.  adj[i][j]: i waits for j; czxid[i] == 0
 * for a backend waiting on a PostgreSQL lock.
 */
static int
brute_victim(int adj[NB][NB], const int64_t *czxid, int self, int at, int *on_path)
{
	for (int j = 0; j < NB; j++)
	{
		if (!adj[at][j])
			continue;
		if (j == self)
			return 1;
		if (on_path[j] || czxid[j] >= czxid[self])
			continue;
		on_path[j] = 1;
		if (brute_victim(adj, czxid, self, j, on_path))
			return 1;
		on_path[j] = 0;
	}
	return 0;
}

static void
test_random_graphs(void)
{
	int			mismatches = 0;
	int			unsound = 0;

	for (int round = 0; round < 5000; round++)
	{
		int			adj[NB][NB];
		int64_t		czxid[NB];
		zkl_wait_edge edges[NB * NB];
		int			nedges = 0;

		memset(adj, 0, sizeof(adj));
		for (int i = 0; i < NB; i++)
		{
			/* Distinct czxids; about one backend in four waits on a row lock. */
			czxid[i] = (next_random() % 4 == 0) ? 0 : 1 + i + NB * (int64_t) (next_random() % 50);
			for (int j = 0; j < NB; j++)
				if (i != j && next_random() % 5 == 0)
				{
					adj[i][j] = 1;
					edges[nedges++] = czxid[i] ? zk_edge(be(0, i), be(0, j), czxid[i])
						: hw_edge(be(0, i), be(0, j));
				}
		}
		for (int i = 0; i < NB; i++)
		{
			int			on_path[NB] = {0};
			int			cycle[ZKL_MAX_CYCLE];
			int			expect,
						got;

			if (czxid[i] == 0)
				continue;
			on_path[i] = 1;
			expect = brute_victim(adj, czxid, i, i, on_path);
			got = zkl_deadlock_victim_cycle(edges, nedges, be(0, i), czxid[i], cycle, ZKL_MAX_CYCLE);
			if ((got > 0) != expect)
				mismatches++;
			if (got > 0)
			{
				if (!is_cycle_from(edges, cycle, got, be(0, i)))
					unsound++;
				for (int k = 1; k < got; k++)
					if (edges[cycle[k]].czxid >= czxid[i])
						unsound++;
			}
		}

	}
	check(mismatches == 0, "5000 random graphs: a backend is a victim exactly when it is the newest request of a cycle");
	check(unsound == 0, "5000 random graphs: every cycle returned is a real cycle of older members");
}

/*
 * Graphs with exactly one cycle: a simple cycle over some backends, and
 * edges out of it and among the others that only go forward (so they close
 * no second cycle).  Exactly one member gives up, the newest request.
 */
static void
test_one_cycle_one_victim(void)
{
	int			wrong = 0;

	for (int round = 0; round < 2000; round++)
	{
		int			k = 2 + next_random() % (NB - 1);	/* cycle members 0..k-1 */
		int64_t		czxid[NB];
		zkl_wait_edge edges[NB * NB];
		int			nedges = 0;
		int			victims = 0;
		int			newest = -1;

		for (int i = 0; i < NB; i++)
			czxid[i] = (i > 0 && next_random() % 3 == 0) ? 0 : 1 + i + NB * (int64_t) (next_random() % 50);
		for (int i = 0; i < k; i++)
		{
			edges[nedges++] = czxid[i] ? zk_edge(be(0, i), be(0, (i + 1) % k), czxid[i])
				: hw_edge(be(0, i), be(0, (i + 1) % k));
			if (czxid[i] && (newest < 0 || czxid[i] > czxid[newest]))
				newest = i;
		}
		for (int i = 0; i < NB; i++)
			for (int j = k > i + 1 ? k : i + 1; j < NB; j++)
				if (next_random() % 3 == 0)
					edges[nedges++] = czxid[i] ? zk_edge(be(0, i), be(0, j), czxid[i])
						: hw_edge(be(0, i), be(0, j));
		for (int i = 0; i < NB; i++)
		{
			int			cycle[ZKL_MAX_CYCLE];

			if (czxid[i] &&
				zkl_deadlock_victim_cycle(edges, nedges, be(0, i), czxid[i], cycle, ZKL_MAX_CYCLE) > 0)
			{
				victims++;
				if (i != newest)
					wrong++;
			}
		}
		if (victims != 1)
			wrong++;
	}
	check(wrong == 0, "2000 graphs with one cycle: exactly one victim each, its newest request");
}

/*
 * A cycle through a PostgreSQL lock of cluster 1, whose newest zklock
 * request is of cluster 2: cluster 2 cannot see the PostgreSQL lock, so
 * the victim is the newest request of cluster 1.
 */
static void
test_heavyweight_cycle_other_cluster_newest(void)
{
	/* A(1) waits for B(2); B waits for C(1); C waits for A's row. */
	zkl_wait_edge all[] = {
		zk_edge(be(1, 1), be(2, 1), 5),
		zk_edge(be(2, 1), be(1, 3), 9),
		hw_edge(be(1, 3), be(1, 1)),
	};

	/* A2(1) too: A1 -> B -> C -> A2 -> A1, A2 newer than A1. */
	zkl_wait_edge two[] = {
		zk_edge(be(1, 1), be(2, 1), 5),
		zk_edge(be(2, 1), be(1, 3), 9),
		hw_edge(be(1, 3), be(1, 2)),
		zk_edge(be(1, 2), be(1, 1), 7),
	};
	int			cycle[ZKL_MAX_CYCLE];
	int			len;

	len = zkl_deadlock_victim_cycle(all, 3, be(1, 1), 5, cycle, ZKL_MAX_CYCLE);
	check(len == 3 && is_cycle_from(all, cycle, len, be(1, 1)),
		  "a cycle through a PostgreSQL lock: the newest request of that lock's cluster is the victim");
	/* B sees no PostgreSQL lock of cluster 1: only its own two edges. */
	len = zkl_deadlock_victim_cycle(all, 2, be(2, 1), 9, cycle, ZKL_MAX_CYCLE);
	check(len == 0, "... and the newer request of the other cluster, which cannot see the cycle, is not");
	len = zkl_deadlock_victim_cycle(two, 4, be(1, 2), 7, cycle, ZKL_MAX_CYCLE);
	check(len == 4 && is_cycle_from(two, cycle, len, be(1, 2)),
		  "with two requests of that cluster, its newer one is the victim");
	len = zkl_deadlock_victim_cycle(two, 4, be(1, 1), 5, cycle, ZKL_MAX_CYCLE);
	check(len == 0, "... and its older one is not");
}

/*
 * One cycle over backends of two clusters, as each member sees it: waits
 * on PostgreSQL locks (between two backends of cluster 0) are seen by
 * cluster 0 alone.  Exactly one member gives up: the newest request of the
 * cycle, or, when the cycle goes through a PostgreSQL lock, the newest
 * request of cluster 0.
 */
static void
test_two_cluster_cycles_one_victim(void)
{
	int			wrong = 0;
	int			with_heavy = 0;

	for (int round = 0; round < 3000; round++)
	{
		int			k = 2 + next_random() % (NB - 1);
		int			cluster[NB];
		int64_t		czxid[NB];
		zkl_wait_edge edges[NB];
		zkl_wait_edge visible[NB];
		int			heavy = 0;
		int			newest = -1;
		int			victims = 0;

		for (int i = 0; i < k; i++)
			cluster[i] = next_random() % 2;
		for (int i = 0; i < k; i++)
		{
			int			j = (i + 1) % k;

			if (cluster[i] == 0 && cluster[j] == 0 && next_random() % 2 == 0)
			{
				czxid[i] = 0;
				edges[i] = hw_edge(be(cluster[i], i), be(cluster[j], j));
				heavy = 1;
			}
			else
			{
				czxid[i] = 1 + i + NB * (int64_t) (next_random() % 50);
				edges[i] = zk_edge(be(cluster[i], i), be(cluster[j], j), czxid[i]);
			}
		}
		for (int i = 0; i < k; i++)
			if (czxid[i] && (!heavy || cluster[i] == 0) &&
				(newest < 0 || czxid[i] > czxid[newest]))
				newest = i;
		if (newest < 0)
			continue;			/* PostgreSQL's own cycle */
		with_heavy += heavy;
		for (int i = 0; i < k; i++)
		{
			int			cycle[ZKL_MAX_CYCLE];
			int			n = 0;

			if (czxid[i] == 0)
				continue;
			for (int e = 0; e < k; e++)
				if (cluster[i] == 0 || edges[e].kind == ZKL_WAIT_ZKLOCK)
					visible[n++] = edges[e];
			if (zkl_deadlock_victim_cycle(visible, n, be(cluster[i], i), czxid[i], cycle, ZKL_MAX_CYCLE) > 0)
			{
				victims++;
				if (i != newest)
					wrong++;
			}
		}
		if (victims != 1)
			wrong++;
	}
	check(wrong == 0 && with_heavy > 100,
		  "3000 cycles over two clusters, each member seeing its own: exactly one victim each, by the rule");
}

/*
 * A loop through a PostgreSQL lock that does not go through the detector
 * makes it no victim: S -> B1 -> Y -> S has B1 as its newest request, and
 * Y -> Z -> Y (Z waits for Y's row) is Y's.  A walk S -> B1 -> Y -> Z -> Y
 * -> S is no cycle.
 */
static void
test_heavyweight_loop_elsewhere(void)
{
	zkl_wait_edge g[] = {
		zk_edge(be(1, 1), be(2, 1), 10),	/* S waits for B1 */
		zk_edge(be(2, 1), be(1, 2), 30),	/* B1 waits for Y */
		zk_edge(be(1, 2), be(1, 1), 5), /* Y waits for S */
		zk_edge(be(1, 2), be(1, 3), 5), /* ... and for Z */
		hw_edge(be(1, 3), be(1, 2)),	/* Z waits for Y's row */
	};
	int			cycle[ZKL_MAX_CYCLE];

	check(zkl_deadlock_victim_cycle(g, 5, be(1, 1), 10, cycle, ZKL_MAX_CYCLE) == 0,
		  "a PostgreSQL lock wait on a loop that does not go through the detector makes it no victim");
}

/*
 * Brute force over two clusters: whether some simple cycle through self
 * makes it the victim: every other zklock request older, or the cycle has
 * a PostgreSQL lock wait and every other request of self's cluster is
 * older.
 */
static int
brute_victim2(int adj[NB][NB], const int *heavy, const int *cluster, const int64_t *czxid,
			  int self, int at, int *on_path, int saw_heavy, int all_older, int own_older)
{
	for (int j = 0; j < NB; j++)
	{
		int			h = saw_heavy || heavy[at];

		if (!adj[at][j])
			continue;
		if (j == self)
		{
			if (all_older || (h && own_older))
				return 1;
			continue;
		}
		if (on_path[j])
			continue;
		on_path[j] = 1;
		if (brute_victim2(adj, heavy, cluster, czxid, self, j, on_path, h,
						  all_older && czxid[j] < czxid[self],
						  own_older && (cluster[j] != cluster[self] || czxid[j] < czxid[self])))
			return 1;
		on_path[j] = 0;
	}
	return 0;
}

/*
 * Random graphs over two clusters with any number of cycles, each member
 * seeing what it can: PostgreSQL lock waits join backends of cluster 0 and
 * are seen by cluster 0 alone.
 */
static void
test_two_cluster_random_graphs(void)
{
	int			mismatches = 0;
	int			unsound = 0;

	for (int round = 0; round < 20000; round++)
	{
		int			adj[NB][NB];
		int			heavy[NB];
		int			cluster[NB];
		int64_t		czxid[NB];
		zkl_wait_edge edges[NB * NB];
		int			nedges = 0;

		memset(adj, 0, sizeof(adj));
		for (int i = 0; i < NB; i++)
			cluster[i] = next_random() % 2;
		for (int i = 0; i < NB; i++)
		{
			/* A backend of cluster 0 may wait on a PostgreSQL lock instead. */
			heavy[i] = cluster[i] == 0 && next_random() % 3 == 0;
			czxid[i] = heavy[i] ? 0 : 1 + i + NB * (int64_t) (next_random() % 50);
			for (int j = 0; j < NB; j++)
				if (i != j && (!heavy[i] || cluster[j] == 0) && next_random() % 3 == 0)
				{
					adj[i][j] = 1;
					edges[nedges++] = heavy[i] ? hw_edge(be(cluster[i], i), be(cluster[j], j))
						: zk_edge(be(cluster[i], i), be(cluster[j], j), czxid[i]);
				}
		}
		for (int i = 0; i < NB; i++)
		{
			int			vadj[NB][NB];
			int			vheavy[NB];
			zkl_wait_edge visible[NB * NB];
			int			n = 0;
			int			on_path[NB] = {0};
			int			cycle[ZKL_MAX_CYCLE];
			int			expect,
						got;

			if (heavy[i])
				continue;
			/* What i sees: cluster 1 sees no PostgreSQL lock waits. */
			for (int a = 0; a < NB; a++)
			{
				vheavy[a] = heavy[a];
				for (int b = 0; b < NB; b++)
					vadj[a][b] = adj[a][b] && (!heavy[a] || cluster[i] == 0);
			}
			for (int e = 0; e < nedges; e++)
				if (edges[e].kind == ZKL_WAIT_ZKLOCK || cluster[i] == 0)
					visible[n++] = edges[e];
			on_path[i] = 1;
			expect = brute_victim2(vadj, vheavy, cluster, czxid, i, i, on_path, 0, 1, 1);
			got = zkl_deadlock_victim_cycle(visible, n, be(cluster[i], i), czxid[i], cycle, ZKL_MAX_CYCLE);
			if ((got > 0) != expect)
				mismatches++;
			if (got > 0 && !is_cycle_from(visible, cycle, got, be(cluster[i], i)))
				unsound++;
			for (int k = 0; got > 0 && k < got; k++)
				for (int m = k + 1; m < got; m++)
					if (zkl_backend_equal(visible[cycle[k]].waiter, visible[cycle[m]].waiter))
						unsound++;
		}
	}
	check(mismatches == 0,
		  "20000 random two-cluster graphs, each member seeing its own: a victim exactly when the rule makes it one of a simple cycle");
	check(unsound == 0, "... and every cycle returned is a simple cycle");
}

/* ---- the lock rule's blockers: the graph's zklock edges ---- */

static void
test_blockers(void)
{
	const char *dir[] = {
		"_c_a-__READ__0000000001",	/* shared holder */
		"_c_b-__READ__0000000002",	/* shared holder */
		"_c_c-__WRIT__0000000003",	/* writer waiting for both */
		"_c_d-__READ__0000000004",	/* reader waiting for the writer */
		"4f1b__lock__0000000005",	/* kazoo writer */
	};
	int			b[8];
	int			n;

	n = zkl_blockers(dir, 5, dir[2], NULL, 0, b, 8);
	check(n == 2 && b[0] == 0 && b[1] == 1, "a writer's blockers are every node ahead");
	n = zkl_blockers(dir, 5, dir[3], NULL, 0, b, 8);
	check(n == 1 && b[0] == 2, "a reader's blockers are the writers ahead only");
	n = zkl_blockers(dir, 5, dir[4], NULL, 0, b, 8);
	check(n == 4, "a kazoo writer at the end waits for all four");
	n = zkl_blockers(dir, 5, dir[0], NULL, 0, b, 8);
	check(n == 0, "a holder has no blockers");
	n = zkl_blockers(dir, 5, dir[4], NULL, 0, b, 2);
	check(n == 4 && b[0] == 0 && b[1] == 1, "at most max_blockers are written, all are counted");
	{
		const char *ours[] = {"_c_a-__READ__0000000001"};

		n = zkl_blockers(dir, 5, dir[2], ours, 1, b, 8);
		check(n == 1 && b[0] == 1, "a backend's own node is not its blocker");
	}
	n = zkl_blockers(dir, 5, "_c_z-lock-0000000009", NULL, 0, b, 8);
	check(n == 0, "a request absent from the listing has no blockers");
}

/*
 * Whose a published wait is (issue 23, defect 7): the node under .waits is
 * named for its session, and that session must be its owner; the request
 * it names must be a node created by that same session, or anyone could
 * add an edge in another's name and make an innocent waiter a victim.
 */
static void
test_published_waits(void)
{
	zkl_backend_ref who = {0, 0};
	zkl_backend_ref pub = be(1, 1);
	zkl_backend_ref other = be(2, 1);
	const char *req = "_c_a-lock-0000000007";

	check(zkl_wait_publisher("0000000000001001-101", 0x1001, &who) &&
		  zkl_backend_equal(who, pub),
		  "a wait named for its owning session is that session's backend's");
	check(!zkl_wait_publisher("0000000000001001-101", 0x1002, &who),
		  "a wait named for another session than its owner is none");
	check(!zkl_wait_publisher("0000000000000000-101", 0, &who),
		  "a persistent node (no owner) is no wait");
	check(!zkl_wait_publisher("0000000000001001-0", 0x1001, &who) &&
		  !zkl_wait_publisher("0000000000001001--5", 0x1001, &who) &&
		  !zkl_wait_publisher("0000000000001001-0101", 0x1001, &who) &&
		  !zkl_wait_publisher("0000000000001001-101x", 0x1001, &who) &&
		  !zkl_wait_publisher("0000000000001001-", 0x1001, &who) &&
		  !zkl_wait_publisher("0000000000001001-99999999999", 0x1001, &who) &&
		  !zkl_wait_publisher("000000000001001-101", 0x1001, &who) &&
		  !zkl_wait_publisher("000000000000100A-101", 0x100A, &who) &&
		  !zkl_wait_publisher(" 000000000001001-101", 0x1001, &who) &&
		  !zkl_wait_publisher("", 0x1001, &who),
		  "names the worker does not write are no waits (pid 0, signs, leading zeros, junk, overflow, short or upper-case session)");
	check(zkl_wait_publisher("ffffffffffffffff-2147483647", -1, &who) &&
		  who.session == -1 && who.pid == 2147483647,
		  "the widest session and pid are read");

	check(zkl_wait_names_request(pub, req, 77, req, 77, pub.session),
		  "the wait's own request (its name, czxid and the publisher's session) is the request");
	check(!zkl_wait_names_request(pub, req, 77, req, 77, other.session),
		  "a node of the name and czxid the wait names, but created by another session, is not its request");
	check(!zkl_wait_names_request(pub, req, 77, req, 78, pub.session) &&
		  !zkl_wait_names_request(pub, req, 77, "_c_a-lock-0000000008", 77, pub.session),
		  "a node of another czxid or name is not the request");
}

/* ---- stand-ins: in which order the members of a cycle give up ---- */

/* The waiters of order[0..n), as pids. */
static bool
order_is(const zkl_wait_edge *g, const int *cycle, const int *order, int n,
		 const int *pids, int npids)
{
	if (n != npids)
		return false;
	for (int i = 0; i < n; i++)
		if (g[cycle[order[i]]].waiter.pid != be(0, pids[i]).pid)
			return false;
	return true;
}

static void
test_standin(void)
{
	int			cycle[ZKL_MAX_CYCLE];
	int			order[ZKL_MAX_CYCLE];
	int			len;
	int			n;

	/* X (older) -> Y (newer) -> X: Y first, whoever reads. */
	{
		zkl_wait_edge g[] = {
			zk_edge(be(0, 1), be(1, 1), 10),	/* X waits for Y */
			zk_edge(be(1, 1), be(0, 1), 20),	/* Y waits for X */
		};
		int			want[] = {1, 1};

		len = zkl_deadlock_any_cycle(g, 2, be(0, 1), cycle, ZKL_MAX_CYCLE);
		n = zkl_deadlock_standin_order(g, cycle, len, order);
		check(n == 2 && g[cycle[order[0]]].waiter.session == be(1, 1).session &&
			  g[cycle[order[1]]].waiter.session == be(0, 1).session,
			  "two members: the victim (newest) first, the older its stand-in");
		len = zkl_deadlock_any_cycle(g, 2, be(1, 1), cycle, ZKL_MAX_CYCLE);
		n = zkl_deadlock_standin_order(g, cycle, len, order);
		check(n == 2 && g[cycle[order[0]]].waiter.session == be(1, 1).session &&
			  order_is(g, cycle, order, 1, want, 1),
			  "the same order from the other member's cycle");
	}

	/* A (10) -> B (30) -> C (20) -> A: B, C, A. */
	{
		zkl_wait_edge g[] = {
			zk_edge(be(0, 1), be(1, 2), 10),
			zk_edge(be(1, 2), be(2, 3), 30),
			zk_edge(be(2, 3), be(0, 1), 20),
		};
		int			want[] = {2, 3, 1};
		bool		same = true;

		for (int from = 0; from < 3; from++)
		{
			zkl_backend_ref self = g[from].waiter;

			len = zkl_deadlock_any_cycle(g, 3, self, cycle, ZKL_MAX_CYCLE);
			n = zkl_deadlock_standin_order(g, cycle, len, order);
			same = same && order_is(g, cycle, order, n, want, 3);
		}
		check(same, "three members: newest first, the same order from every member");
	}

	/*
	 * A cycle through a PostgreSQL lock of cluster 0: the rule names both A1
	 * (15, the newest request of cluster 0) and B (30, the newest of all),
	 * newest first; B cannot see the cycle (its edge through the PostgreSQL
	 * lock is cluster 0's), and A1's reading of B's view shows that.  A2's
	 * wait on the PostgreSQL lock is in no turn.
	 */
	{
		zkl_wait_edge g[] = {
			zk_edge(be(0, 1), be(1, 5), 15),	/* A1 waits for B's zklock */
			zk_edge(be(1, 5), be(0, 2), 30),	/* B waits for A2's zklock */
			hw_edge(be(0, 2), be(0, 1)),	/* A2 waits for A1's row */
		};
		int			want[] = {5, 1};

		len = zkl_deadlock_any_cycle(g, 3, be(0, 1), cycle, ZKL_MAX_CYCLE);
		n = zkl_deadlock_standin_order(g, cycle, len, order);
		check(order_is(g, cycle, order, n, want, 2),
			  "a PostgreSQL lock's cycle: the members the rule names first, its PostgreSQL waiter in no turn");
	}
}

/*
 * On random cycles (2 to ZKL_MAX_CYCLE members, random requests) with
 * leaves beside them: every member computes the same order, it names each
 * member once, and its first is the one member the victim rule names.
 */
static void
test_standin_random(void)
{
	int			bad = 0;

	for (int round = 0; round < 2000; round++)
	{
		zkl_wait_edge g[2 * ZKL_MAX_CYCLE];
		int64_t		czxid[ZKL_MAX_CYCLE];
		int			n = 2 + (int) (next_random() % (ZKL_MAX_CYCLE - 1));
		int			ne = 0;
		int			first[ZKL_MAX_CYCLE] = {0};
		int			victim_pid = -1;
		int			nvictims = 0;

		for (int i = 0; i < n; i++)
		{
			czxid[i] = 1 + (int64_t) (next_random() % 1000) * ZKL_MAX_CYCLE + i;
			g[ne++] = zk_edge(be(i % 3, i), be((i + 1) % n % 3, (i + 1) % n), czxid[i]);
			if (next_random() % 2)
				/* A leaf: a wait for a holder that waits for nothing. */
				g[ne++] = zk_edge(be(i % 3, i), be(9, 50 + i), czxid[i]);
		}
		for (int i = 0; i < n; i++)
		{
			int			cycle[ZKL_MAX_CYCLE];
			int			order[ZKL_MAX_CYCLE];
			int			vcycle[ZKL_MAX_CYCLE];
			int			len = zkl_deadlock_any_cycle(g, ne, be(i % 3, i), cycle, ZKL_MAX_CYCLE);
			int			m = len == n ? zkl_deadlock_standin_order(g, cycle, len, order) : 0;
			bool		seen[ZKL_MAX_CYCLE] = {0};

			if (zkl_deadlock_victim_cycle(g, ne, be(i % 3, i), czxid[i], vcycle, ZKL_MAX_CYCLE) > 0)
			{
				victim_pid = i;
				nvictims++;
			}
			if (m != n)
			{
				bad++;
				continue;
			}
			for (int k = 0; k < m; k++)
			{
				int			pid = g[cycle[order[k]]].waiter.pid - be(0, 0).pid;

				if (seen[pid])
					bad++;
				seen[pid] = true;
				if (i == 0)
					first[k] = pid;
				else if (first[k] != pid)
					bad++;
			}
		}
		if (nvictims != 1 || first[0] != victim_pid)
			bad++;
	}
	check(bad == 0, "2,000 random cycles: one order for every member, each member once, the victim first");
}

/* ---- whether a change of .waits calls for another check ---- */

static void
test_recheck(void)
{
	const char *before[] = {"000000000000000a-1", "000000000000000a-2"};
	const char *reach[] = {"000000000000000a-2", "000000000000000b-7"};
	const char *same[] = {"000000000000000a-1", "000000000000000a-2"};
	const char *reached[] = {"000000000000000a-1", "000000000000000a-2", "000000000000000b-7"};
	const char *other[] = {"000000000000000a-1", "000000000000000a-2", "000000000000000c-9"};
	const char *gone[] = {"000000000000000a-1"};

	check(!zkl_waits_recheck(before, 2, same, 2, 10, 2, 10, 2, reach, 2, false) &&
		  !zkl_waits_recheck(before, 2, same, 2, 10, 2, 10, 2, reach, 2, true),
		  "no change: no check");
	check(zkl_waits_recheck(before, 2, reached, 3, 10, 2, 11, 3, reach, 2, false),
		  "a wait published by a backend the reading reached: a check");
	check(!zkl_waits_recheck(before, 2, other, 3, 10, 2, 11, 3, reach, 2, false) &&
		  zkl_waits_recheck(before, 2, other, 3, 10, 2, 11, 3, reach, 2, true),
		  "one by a backend it did not reach: none, unless the reading was cut short");
	check(!zkl_waits_recheck(before, 2, gone, 1, 10, 2, 11, 1, reach, 2, false) &&
		  zkl_waits_recheck(before, 2, gone, 1, 10, 2, 11, 1, reach, 2, true),
		  "a wait ended: no check, unless the reading was cut short");
	check(zkl_waits_recheck(before, 2, other, 3, 10, 2, 11, 3, reach, -1, false) &&
		  !zkl_waits_recheck(before, 2, gone, 1, 10, 2, 11, 1, reach, -1, false),
		  "nothing reached known: any wait published counts, a wait ended does not");
	check(zkl_waits_recheck(before, 2, same, 2, 10, 2, 12, 2, reach, 2, false),
		  "a wait ended and published again under its name: its publisher is not known, a check");
	check(zkl_waits_recheck(before, 2, same, 2, 10, 2, 14, 2, reach, 2, false),
		  "a wait published and gone between the readings: a check");
	check(!zkl_waits_recheck(before, 2, reached, 3, 10, 2, 8, 3, reach, 2, false) &&
		  !zkl_waits_recheck(before, 2, reached, 3, 10, 2, 8, 3, reach, 2, true),
		  "a listing older than the reading tells nothing");
	check(zkl_waits_recheck(before, 2, reached, 3, INT32_MAX, 2, INT32_MIN, 3, reach, 2, false),
		  "the counter's wrap is read as serial numbers");
}

/*
 * A look between checks: a check at once when there was none, when the
 * last could not read everything or a PostgreSQL lock wait began; no
 * request while the watch on .waits has not fired since the reading
 * judged last; a read otherwise.
 */
static void
test_look(void)
{
	check(zkl_waits_look(false, true, false, 5, 5) == ZKL_LOOK_CHECK,
		  "no check of this wait yet: a check");
	check(zkl_waits_look(true, false, false, 5, 5) == ZKL_LOOK_CHECK,
		  "the last check could not read everything: a check, watch or not");
	check(zkl_waits_look(true, true, true, 5, 5) == ZKL_LOOK_CHECK,
		  "a new wait on a PostgreSQL lock: a check, watch or not");
	check(zkl_waits_look(true, true, false, 5, 5) == ZKL_LOOK_QUIET,
		  "nothing published or ended under .waits since the last reading: no request");
	check(zkl_waits_look(true, true, false, 5, 6) == ZKL_LOOK_READ,
		  "the watch fired (or may have been lost) since: read .waits");
	check(zkl_waits_look(true, true, false, 0, 0) == ZKL_LOOK_READ,
		  "a reading listed without the watch set: read .waits");
}

/*
 * The worker's reading of .waits kept for the next: every create since is
 * a fresh name or one of its own publications, or it is read anew.
 */
static void
test_waits_cache(void)
{
	check(zkl_waits_cache_usable(10, 3, 10, 3, 0, 0),
		  "nothing changed: usable");
	check(zkl_waits_cache_usable(10, 3, 12, 5, 2, 0),
		  "two waits published under new names: usable");
	check(zkl_waits_cache_usable(10, 3, 12, 5, 1, 1),
		  "one new name and one publication of the worker's own: usable");
	check(zkl_waits_cache_usable(10, 3, 14, 3, 0, 2),
		  "own waits ended and published again under their names: usable");
	check(!zkl_waits_cache_usable(10, 3, 12, 3, 0, 0),
		  "a listed name deleted and created again by someone else: read anew");
	check(!zkl_waits_cache_usable(10, 3, 14, 3, 0, 1),
		  "two creates of known names, one of them not the worker's own: read anew");
	check(zkl_waits_cache_usable(10, 3, 11, 2, 0, 0),
		  "a wait ended: usable");
	check(!zkl_waits_cache_usable(10, 3, 9, 3, 0, 0),
		  "a listing older than the reading: read anew");
	check(zkl_waits_cache_usable(INT32_MAX, 3, INT32_MIN, 4, 1, 0),
		  "the counter's wrap is read as serial numbers");
}

int
main(void)
{
	test_two_clusters();
	test_equal_czxids();
	test_three_clusters();
	test_heavyweight_edge();
	test_leaves_and_shared();
	test_bound();
	test_random_graphs();
	test_one_cycle_one_victim();
	test_heavyweight_cycle_other_cluster_newest();
	test_two_cluster_cycles_one_victim();
	test_heavyweight_loop_elsewhere();
	test_two_cluster_random_graphs();
	test_blockers();
	test_published_waits();
	test_standin();
	test_standin_random();
	test_recheck();
	test_look();
	test_waits_cache();
	return tap_done();
}
