/*-------------------------------------------------------------------------
 *
 * waits_graph.c
 *		One reading of the waits-for graph, in a backend: the edges this
 *		cluster can see in every cluster, for a deadlock check
 *		(deadlock_check.c) and for zk_waits_for() (waits_view.c).
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
 * a libzookeeper thread.  A reading follows backends breadth-first from
 * where it starts, reads at most max_dirs lock directories besides the
 * waits, and keeps at most ZKL_MAX_WAIT_EDGES edges.  It says what it
 * could not see: a lock directory or backend past the bounds (truncated:
 * a change anywhere may bring a cycle within its reach), edges past
 * theirs (edges_full: the backends it reached are not all known), a read
 * that failed (not complete).  deadlock_check.c decides by that when to
 * read again.
 *
 * A wait's edges only ever shrink: the nodes ahead of a request only go
 * away (sequence numbers grow), so a request never gets a new blocker.
 * What adds edges to the graph is a new published wait, or a new wait on a
 * PostgreSQL lock in a cluster; the child counters of <root>/.waits, kept
 * with the reading, tell a later check whether a wait was published since.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/dsm.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"

#include "backend/contenders.h"
#include "backend/recent_read.h"
#include "backend/request.h"
#include "backend/waits_graph.h"
#include "names/encode.h"
#include "names/lock_name.h"
#include "names/name_text.h"
#include "rules/json_fields.h"
#include "shared/inspect_reply.h"

/* What this cluster is called in a description: cluster_name or host:port. */
static char *
zkl_cluster_label(const char *cluster, const char *host, const char *port)
{
	if (cluster && cluster[0] != '\0')
		return pstrdup(cluster);
	return psprintf("%s:%s", host ? host : "", port ? port : "");
}

char	   *
zkl_own_cluster_label(void)
{
	char		host[ZKL_HOST_NAME_LEN];

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

	if (reply->have_stat)
	{
		g->waits_cversion = reply->cversion;
		g->waits_count = reply->num_children;
		g->waits_watch_gen = reply->watch_gen;
	}
	else
		g->complete = false;

	g->waits = palloc0(sizeof(zkl_published) * Max(reply->nchildren, 1));
	g->nwaits = 0;
	g->waits_names = palloc(sizeof(char *) * Max(reply->nchildren, 1));
	g->nwaits_names = 0;
	for (int i = 0; i < reply->nchildren; i++)
	{
		zkl_inspect_entry *e = (zkl_inspect_entry *) p;
		char	   *name = pnstrdup(p + sizeof(zkl_inspect_entry), e->name_len);
		char	   *data = pnstrdup(p + sizeof(zkl_inspect_entry) + e->name_len, e->data_len);
		zkl_backend_ref who;
		char	   *f[lengthof(keys)];

		p += MAXALIGN(sizeof(zkl_inspect_entry) + e->name_len + e->data_len);
		g->waits_names[g->nwaits_names++] = name;
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

zkl_published *
zkl_find_published(zkl_graph *g, zkl_backend_ref who)
{
	for (int i = 0; i < g->nwaits; i++)
		if (zkl_backend_equal(g->waits[i].who, who))
			return &g->waits[i];
	return NULL;
}

/* Queue a backend to follow, once; one past the bound cuts the reading. */
static void
zkl_follow_later(zkl_graph *g, zkl_backend_ref who)
{
	for (int i = 0; i < g->nqueue; i++)
		if (zkl_backend_equal(g->queue[i], who))
			return;
	if (g->nqueue < (int) lengthof(g->queue))
		g->queue[g->nqueue++] = who;
	else
		g->truncated = true;
}

static zkl_edge_info *
zkl_add_edge(zkl_graph *g, zkl_backend_ref waiter, zkl_backend_ref blocker,
			 zkl_wait_kind kind, int64 czxid)
{
	zkl_wait_edge *e;

	if (g->nedges >= ZKL_MAX_WAIT_EDGES)
	{
		g->edges_full = true;
		return NULL;
	}
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
	dsm_segment *seg;

	for (int i = 0; i < g->ndirs; i++)
		if (strcmp(g->dirs[i].dir, dir) == 0)
			return &g->dirs[i];
	if (g->ndirs >= g->max_dirs)
	{
		g->truncated = true;
		return NULL;
	}
	d = &g->dirs[g->ndirs++];
	d->dir = pstrdup(dir);
	seg = zkl_fetch_recent(zkl_lock_of_dir(dir), dir, g->max_age_us);
	if (!((zkl_inspect_reply *) dsm_segment_address(seg))->have_stat)
		g->complete = false;
	d->all = zkl_contenders_in(seg, false, false, &d->n);
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

	/*
	 * A shared reading may be older than the request: read afresh before
	 * taking a published wait for over, since nothing later would bring a
	 * check back for a wait already published.
	 */
	if (self < 0 && !d->fresh && g->max_age_us > 0)
	{
		dsm_segment *seg = zkl_fetch_recent(zkl_lock_of_dir(w->dir), w->dir, 0);

		if (!((zkl_inspect_reply *) dsm_segment_address(seg))->have_stat)
			g->complete = false;
		d->all = zkl_contenders_in(seg, false, false, &d->n);
		d->fresh = true;
		for (int i = 0; i < d->n; i++)
			if (zkl_wait_names_request(w->who, w->node, w->czxid,
									   d->all[i].node, d->all[i].czxid, d->all[i].session))
				self = i;
	}
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
 * Whether every published wait but own's waits in own's directory, and
 * own's number is not near the top of its directory's counter.
 */
bool
zkl_waits_one_dir(const zkl_graph *g, const zkl_published *own)
{
	zkl_contender_name me;

	if (!zkl_contender_parse(own->node, &me) || zkl_counter_near_top(me.seq))
		return false;
	for (int i = 0; i < g->nwaits; i++)
		if (!zkl_backend_equal(g->waits[i].who, own->who) && strcmp(g->waits[i].dir, own->dir) != 0)
			return false;
	return true;
}

/*
 * One reading of the graph: from own (this backend's wait) when detecting,
 * or from every published wait when showing them all (own NULL); read at
 * most max_age_us ago (recent_read.c), or afresh (0).
 */
zkl_graph  *
zkl_read_graph(const zkl_published *own, int max_dirs, int64 max_age_us)
{
	zkl_graph  *g = palloc0(sizeof(zkl_graph));
	char	   *cluster = zkl_own_cluster_label();
	bool		follow_pg;

	g->complete = true;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	g->session = zkl_shared->session_id;
	LWLockRelease(zkl_shared->lock);

	/*
	 * Read as a backend of another cluster reads (a stand-in's view of a
	 * member before it, deadlock_check.c), the graph has none of this
	 * cluster's waits on PostgreSQL locks: that backend cannot see them.
	 */
	follow_pg = own == NULL || own->who.session == g->session;
	g->max_dirs = max_dirs;
	g->max_age_us = max_age_us;
	g->dirs = palloc0(sizeof(zkl_dir_read) * max_dirs);
	zkl_read_waits(g);

	/*
	 * A cycle through own needs a wait on a PostgreSQL lock here, or another
	 * published wait in a directory other than own's: the nodes a request
	 * waits for are all ahead of it in its directory (the lock rule), so a
	 * path through waits of one directory only goes ahead and never comes
	 * back.  Two requests of equal numbers wait for each other, but those
	 * come only from ZooKeeper's counter at its top.  Without either, no
	 * directory need be read, and what is reachable from own is not known.
	 */
	if (own && !zkl_heavyweight_waits() && zkl_waits_one_dir(g, own))
	{
		g->reach_unknown = true;
		return g;
	}
	if (own)
		zkl_follow_later(g, own->who);
	else
		for (int i = 0; i < g->nwaits; i++)
			zkl_follow_later(g, g->waits[i].who);

	for (int i = 0; i < g->nqueue; i++)
	{
		zkl_backend_ref who = g->queue[i];
		const zkl_published *w = own && zkl_backend_equal(who, own->who) ?
		own : zkl_find_published(g, who);

		CHECK_FOR_INTERRUPTS();
		/* Past the edges' bound, what is left to follow is not seen. */
		if (g->nedges >= ZKL_MAX_WAIT_EDGES)
		{
			g->edges_full = true;
			break;
		}
		if (w)
			zkl_follow_zklock(g, w);
		else if (follow_pg && who.session == g->session && who.pid > 0)
			zkl_follow_heavyweight(g, who, cluster);
	}
	return g;
}

/*
 * The published waits alone, read at most max_age_us ago: what a look
 * between checks needs (deadlock_check.c).  Cheap when little changed:
 * the worker reads only the waits it did not read last time.
 */
zkl_graph  *
zkl_read_published(int64 max_age_us)
{
	zkl_graph  *g = palloc0(sizeof(zkl_graph));

	g->complete = true;
	g->max_age_us = max_age_us;
	zkl_read_waits(g);
	return g;
}
