/*-------------------------------------------------------------------------
 *
 * write_batch_rule.c
 *		The rule of the worker's coalesced writes (write_batch.c): which of
 *		the creates and deletes ready in one pass of its loop travel
 *		together in one ZooKeeper multi, and what a multi's answer means
 *		for each of its operations.  Plain C with no PostgreSQL, ZooKeeper
 *		calls or shared memory; test/unit proves it without a server.
 *
 * All the operations of a multi are one transaction of ZooKeeper's, with
 * one zxid: every node a multi creates has that zxid as its czxid.  The
 * fencing token is the lock node's czxid, and it must grow from one holder
 * of a lock to the next: two nodes of one lock directory created by one
 * multi would share it.  So a multi carries at most one create per lock
 * directory; a second create of the same directory goes in a later group
 * (sent right after the first, never held back).  Nodes of different locks
 * may share a czxid: tokens are compared per lock only, and deadlock
 * detection, which orders requests of different locks by czxid, breaks
 * such ties by session and pid (waits_for.c).
 *
 * No write goes in a group before that of a delete that was ready before
 * it: a backend that releases a lock and asks for it again finds its old
 * node gone, as with lone requests (ZooKeeper answers one session in
 * order, and a multi's operations are applied in order).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "rules/write_batch_rule.h"

/* Work done by zkl_wb_group since the start: steps, for the unit tests. */
uint64_t	zkl_wb_group_steps = 0;

/* Order pointers into the dirs[] array by the directory they point to. */
static int
zkl_wb_dir_cmp(const void *a, const void *b)
{
	zkl_wb_group_steps++;
	return strcmp(**(const char *const *const *) a, **(const char *const *const *) b);
}

/* The first group from g on that is not full (next[]: path halving). */
static int
zkl_wb_open_group(int *next, int g)
{
	while (next[g] != g)
	{
		zkl_wb_group_steps++;
		next[g] = next[next[g]];
		g = next[g];
	}
	return g;
}

/*
 * Give each of the n ready operations (kinds[i], in lock directory
 * dirs[i], in the order they became ready) the group it travels in:
 * group[i], from 0.  Groups are sent in order; a group of one operation is
 * sent alone, as without batching.  No group holds more than
 * ZKL_WB_MAX_OPS operations, nor two creates of one directory, and none
 * comes before the group of a delete ready before it.  Each operation goes
 * in the first group that allows it.  Returns the number of groups.
 * scratch: ZKL_WB_GROUP_SCRATCH(n) bytes, pointer-aligned.
 *
 * In O(n log n): the directories are sorted once (each gets a number), and
 * then each operation's group is found from two facts.  The floor, the
 * highest group of a delete ready before it, only grows.  The creates of
 * one directory land in growing groups: every group from the floor up to
 * the last create of a directory is full or holds a create of it (groups
 * only fill), so a create of it goes in the first group not full after both
 * its floor and that last create; the groups that are full are skipped in
 * near-constant time (next[], a union-find of full groups).
 */
int
zkl_wb_group(const zkl_wb_kind *kinds, const char *const *dirs, int n, int *group,
			 void *scratch)
{
	const char *const **sorted = scratch;
	int		   *dir_id = (int *) (sorted + n);
	int		   *last = dir_id + n;	/* per directory: its last create's group */
	int		   *size = last + n;
	int		   *next = size + n;	/* n + 1 entries */
	int			ngroups = 0;
	int			floor = 0;
	int			ndirs = 0;

	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		sorted[i] = &dirs[i];
	qsort(sorted, n, sizeof(*sorted), zkl_wb_dir_cmp);
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && zkl_wb_dir_cmp(&sorted[i - 1], &sorted[i]) != 0)
			ndirs++;
		dir_id[sorted[i] - dirs] = ndirs;
	}
	for (int i = 0; i <= ndirs; i++)
		last[i] = -1;
	for (int g = 0; g <= n; g++)
	{
		next[g] = g;
		if (g < n)
			size[g] = 0;
	}

	for (int i = 0; i < n; i++)
	{
		int			g = floor;

		zkl_wb_group_steps++;
		if (kinds[i] == ZKL_WB_CREATE && last[dir_id[i]] >= g)
			g = last[dir_id[i]] + 1;
		g = zkl_wb_open_group(next, g);
		group[i] = g;
		if (++size[g] == ZKL_WB_MAX_OPS)
			next[g] = g + 1;
		if (kinds[i] == ZKL_WB_CREATE)
			last[dir_id[i]] = g;
		else if (g > floor)
			floor = g;
		if (g + 1 > ngroups)
			ngroups = g + 1;
	}
	return ngroups;
}

/*
 * How many multis may be in flight before ready writes wait, given
 * ZooKeeper's shortest recent round trip (zkl_wb_rtt_shortest) of a sync
 * or a read: its network distance, not a multi's round trip, which adds
 * the quorum write and its fsync (an ensemble's slow writes would let
 * more multis fly, each carrying less, where one carrying more is what
 * spares ZooKeeper).  Near
 * ZooKeeper (under ZKL_WB_PACE_US) one: what becomes ready while a multi
 * is in flight waits for its answer, and ZooKeeper pays once for all of
 * it.  Far from it, a write would wait a long round trip for company, and
 * the server is no bottleneck there: one more multi may leave for each
 * ZKL_WB_PACE_US of the round trip, so that nothing waits much longer than
 * that.  The shortest round trip, not the average, says how far ZooKeeper
 * is: under load the average grows with the server's queue, and more
 * multis in flight would only feed it.
 */
int
zkl_wb_in_flight_limit(int64_t round_trip_us)
{
	int64_t		limit;

	if (round_trip_us <= 0)
		return 1;
	limit = 1 + round_trip_us / ZKL_WB_PACE_US;
	return limit > ZKL_WB_MAX_IN_FLIGHT ? ZKL_WB_MAX_IN_FLIGHT : (int) limit;
}

/*
 * Whether the n operations ready now wait for the answer of the multis in
 * flight (in_flight of them) rather than leave.  While as many multis as
 * zkl_wb_in_flight_limit allows are in flight, what becomes ready gathers
 * and leaves with the next answer, as one multi: under load each multi
 * carries what came while an earlier one was answered, and ZooKeeper pays
 * once for all of it (a group commit).  With no multi in flight nothing
 * waits, so a lone request, and a light load whose writes go alone, keep
 * their latency; nor does anything wait for a session that is not
 * connected, where each operation goes alone and gets its own answer.
 */
bool
zkl_wb_hold(int in_flight, int n, bool connected, int64_t round_trip_us)
{
	return connected && n > 0 && in_flight > 0 &&
		in_flight >= zkl_wb_in_flight_limit(round_trip_us);
}

/*
 * Note a multi's round trip (sample_us, answered at now_us).  The shortest
 * is kept per bucket of ZKL_WB_RTT_WINDOW_US; a bucket older than that
 * becomes the previous one, and one older than two windows is forgotten,
 * so that the figure follows a ZooKeeper that moved (another server, a
 * slower link) within two windows.  A sample that cannot be (not positive)
 * is ignored.
 */
void
zkl_wb_rtt_note(zkl_wb_rtt * rtt, int64_t sample_us, int64_t now_us)
{
	if (sample_us <= 0)
		return;
	if (now_us - rtt->bucket_start >= ZKL_WB_RTT_WINDOW_US || now_us < rtt->bucket_start)
	{
		rtt->previous = now_us - rtt->bucket_start < 2 * (int64_t) ZKL_WB_RTT_WINDOW_US &&
			now_us >= rtt->bucket_start ? rtt->current : 0;
		rtt->current = 0;
		rtt->bucket_start = now_us;
	}
	if (rtt->current == 0 || sample_us < rtt->current)
		rtt->current = sample_us;
}

/* The shortest round trip noted in the current and the previous bucket. */
int64_t
zkl_wb_rtt_shortest(const zkl_wb_rtt * rtt)
{
	if (rtt->previous > 0 && (rtt->current == 0 || rtt->previous < rtt->current))
		return rtt->previous;
	return rtt->current;
}

/*
 * Whether a create of a multi must list its lock directory, given the
 * directory's numChildren in the Stat of the multi's setData of it, which
 * comes after the create in the same transaction.  One child is the create's
 * own node: nothing is below it, and whatever is created later is numbered
 * higher, so the listing would only say that the request holds.  Anything
 * else (a contender, a node of another kind, a count that cannot be) needs
 * the listing.
 */
bool
zkl_wb_must_list(int num_children)
{
	return num_children != 1;
}

/*
 * Whether a group of size operations of the given kind (its first's: a
 * group of one has one) leaves as a multi rather than each alone, on a
 * connected session.  Two or more share one.  One create goes as a multi of
 * its own too: the setData that follows it answers the directory's Stat,
 * so that a create alone in its directory holds on that answer, where a
 * lone create would ask for a listing, one more request and round trip.  A
 * lone delete gains nothing from it, and goes alone.  Not connected, each
 * goes alone, where the steps handle the connection's state.
 */
bool
zkl_wb_as_multi(zkl_wb_kind kind, int size, bool connected)
{
	if (!connected || size < 1)
		return false;
	return size > 1 || kind == ZKL_WB_CREATE;
}

/*
 * What the multi's answer (multi_rc, the first failing operation's code)
 * means for each of its operations.  A multi is carried out whole or not
 * at all: when one operation fails, none is done, whichever failed, so
 * each goes again alone and gets its own answer (a delete of a node that
 * is gone, ZNONODE, is then a done delete; a create refused for its own
 * reason fails its own request only).  A lost connection, or an answer the
 * client could not match to the multi (ZRUNTIMEINCONSISTENCY as the whole
 * multi's code), leaves the whole multi's fate unknown, as a lone request's:
 * each create is looked for by its uuid, each delete is sent again (a node
 * already gone is then a done delete).
 */
zkl_wb_outcome
zkl_wb_outcome_of(int multi_rc)
{
	switch (multi_rc)
	{
		case ZOK:
			return ZKL_WB_DONE;
		case ZCONNECTIONLOSS:
		case ZOPERATIONTIMEOUT:

			/*
			 * A rolled-back multi answers the failing operation's own code
			 * (the others' results say ZRUNTIMEINCONSISTENCY); as the whole
			 * multi's answer, it says the client could not match the reply to
			 * the request, which may have been applied: as a lost answer.
			 */
		case ZRUNTIMEINCONSISTENCY:
			return ZKL_WB_UNKNOWN;
		case ZSESSIONEXPIRED:
		case ZCLOSING:
		case ZINVALIDSTATE:
			return ZKL_WB_SESSION;
		default:
			return ZKL_WB_ALONE;
	}
}

/*
 * How long a lone delete may wait for a write to share its multi: one round
 * trip of a write to ZooKeeper, what the delete itself will take to be
 * answered (the shortest recent multi's, write_round_trip_us; where none is
 * known, the shortest recent sync's, round_trip_us), at most
 * ZKL_WB_LINGER_MAX_US; not at all while the distance is unknown (no sync
 * answered lately).  Sent alone, the delete would cost ZooKeeper a
 * transaction of its own (a quorum write, an fsync) and the next create of
 * the cluster would queue behind it; waiting one write's round trip more at
 * most doubles how long another client sees the released node, and the cap
 * keeps that below a millisecond where ZooKeeper is far.  A sync's round
 * trip alone would be shorter than the gap between a client's release and
 * its next acquire, even on one machine (the client's own round trip to
 * PostgreSQL), and the delete would leave alone at the worker's next
 * wake-up.  The worker sleeps by whole milliseconds, so a delete that finds
 * no company leaves within about one millisecond.
 */
int64_t
zkl_wb_linger_bound(int64_t round_trip_us, int64_t write_round_trip_us)
{
	int64_t		bound = round_trip_us;

	if (round_trip_us <= 0)
		return 0;
	if (write_round_trip_us > bound)
		bound = write_round_trip_us;
	return bound > ZKL_WB_LINGER_MAX_US ? ZKL_WB_LINGER_MAX_US : bound;
}

/*
 * How many more microseconds the one delete ready now (a release's, with
 * nothing else ready and no multi in flight) waits for the next write of
 * this worker to share its multi (zkl_wb_linger_bound in all); 0: it goes
 * now.  The next lock create then travels after it in one multi, one
 * transaction: the uncontended cycle of release and acquire costs
 * ZooKeeper one fsync, not two.
 *
 * It goes at once when waiting could hurt more than it spares: a request of
 * this cluster in the same lock directory (a waiter behind it that was not
 * handed the lock at the release, lock_rule.c's zkl_hands_over_at_release,
 * is granted on the delete's answer and never waits for the worker's own
 * company; a listing on its way would see the node); a backend that asked
 * for no wait (zk_lock_release_all, its exit, a release that waits for the
 * delete's answer) or a hold the worker takes away; a session not
 * connected, or whose proof would run out meanwhile; a stopping worker; and
 * any request of another kind (a listing, a semaphore's, a publication)
 * leaving in this pass, so that every request but a lock create still
 * reaches ZooKeeper after the delete, in the order sent.  A lock create
 * of the same directory never overtakes it: it joins the multi after it,
 * or (sent alone) makes it go first (write_batch.c).
 */
int64_t
zkl_wb_linger_left(const zkl_wb_linger_case * c)
{
	int64_t		bound = zkl_wb_linger_bound(c->round_trip_us, c->write_round_trip_us);

	if (!c->lone_delete || !c->connected || !c->proof_fresh || c->shutting_down ||
		c->release_now || c->neighbour || c->others)
		return 0;
	if (c->waited_us < 0 || c->waited_us >= bound)
		return 0;
	return bound - c->waited_us;
}

/*
 * The handle in use is handle: when it is not the one counted, the count
 * was of a handle now closed, whose answers may never all come (a close
 * races with its answers), and it starts again from none.
 */
void
zkl_wb_flight_handle(zkl_wb_flight *flight, uint32_t handle)
{
	if (flight->handle != handle)
	{
		flight->handle = handle;
		flight->count = 0;
	}
}

/*
 * A multi sent on handle was answered: it counts off the handle's multis,
 * never off those of a later handle, nor below none.
 */
void
zkl_wb_flight_answered(zkl_wb_flight *flight, uint32_t handle)
{
	if (flight->handle == handle && flight->count > 0)
		flight->count--;
}
