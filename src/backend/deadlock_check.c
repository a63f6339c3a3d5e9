/*-------------------------------------------------------------------------
 *
 * deadlock_check.c
 *		A backend's deadlock check of its own zklock wait, and when it runs.
 *		Runs in backends.
 *
 * When.  A wait that has lasted deadlock_timeout publishes itself and is
 * checked once, as PostgreSQL's own detector checks a wait once.  It is
 * checked again only when the waits-for graph may have changed in a way
 * that can close a cycle through it (zkl_deadlock_recheck_due, asked after
 * each further deadlock_timeout).  The edges of a wait only ever shrink
 * (waits_graph.c), so a cycle closes only with a new edge: a wait
 * published under <root>/.waits, or a new wait on a PostgreSQL lock in
 * this cluster.  A look reads this cluster's waits on PostgreSQL locks
 * (shared memory, no request), then the count of the worker's watch on
 * <root>/.waits (worker/inspect.c): when it has not moved since the last
 * reading of .waits this wait judged, nothing was published or ended
 * there, and the look makes no request (waits_for.c, zkl_waits_look).
 * Otherwise it reads the published waits (a reading shared by the
 * cluster's backends, recent_read.c, of which the worker reads only the
 * waits it neither read before nor published itself: about one listing
 * per cluster and half deadlock_timeout while waits come and go), and
 * checks again when a wait was published by a backend the last check
 * reached, or by anyone when that check was cut short by its bounds or
 * followed nothing (waits_for.c, zkl_waits_recheck).  A check that could
 * not read everything is made again at the next look.  Every member of a
 * cycle reaches the backend whose publication closed it (the rest of the
 * cycle was published before, and reached at a check that each earlier
 * publication brought back), so every published member checks after the
 * cycle closed; a queue of N waiters on one lock costs about one check per
 * waiter, not one per waiter and deadlock_timeout, and no request at all
 * while nobody publishes or ends a wait, however long it waits.
 *
 * The reads are no snapshot: edges read at different moments may form a
 * cycle that never existed at once.  A victim therefore reads the graph a
 * second time and gives up only when the same cycle, made of the same
 * nodes (known by their czxids), is there again.  ZooKeeper never reuses a
 * czxid, so each of those nodes existed all along from the first reading
 * to the second, and all of them at once at the moment between.
 *
 * Who gives up.  The victim rule (waits_for.c) names one member.  Its
 * reading is bounded, so it may not see the cycle that another member
 * sees; then the first member, in zkl_deadlock_standin_order, whose own
 * reading reaches the cycle gives up in its place.  A member that sees a
 * cycle it is not the victim of reads the graph as each member before it
 * would (from that member's published wait, by the same bound), and gives
 * up only when none of them reaches the cycle.  Nothing in this depends on
 * how long another member takes to read: a victim slowed down by a loaded
 * machine is waited for, never overtaken.
 *
 * A check's first reading may be a recent one of another backend
 * (recent_read.c); the second is always fresh: the argument above holds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/dsm.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "backend/contenders.h"
#include "backend/deadlock_check.h"
#include "backend/recent_read.h"
#include "backend/request.h"
#include "backend/waits_graph.h"
#include "names/encode.h"
#include "rules/waits_for.h"

/* A wait on a PostgreSQL lock: whose, and since when (zkl_pg_waiters). */
typedef struct zkl_pg_wait
{
	int			pid;
	uint64		since;
} zkl_pg_wait;

/*
 * What this backend's last check of its wait (slotno, generation) read,
 * for zkl_deadlock_recheck_due: whether the reading can be relied on, the
 * child counters of <root>/.waits it saw (and the watch count of the last
 * reading of them found to bring no check), the backends it reached, and
 * which backends of this cluster waited on PostgreSQL locks when it began.
 * Kept in TopMemoryContext; a backend has one wait at a time.
 */
static struct
{
	bool		valid;
	int			slotno;
	uint32		generation;
	bool		complete;
	bool		truncated;
	bool		edges_full;
	bool		reach_unknown;
	int32		waits_cversion;
	int32		waits_count;
	uint64		quiet_gen;		/* the watch count of the last reading of
								 * .waits judged to bring no check; 0: none */
	int			nnames;
	char	  **names;			/* children of .waits as read */
	int			nreach;
	zkl_backend_ref reach[ZKL_MAX_WAIT_EDGES + 1];
	char	  **reach_names;	/* the same, as the worker names waits */
	int			npg;
	zkl_pg_wait *pg_waiters;	/* MaxBackends entries */
	MemoryContext cxt;			/* holds reach_names */
	MemoryContext names_cxt;	/* holds names, replaced by a look too */
}			zkl_last;

static bool zkl_own_wait(zkl_slot *slot, uint32 generation, zkl_published *own, int *spare);
static void zkl_remember_waits(const zkl_graph *g);

/*
 * The waits on a PostgreSQL lock of this cluster's backends now, each known
 * by its backend's pid and the moment it began (PGPROC.waitStart): a
 * backend that was waiting at the last check and waits now may wait on
 * another lock, for another blocker (LOCK TABLE t1, t2 past t1; a row lock
 * whose xid ended), which is a new edge all the same.  A wait whose start
 * is not yet set counts as new again once it is: one check too many.
 */
static int
zkl_pg_waiters(zkl_pg_wait *waits, int max)
{
	int			n = 0;

	for (uint32 i = 0; i < ProcGlobal->allProcCount && n < max; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];

		if (proc->pid != 0 && proc->waitLock != NULL)
		{
			waits[n].pid = proc->pid;
			waits[n].since = pg_atomic_read_u64(&proc->waitStart);
			n++;
		}
	}
	return n;
}

static bool
zkl_reached(int64 session, int pid)
{
	zkl_backend_ref who = {session, pid};

	for (int i = 0; i < zkl_last.nreach; i++)
		if (zkl_backend_equal(zkl_last.reach[i], who))
			return true;
	return false;
}

/*
 * Whether a backend of this cluster began to wait on a PostgreSQL lock
 * since the last check, and the last reading reached it (or reached not
 * all it could): only such a wait can close a cycle through ours.
 */
static bool
zkl_new_pg_wait(int64 session)
{
	zkl_pg_wait *now = palloc(sizeof(zkl_pg_wait) * ProcGlobal->allProcCount);
	int			n = zkl_pg_waiters(now, ProcGlobal->allProcCount);
	bool		found = false;

	for (int i = 0; i < n && !found; i++)
	{
		bool		known = false;

		for (int j = 0; j < zkl_last.npg && !known; j++)
			known = zkl_last.pg_waiters[j].pid == now[i].pid &&
				zkl_last.pg_waiters[j].since == now[i].since;
		found = !known && (zkl_last.truncated || zkl_last.edges_full || zkl_last.reach_unknown ||
						   zkl_reached(session, now[i].pid));
	}
	pfree(now);
	return found;
}

/*
 * Whether the wait in slotno (of generation) is due for another check:
 * the last one could not read everything, or the graph may have gained an
 * edge that closes a cycle through it since (see the file's comment).
 */
bool
zkl_deadlock_recheck_due(int slotno, uint32 generation)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt;
	zkl_graph  *volatile g = NULL;
	zkl_published own;
	int			spare;
	int64		session;
	uint64		watch_gen;
	bool		known;
	bool		due;
	zkl_waits_look_verdict verdict;

	known = zkl_last.valid && zkl_last.slotno == slotno && zkl_last.generation == generation;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	session = zkl_shared->session_id;
	watch_gen = zkl_shared->waits_watch_gen;
	LWLockRelease(zkl_shared->lock);
	verdict = zkl_waits_look(known, known && zkl_last.complete,
							 known && zkl_last.complete && zkl_new_pg_wait(session),
							 known ? zkl_last.quiet_gen : 0, watch_gen);
	if (verdict == ZKL_LOOK_CHECK)
		return true;
	/* Nothing published or ended under .waits since: no request. */
	if (verdict == ZKL_LOOK_QUIET)
		return false;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zklock deadlock look", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	/* A wait that ended, or a read that cannot be made, is looked at later. */
	due = false;
	if (zkl_own_wait(&zkl_shared->slots[slotno], generation, &own, &spare) && spare >= 1)
	{
		zkl_checking = true;
		PG_TRY();
		{
			g = zkl_read_published(ZKL_SHARED_READING_AGE(DeadlockTimeout));
		}
		PG_FINALLY();
		{
			zkl_checking = false;
		}
		PG_END_TRY();
	}
	if (g != NULL && g->complete)
	{
		due = zkl_waits_recheck((const char *const *) zkl_last.names, zkl_last.nnames,
								(const char *const *) g->waits_names, g->nwaits_names,
								zkl_last.waits_cversion, zkl_last.waits_count,
								g->waits_cversion, g->waits_count,
								(const char *const *) zkl_last.reach_names,
								zkl_last.reach_unknown ? -1 : zkl_last.nreach,
								zkl_last.truncated);

		/*
		 * A check that followed nothing, because every published wait was in
		 * own's directory, would follow nothing now either when that still
		 * holds: this reading stands for it.
		 */
		if (due && zkl_last.reach_unknown && !zkl_last.truncated && zkl_waits_one_dir(g, &own))
		{
			due = false;
			zkl_remember_waits(g);
		}

		/*
		 * The same children and counters would bring no check again: until
		 * the watch moves, the next look needs no reading (zkl_waits_look).
		 */
		if (!due)
			zkl_last.quiet_gen = g->waits_watch_gen;
	}
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(cxt);
	return due;
}

/* The published waits and counters of reading g, for the next look. */
static void
zkl_remember_waits(const zkl_graph *g)
{
	MemoryContext old;
	char	  **names;

	MemoryContextReset(zkl_last.names_cxt);
	old = MemoryContextSwitchTo(zkl_last.names_cxt);
	names = palloc(sizeof(char *) * Max(g->nwaits_names, 1));

	for (int i = 0; i < g->nwaits_names; i++)
		names[i] = pstrdup(g->waits_names[i]);
	zkl_last.names = names;
	zkl_last.nnames = g->nwaits_names;
	zkl_last.waits_cversion = g->waits_cversion;
	zkl_last.waits_count = g->waits_count;
	MemoryContextSwitchTo(old);
}

/* Remember what the check's first reading saw, for the next look. */
static void
zkl_remember(int slotno, uint32 generation, const zkl_graph *g, const zkl_pg_wait *pg, int npg)
{
	MemoryContext old;

	if (zkl_last.cxt == NULL)
	{
		zkl_last.cxt = AllocSetContextCreate(TopMemoryContext, "zklock last deadlock check",
											 ALLOCSET_SMALL_SIZES);
		zkl_last.names_cxt = AllocSetContextCreate(TopMemoryContext, "zklock published waits seen",
												   ALLOCSET_SMALL_SIZES);
		zkl_last.pg_waiters = MemoryContextAlloc(TopMemoryContext,
												 sizeof(zkl_pg_wait) * ProcGlobal->allProcCount);
	}
	MemoryContextReset(zkl_last.cxt);
	zkl_last.valid = true;
	zkl_last.slotno = slotno;
	zkl_last.generation = generation;
	zkl_last.complete = g != NULL && g->complete;
	zkl_last.truncated = g == NULL || g->truncated;
	zkl_last.edges_full = g == NULL || g->edges_full;
	zkl_last.reach_unknown = g == NULL || g->reach_unknown;
	zkl_last.waits_cversion = 0;
	zkl_last.waits_count = 0;
	zkl_last.quiet_gen = g != NULL && g->complete ? g->waits_watch_gen : 0;
	zkl_last.nnames = 0;
	zkl_last.nreach = 0;
	zkl_last.names = NULL;
	zkl_last.reach_names = NULL;
	if (g)
	{
		zkl_remember_waits(g);
		old = MemoryContextSwitchTo(zkl_last.cxt);
		zkl_last.reach_names = palloc(sizeof(char *) * Max(g->nqueue, 1));
		for (int i = 0; i < g->nqueue; i++)
		{
			zkl_last.reach[i] = g->queue[i];
			/* As the worker names a published wait (zkl_wait_publisher). */
			zkl_last.reach_names[i] = psprintf("%016llx-%d",
											   (unsigned long long) g->queue[i].session,
											   g->queue[i].pid);
		}
		zkl_last.nreach = g->nqueue;
		MemoryContextSwitchTo(old);
	}
	zkl_last.npg = Min(npg, (int) ProcGlobal->allProcCount);
	memcpy(zkl_last.pg_waiters, pg, sizeof(zkl_pg_wait) * zkl_last.npg);
}

/* Whether two readings found the same cycle, node for node. */
static bool
zkl_same_cycle(const zkl_graph *a, const int *ca, int na,
			   const zkl_graph *b, const int *cb, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
	{
		const zkl_wait_edge *x = &a->edges[ca[i]];
		const zkl_wait_edge *y = &b->edges[cb[i]];

		if (!zkl_backend_equal(x->waiter, y->waiter) || !zkl_backend_equal(x->blocker, y->blocker) ||
			x->kind != y->kind || x->czxid != y->czxid ||
			a->info[ca[i]].blocker_czxid != b->info[cb[i]].blocker_czxid)
			return false;
	}
	return true;
}



/* Whether graph g has every edge of the cycle that cycle[] names in c. */
static bool
zkl_graph_has_cycle(const zkl_graph *g, const zkl_graph *c, const int *cycle, int n)
{
	for (int k = 0; k < n; k++)
	{
		const zkl_wait_edge *x = &c->edges[cycle[k]];
		bool		found = false;

		for (int i = 0; i < g->nedges && !found; i++)
		{
			const zkl_wait_edge *y = &g->edges[i];

			found = zkl_backend_equal(x->waiter, y->waiter) && zkl_backend_equal(x->blocker, y->blocker) &&
				x->kind == y->kind && x->czxid == y->czxid &&
				c->info[cycle[k]].blocker_czxid == g->info[i].blocker_czxid;
		}
		if (!found)
			return false;
	}
	return true;
}

/*
 * A cycle through this backend's wait of which it is not the victim, when
 * it is this backend's turn to give up in the victim's place: no member
 * before it in zkl_deadlock_standin_order reaches the cycle with its own
 * bounded reading, which is made here as that member makes it.  Returns
 * the cycle's length and edges in cycle, or 0.
 */
static int
zkl_standin_cycle(zkl_graph *g, const zkl_published *own, int *cycle)
{
	int			n = zkl_deadlock_any_cycle(g->edges, g->nedges, own->who, cycle, ZKL_MAX_CYCLE);
	int			order[ZKL_MAX_CYCLE];
	int			m;

	if (n == 0)
		return 0;
	m = zkl_deadlock_standin_order(g->edges, cycle, n, order);
	for (int i = 0; i < m; i++)
	{
		const zkl_wait_edge *e = &g->edges[cycle[order[i]]];
		zkl_published *member;

		CHECK_FOR_INTERRUPTS();
		if (zkl_backend_equal(e->waiter, own->who))
			return n;
		/* Its wait is an edge here, so it was published; else wait. */
		member = zkl_find_published(g, e->waiter);
		if (member == NULL)
			return 0;
		if (zkl_graph_has_cycle(zkl_read_graph(member, ZKL_MAX_CYCLE, g->max_age_us), g, cycle, n))
			return 0;
	}
	return 0;
}

/* The cycle in the words of PostgreSQL's own deadlock report. */
static char *
zkl_describe_cycle(const zkl_graph *g, const int *cycle, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
	{
		const zkl_wait_edge *e = &g->edges[cycle[i]];
		const zkl_edge_info *info = &g->info[cycle[i]];

		if (i > 0)
			appendStringInfoChar(&buf, '\n');
		if (e->kind == ZKL_WAIT_ZKLOCK)
			appendStringInfo(&buf, "Process %d of cluster \"%s\" waits for ZooKeeper lock \"%s\" in %s mode; blocked by process %d of cluster \"%s\".",
							 e->waiter.pid, info->waiter_cluster, info->lock,
							 info->mode ? info->mode : "?", e->blocker.pid,
							 info->blocker_cluster ? info->blocker_cluster : "?");
		else
			appendStringInfo(&buf, "Process %d of cluster \"%s\" waits for a PostgreSQL lock; blocked by process %d.",
							 e->waiter.pid, info->waiter_cluster, e->blocker.pid);
	}
	return buf.data;
}

/*
 * This backend's wait on the request in slot, as it publishes it, while
 * the request waits in ZooKeeper (else false); and the reserve slots spare.
 */
static bool
zkl_own_wait(zkl_slot *slot, uint32 generation, zkl_published *own, int *spare)
{
	bool		waiting;

	memset(own, 0, sizeof(*own));
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	waiting = slot->generation == generation && slot->state == ZKL_SLOT_WAITING &&
		slot->node[0] != '\0' && zkl_shared->session_id != 0;
	if (waiting)
	{
		own->who.session = zkl_shared->session_id;
		own->who.pid = MyProcPid;
		own->dir = pstrdup(slot->dir);
		own->node = pstrdup(slot->node);
		own->czxid = slot->token;
		own->mode = pstrdup(slot->kind == ZKL_NODE_READ ? "shared" : "exclusive");
		own->timeout_ms = DeadlockTimeout;
	}
	*spare = zkl_shared->nslots - zkl_shared->nlock_slots - zkl_shared->nreserve_used;
	LWLockRelease(zkl_shared->lock);
	return waiting;
}

/*
 * Look for a cycle through this backend's wait on the request in slot
 * slotno, after publishing the wait.  Returns the description of a cycle
 * in which this request gives up (allocated in the caller's context), or
 * NULL: no cycle, another member gives up, or the wait is over.
 */
char	   *
zkl_deadlock_check(int slotno, uint32 generation, const char *name)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt;
	zkl_published own;
	bool		waiting;
	int			spare;
	zkl_graph  *volatile first = NULL;
	zkl_graph  *volatile second = NULL;
	int			cycle1[ZKL_MAX_CYCLE];
	int			cycle2[ZKL_MAX_CYCLE];
	volatile int n1 = 0;
	volatile bool standin = false;
	int			n2;
	char	   *volatile result = NULL;
	zkl_pg_wait *pg;
	int			npg;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zklock deadlock check", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	/* A wait on a PostgreSQL lock from now on is news to the next look. */
	pg = palloc(sizeof(zkl_pg_wait) * ProcGlobal->allProcCount);
	npg = zkl_pg_waiters(pg, ProcGlobal->allProcCount);
	waiting = zkl_own_wait(slot, generation, &own, &spare);

	/*
	 * The publication and each read take a reserve slot (were they short, the
	 * check waits for the next look), and so does an unproven session.
	 */
	if (waiting && spare >= 2 && zkl_session_proven(NULL, NULL, NULL))
	{
		own.cluster = zkl_own_cluster_label();
		zkl_publish_wait();
		zkl_count(deadlock_checks);
		zkl_checking = true;
		PG_TRY();
		{
			first = zkl_read_graph(&own, ZKL_MAX_CYCLE, ZKL_SHARED_READING_AGE(DeadlockTimeout));
			n1 = zkl_deadlock_victim_cycle(first->edges, first->nedges, own.who, own.czxid,
										   cycle1, ZKL_MAX_CYCLE);
			if (n1 == 0)
			{
				n1 = zkl_standin_cycle(first, &own, cycle1);
				standin = n1 > 0;
			}
			second = n1 > 0 ? zkl_read_graph(&own, ZKL_MAX_CYCLE, 0) : NULL;
		}
		PG_FINALLY();
		{
			zkl_checking = false;
		}
		PG_END_TRY();
		zkl_remember(slotno, generation, first, pg, npg);
		if (second != NULL)
		{
			n2 = standin ?
				zkl_deadlock_any_cycle(second->edges, second->nedges, own.who, cycle2, ZKL_MAX_CYCLE) :
				zkl_deadlock_victim_cycle(second->edges, second->nedges, own.who, own.czxid,
										  cycle2, ZKL_MAX_CYCLE);
			LWLockAcquire(zkl_shared->lock, LW_SHARED);
			waiting = slot->generation == generation && slot->state == ZKL_SLOT_WAITING;
			LWLockRelease(zkl_shared->lock);
			if (waiting && n2 > 0 && zkl_same_cycle(first, cycle1, n1, second, cycle2, n2))
			{
				char	   *detail = zkl_describe_cycle(second, cycle2, n2);

				if (standin)
					detail = psprintf("%s\nProcess %d gives up in the place of the cycle's newest request, whose reading of the graph cannot reach the cycle.",
									  detail, MyProcPid);
				result = MemoryContextStrdup(caller, detail);
			}
		}
	}
	else
		zkl_remember(slotno, generation, NULL, pg, npg);
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(cxt);
	return result;
}
