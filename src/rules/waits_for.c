/*-------------------------------------------------------------------------
 *
 * waits_for.c
 *		Cycles in the waits-for graph of backends of every cluster, and
 *		the rule that makes exactly one member of a cycle its victim.
 *		Plain C with no PostgreSQL, ZooKeeper or shared memory: the
 *		detector collects the edges (zklock waits from ZooKeeper, waits on
 *		PostgreSQL's own locks from its cluster) and asks these functions;
 *		test/unit proves them without a server.
 *
 * The victim rule.  Every member of a cycle that waits on a zklock request
 * may be detecting at the same time, each from its own cluster, and they
 * must agree without talking: of the zklock requests of a cycle, the one
 * with the highest czxid (the newest, in an order every cluster reads the
 * same) gives up.  A detector therefore asks one question of the graph:
 * is there a cycle through me in which every other zklock waiter has a
 * lower czxid than my request?  If so it is that cycle's victim; if there
 * is only a cycle whose newest request is another's, that one gives up
 * and this one waits on.  Each cycle has exactly one newest request, so no
 * cycle is left without a victim and no two members of a cycle both give
 * up.  A member waiting on a PostgreSQL lock (czxid 0) never is the
 * victim: it is not a zklock request and has no zklock wait to give up.
 *
 * A cycle that goes through a wait on a PostgreSQL lock is seen only by
 * its cluster (pg_blocking_pids answers for its own backends alone): the
 * newest zklock request of such a cycle may belong to another cluster,
 * which cannot see the cycle and would never give up.  Such a cycle's
 * victim is therefore the newest zklock request of the cluster whose
 * PostgreSQL lock it goes through (the detector's own session, since a
 * detector follows only its own cluster's PostgreSQL locks): every member
 * of that cluster sees the whole cycle and agrees.  Every such cycle has a
 * zklock request of that cluster: the waits on PostgreSQL locks lead to a
 * backend of it that waits on a zklock, or the cycle would be PostgreSQL's
 * own.  A detector is thus the victim of a cycle through it when every
 * other zklock waiter of the cycle is older, or when the cycle has a wait
 * on a PostgreSQL lock and every other zklock waiter of its own cluster
 * is older.
 *
 * A backend has at most one zklock wait at a time; if edges of several
 * readings disagree, its highest czxid counts.  Cycles are searched to a
 * bounded length (max_cycle edges): a longer cycle is not seen.
 *
 * Stand-ins.  A detector reads the graph from its own wait, breadth-first,
 * within a bound of lock directories (backend/waits_graph.c), so members
 * of one cycle may see different parts of the graph: the newest request's
 * reads may all go to waits that lead elsewhere, while an older member
 * reaches the whole cycle at once.  Which member gives up is therefore
 * decided from what each member's reading reaches, never from how long a
 * member took to read: zkl_deadlock_standin_order lists the members, the
 * victim first, and the first of them whose own bounded reading reaches
 * the cycle gives up.  A member that sees the cycle reads the graph as
 * each member before it in that order would (the same reading from that
 * member's published wait, by the same bound), and gives up only when
 * none of them reaches it.  A slow victim is thus never overtaken: the
 * others wait for it as long as its reading can see the cycle.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "rules/waits_for.h"

/* What one search carries. */
typedef struct zkl_cycle_search
{
	const zkl_wait_edge *edges;
	int			nedges;
	zkl_backend_ref self;
	bool		only_older;		/* other zklock waiters must be older than
								 * self_czxid */
	bool		own_cluster;	/* ... only those of self's session, and the
								 * cycle must have a PostgreSQL lock wait */
	int64_t		self_czxid;
	int		   *path;
	int			max_path;
	int		   *explored;		/* per edge: its blocker was searched from at
								 * this depth (+ 1), or 0 */
	const bool *leads_back;		/* per edge: self is reachable from its
								 * blocker at all */
	const int  *next_out;		/* per edge: the next edge of the same waiter,
								 * or -1 */
	const int  *blocker_out;	/* per edge: its blocker's first edge, or -1 */
	const int64_t *blocker_czxid;	/* per edge: its blocker's zklock wait */
	long		steps;			/* own_cluster: edges looked at, bounded */
} zkl_cycle_search;

/*
 * How many edges the search for a cycle through a PostgreSQL lock wait may
 * look at.  That search cannot remember dead ends (whether a backend leads
 * back to self with such a wait depends on the path that reached it), so
 * it is bounded: past this many it gives up, finding no victim this time.
 */
#define ZKL_MAX_SEARCH_STEPS 20000

bool
zkl_backend_equal(zkl_backend_ref a, zkl_backend_ref b)
{
	return a.session == b.session && a.pid == b.pid;
}

/*
 * Who published a wait: a node under <root>/.waits named
 * "<session>-<pid>", as the worker names them (the session as 16
 * lower-case hex digits, the pid in decimal), whose ephemeralOwner (owner)
 * is that session.  Fills *who and returns true; false for anything else
 * there, which is no wait.
 */
bool
zkl_wait_publisher(const char *name, int64_t owner, zkl_backend_ref *who)
{
	uint64_t	session = 0;
	int64_t		pid = 0;
	const char *p = name;

	for (int i = 0; i < 16; i++, p++)
	{
		if (*p >= '0' && *p <= '9')
			session = session * 16 + (uint64_t) (*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			session = session * 16 + (uint64_t) (*p - 'a' + 10);
		else
			return false;
	}
	if (*p++ != '-' || *p < '1' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
	{
		pid = pid * 10 + (*p - '0');
		if (pid > INT32_MAX)
			return false;
	}
	if (*p != '\0' || (int64_t) session != owner || owner == 0)
		return false;
	who->session = owner;
	who->pid = (int32_t) pid;
	return true;
}

/*
 * Whether a node of a lock directory (its name, czxid and ephemeralOwner)
 * is the request that a wait published by publisher names (wait_node,
 * wait_czxid).  The node must have been created by the session that
 * published the wait: a wait is believed only of its own session's
 * request.  Anyone may write under .waits in a session of their own, and
 * a wait naming someone else's request (forged, or left by an earlier
 * session) would add an edge that is not there, closing a false cycle
 * whose victim is innocent.
 */
bool
zkl_wait_names_request(zkl_backend_ref publisher, const char *wait_node,
					   int64_t wait_czxid, const char *node, int64_t czxid,
					   int64_t owner)
{
	return owner == publisher.session && owner != 0 &&
		czxid == wait_czxid && strcmp(node, wait_node) == 0;
}

/*
 * Whether the zklock request (czxid, of backend who) is newer than the one
 * (other_czxid, of backend other).  The requests that one worker created
 * in one multi (issue 32, write_batch.c) share their czxid, the multi's
 * zxid: among them the higher session, then the higher pid, counts as the
 * newer, an order every cluster reads the same, so that each cycle still
 * has exactly one newest request.
 */
static bool
zkl_request_newer(int64_t czxid, zkl_backend_ref who, int64_t other_czxid, zkl_backend_ref other)
{
	if (czxid != other_czxid)
		return czxid > other_czxid;
	if (who.session != other.session)
		return who.session > other.session;
	return who.pid > other.pid;
}

/* The czxid of backend's zklock wait in the graph, or 0 if it has none. */
static int64_t
zkl_wait_czxid(const zkl_wait_edge *edges, int nedges, zkl_backend_ref backend)
{
	int64_t		czxid = 0;

	for (int i = 0; i < nedges; i++)
		if (edges[i].kind == ZKL_WAIT_ZKLOCK &&
			zkl_backend_equal(edges[i].waiter, backend) &&
			edges[i].czxid > czxid)
			czxid = edges[i].czxid;
	return czxid;
}

/*
 * Whether the search has already gone on from backend at this depth or a
 * shallower one: it found no way back to self within the bound then, and
 * will not now.  Reached at a shallower depth, it is searched again, with
 * more of the bound left.
 */
static bool
zkl_explored(const zkl_cycle_search *s, zkl_backend_ref backend, int depth)
{
	for (int i = 0; i < s->nedges; i++)
		if (s->explored[i] != 0 && s->explored[i] <= depth + 1 &&
			zkl_backend_equal(s->edges[i].blocker, backend))
			return true;
	return false;
}

/* Whether backend is self or a blocker on the path so far. */
static bool
zkl_on_path(const zkl_cycle_search *s, zkl_backend_ref backend, int depth)
{
	if (zkl_backend_equal(backend, s->self))
		return true;
	for (int k = 0; k < depth; k++)
		if (zkl_backend_equal(s->edges[s->path[k]].blocker, backend))
			return true;
	return false;
}

/*
 * Depth-first from the blocker of path[depth - 1] (or self at depth 0):
 * the length of a path back to self, or 0.
 *
 * Plainly, a backend already searched from, at this depth or a shallower
 * one, is not searched again: whether it leads back to self does not
 * depend on the path that reached it, only on how much of the bound is
 * left.  A cycle through a PostgreSQL lock wait (own_cluster) must be a
 * simple cycle that has such a wait: backends on the path are not entered
 * again (a loop that does not go through self has a victim of its own),
 * and since what lies ahead then depends on the path, nothing is
 * remembered; ZKL_MAX_SEARCH_STEPS bounds the work instead.
 */
static int
zkl_search_from(zkl_cycle_search *s, int first, int depth, bool heavy)
{
	for (int i = first; i >= 0; i = s->next_out[i])
	{
		const zkl_wait_edge *e = &s->edges[i];
		bool		now_heavy = heavy || e->kind == ZKL_WAIT_HEAVYWEIGHT;
		int			found;

		if (!s->leads_back[i])
			continue;
		if (s->own_cluster && ++s->steps > ZKL_MAX_SEARCH_STEPS)
			return 0;
		s->path[depth] = i;
		if (zkl_backend_equal(e->blocker, s->self))
		{
			if (now_heavy)
				return depth + 1;
			continue;
		}
		if (depth + 1 >= s->max_path)
			continue;
		if (s->own_cluster ? zkl_on_path(s, e->blocker, depth) :
			zkl_explored(s, e->blocker, depth + 1))
			continue;
		if (s->only_older &&
			(!s->own_cluster || e->blocker.session == s->self.session) &&
			!zkl_request_newer(s->self_czxid, s->self, s->blocker_czxid[i], e->blocker))
			continue;
		if (!s->own_cluster)
			s->explored[i] = depth + 2;
		found = zkl_search_from(s, s->blocker_out[i], depth + 1, now_heavy);
		if (found > 0)
			return found;
	}
	return 0;
}

/*
 * Mark the edges whose blocker can reach self at all (or is self): no other
 * edge is on any cycle through self.  A backward search from self, once
 * over the edges: most of a busy lock's edges lead away, and the searches
 * then stop at once.
 */
static void
zkl_mark_leads_back(const zkl_wait_edge *edges, int nedges, zkl_backend_ref self, bool *leads_back)
{
	zkl_backend_ref reached[ZKL_MAX_WAIT_EDGES + 1];
	int			nreached = 0;

	memset(leads_back, 0, sizeof(bool) * nedges);
	reached[nreached++] = self;
	for (int r = 0; r < nreached; r++)
		for (int i = 0; i < nedges; i++)
		{
			bool		known = false;

			if (leads_back[i] || !zkl_backend_equal(edges[i].blocker, reached[r]))
				continue;
			leads_back[i] = true;
			for (int k = 0; k < nreached && !known; k++)
				known = zkl_backend_equal(reached[k], edges[i].waiter);
			if (!known)
				reached[nreached++] = edges[i].waiter;
		}
}

static int
zkl_find_cycle(const zkl_wait_edge *edges, int nedges, zkl_backend_ref self,
			   bool only_older, bool own_cluster, int64_t self_czxid,
			   int *cycle, int max_cycle)
{
	int			explored[ZKL_MAX_WAIT_EDGES];
	bool		leads_back[ZKL_MAX_WAIT_EDGES];
	int			next_out[ZKL_MAX_WAIT_EDGES];
	int			blocker_out[ZKL_MAX_WAIT_EDGES];
	int64_t		blocker_czxid[ZKL_MAX_WAIT_EDGES];
	int			self_out = -1;
	bool		heavy = false;
	zkl_cycle_search s;

	if (nedges > ZKL_MAX_WAIT_EDGES)
		nedges = ZKL_MAX_WAIT_EDGES;
	for (int i = 0; i < nedges; i++)
		heavy |= edges[i].kind == ZKL_WAIT_HEAVYWEIGHT;
	/* No PostgreSQL lock wait in the graph: no cycle can have one. */
	if (max_cycle <= 0 || (own_cluster && !heavy))
		return 0;
	memset(explored, 0, sizeof(explored));
	zkl_mark_leads_back(edges, nedges, self, leads_back);

	/* Each backend's edges as a list, so a step looks only at its own. */
	for (int i = nedges - 1; i >= 0; i--)
	{
		next_out[i] = -1;
		blocker_out[i] = -1;
		for (int j = i + 1; j < nedges && next_out[i] < 0; j++)
			if (zkl_backend_equal(edges[j].waiter, edges[i].waiter))
				next_out[i] = j;
	}
	for (int i = 0; i < nedges; i++)
	{
		for (int j = 0; j < nedges && blocker_out[i] < 0; j++)
			if (zkl_backend_equal(edges[j].waiter, edges[i].blocker))
				blocker_out[i] = j;
		if (self_out < 0 && zkl_backend_equal(edges[i].waiter, self))
			self_out = i;
		blocker_czxid[i] = zkl_wait_czxid(edges, nedges, edges[i].blocker);
	}
	s.edges = edges;
	s.nedges = nedges;
	s.self = self;
	s.only_older = only_older;
	s.own_cluster = own_cluster;
	s.self_czxid = self_czxid;
	s.path = cycle;
	s.max_path = max_cycle;
	s.explored = explored;
	s.leads_back = leads_back;
	s.next_out = next_out;
	s.blocker_out = blocker_out;
	s.blocker_czxid = blocker_czxid;
	s.steps = 0;
	/* Unless a PostgreSQL lock wait is required, start as if one were seen. */
	return zkl_search_from(&s, self_out, 0, !own_cluster);
}

/*
 * Whether self, waiting on the zklock request with czxid self_czxid, is
 * the victim of a cycle: returns the cycle's length, with the indexes of
 * its edges in cycle (self's own edge first, in the order of the waits),
 * or 0 when self is no cycle's victim.
 */
int
zkl_deadlock_victim_cycle(const zkl_wait_edge *edges, int nedges,
						  zkl_backend_ref self, int64_t self_czxid,
						  int *cycle, int max_cycle)
{
	int			len = zkl_find_cycle(edges, nedges, self, true, false, self_czxid,
									 cycle, max_cycle);

	if (len == 0)
		len = zkl_find_cycle(edges, nedges, self, true, true, self_czxid,
							 cycle, max_cycle);
	return len;
}

/*
 * Any cycle through self, whoever its victim: for counting deadlocks seen
 * and for showing them.  Returns its length and edges as
 * zkl_deadlock_victim_cycle does.
 */
int
zkl_deadlock_any_cycle(const zkl_wait_edge *edges, int nedges,
					   zkl_backend_ref self, int *cycle, int max_cycle)
{
	return zkl_find_cycle(edges, nedges, self, false, false, 0, cycle, max_cycle);
}

/*
 * The order in which the members of a cycle (edges of
 * zkl_deadlock_any_cycle, cycle[] its edges) are asked to give up: into
 * order, the positions in cycle of the edges of its zklock waiters, first
 * the cycle's victim by the victim rule (judged on the cycle's own edges),
 * then the others newest request first.  Returns how many there are.  The
 * detector gives up in that order's first member whose own reading of the
 * graph reaches the cycle (deadlock_check.c): every member computes the
 * same order from the same cycle.
 */
int
zkl_deadlock_standin_order(const zkl_wait_edge *edges, const int *cycle, int ncycle,
						   int *order)
{
	zkl_wait_edge own[ZKL_MAX_CYCLE];
	int			found[ZKL_MAX_CYCLE];
	int			n = 0;
	int			nvictims = 0;

	if (ncycle > ZKL_MAX_CYCLE)
		ncycle = ZKL_MAX_CYCLE;
	for (int k = 0; k < ncycle; k++)
		own[k] = edges[cycle[k]];
	for (int k = 0; k < ncycle; k++)
		if (own[k].kind == ZKL_WAIT_ZKLOCK)
			order[n++] = k;
	/* Newest first (insertion sort: a cycle is short). */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 &&
			 zkl_request_newer(own[order[j]].czxid, own[order[j]].waiter,
							   own[order[j - 1]].czxid, own[order[j - 1]].waiter); j--)
		{
			int			t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	/* The victims by the rule move to the front, keeping that order. */
	for (int i = 0; i < n; i++)
	{
		const zkl_wait_edge *e = &own[order[i]];

		if (zkl_deadlock_victim_cycle(own, ncycle, e->waiter, e->czxid, found, ZKL_MAX_CYCLE) > 0)
		{
			int			t = order[i];

			for (int j = i; j > nvictims; j--)
				order[j] = order[j - 1];
			order[nvictims++] = t;
		}
	}
	return n;
}

/* Whether name is one of names[0..n). */
static bool
zkl_name_in(const char *name, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/*
 * Whether a wait was published under <root>/.waits, since a reading that
 * saw there the children before[] and the child counters (cversion0,
 * count0), that can close a cycle through the detector's wait, judged by
 * a later listing (after[], cversion, count).  A wait's edges only shrink,
 * so only a new publication adds an edge, and only one by a backend the
 * detector's reading reached (reach[], names as the worker gives them,
 * "<session>-<pid>"; nreach -1: not known, any) can close a cycle
 * through it; with every_change (the
 * reading did not reach all it could), any change at all counts.
 * ZooKeeper's cversion counts the directory's creates and deletes, so the
 * creates are half the sum of its growth and the count's: when more were
 * created than new names are listed (a backend's next wait under its old
 * name, one created and gone again), who published is not known, and it
 * counts.  A listing older than the reading (cversion behind, as serial
 * numbers) tells nothing new.
 */
bool
zkl_waits_recheck(const char *const *before, int nbefore,
				  const char *const *after, int nafter,
				  int32_t cversion0, int32_t count0, int32_t cversion, int32_t count,
				  const char *const *reach, int nreach, bool every_change)
{
	int64_t		changes = (int32_t) ((uint32_t) cversion - (uint32_t) cversion0);
	int64_t		creates;
	int			fresh = 0;

	if (changes <= 0)
		return false;
	if (every_change)
		return true;
	creates = (changes + ((int64_t) count - count0)) / 2;
	if (creates <= 0)
		return false;
	if (nreach < 0)
		return true;
	for (int i = 0; i < nafter; i++)
	{
		if (zkl_name_in(after[i], before, nbefore))
			continue;
		fresh++;
		if (zkl_name_in(after[i], reach, nreach))
			return true;
	}
	return fresh < creates;
}

/*
 * What a look between a wait's deadlock checks does.  A check is made
 * again at once when there was no check of this wait yet, when the last
 * one could not read everything (last_complete false), or when a backend
 * of this cluster began to wait on a PostgreSQL lock that may close a
 * cycle (new_pg_wait): those cost no request to find out.  Otherwise only
 * a wait published since can bring a cycle, and the worker keeps a watch
 * on <root>/.waits: watch_gen, the worker's count of that watch's events
 * (and of whatever may have lost it: a session event, a new handle), moves
 * with every create or delete there.  quiet_gen is that count as the last
 * reading of .waits judged here (by the check, or by a look that found no
 * reason to check) was listed with the watch set, 0 when it was not.  The
 * same count now means the same children and child counters, on which
 * zkl_waits_recheck would say no again: the look makes no request.  A
 * queue of waiters on one lock then costs ZooKeeper nothing while it
 * waits, however long.
 */
zkl_waits_look_verdict
zkl_waits_look(bool last_known, bool last_complete, bool new_pg_wait,
			   uint64_t quiet_gen, uint64_t watch_gen)
{
	if (!last_known || !last_complete || new_pg_wait)
		return ZKL_LOOK_CHECK;
	if (quiet_gen != 0 && quiet_gen == watch_gen)
		return ZKL_LOOK_QUIET;
	return ZKL_LOOK_READ;
}

/*
 * Whether the worker's last reading of <root>/.waits (its listing's child
 * counters cversion0 and count0) still tells the data of every child it
 * listed that a new listing (cversion, count) lists again under the same
 * name.  ZooKeeper's cversion counts the directory's creates and deletes,
 * so the creates since are half the sum of its growth and the count's;
 * each must be either a name the last reading did not list (fresh) or one
 * of the worker's own publications since, whose data it wrote itself and
 * keeps (own_creates, counted once per create).  One create more means a
 * listed name was deleted and created again by someone whose data is not
 * known: every child is read.  A listing older than the reading (cversion
 * behind, as serial numbers) tells nothing.
 */
bool
zkl_waits_cache_usable(int32_t cversion0, int32_t count0, int32_t cversion, int32_t count,
					   int fresh, int own_creates)
{
	int64_t		changes = (int32_t) ((uint32_t) cversion - (uint32_t) cversion0);
	int64_t		creates;

	if (changes < 0 || fresh < 0 || own_creates < 0)
		return false;
	creates = (changes + ((int64_t) count - count0)) / 2;
	return creates == (int64_t) fresh + own_creates;
}
