/*-------------------------------------------------------------------------
 *
 * lock_rule.c
 *		Who holds a lock, decided from the names of the lock directory's
 *		children alone.  Plain C with no PostgreSQL, ZooKeeper or shared
 *		memory, so any process: the worker (worker/lock_recipe.c) and
 *		zk_lock_contenders (backend/contenders.c) both call it, and
 *		test/unit proves it without a server.
 *
 * Each request is one sequential child of the directory.  ZooKeeper appends
 * to its name the parent's child counter (its count of child creates; see
 * zkl_next_sequence), a signed 32-bit number printed with
 * %010d: 0000000041.  The rule:
 *
 * - an exclusive request waits for every node ahead of it; a shared one
 *   only for the exclusive nodes ahead of it, so a writer that asked first
 *   is served before later readers;
 * - the nodes of the request's own backend (its hold of the other mode)
 *   are never waited for, and a shared request of a backend that holds
 *   the lock exclusive waits for nothing;
 * - a request whose own read has a writer queued behind it, and that
 *   would wait for that writer, waits for ever: a deadlock;
 * - another contender with the same number is in the way whatever the
 *   modes, both ways: neither is granted while both are there;
 * - a waiter watches only the nearest node it waits for; when that node
 *   goes, the waiter holds without a new listing if it was the only node
 *   in the way or an exclusive grant (zkl_holds_after_predecessor), except
 *   where numbers repeat.
 *
 * Numbers repeat at the counter's top.  ZooKeeper (3.8) does not wrap it:
 * once a directory's counter is 2147483647, every sequential child created
 * there is numbered 2147483647 (a second create of the same name fails with
 * NodeExists), until the directory is emptied and removed.  Equal numbers
 * are an anomaly that no order can settle (Curator and kazoo order them by
 * their text), so they block each other; zkl_counter_near_top warns long
 * before.  A burst of creates pipelined at the top may still be given
 * -2147483648 and up by the server's not yet applied counter: "ahead" is
 * therefore serial-number order (RFC 1982), a ahead of b when b - a,
 * computed modulo 2^32, is positive as a signed number, which puts those
 * after 2147483647 where plain integer order would put them first.
 *
 * Names are parsed strictly: the last marker of a layout zklock knows,
 * then exactly the sequence ZooKeeper writes.  Anything else is not a
 * contender and is ignored, never guessed at.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "rules/lock_rule.h"

/* The node layouts (lock_rule.h): the one place their markers are spelled. */
const zkl_node_layout zkl_node_layouts[ZKL_NODE_LAYOUTS] = {
	[ZKL_NODE_MUTEX] = {"-lock-", false, false, "curator"}, /* Curator
															 * InterProcessMutex,
															 * zklock */
	[ZKL_NODE_WRITE] = {"__WRIT__", false, false, "curator"},	/* Curator
																 * InterProcessReadWriteLock */
	[ZKL_NODE_READ] = {"__READ__", true, false, "curator"},
	[ZKL_NODE_KAZOO_LOCK] = {"__lock__", false, false, "kazoo"},	/* kazoo Lock and
																	 * WriteLock */
	[ZKL_NODE_KAZOO_READ] = {"__rlock__", true, false, "kazoo"},	/* kazoo ReadLock */
	[ZKL_NODE_LEASE] = {"lease-", false, true, "curator"},	/* Curator
															 * InterProcessSemaphoreV2 */
};

/*
 * The sequence ZooKeeper appends: "%010d" of a signed 32-bit number, so ten
 * digits, or a minus sign and nine digits, or a minus sign and ten digits
 * of which the first is not 0; never -0.  Each number has one spelling.
 */
static bool
zkl_seq_parse(const char *p, int32_t *seq)
{
	bool		negative = *p == '-';
	size_t		ndigits;
	int64_t		value = 0;

	if (negative)
		p++;
	ndigits = strlen(p);
	if (ndigits != 10 && !(negative && ndigits == 9))
		return false;
	if (negative && ndigits == 10 && *p == '0')
		return false;
	for (; *p; p++)
	{
		if (*p < '0' || *p > '9')
			return false;
		value = value * 10 + (*p - '0');
	}
	if (negative)
	{
		if (value == 0)
			return false;
		value = -value;
	}
	if (value < INT32_MIN || value > INT32_MAX)
		return false;
	*seq = (int32_t) value;
	return true;
}

/*
 * The layout of child's last marker and the sequence after it (digits), or
 * -1 when it has none.  The last marker in the name counts: a uuid or a
 * kazoo identifier before it may contain anything.
 */
static int
zkl_last_marker(const char *child, const char **digits)
{
	int			layout = -1;

	*digits = NULL;
	for (int i = 0; i < ZKL_NODE_LAYOUTS; i++)
	{
		const char *p = child;
		const char *hit;

		if (zkl_node_layouts[i].lease)
			continue;
		while ((hit = strstr(p, zkl_node_layouts[i].marker)) != NULL)
		{
			p = hit + strlen(zkl_node_layouts[i].marker);
			if (*digits == NULL || p > *digits)
			{
				*digits = p;
				layout = i;
			}
		}
	}
	return layout;
}

/*
 * Whether child is a contender of a layout zklock reads, and if so its
 * sequence number and mode.
 */
bool
zkl_contender_parse(const char *child, zkl_contender_name *out)
{
	const char *digits;
	int			layout = zkl_last_marker(child, &digits);

	if (layout < 0 || !zkl_seq_parse(digits, &out->seq))
		return false;
	out->shared = zkl_node_layouts[layout].shared;
	return true;
}

/* Curator's family of a contender's layout: 0 mutex, 1 read-write, -1 none. */
static int
zkl_curator_family(const char *child)
{
	const char *digits;
	int			layout = zkl_last_marker(child, &digits);
	int32_t		seq;

	if (layout < 0 || !zkl_seq_parse(digits, &seq))
		return -1;
	if (layout == ZKL_NODE_MUTEX)
		return 0;
	if (layout == ZKL_NODE_WRITE || layout == ZKL_NODE_READ)
		return 1;
	return -1;
}

/*
 * Whether a lock directory mixes Curator's two lock layouts across own's
 * node, an exclusive one: own has the mutex layout ("-lock-") and a child
 * the read-write lock's ("__READ__", "__WRIT__"), or own is a read-write
 * lock's writer and a child has the mutex layout.  zklock reads both, but
 * Curator's InterProcessMutex reads only the first and its
 * InterProcessReadWriteLock only the second: the Curator client may hold
 * beside own's node, as if it were not there (zklock.exclusive_layout
 * chooses own's layout).  A reader's node has no other layout: not asked.
 */
bool
zkl_layouts_mixed(const char *const *children, int nchildren, const char *own)
{
	const char *digits;
	int			mine = zkl_curator_family(own);

	if (mine < 0 || zkl_last_marker(own, &digits) == ZKL_NODE_READ)
		return false;
	for (int i = 0; i < nchildren; i++)
	{
		int			theirs = zkl_curator_family(children[i]);

		if (theirs >= 0 && theirs != mine)
			return true;
	}
	return false;
}

/*
 * Whether child is a semaphore's lease: Curator's "lease-" (protected or
 * not) and the sequence after its last one, read as a contender's; or any
 * other name that ends in ten digits of a number the counter reaches.  All
 * leases are alike.
 */
bool
zkl_lease_parse(const char *child, zkl_contender_name *out)
{
	const char *marker = zkl_node_layouts[ZKL_NODE_LEASE].marker;
	const char *digits = NULL;
	size_t		len = strlen(child);

	for (const char *hit = child; (hit = strstr(hit, marker)) != NULL; hit++)
		digits = hit + strlen(marker);
	if (digits == NULL)
	{
		if (len < 10 || (len > 10 && child[len - 11] >= '0' && child[len - 11] <= '9'))
			return false;
		digits = child + len - 10;
		if (*digits == '-')
			return false;
	}
	if (!zkl_seq_parse(digits, &out->seq))
		return false;
	out->shared = false;
	return true;
}

/* Serial-number order: negative when a is ahead of b, 0 when equal. */
int
zkl_seq_compare(int32_t a, int32_t b)
{
	int32_t		diff = (int32_t) ((uint32_t) a - (uint32_t) b);

	return diff < 0 ? -1 : diff > 0 ? 1 : 0;
}

static bool
zkl_is_ours(const char *child, const char *const *ours, int nours)
{
	for (int i = 0; i < nours; i++)
		if (ours[i] != NULL && strcmp(child, ours[i]) == 0)
			return true;
	return false;
}

/*
 * The earliest read of own's backend (ours), once: a writer after it waits
 * for us.  And whether our backend holds the lock exclusive: a read of ours
 * is then held at once, whatever is queued (see zkl_decide).
 */
static void
zkl_own_modes(const char *const *ours, int nours, bool *own_write, bool *have_read,
			  int32_t *first_read)
{
	zkl_contender_name r;

	for (int j = 0; j < nours; j++)
		if (ours[j] != NULL && zkl_contender_parse(ours[j], &r))
		{
			if (!r.shared)
				*own_write = true;
			else if (!*have_read || zkl_seq_compare(r.seq, *first_read) < 0)
			{
				*have_read = true;
				*first_read = r.seq;
			}
		}
}

/* One more node the request waits for: child i, noted if there is room. */
static void
zkl_add_blocker(zkl_decision *d, int *blockers, int max_blockers, int i)
{
	if (blockers != NULL && d->blockers < max_blockers)
		blockers[d->blockers] = i;
	d->blockers++;
}

/* The scan's verdict: absent without our node, else by what is in the way. */
static zkl_decision
zkl_verdict_of(zkl_decision d, bool found_self, bool deadlock)
{
	if (!found_self)
	{
		d.watch = -1;
		d.blockers = 0;
		d.equal = false;
		return d;
	}
	d.verdict = d.blockers == 0 ? ZKL_VERDICT_HELD :
		deadlock ? ZKL_VERDICT_DEADLOCK : ZKL_VERDICT_WAIT;
	return d;
}

/*
 * The decision for the request whose node is own, given the directory's
 * children and the other nodes of own's backend (ours, which it never
 * waits for), and, when blockers is not NULL, the indexes in children of
 * the nodes it waits for (at most max_blockers of them; the decision's
 * blockers counts them all).
 */
static zkl_decision
zkl_scan(const char *const *children, int nchildren,
		 const char *own, const char *const *ours, int nours,
		 const char *const *held_behind, int nheld_behind,
		 int *blockers, int max_blockers)
{
	zkl_decision d = {ZKL_VERDICT_ABSENT, -1, 0, false, false};
	zkl_contender_name me;
	zkl_contender_name nearest = {0, false};
	bool		have_read = false;
	int32_t		first_read = 0;
	bool		found_self = false;
	bool		deadlock = false;
	bool		own_write = false;
	int			behind = -1;

	if (!zkl_contender_parse(own, &me))
		return d;
	d.at_top = me.seq == INT32_MAX || me.seq < 0;

	zkl_own_modes(ours, nours, &own_write, &have_read, &first_read);

	for (int i = 0; i < nchildren; i++)
	{
		zkl_contender_name c;

		if (strcmp(children[i], own) == 0)
		{
			found_self = true;
			continue;
		}
		if (!zkl_contender_parse(children[i], &c) ||
			zkl_is_ours(children[i], ours, nours) ||
			(me.shared && own_write))
			continue;

		/*
		 * Another contender with our number is an anomaly (the counter at its
		 * top, or a client's plain create): it is in our way, whatever the
		 * modes, and we in its, so that neither is granted while both are
		 * there.
		 */
		if (c.seq == me.seq)
			d.equal = true;
		else if (me.shared && c.shared)
			continue;
		else if (zkl_seq_compare(c.seq, me.seq) > 0)
		{
			/*
			 * Behind us: in our way only as a hold that a peer took under its
			 * write lock, for an exclusive request.  Watched only when
			 * nothing ahead is in our way.
			 */
			if (me.shared || !zkl_is_ours(children[i], held_behind, nheld_behind))
				continue;
			zkl_add_blocker(&d, blockers, max_blockers, i);
			if (behind < 0)
				behind = i;
			continue;
		}

		/* A writer queued behind a read of ours waits for us, and we for it. */
		if (!c.shared && have_read && zkl_seq_compare(first_read, c.seq) < 0)
			deadlock = true;

		zkl_add_blocker(&d, blockers, max_blockers, i);
		if (d.watch < 0 || zkl_seq_compare(c.seq, nearest.seq) > 0)
		{
			d.watch = i;
			nearest = c;
		}
	}
	if (d.watch < 0)
		d.watch = behind;

	return zkl_verdict_of(d, found_self, deadlock);
}

/*
 * The decision for the request whose node is own, given the directory's
 * children and the other nodes of own's backend (ours, which it never
 * waits for).  A try asks the same question: WAIT means "busy".
 *
 * A backend's other nodes are holds (it waits for one request at a time):
 * a shared request of a backend that holds the lock exclusive is held at
 * once, whatever is queued between its two nodes, as Curator grants the
 * read lock to its write lock's holder.  The backend keeps its exclusive
 * node while it holds the lock shared too, so that a writer queued between
 * them never takes the lock beside the read.
 */
zkl_decision
zkl_decide(const char *const *children, int nchildren,
		   const char *own, const char *const *ours, int nours)
{
	return zkl_scan(children, nchildren, own, ours, nours, NULL, 0, NULL, 0);
}

/*
 * zkl_decide, where some nodes behind own hold all the same (held_behind:
 * peers' reads taken under their write lock, zkl_is_downgrade): an
 * exclusive request waits for them too, a shared one does not.
 */
zkl_decision
zkl_decide_with(const char *const *children, int nchildren,
				const char *own, const char *const *ours, int nours,
				const char *const *held_behind, int nheld_behind)
{
	return zkl_scan(children, nchildren, own, ours, nours,
					held_behind, nheld_behind, NULL, 0);
}

/*
 * Every node the request own waits for, not only the nearest: the edges
 * of the waits-for graph that deadlock detection follows (waits_for.c) are
 * the lock rule's own.  Fills blockers with indexes into children, at most
 * max_blockers of them, and returns how many there are in all (0 when own
 * holds or is absent).
 */
int
zkl_blockers(const char *const *children, int nchildren,
			 const char *own, const char *const *ours, int nours,
			 int *blockers, int max_blockers)
{
	return zkl_scan(children, nchildren, own, ours, nours, NULL, 0,
					blockers, max_blockers).blockers;
}

/* What the nodes ahead are, for zkl_holders: how many, and whose. */
typedef struct zkl_ahead
{
	int			count;
	const char *owner;			/* the one owner of them all, or NULL */
} zkl_ahead;

static bool
zkl_ahead_only_of(const zkl_ahead *a, const char *owner)
{
	return a->count == 0 || (owner != NULL && a->owner != NULL && strcmp(a->owner, owner) == 0);
}

static void
zkl_ahead_add(zkl_ahead *a, const char *owner)
{
	if (a->count++ == 0)
		a->owner = owner;
	else if (a->owner != NULL && (owner == NULL || strcmp(a->owner, owner) != 0))
		a->owner = NULL;
}

/* Owners in order, for zkl_holders; NULL (a node of no known backend) last. */
static int
zkl_cmp_owner_refs(const void *a, const void *b)
{
	const char *x = **(const char *const *const *) a;
	const char *y = **(const char *const *const *) b;

	if (x == NULL || y == NULL)
		return (x == NULL) - (y == NULL);
	return strcmp(x, y);
}

/*
 * Whether contenders a and b (of one sequence number) are a peer's write
 * and read of one session: Curator's downgrade (5.5 and later name the read
 * with the write's number), no anomaly.
 */
static bool
zkl_downgrade_pair(const zkl_contender_name *queue, const char *const *owners,
				   const int64_t *sessions, int a, int b)
{
	return sessions != NULL && owners[a] == NULL && owners[b] == NULL &&
		sessions[a] != 0 && sessions[a] == sessions[b] && queue[a].shared != queue[b].shared;
}

/*
 * Which owners have an exclusive node: sort references to owners[] by
 * owner (in scratch), and mark in held[] each of a run that has a writer.
 */
static void
zkl_mark_writing_owners(const zkl_contender_name *queue, const char *const *owners, int n,
						bool *held, const char *const **scratch)
{
	for (int i = 0; i < n; i++)
		scratch[i] = &owners[i];
	qsort(scratch, n, sizeof(*scratch), zkl_cmp_owner_refs);
	for (int start = 0, end; start < n; start = end)
	{
		bool		writes = false;

		for (end = start; end < n &&
			 (end == start ||
			  (*scratch[start] != NULL && zkl_cmp_owner_refs(&scratch[start], &scratch[end]) == 0));
			 end++)
			writes |= !queue[scratch[end] - owners].shared;
		for (int k = start; k < end; k++)
			held[scratch[k] - owners] = writes && *scratch[start] != NULL;
	}
}

/*
 * A peer's read behind (or beside) a write of its own session that holds:
 * its downgrade, which holds too (zkl_is_downgrade).  Few writes hold at
 * once: the first few are enough.
 */
static void
zkl_hold_downgrades(const zkl_contender_name *queue, const char *const *owners,
					const int64_t *sessions, int n, bool *held, bool *equal)
{
	int			writers_held[4];
	int			nheld = 0;

	for (int i = 0; i < n && nheld < 4; i++)
		if (held[i] && !queue[i].shared && owners[i] == NULL && sessions[i] != 0)
			writers_held[nheld++] = i;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < nheld && queue[i].shared && owners[i] == NULL && !held[i]; k++)
			if (sessions[i] == sessions[writers_held[k]] &&
				zkl_seq_compare(queue[writers_held[k]].seq, queue[i].seq) <= 0)
			{
				held[i] = true;
				if (equal != NULL)
					equal[i] = false;
			}
}

/*
 * Whether each contender of a whole directory holds, in about n log n
 * instead of a decision per node: the answer zkl_decide gives (verdict
 * HELD) for each of them, given as ours the other nodes of its owner.
 * queue is the contenders in queue order (sorted with zkl_seq_compare);
 * owners[i] names the backend contender i belongs to, NULL for one of no
 * known backend (its own owner).  A contender holds when nothing it waits
 * for is ahead of it: an exclusive one when every node ahead is its
 * owner's, a shared one when every exclusive node ahead is; a shared one
 * whose owner has an exclusive node holds at once (see zkl_decide).  Nodes
 * with the same sequence number are not ahead of each other, but another
 * owner's node with our number is in our way: equal[i] (when equal is not
 * NULL) says so, the anomaly zkl_decide reports.  sessions[i] (when
 * sessions is not NULL) is the ZooKeeper session of a peer's contender (of
 * no owner; 0 if unknown): a peer's read behind or beside a write of its
 * session that holds is that write's downgrade, and holds.  scratch has
 * room for n pointers.
 */
void
zkl_holders(const zkl_contender_name *queue, const char *const *owners,
			const int64_t *sessions, int n,
			bool *held, bool *equal, const char *const **scratch)
{
	zkl_ahead	all = {0, NULL};
	zkl_ahead	writers = {0, NULL};
	int			group = 0;
	int			group_end = 0;
	zkl_ahead	same = {0, NULL};

	/* held[] marks the owners that write until the pass below sets it. */
	zkl_mark_writing_owners(queue, owners, n, held, scratch);

	for (int i = 0; i < n; i++)
	{
		bool		owner_writes = held[i];
		bool		is_equal;

		/* A new sequence number: the group before it is ahead from now on. */
		if (i > 0 && zkl_seq_compare(queue[i - 1].seq, queue[i].seq) != 0)
		{
			for (; group < i; group++)
			{
				zkl_ahead_add(&all, owners[group]);
				if (!queue[group].shared)
					zkl_ahead_add(&writers, owners[group]);
			}
		}
		/* Who shares our number: the group from here to its end. */
		if (i >= group_end)
		{
			same.count = 0;
			same.owner = NULL;
			for (group_end = i; group_end < n &&
				 zkl_seq_compare(queue[group_end].seq, queue[i].seq) == 0; group_end++)
				zkl_ahead_add(&same, owners[group_end]);
		}
		is_equal = same.count > 1 &&
			!(owners[i] != NULL && same.owner != NULL && strcmp(same.owner, owners[i]) == 0) &&
			!(group_end - group == 2 && zkl_downgrade_pair(queue, owners, sessions, group, group + 1));

		if (queue[i].shared && owner_writes)
		{
			held[i] = true;
			is_equal = false;
		}
		else
			held[i] = !is_equal &&
				zkl_ahead_only_of(queue[i].shared ? &writers : &all, owners[i]);
		if (equal != NULL)
			equal[i] = is_equal;
	}

	if (sessions != NULL)
		zkl_hold_downgrades(queue, owners, sessions, n, held, equal);
}

/*
 * Whether a waiter holds once the node it watched is deleted, without
 * reading the directory again.  It does when that node was the only one it
 * waited for: sequence numbers only grow, so nothing can appear ahead of
 * it.  It also does when that node was an exclusive grant (of this
 * cluster, which knows): an exclusive grant is the lowest node, and being
 * the nearest node ahead of the waiter, nothing else was left ahead.
 * Neither holds where numbers repeat (numbers_repeat: the waiter's decision
 * saw an equal number, or its own is the counter's top or past it): there
 * the waiter lists the directory and decides again, as it does otherwise.
 */
bool
zkl_holds_after_predecessor(bool predecessor_was_only_blocker,
							bool predecessor_was_exclusive_grant,
							bool numbers_repeat)
{
	if (numbers_repeat)
		return false;
	return predecessor_was_only_blocker || predecessor_was_exclusive_grant;
}

/*
 * Whether a waiter of this cluster holds the moment this cluster's own
 * exclusive grant ahead of it is released, before the release's delete has
 * even left for ZooKeeper (a local handoff: the grant costs no round trip,
 * and the delete may share a multi with later writes).
 *
 * The released node stays in ZooKeeper until its delete is applied, ahead
 * of the waiter: every other client still waits for it, so nobody else can
 * hold meanwhile, and nobody of this cluster relies on it any more.  The
 * waiter holds exactly when the node's deletion would have granted it
 * (zkl_holds_after_predecessor with an exclusive grant gone), and only
 * when all of this holds:
 *
 * - the holder's backend gave the hold up itself (not a hold the worker
 *   takes away, a failed request or a try), and its delete cannot be
 *   refused (not a directory whose ACL zklock could not read as granting
 *   DELETE): a node that stays would hold the lock against everyone, this
 *   cluster's waiters too;
 * - neither is a semaphore's mutex, whose holder goes on to its lease;
 * - the waiter watches that very node, and no downgrade may hide a read
 *   lock behind it (zkl_downgrade_possible: that needs a listing);
 * - the session is connected and its proof holds now: ZooKeeper heard from
 *   it within the proof's margin, so it has not expired and its nodes did
 *   not go with it;
 * - the events are current: ZooKeeper answered a request of this
 *   connection that left at most ZKL_HANDOFF_HEARD_US ago, and events come
 *   in order with answers, so the deletion of the waiter's own node by
 *   another client (which queues the waiter again) has been handled if
 *   ZooKeeper applied it before that request came.  A deletion after it is
 *   no different from one just after a grant by the watch's event, which
 *   the waiter also learns of only when that deletion's event comes.
 *
 * Otherwise only ZooKeeper's own event on the deletion grants the waiter:
 * it proves the session alive and comes after every earlier event.
 */
bool
zkl_hands_over_at_release(const zkl_local_handoff_case *c)
{
	if (!c->released_by_backend || !c->exclusive_grant || !c->delete_sure ||
		c->semaphore || !c->connected || !c->proof_fresh || !c->events_current ||
		!c->waiter_watches_it || c->downgrade_possible)
		return false;
	return zkl_holds_after_predecessor(c->predecessor_was_only_blocker, true,
									   c->numbers_repeat);
}

/*
 * The number the next sequential child of a directory gets, from the
 * directory's Stat: ZooKeeper (3.5 and later) keeps a count of the creates
 * of children, which numbers them, and reports as cversion twice that
 * count less the children there are (creates and deletes, so to speak),
 * computed in 32 bits: past 2^30 creates the reported cversion is
 * negative although the numbers given out are not.  The count is the
 * reported value plus the children, halved, modulo 2^32.
 */
int64_t
zkl_next_sequence(int32_t cversion, int32_t num_children)
{
	return (int64_t) (((uint32_t) cversion + (uint32_t) num_children) / 2);
}

/*
 * Whether a directory whose next sequential child gets next_sequence
 * (zkl_next_sequence) nears the counter's top, where ZooKeeper hands out
 * 2147483647 to every sequential child and no lock request can be granted
 * any more once two are queued.  Warned of at half way: the rest lasts
 * days at thousands of lock cycles a second.
 */
bool
zkl_counter_near_top(int64_t next_sequence)
{
	return next_sequence >= ZKL_COUNTER_WARN;
}

/* Whether node's sequence follows its last marker, and that is marker. */
static bool
zkl_last_marker_is(const char *node, const char *marker, int32_t *seq)
{
	const char *hit = NULL;
	int32_t		dummy;

	for (const char *p = node; (p = strstr(p, marker)) != NULL; p++)
		hit = p;
	return hit != NULL && zkl_seq_parse(hit + strlen(marker), seq ? seq : &dummy);
}

/*
 * Which client's layout a node that is not zklock's follows, as
 * zk_lock_contenders shows it: "kazoo" when it carries one of kazoo's
 * markers, "curator" when it has Curator's protected form, else "other".
 */
const char *
zkl_node_client(const char *node)
{
	for (int i = 0; i < ZKL_NODE_LAYOUTS; i++)
		if (strcmp(zkl_node_layouts[i].client, "kazoo") == 0 &&
			strstr(node, zkl_node_layouts[i].marker) != NULL)
			return "kazoo";
	if (strncmp(node, ZKL_PROTECTED_PREFIX, strlen(ZKL_PROTECTED_PREFIX)) == 0)
		return "curator";
	return "other";
}

/*
 * Whether node is a write node of Curator's read-write lock ("__WRIT__"),
 * whose holder may take the read lock too and then give the write lock up:
 * Curator's downgrade.  (Curator 5.5 and later name that read node with the
 * write node's number, so it stays ahead of any writer queued behind; 5.4
 * and before give it the next number, behind them.)
 */
bool
zkl_may_downgrade(const char *node)
{
	return zkl_last_marker_is(node, zkl_node_layouts[ZKL_NODE_WRITE].marker, NULL);
}

/*
 * Whether node is of Curator's read-write lock layout ("__READ__" or
 * "__WRIT__"), the only peer's layout that downgrades (kazoo's locks are
 * not reentrant).
 */
bool
zkl_is_curator_rw(const char *node)
{
	return zkl_last_marker_is(node, zkl_node_layouts[ZKL_NODE_WRITE].marker, NULL) ||
		zkl_last_marker_is(node, zkl_node_layouts[ZKL_NODE_READ].marker, NULL);
}

/*
 * Whether child is a read node of Curator's layout ("__READ__") behind
 * own: what a downgrade leaves behind a writer queued at the time.
 */
bool
zkl_downgrade_candidate(const char *child, const char *own)
{
	int32_t		seq;
	zkl_contender_name me;

	return zkl_last_marker_is(child, zkl_node_layouts[ZKL_NODE_READ].marker, &seq) &&
		zkl_contender_parse(own, &me) && zkl_seq_compare(seq, me.seq) > 0;
}

/*
 * Whether a read node behind a request, read once the peer's write node
 * ahead of the request (of session writer_owner) was deleted, is that
 * peer's downgrade, and so holds: a peer's node (not zklock's: zklock
 * keeps its write node while its own reads last) of the same session,
 * created before the write node was deleted.  The deletion's zxid is not
 * known; the directory's pzxid at the first listing after it (the zxid of
 * the last create or delete of a child) is at or after it.  A read node
 * created at that zxid came after the deletion; one created before it may
 * have come before, and is taken for a hold: a writer that waits for a
 * reader that waits for it (a peer's thread reading while another of its
 * threads held the write lock) ends at its timeout, where taking it for a
 * waiter would let two holders in.
 */
bool
zkl_is_downgrade(int64_t reader_owner, int64_t reader_czxid, bool reader_is_zklock,
				 int64_t writer_owner, int64_t listing_pzxid)
{
	return !reader_is_zklock && writer_owner != 0 && reader_owner == writer_owner &&
		reader_czxid < listing_pzxid;
}
