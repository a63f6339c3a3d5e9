/*-------------------------------------------------------------------------
 *
 * waits_graph_fuzz.c
 *		Fuzz target of the search for deadlock cycles in the waits-for
 *		graph that published waits build (src/rules/waits_for.c): whatever waits
 *		the clusters publish, the search stays within its bounds.  The
 *		input is a list of edges, 4 bytes each: waiter, blocker (one of 16
 *		backends of 4 sessions), kind, and a czxid (one of 256).
 *
 * Properties, beyond the sanitizers: a cycle found is a chain of edges
 * from self back to self, within max_cycle; a victim's cycle has no other
 * zklock waiter newer than self (requests of one multi share a czxid: the
 * higher session, then pid, is the newer), or goes through a PostgreSQL
 * lock wait.
 *
 *-------------------------------------------------------------------------
 */
#include "fuzz_util.h"
#include "rules/waits_for.h"

static zkl_backend_ref
backend(uint8_t b)
{
	zkl_backend_ref r = {(int64_t) ((b >> 2) & 3) + 1, (int32_t) (b & 3) + 100};

	return r;
}

static void
check_cycle(const zkl_wait_edge *edges, int nedges, zkl_backend_ref self,
			const int *cycle, int len, int max_cycle)
{
	fuzz_assert(len >= 0 && len <= max_cycle);
	if (len == 0)
		return;
	for (int k = 0; k < len; k++)
		fuzz_assert(cycle[k] >= 0 && cycle[k] < nedges);
	fuzz_assert(zkl_backend_equal(edges[cycle[0]].waiter, self));
	for (int k = 0; k + 1 < len; k++)
		fuzz_assert(zkl_backend_equal(edges[cycle[k]].blocker, edges[cycle[k + 1]].waiter));
	fuzz_assert(zkl_backend_equal(edges[cycle[len - 1]].blocker, self));
}

/* The czxid of backend's zklock wait (its newest), or 0. */
static int64_t
wait_czxid(const zkl_wait_edge *edges, int nedges, zkl_backend_ref b)
{
	int64_t		czxid = 0;

	for (int i = 0; i < nedges; i++)
		if (edges[i].kind == ZKL_WAIT_ZKLOCK && zkl_backend_equal(edges[i].waiter, b) &&
			edges[i].czxid > czxid)
			czxid = edges[i].czxid;
	return czxid;
}

/* The victim rule (waits_for.c): self is the newest of the cycle's waiters. */
static void
check_victim(const zkl_wait_edge *edges, int nedges, zkl_backend_ref self,
			 int64_t self_czxid, const int *cycle, int len)
{
	bool		older = true;
	bool		older_here = true;
	bool		heavy = false;

	for (int k = 0; k < len; k++)
	{
		zkl_backend_ref m = edges[cycle[k]].waiter;
		int64_t		czxid = wait_czxid(edges, nedges, m);

		heavy |= edges[cycle[k]].kind == ZKL_WAIT_HEAVYWEIGHT;
		if (k == 0)
			continue;
		/* Newer: a higher czxid, or one multi's: a higher session, then pid. */
		if (czxid > self_czxid ||
			(czxid == self_czxid && (m.session > self.session ||
									 (m.session == self.session && m.pid > self.pid))))
		{
			older = false;
			if (m.session == self.session)
				older_here = false;
		}
	}
	fuzz_assert(older || (heavy && older_here));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	zkl_wait_edge edges[ZKL_MAX_WAIT_EDGES + 8];
	int			nedges = 0;
	int			cycle[ZKL_MAX_CYCLE];
	int			max_cycle;
	int			capped;

	if (size < 1)
		return 0;
	max_cycle = 1 + data[0] % ZKL_MAX_CYCLE;
	for (size_t i = 1; i + 4 <= size && nedges < (int) (sizeof(edges) / sizeof(edges[0])); i += 4)
	{
		zkl_wait_edge *e = &edges[nedges];

		e->waiter = backend(data[i]);
		e->blocker = backend(data[i + 1]);
		e->kind = data[i + 2] & 1 ? ZKL_WAIT_HEAVYWEIGHT : ZKL_WAIT_ZKLOCK;
		e->czxid = e->kind == ZKL_WAIT_ZKLOCK ? (int64_t) data[i + 3] + 1 : 0;
		e->what = nedges++;
	}

	/* The search reads the first ZKL_MAX_WAIT_EDGES only. */
	capped = nedges < ZKL_MAX_WAIT_EDGES ? nedges : ZKL_MAX_WAIT_EDGES;
	/* Every backend as the detector, with its own zklock wait. */
	for (int b = 0; b < 16; b++)
	{
		zkl_backend_ref self = backend((uint8_t) b);
		int64_t		self_czxid = 0;
		int			len;

		self_czxid = wait_czxid(edges, capped, self);

		len = zkl_deadlock_any_cycle(edges, nedges, self, cycle, max_cycle);
		check_cycle(edges, capped, self, cycle, len, max_cycle);
		if (self_czxid == 0)
			continue;
		len = zkl_deadlock_victim_cycle(edges, nedges, self, self_czxid, cycle, max_cycle);
		check_cycle(edges, capped, self, cycle, len, max_cycle);
		check_victim(edges, capped, self, self_czxid, cycle, len);
	}
	return 0;
}
