/*-------------------------------------------------------------------------
 *
 * deadlock.c
 *		Distributed deadlock detection.  A backend whose zklock wait has
 *		lasted deadlock_timeout publishes it, collects the waits-for edges
 *		it can see in every cluster, and gives up when it is the victim of a
 *		cycle (the rule is waits_for.c's); it looks again after each further
 *		deadlock_timeout.  zk_waits_for() shows the same edges.
 *
 * The edges come from three places:
 * - the published waits, one ephemeral node <root>/.waits/<session>-<pid>
 *   per backend of any cluster whose wait lasted deadlock_timeout; its data
 *   names the request's directory, node and czxid (worker/inspect.c writes it),
 *   believed only when that node is the publishing session's own
 *   (waits_for.c, zkl_wait_names_request);
 * - the lock directories they name: by the lock rule (zkl_blockers), the
 *   nodes a request waits for, each a backend of some cluster (its node's
 *   ephemeralOwner and the pid of its data) or another client's contender,
 *   which publishes nothing and so is a leaf of the graph;
 * - for a blocker of this cluster, its waits on PostgreSQL's own locks
 *   (pg_blocking_pids), which only this cluster can see.
 * Every read goes through the worker (zkl_ask_worker); nothing here runs on
 * a libzookeeper thread.  A detection reads at most ZKL_MAX_CYCLE lock
 * directories besides the waits, and keeps at most ZKL_MAX_WAIT_EDGES edges.
 *
 * The reads are no snapshot: edges read at different moments may form a
 * cycle that never existed at once.  A victim therefore reads the graph a
 * second time and gives up only when the same cycle, made of the same
 * nodes (known by their czxids), is there again.  ZooKeeper never reuses a
 * czxid, so each of those nodes existed all along from the first reading
 * to the second, and all of them at once at the moment between.
 *
 * A member that is not a cycle's victim remembers the cycle it saw, and
 * when it has seen the same one at every check for its turn, it gives up
 * in the victim's place (waits_for.c, stand-ins), after the same second
 * reading: the victim's reads may end, at the bound, before they reach the
 * cycle.  Each published wait carries its backend's deadlock_timeout, by
 * which the turns are counted.
 *
 * A check's first reading may be a recent one of another backend
 * (recent_read.c); the second is always fresh: the argument above holds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/dsm.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backend/contenders.h"
#include "backend/deadlock.h"
#include "backend/recent_read.h"
#include "backend/request.h"
#include "rules/json_fields.h"
#include "names/lock_name.h"
#include "rules/waits_for.h"
#include "names/encode.h"
#include "names/name_text.h"
#include "shared/inspect_reply.h"

/* A wait as published in <root>/.waits (or this backend's own). */
typedef struct zkl_published
{
	zkl_backend_ref who;
	char	   *dir;			/* the request's lock directory */
	char	   *node;			/* the request's node in it */
	int64		czxid;			/* and that node's czxid */
	char	   *cluster;		/* what the waiter's cluster is called */
	char	   *mode;
	int64		timeout_ms;		/* the waiter's deadlock_timeout; 0 unknown */
} zkl_published;

/* What edge i of a graph is, for the error's detail and zk_waits_for. */
typedef struct zkl_edge_info
{
	char	   *waiter_cluster;
	char	   *lock;			/* NULL: a PostgreSQL lock */
	char	   *mode;
	int64		since_ms;		/* creation of the waiting node; 0 unknown */
	char	   *blocker_cluster;	/* NULL: another client */
	const char *blocker_client;
	char	   *blocker_node;	/* path; NULL for a PostgreSQL lock */
	int64		blocker_czxid;	/* 0 for a PostgreSQL lock */
	int64		timeout_ms;		/* the waiter's deadlock_timeout; 0 unknown */
} zkl_edge_info;

/*
 * The cycle this backend's last checks saw without being its victim, and
 * since when (waits_for.c, stand-ins): a member that keeps seeing it gives
 * up in the place of a victim that cannot see it.  Only the wait of
 * (slotno, generation) counts; another cycle, or none, starts again.
 */
static struct
{
	bool		valid;
	int			slotno;
	uint32		generation;
	int			n;
	zkl_wait_edge edges[ZKL_MAX_CYCLE];
	int64		blocker_czxid[ZKL_MAX_CYCLE];
	TimestampTz since;
}			zkl_seen;

/* One lock directory read during a pass. */
typedef struct zkl_dir_read
{
	char	   *dir;
	zkl_contender *all;
	int			n;
} zkl_dir_read;

/* The waits-for graph of one pass. */
typedef struct zkl_graph
{
	int64		session;		/* this cluster's: its backends' edges are
								 * ours to follow */
	zkl_wait_edge edges[ZKL_MAX_WAIT_EDGES];
	zkl_edge_info info[ZKL_MAX_WAIT_EDGES];
	int			nedges;
	zkl_published *waits;
	int			nwaits;
	zkl_dir_read *dirs;
	int			ndirs;
	int			max_dirs;
	int64		max_age_us;		/* how old a shared reading may be */
	zkl_backend_ref queue[ZKL_MAX_WAIT_EDGES + 1];	/* backends to follow */
	int			nqueue;
} zkl_graph;

/* What this cluster is called in a description: cluster_name or host:port. */
static char *
zkl_cluster_label(const char *cluster, const char *host, const char *port)
{
	if (cluster && cluster[0] != '\0')
		return pstrdup(cluster);
	return psprintf("%s:%s", host ? host : "", port ? port : "");
}

static char *
zkl_own_cluster_label(void)
{
	char		host[256];

	zkl_host_name(host, sizeof(host));
	return zkl_cluster_label(cluster_name, host, psprintf("%d", PostPortNumber));
}

/* UTF-8 text of a description as text of this database (%XX where not). */
static char *
zkl_from_utf8(const char *s)
{
	return s ? text_to_cstring(zkl_text_for_reader(s, strlen(s), PG_UTF8)) : NULL;
}

/* A contender's cluster, from zklock's description; NULL for other clients. */
static char *
zkl_contender_cluster(const zkl_contender *c)
{
	if (c->pid == 0)
		return NULL;
	return zkl_cluster_label(zkl_from_utf8(c->cluster), zkl_from_utf8(c->host), zkl_from_utf8(c->port));
}

/*
 * The lock name of a directory (zkl_lock_dir_ok accepted it), shown in this
 * database's encoding, %XX where it is not valid here.
 */
static char *
zkl_lock_of_dir(const char *dir)
{
	char	   *name = zkl_decode_name(strrchr(dir, '/') + 1);

	if (name == NULL)
		return pstrdup(dir);
	return text_to_cstring(zkl_text_for_reader(name, strlen(name), GetDatabaseEncoding()));
}

/*
 * Whether a published wait names a lock directory of ours and a node in
 * it: anything may be written under .waits by a client of that session,
 * and only zklock's own directories are read on its word.
 */
static bool
zkl_lock_dir_ok(const char *dir, const char *node)
{
	char		name[ZKL_MAX_NAME_LEN + 1];

	return dir != NULL && node != NULL && strlen(dir) < ZKL_MAX_DIR_LEN &&
		zkl_lock_dir_decode(zkl_root, dir, name, ZKL_MAX_NAME_LEN) > 0 &&
		zkl_node_name_ok(node, ZKL_MAX_NODE_LEN);
}

/*
 * Read every published wait.  A node is taken only when its name is
 * "<session>-<pid>" and it belongs to that session, as the worker makes
 * them (zkl_wait_publisher); anything else under .waits is not a wait.
 */
static void
zkl_read_waits(zkl_graph *g)
{
	static const char *const keys[] = {"lock_dir", "lock_node", "czxid", "mode", "cluster", "host", "port", "deadlock_timeout"};
	char	   *dir = zkl_waits_dir();
	dsm_segment *seg = zkl_fetch_recent(".waits", dir, g->max_age_us);
	zkl_inspect_reply *reply = dsm_segment_address(seg);
	char	   *p = (char *) reply + MAXALIGN(sizeof(zkl_inspect_reply));

	g->waits = palloc0(sizeof(zkl_published) * Max(reply->nchildren, 1));
	g->nwaits = 0;
	for (int i = 0; i < reply->nchildren; i++)
	{
		zkl_inspect_entry *e = (zkl_inspect_entry *) p;
		char	   *name = pnstrdup(p + sizeof(zkl_inspect_entry), e->name_len);
		char	   *data = pnstrdup(p + sizeof(zkl_inspect_entry) + e->name_len, e->data_len);
		zkl_backend_ref who;
		char	   *f[lengthof(keys)];

		p += MAXALIGN(sizeof(zkl_inspect_entry) + e->name_len + e->data_len);
		if (!zkl_wait_publisher(name, e->owner, &who))
			continue;
		if (zkl_json_fields(data, e->data_len, keys, f, lengthof(keys)))
		{
			zkl_published *w = &g->waits[g->nwaits];

			w->who = who;
			w->dir = f[0];
			w->node = f[1];
			w->czxid = f[2] ? strtoll(f[2], NULL, 10) : 0;
			w->mode = zkl_from_utf8(f[3]);
			w->cluster = zkl_cluster_label(zkl_from_utf8(f[4]), zkl_from_utf8(f[5]), zkl_from_utf8(f[6]));
			w->timeout_ms = f[7] ? Min(Max(strtoll(f[7], NULL, 10), 0), INT_MAX) : 0;	/* the setting's bounds */
			if (zkl_lock_dir_ok(w->dir, w->node) && w->czxid != 0)
				g->nwaits++;
		}
	}
	dsm_detach(seg);
	pfree(dir);
}

static zkl_published *
zkl_find_published(zkl_graph *g, zkl_backend_ref who)
{
	for (int i = 0; i < g->nwaits; i++)
		if (zkl_backend_equal(g->waits[i].who, who))
			return &g->waits[i];
	return NULL;
}

/* Queue a backend to follow, once. */
static void
zkl_follow_later(zkl_graph *g, zkl_backend_ref who)
{
	for (int i = 0; i < g->nqueue; i++)
		if (zkl_backend_equal(g->queue[i], who))
			return;
	if (g->nqueue < (int) lengthof(g->queue))
		g->queue[g->nqueue++] = who;
}

static zkl_edge_info *
zkl_add_edge(zkl_graph *g, zkl_backend_ref waiter, zkl_backend_ref blocker,
			 zkl_wait_kind kind, int64 czxid)
{
	zkl_wait_edge *e;

	if (g->nedges >= ZKL_MAX_WAIT_EDGES)
		return NULL;
	e = &g->edges[g->nedges];
	e->waiter = waiter;
	e->blocker = blocker;
	e->kind = kind;
	e->czxid = czxid;
	e->what = g->nedges;
	memset(&g->info[g->nedges], 0, sizeof(zkl_edge_info));
	return &g->info[g->nedges++];
}

/* A lock directory's contenders, read once per pass; NULL past the bound. */
static zkl_dir_read *
zkl_graph_dir(zkl_graph *g, const char *dir)
{
	zkl_dir_read *d;

	for (int i = 0; i < g->ndirs; i++)
		if (strcmp(g->dirs[i].dir, dir) == 0)
			return &g->dirs[i];
	if (g->ndirs >= g->max_dirs)
		return NULL;
	d = &g->dirs[g->ndirs++];
	d->dir = pstrdup(dir);
	d->all = zkl_contenders_in(zkl_fetch_recent(zkl_lock_of_dir(dir), dir, g->max_age_us), false, false, &d->n);
	return d;
}

/* The edges of a zklock wait: the request's blockers by the lock rule. */
static void
zkl_follow_zklock(zkl_graph *g, const zkl_published *w)
{
	zkl_dir_read *d = zkl_graph_dir(g, w->dir);
	const char **names;
	const char **ours;
	int		   *blockers;
	int			nours = 0;
	int			self = -1;
	int			nblockers;
	char	   *lock;

	if (d == NULL)
		return;
	for (int i = 0; i < d->n; i++)
		if (zkl_wait_names_request(w->who, w->node, w->czxid,
								   d->all[i].node, d->all[i].czxid, d->all[i].session))
			self = i;
	/* The request is gone: the wait is over, whatever was published. */
	if (self < 0)
		return;

	names = palloc(sizeof(char *) * d->n);
	ours = palloc(sizeof(char *) * d->n);
	blockers = palloc(sizeof(int) * d->n);
	for (int i = 0; i < d->n; i++)
	{
		names[i] = d->all[i].node;
		/* The waiter's hold of the other mode is its own: never in its way. */
		if (i != self && d->all[i].session == w->who.session && d->all[i].pid == w->who.pid)
			ours[nours++] = d->all[i].node;
	}
	nblockers = Min(zkl_blockers(names, d->n, w->node, ours, nours, blockers, d->n), d->n);
	lock = zkl_lock_of_dir(w->dir);
	for (int k = 0; k < nblockers; k++)
	{
		zkl_contender *c = &d->all[blockers[k]];
		zkl_backend_ref blocker = {c->session, c->pid};
		zkl_edge_info *info = zkl_add_edge(g, w->who, blocker, ZKL_WAIT_ZKLOCK, w->czxid);

		if (info == NULL)
			break;
		info->waiter_cluster = w->cluster;
		info->lock = lock;
		info->mode = w->mode;
		info->since_ms = d->all[self].ctime;
		info->timeout_ms = w->timeout_ms;
		info->blocker_cluster = zkl_contender_cluster(c);
		info->blocker_client = zkl_client_of(c, c->is_zklock);
		info->blocker_node = psprintf("%s/%s", w->dir, c->node);
		info->blocker_czxid = c->czxid;
		if (blocker.pid > 0)
			zkl_follow_later(g, blocker);
	}
}

/* The edges of a backend of this cluster that waits on PostgreSQL's locks. */
static void
zkl_follow_heavyweight(zkl_graph *g, zkl_backend_ref who, const char *cluster)
{
	ArrayType  *pids = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(who.pid)));
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(pids, INT4OID, sizeof(int32), true, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		zkl_backend_ref blocker = {who.session, DatumGetInt32(elems[i])};
		zkl_edge_info *info;

		if (nulls[i] || zkl_backend_equal(blocker, who))
			continue;
		info = zkl_add_edge(g, who, blocker, ZKL_WAIT_HEAVYWEIGHT, 0);
		if (info == NULL)
			break;
		info->waiter_cluster = (char *) cluster;
		info->blocker_cluster = (char *) cluster;
		info->blocker_client = "postgresql";
		zkl_follow_later(g, blocker);
	}
}

/*
 * Whether some backend of this cluster waits on a PostgreSQL lock now.  Read
 * without the lock manager's locks: a wait that begins just after is seen by
 * the next check.
 */
static bool
zkl_heavyweight_waits(void)
{
	for (uint32 i = 0; i < ProcGlobal->allProcCount; i++)
		if (ProcGlobal->allProcs[i].pid != 0 && ProcGlobal->allProcs[i].waitLock != NULL)
			return true;
	return false;
}

/*
 * One reading of the graph: from own (this backend's wait) when detecting,
 * or from every published wait when showing them all (own NULL); read at
 * most max_age_us ago (recent_read.c), or afresh (0).
 */
static zkl_graph *
zkl_read_graph(const zkl_published *own, int max_dirs, int64 max_age_us)
{
	zkl_graph  *g = palloc0(sizeof(zkl_graph));
	char	   *cluster = zkl_own_cluster_label();

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	g->session = zkl_shared->session_id;
	LWLockRelease(zkl_shared->lock);
	g->max_dirs = max_dirs;
	g->max_age_us = max_age_us;
	g->dirs = palloc0(sizeof(zkl_dir_read) * max_dirs);
	zkl_read_waits(g);

	/*
	 * A cycle through own needs another published wait, or a wait on a
	 * PostgreSQL lock here: without either, no directory need be read.
	 */
	if (own && !zkl_heavyweight_waits() &&
		(g->nwaits == 0 || (g->nwaits == 1 && zkl_backend_equal(g->waits[0].who, own->who))))
		return g;
	if (own)
		zkl_follow_later(g, own->who);
	else
		for (int i = 0; i < g->nwaits; i++)
			zkl_follow_later(g, g->waits[i].who);

	for (int i = 0; i < g->nqueue && g->nedges < ZKL_MAX_WAIT_EDGES; i++)
	{
		zkl_backend_ref who = g->queue[i];
		const zkl_published *w = own && zkl_backend_equal(who, own->who) ?
		own : zkl_find_published(g, who);

		CHECK_FOR_INTERRUPTS();
		if (w)
			zkl_follow_zklock(g, w);
		else if (who.session == g->session && who.pid > 0)
			zkl_follow_heavyweight(g, who, cluster);
	}
	return g;
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

/*
 * A cycle through this backend's wait of which it is not the victim, when
 * it has seen that same cycle at every check for its turn as a stand-in
 * (waits_for.c, zkl_deadlock_standin_ms): returns its length and edges in
 * cycle, or 0 while the turn has not come (or there is no such cycle).
 */
static int
zkl_standin_cycle(const zkl_graph *g, const zkl_published *own, int slotno,
				  uint32 generation, int *cycle)
{
	int64		timeouts[ZKL_MAX_WAIT_EDGES];
	int			n = zkl_deadlock_any_cycle(g->edges, g->nedges, own->who, cycle, ZKL_MAX_CYCLE);
	int64		turn = -1;
	TimestampTz now = GetCurrentTimestamp();
	bool		same;

	for (int i = 0; i < g->nedges; i++)
		timeouts[i] = g->edges[i].kind == ZKL_WAIT_ZKLOCK ? g->info[i].timeout_ms : 0;
	if (n > 0)
		turn = zkl_deadlock_standin_ms(g->edges, cycle, n, own->who, own->czxid, timeouts);
	if (turn < 0)
	{
		zkl_seen.valid = false;
		return 0;
	}
	same = zkl_seen.valid && zkl_seen.slotno == slotno && zkl_seen.generation == generation && zkl_seen.n == n;
	for (int i = 0; i < n && same; i++)
	{
		const zkl_wait_edge *x = &g->edges[cycle[i]];
		const zkl_wait_edge *y = &zkl_seen.edges[i];

		same = zkl_backend_equal(x->waiter, y->waiter) && zkl_backend_equal(x->blocker, y->blocker) &&
			x->kind == y->kind && x->czxid == y->czxid &&
			g->info[cycle[i]].blocker_czxid == zkl_seen.blocker_czxid[i];
	}
	if (!same)
	{
		zkl_seen.valid = true;
		zkl_seen.slotno = slotno;
		zkl_seen.generation = generation;
		zkl_seen.n = n;
		for (int i = 0; i < n; i++)
		{
			zkl_seen.edges[i] = g->edges[cycle[i]];
			zkl_seen.blocker_czxid[i] = g->info[cycle[i]].blocker_czxid;
		}
		zkl_seen.since = now;
		return 0;
	}
	return now - zkl_seen.since >= turn * 1000 ? n : 0;
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
 * of which this request is the victim (allocated in the caller's context),
 * or NULL: no cycle, another member is its victim, or the wait is over.
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

	cxt = AllocSetContextCreate(CurrentMemoryContext, "zklock deadlock check", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	waiting = zkl_own_wait(slot, generation, &own, &spare);

	/*
	 * The publication and each read take a reserve slot (zkl_reserve_slots
	 * has enough for every backend; were it short, the check waits for the
	 * next time), and a session the worker cannot prove alive waits too.
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
				n1 = zkl_standin_cycle(first, &own, slotno, generation, cycle1);
				standin = n1 > 0;
			}
			second = n1 > 0 ? zkl_read_graph(&own, ZKL_MAX_CYCLE, 0) : NULL;
		}
		PG_FINALLY();
		{
			zkl_checking = false;
		}
		PG_END_TRY();
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
					detail = psprintf("%s\nProcess %d gives up in the place of the cycle's newest request, which has not.",
									  detail, MyProcPid);
				result = MemoryContextStrdup(caller, detail);
			}
		}
	}
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(cxt);
	return result;
}

/* ms since 1970 as a timestamp */
static TimestampTz
zkl_timestamp_of_ms(int64 ms)
{
	return (TimestampTz) (ms - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000) * 1000;
}

static Datum
zkl_session_text(int64 session)
{
	return CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) session));
}

/*
 * zk_waits_for(): every edge this cluster can see, from every published
 * wait, with this cluster's waits on PostgreSQL locks among their blockers.
 * Reads at most 64 lock directories.
 */
void
zkl_list_waits_for(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	zkl_graph  *g;

	zkl_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	g = zkl_read_graph(NULL, 64, 0);
	for (int i = 0; i < g->nedges; i++)
	{
		const zkl_wait_edge *e = &g->edges[i];
		const zkl_edge_info *info = &g->info[i];
		Datum		values[13];
		bool		nulls[13] = {0};
		bool		zk = e->kind == ZKL_WAIT_ZKLOCK;

		values[0] = CStringGetTextDatum(info->waiter_cluster);
		values[1] = Int32GetDatum(e->waiter.pid);
		values[2] = zkl_session_text(e->waiter.session);
		values[3] = CStringGetTextDatum(zk ? "zklock" : "postgresql");
		nulls[4] = !zk;
		if (zk)
			values[4] = CStringGetTextDatum(info->lock);
		nulls[5] = info->mode == NULL;
		if (info->mode)
			values[5] = CStringGetTextDatum(info->mode);
		nulls[6] = !zk;
		values[6] = Int64GetDatum(e->czxid);
		nulls[7] = info->since_ms == 0;
		values[7] = TimestampTzGetDatum(zkl_timestamp_of_ms(info->since_ms));
		nulls[8] = info->blocker_cluster == NULL;
		if (info->blocker_cluster)
			values[8] = CStringGetTextDatum(info->blocker_cluster);
		nulls[9] = e->blocker.pid == 0;
		values[9] = Int32GetDatum(e->blocker.pid);
		values[10] = zkl_session_text(e->blocker.session);
		values[11] = CStringGetTextDatum(info->blocker_client);
		nulls[12] = info->blocker_node == NULL;
		if (info->blocker_node)
			values[12] = PointerGetDatum(zkl_text_for_reader(info->blocker_node,
															 strlen(info->blocker_node), PG_UTF8));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}
