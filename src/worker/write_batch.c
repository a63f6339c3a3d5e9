/*-------------------------------------------------------------------------
 *
 * write_batch.c
 *		Coalesced writes: the creates of lock requests and the deletes of
 *		releases that become ready together (in one pass of the worker's
 *		loop, or while a multi is in flight) travel as one ZooKeeper
 *		multi, which ZooKeeper pays for once (one request, one
 *		transaction, one log record).  Runs in the worker's loop, but for
 *		zkl_multi_done, which libzookeeper calls back from inside its own
 *		calls and which touches nothing of PostgreSQL.
 *
 * The worker opens a batch at the start of a pass (zkl_batch_begin) and
 * sends it at the end (zkl_batch_flush).  Meanwhile lock_recipe.c and
 * slot_steps.c hand their contender creates and their deletes here
 * (zkl_batch_take_create, zkl_batch_take_delete) instead of sending them.
 * With no multi in flight, what is ready leaves at the end of the pass, so
 * a lone request waits for nobody: a lone delete alone, through the steps'
 * own path, as without batching; a lone create as a multi of its own (its
 * setData's Stat spares the listing, below), which then counts as a multi
 * in flight.  While a multi is in flight (or a few, far from ZooKeeper:
 * zkl_wb_in_flight_limit, by the multis' shortest recent round trip),
 * what becomes ready waits for an answer and then leaves
 * together (write_batch_rule.c, zkl_wb_hold): under load each multi
 * carries what came while the one before it was answered, a group commit,
 * and ZooKeeper's work per lock falls with the load.  The multis in
 * flight are those of the handle in use: closing it forgets them, so that
 * an answer lost in the close cannot hold every later batched write, and
 * a closed handle's late answer counts off nothing of the next.
 *
 * One exception to "a lone request waits for nobody": a release's delete
 * that is all there is to send waits, for at most about one round trip to
 * ZooKeeper (write_batch_rule.c, zkl_wb_linger_left), for the next write of
 * this worker to share its multi.  An uncontended cycle, release then
 * acquire, then costs ZooKeeper one transaction (one fsync): the delete and
 * the next create, which comes after it in the multi.  It goes at once
 * when a request of this cluster is in the same lock directory (a waiter
 * behind it), when its backend releases everything or exits, when the
 * backend waits for the delete's answer, when the worker takes the hold
 * away, when the session is in trouble or the worker stops, and before any
 * request that is no lock create (zkl_batch_release_lingering), so that
 * such requests still reach ZooKeeper after it, in the order sent.  A
 * create of the same directory sent alone makes it go first
 * (zkl_wb_send_before).
 *
 * A multi's create answers no Stat, so no czxid.  The fencing token is the
 * lock node's czxid; after its lock operations the multi carries a setData
 * of each create's lock directory, whose Stat's mzxid is the multi's zxid:
 * the czxid of every node the multi created (one transaction, one zxid),
 * read from the same transaction, not guessed.  The same Stat gives the
 * directory's numChildren once the multi is applied: when it is 1, the new
 * node is alone and holds, and the listing a lone create sends is spared
 * (zkl_wb_listed); otherwise the directory is listed on the answer.  The
 * directory's data stays empty, as zklock, Curator and kazoo make it (its
 * version and mzxid move; no recipe reads them).  No two creates of one
 * directory share a multi (write_batch_rule.c), so the nodes of a lock
 * keep distinct, growing tokens.  The setData needs WRITE on the
 * directory; where an ACL refuses it (ZNOAUTH), the multi fails as a
 * whole, each operation goes again alone, and the directory is remembered
 * (zkl_wb_refused): its creates go alone from then on.
 *
 * The multi's answer is split into one event per operation
 * (ZKL_EV_BATCHED); zkl_batch_answered turns each into the answer the
 * recipes already handle (a create's ZKL_EV_CREATED, then its listing,
 * given or asked for; a delete's ZKL_EV_DELETED), or sends the operation
 * again alone when the multi failed as a whole (write_batch_rule.c says
 * which).  A lost connection leaves a create's fate unknown, as a lone
 * create's: slot_recovery.c then looks for the node by its uuid (after a
 * sync).  Every node deleted here is the slot's own: only slot_steps.c's
 * zkl_send_delete hands deletes, with the slot's own node.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "rules/clock.h"
#include "rules/write_batch_rule.h"
#include "settings.h"
#include "shared/shmem.h"
#include "worker/dispatch.h"
#include "worker/lock_recipe.h"
#include "worker/session.h"
#include "worker/slot_steps.h"
#include "worker/write_batch.h"
#include "worker/zk_events.h"

/* One operation ready in this pass. */
typedef struct zkl_wb_op
{
	zkl_wb_kind kind;
	int			slotno;
	uint32		opgen;
	char	   *path;			/* create: the node's prefix; delete: its path */
	char	   *dir;			/* the lock directory */
	char	   *data;			/* create: the node's data */
	int64		ready_at;		/* when it was taken (zkl_now()) */
} zkl_wb_op;

/*
 * One multi in flight: malloc'd, freed by its completion (or at refusal).
 * Its lock operations come first in ops[]; then, for each create, a setData
 * of the create's lock directory (setop[i] is its index, stats[i] its Stat).
 */
typedef struct zkl_wb_multi
{
	int64		sent_at;		/* when zoo_amulti took it (zkl_now()) */
	uint32		handle;			/* zkl_handle_number when it did */
	int			nlock;			/* lock operations, first in ops[] */
	int			nops;			/* ... and the setData of each create */
	uintptr_t	ctx[ZKL_WB_MAX_OPS];	/* each lock operation's context */
	zkl_wb_kind kind[ZKL_WB_MAX_OPS];
	int			setop[ZKL_WB_MAX_OPS];	/* a create's setData, in ops[] */
	zoo_op_t	ops[2 * ZKL_WB_MAX_OPS];
	zoo_op_result_t results[2 * ZKL_WB_MAX_OPS];
	struct Stat stats[ZKL_WB_MAX_OPS];	/* create i's directory, after the
										 * multi: mzxid is the multi's zxid,
										 * numChildren its children */
	char		paths[ZKL_WB_MAX_OPS][ZKL_MAX_DIR_LEN + ZKL_MAX_NODE_LEN + 2];
} zkl_wb_multi;

/*
 * The operations taken and not sent yet, in the order they became ready:
 * those of this pass, and those held while a multi is in flight
 * (zkl_wb_hold).  Their strings are in zkl_wb_cxt, freed when the
 * operation is sent or dropped.
 */
static bool zkl_wb_open = false;
static zkl_wb_op *zkl_wb_ops = NULL;
static int	zkl_wb_nops = 0;
static MemoryContext zkl_wb_cxt = NULL;

/*
 * Multis sent on the handle in use whose answer has not been handled yet:
 * forgotten when the handle is closed (write_batch_rule.c).
 */
static zkl_wb_flight zkl_wb_in_flight = {0, 0};

/*
 * When the lone delete kept back for company (zkl_wb_linger_left) must
 * leave, on zkl_now()'s clock; 0 when none is kept back.
 */
static int64 zkl_wb_linger_until = 0;

/*
 * How far ZooKeeper is: the shortest recent round trip of the heartbeat's
 * sync (zkl_batch_distance), not of a multi, whose quorum write and fsync
 * say how busy ZooKeeper is rather than how far.
 */
static zkl_wb_rtt zkl_wb_rtts;

/*
 * How long a write takes to be answered: the shortest recent round trip of
 * a multi answered whole (its quorum write and fsync included), which
 * bounds how long a lone delete waits for company (zkl_wb_linger_bound).
 */
static zkl_wb_rtt zkl_wb_write_rtts;

/* Per slot: its next write goes alone (a multi with it failed as a whole). */
static bool *zkl_wb_alone = NULL;

/*
 * The hashes of the last lock directories whose setData a multi was refused
 * (ZNOAUTH: an ACL that grants zklock no WRITE there), 0 for none.  Creates
 * in those directories go alone, rather than fail a multi each time; the
 * oldest is forgotten first (its next create then costs one failed multi).
 */
#define ZKL_WB_REFUSED_DIRS	64
static uint32 zkl_wb_refused[ZKL_WB_REFUSED_DIRS];
static int	zkl_wb_refused_next = 0;

/*
 * Lock directories whose data zklock saw empty, with the version the next
 * setData of a multi must find (the version seen, plus one for each multi
 * sent since with a setData of it: ZooKeeper applies one session's requests
 * in order).  Learned from each listing's Stat (zkl_batch_note_dir) and each
 * multi's answer; a directory not here (never listed since the worker
 * started, or its entry overwritten by another's: the table is indexed by
 * hash) or with data of another client's has its creates sent alone, which
 * write no data.  A multi that failed or whose fate is unknown makes its
 * directories unknown again.
 */
#define ZKL_WB_KNOWN_DIRS	512
typedef struct zkl_wb_known
{
	char	   *dir;			/* NULL: unused */
	int32		version;		/* the version the next setData must find */
	bool		empty;			/* its data is empty: zklock may set "" */
} zkl_wb_known;
static zkl_wb_known zkl_wb_known_dirs[ZKL_WB_KNOWN_DIRS];

static bool zkl_batch_take_create(int slotno, zkl_slot *slot, const char *prefix);
static bool zkl_wb_current(const zkl_wb_op *op);
static void zkl_batch_note_dir(const char *dir, int32 version, int32 data_len);
static void zkl_wb_send_alone(zkl_wb_kind kind, int slotno);
static bool zkl_batch_take_delete(int slotno, zkl_slot *slot, const char *path);

/* The steps hand their writes here (worker.c, at the worker's start). */
void
zkl_batch_init(void)
{
	zkl_hooks.take_create = zkl_batch_take_create;
	zkl_hooks.take_delete = zkl_batch_take_delete;
	zkl_hooks.note_dir = zkl_batch_note_dir;
}

/* Open the pass's batch (worker.c, at the start of each pass). */
void
zkl_batch_begin(void)
{
	if (zkl_wb_ops == NULL)
	{
		zkl_wb_ops = MemoryContextAlloc(TopMemoryContext, sizeof(zkl_wb_op) * zkl_shared->nslots);
		zkl_wb_alone = MemoryContextAllocZero(TopMemoryContext, sizeof(bool) * zkl_shared->nslots);
		zkl_wb_cxt = AllocSetContextCreate(TopMemoryContext, "zklock coalesced writes",
										   ALLOCSET_SMALL_SIZES);
	}
	zkl_wb_open = zkl_batch_writes;
}

/* Whether a write of the slot may wait for the end of the pass. */
static bool
zkl_wb_takes(int slotno)
{
	if (!zkl_wb_open)
		return false;
	if (zkl_wb_alone[slotno])
	{
		zkl_wb_alone[slotno] = false;
		return false;
	}
	return zkl_wb_nops < zkl_shared->nslots;
}

/* A directory's mark in zkl_wb_refused: never 0. */
static uint32
zkl_wb_dir_hash(const char *dir)
{
	return hash_bytes((const unsigned char *) dir, strlen(dir)) | 1;
}

/* The directory's entry in zkl_wb_known_dirs, if it has one. */
static zkl_wb_known *
zkl_wb_known_of(const char *dir)
{
	zkl_wb_known *e = &zkl_wb_known_dirs[zkl_wb_dir_hash(dir) % ZKL_WB_KNOWN_DIRS];

	return e->dir != NULL && strcmp(e->dir, dir) == 0 ? e : NULL;
}

/* Whether the directory's data is known to be empty: a multi may set it. */
static bool
zkl_wb_dir_empty(const char *dir)
{
	zkl_wb_known *e = zkl_wb_known_of(dir);

	return e != NULL && e->empty;
}

/* A lock directory's data, as a listing's (or a multi's) Stat tells. */
static void
zkl_batch_note_dir(const char *dir, int32 version, int32 data_len)
{
	zkl_wb_known *e = &zkl_wb_known_dirs[zkl_wb_dir_hash(dir) % ZKL_WB_KNOWN_DIRS];

	if (e->dir == NULL || strcmp(e->dir, dir) != 0)
	{
		if (e->dir != NULL)
			pfree(e->dir);
		e->dir = MemoryContextStrdup(TopMemoryContext, dir);
		e->empty = false;
	}

	/*
	 * A Stat read before the multis in flight were applied is older than what
	 * they will make: the version they expect is kept.
	 */
	if (!e->empty || data_len != 0 || version > e->version)
		e->version = version;
	e->empty = data_len == 0;
}

/* What a failed multi did to the directory is unknown: list it again. */
static void
zkl_wb_dir_forget(const char *dir)
{
	zkl_wb_known *e = zkl_wb_known_of(dir);

	if (e != NULL)
		e->empty = false;
}

/* Whether a multi's setData of the directory was refused lately. */
static bool
zkl_wb_dir_refused(const char *dir)
{
	uint32		h = zkl_wb_dir_hash(dir);

	for (int i = 0; i < ZKL_WB_REFUSED_DIRS; i++)
		if (zkl_wb_refused[i] == h)
			return true;
	return false;
}

static void
zkl_wb_add(zkl_wb_kind kind, int slotno, const char *path, const char *dir, const char *data)
{
	zkl_wb_op  *op = &zkl_wb_ops[zkl_wb_nops++];

	op->kind = kind;
	op->slotno = slotno;
	op->opgen = zkl_works[slotno].opgen;
	op->path = MemoryContextStrdup(zkl_wb_cxt, path);
	op->dir = MemoryContextStrdup(zkl_wb_cxt, dir);
	op->data = data ? MemoryContextStrdup(zkl_wb_cxt, data) : NULL;
	op->ready_at = zkl_now();
}

/* The operation was sent or dropped. */
static void
zkl_wb_forget(zkl_wb_op *op)
{
	pfree(op->path);
	pfree(op->dir);
	if (op->data)
		pfree(op->data);
}

/*
 * A create of directory dir is about to go alone, now: the deletes queued
 * for that directory (releases held for the end of the pass or for a
 * multi's answer) go first, alone and in their order, so that the create
 * never overtakes one (a delete that goes before a create ready earlier
 * only spares that create a node to wait for).  A create that overtook its own backend's release
 * would find that node still there: a try would answer false with nobody
 * holding the lock (ZooKeeper answers one session in order, so what is
 * sent first is applied first).
 */
static void
zkl_wb_send_before(const char *dir)
{
	zkl_wb_op  *earlier = NULL;
	int			nearlier = 0;
	int			kept = 0;

	for (int i = 0; i < zkl_wb_nops; i++)
	{
		if (zkl_wb_ops[i].kind != ZKL_WB_DELETE || strcmp(zkl_wb_ops[i].dir, dir) != 0)
		{
			zkl_wb_ops[kept++] = zkl_wb_ops[i];
			continue;
		}
		if (earlier == NULL)
			earlier = palloc(sizeof(zkl_wb_op) * zkl_wb_nops);
		earlier[nearlier++] = zkl_wb_ops[i];
	}
	zkl_wb_nops = kept;
	for (int i = 0; i < nearlier; i++)
	{
		if (zkl_wb_current(&earlier[i]))
			zkl_wb_send_alone(earlier[i].kind, earlier[i].slotno);
		zkl_wb_forget(&earlier[i]);
	}
	if (earlier != NULL)
		pfree(earlier);
}

/*
 * lock_recipe.c's contender create (prefix: the node's path up to its sequence
 * number), if it can wait for the end of the pass.  The slot is in
 * ZKL_PH_CREATING already.  A semaphore's and a retry after ZNONODE (whose
 * parents were just sent) go alone.
 */
static bool
zkl_batch_take_create(int slotno, zkl_slot *slot, const char *prefix)
{
	if (slot->permits > 0 || slot->inspect)
		return false;
	if (zkl_works[slotno].parent_attempts > 0 || zkl_wb_dir_refused(slot->dir) ||
		!zkl_wb_dir_empty(slot->dir) || !zkl_wb_takes(slotno))
	{
		zkl_wb_send_before(slot->dir);
		return false;
	}
	zkl_wb_add(ZKL_WB_CREATE, slotno, prefix, slot->dir, slot->data);
	return true;
}

/*
 * slot_steps.c's delete of the slot's own node (path), if it can wait for the
 * end of the pass.  The slot is in ZKL_PH_DELETING already.  Only a lock
 * request's node: a semaphore's (with its lease) and a published wait go
 * alone.
 */
static bool
zkl_batch_take_delete(int slotno, zkl_slot *slot, const char *path)
{
	if (slot->permits > 0 || slot->inspect || !zkl_wb_takes(slotno))
		return false;
	zkl_wb_add(ZKL_WB_DELETE, slotno, path, slot->dir, NULL);
	return true;
}

/* ---- inside libzookeeper's calls: malloc and the queue only ---- */

static void
zkl_multi_done(int rc, const void *data)
{
	zkl_wb_multi *m = (zkl_wb_multi *) data;

	for (int i = 0; i < m->nlock; i++)
	{
		zkl_event  *ev = zkl_event_new((const void *) m->ctx[i], rc);

		ev->type = m->kind[i];
		ev->state = m->results[i].err;
		if (rc == ZOK && m->kind[i] == ZKL_WB_CREATE)
		{
			ev->path = strdup(m->results[i].value ? m->results[i].value : "");
			if (ev->path == NULL)
				abort();		/* no ereport inside the library */
			/* The multi's zxid, which every node it created has as czxid. */
			ev->czxid = m->stats[i].mzxid;
			/* The directory as a listing right after would see it. */
			ev->cversion = m->stats[i].cversion;
			ev->num_children = m->stats[i].numChildren;
			ev->pzxid = m->stats[i].pzxid;
			ev->dir_stat = true;
			ev->dir_version = m->stats[i].version;
			ev->dir_data_len = m->stats[i].dataLength;
		}
		/* The setData of the create's directory was refused: no WRITE. */
		ev->dir_refused = m->kind[i] == ZKL_WB_CREATE && m->setop[i] > 0 &&
			m->results[m->setop[i]].err == ZNOAUTH;
		ev->dir_stale = m->kind[i] == ZKL_WB_CREATE && m->setop[i] > 0 &&
			m->results[m->setop[i]].err == ZBADVERSION;
		ev->multi_end = (i == m->nlock - 1);
		if (ev->multi_end)
		{
			ev->multi_sent_at = m->sent_at;
			ev->multi_handle = m->handle;
		}
		zkl_event_post(ev);
	}
	free(m);
}

/* ---- the loop ---- */

/* Send the operation alone, through the steps' own path. */
static void
zkl_wb_send_alone(zkl_wb_kind kind, int slotno)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];

	zkl_wb_alone[slotno] = true;
	if (kind == ZKL_WB_CREATE)
		zkl_send_contender(slotno, slot);
	else
		zkl_send_delete(slotno, slot);
	zkl_wb_alone[slotno] = false;
}

/* Whether the queued operation still belongs to the slot's current work. */
static bool
zkl_wb_current(const zkl_wb_op *op)
{
	zkl_work   *work = &zkl_works[op->slotno];

	return op->opgen == work->opgen &&
		work->phase == (op->kind == ZKL_WB_CREATE ? ZKL_PH_CREATING : ZKL_PH_DELETING);
}

static void
zkl_wb_send_multi(zkl_wb_op **group, int n)
{
	zkl_wb_multi *m;
	int			rc;

	/* A directory forgotten since its create was taken: each goes alone. */
	for (int i = 0; i < n; i++)
		if (group[i]->kind == ZKL_WB_CREATE && !zkl_wb_dir_empty(group[i]->dir))
		{
			for (int j = 0; j < n; j++)
				zkl_wb_send_alone(group[j]->kind, group[j]->slotno);
			return;
		}
	m = calloc(1, sizeof(zkl_wb_multi));
	if (m == NULL)
	{
		for (int i = 0; i < n; i++)
			zkl_wb_send_alone(group[i]->kind, group[i]->slotno);
		return;
	}
	m->nlock = m->nops = n;
	for (int i = 0; i < n; i++)
	{
		zkl_wb_op  *op = group[i];

		m->kind[i] = op->kind;
		m->ctx[i] = (uintptr_t) zkl_request_ctx(ZKL_EV_BATCHED, op->slotno, op->opgen);
		if (op->kind == ZKL_WB_CREATE)
		{
			zoo_create_op_init(&m->ops[i], op->path, op->data, strlen(op->data), zkl_acl(),
							   ZOO_EPHEMERAL_SEQUENTIAL, m->paths[i], sizeof(m->paths[i]));

			/*
			 * Empty data on empty data, and only on the version seen empty:
			 * data another client wrote since fails the multi (ZBADVERSION)
			 * rather than being erased.
			 */
			m->setop[i] = m->nops;
			zoo_set_op_init(&m->ops[m->nops++], op->dir, "", 0, zkl_wb_known_of(op->dir)->version,
							&m->stats[i]);
		}
		else
			zoo_delete_op_init(&m->ops[i], op->path, -1);
	}

	m->sent_at = zkl_now();
	m->handle = zkl_handle_number;
	rc = zoo_amulti(zkl_zh, m->nops, m->ops, m->results, zkl_multi_done, m);
	if (rc != ZOK)
	{
		/* Never left: each goes alone, whose refusal the steps handle. */
		free(m);
		for (int i = 0; i < n; i++)
			zkl_wb_send_alone(group[i]->kind, group[i]->slotno);
		return;
	}

	zkl_wb_in_flight.count++;
	for (int i = 0; i < n; i++)
		if (group[i]->kind == ZKL_WB_CREATE)
			zkl_wb_known_of(group[i]->dir)->version++;

	/*
	 * zk_status() counts each operation as the request it is alone, so that
	 * its figures per acquire, release and handoff stay per lock; ZooKeeper
	 * receives them as one.
	 */
	for (int i = 0; i < n; i++)
	{
		zkl_count(requests);
		if (group[i]->kind == ZKL_WB_DELETE)
			zkl_count(release_requests);
		if (zkl_works[group[i]->slotno].handoff)
			zkl_count(handoff_requests);
	}
}

/*
 * Whether a request of this cluster other than the slot's works in the
 * slot's lock directory (a waiter behind its node, a holder of a shared
 * lock, a request on its way), and whether the slot's release may wait for
 * company at all: its backend gave it up (not a failed request or a try,
 * whose backend waits for the delete), asked for no wait, does not wait
 * for the answer, and the worker is not taking it away.  Under the lock,
 * over the slots in use only.
 */
static void
zkl_wb_neighbours(int slotno, bool *neighbour, bool *release_now)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];

	*neighbour = false;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	*release_now = slot->state != ZKL_SLOT_RELEASING || slot->release_now ||
		slot->delete_unsure || slot->take_reason != ZKL_TAKE_NONE;
	for (int i = zkl_shared->used_head; i >= 0 && !*release_now; i = zkl_shared->slots[i].next)
	{
		if (i != slotno && zkl_works[i].phase != ZKL_PH_IDLE &&
			strcmp(zkl_shared->slots[i].dir, slot->dir) == 0)
		{
			*neighbour = true;
			break;
		}
	}
	LWLockRelease(zkl_shared->lock);
}

/*
 * Whether the one delete queued (op) waits for company rather than leave
 * now (write_batch_rule.c, zkl_wb_linger_left decides); others: a request
 * of another kind than a lock create is about to leave.  While it waits,
 * zkl_wb_linger_until says until when.
 */
static bool
zkl_wb_linger(const zkl_wb_op *op, bool others)
{
	zkl_wb_linger_case c = {0};
	int64		now = zkl_now();
	int64		left;

	c.lone_delete = true;
	c.connected = zkl_zh != NULL && zkl_shared->session_state == ZKL_SESSION_CONNECTED;
	c.proof_fresh = zkl_proof_holds(zkl_heartbeat_state.proof, zkl_shared->negotiated_timeout,
									now + ZKL_WB_LINGER_MAX_US);
	c.shutting_down = ShutdownRequestPending;
	c.others = others;
	c.waited_us = now - op->ready_at;
	c.round_trip_us = zkl_wb_rtt_shortest(&zkl_wb_rtts);
	c.write_round_trip_us = zkl_wb_rtt_shortest(&zkl_wb_write_rtts);
	if (c.connected && c.proof_fresh && !c.shutting_down && !others)
		zkl_wb_neighbours(op->slotno, &c.neighbour, &c.release_now);
	left = zkl_wb_linger_left(&c);
	if (left <= 0)
		return false;
	ereport(DEBUG2,
			(errmsg_internal("the delete of a node of lock \"%s\" waits up to " INT64_FORMAT " us for a write to share its multi",
							 zkl_shared->slots[op->slotno].name, left)));
	zkl_wb_linger_until = now + left;
	return true;
}

/*
 * A request that is no lock create is about to leave (worker.c, as it
 * takes requests): the delete kept back for company goes first, alone, so
 * that ZooKeeper applies it before that request, as it would have without
 * the wait.
 */
void
zkl_batch_release_lingering(void)
{
	if (zkl_wb_linger_until == 0 || zkl_wb_nops != 1 || zkl_wb_ops[0].kind != ZKL_WB_DELETE)
		return;
	zkl_wb_linger_until = 0;
	zkl_wb_nops = 0;
	if (zkl_wb_current(&zkl_wb_ops[0]) && !zkl_wb_linger(&zkl_wb_ops[0], true))
		zkl_wb_send_alone(zkl_wb_ops[0].kind, zkl_wb_ops[0].slotno);
	zkl_wb_forget(&zkl_wb_ops[0]);
}

/*
 * When the delete kept back for company must leave (zkl_now()'s clock), for
 * the worker's sleep; 0 when none waits.
 */
int64
zkl_batch_due(void)
{
	return zkl_wb_nops > 0 ? zkl_wb_linger_until : 0;
}

/*
 * Send what is queued: each group of two or more as one multi, a group of
 * one alone; or hold it all while a multi is in flight (zkl_wb_hold), to go
 * with what becomes ready until its answer.  Operations whose slot has moved
 * on meanwhile (its work ended, the session went) are dropped: their slot's
 * new work sends its own.
 */
void
zkl_batch_flush(void)
{
	zkl_wb_kind *kinds;
	const char **dirs;
	int		   *group;
	zkl_wb_op **members;
	void	   *scratch;
	int		   *first;
	int			n = 0;
	int			ngroups;
	bool		connected;

	zkl_wb_open = false;
	zkl_wb_linger_until = 0;
	if (zkl_wb_nops == 0)
		return;

	kinds = palloc(sizeof(zkl_wb_kind) * zkl_wb_nops);
	dirs = palloc(sizeof(char *) * zkl_wb_nops);
	group = palloc(sizeof(int) * zkl_wb_nops);
	members = palloc(sizeof(zkl_wb_op *) * zkl_wb_nops);
	for (int i = 0; i < zkl_wb_nops; i++)
	{
		if (!zkl_wb_current(&zkl_wb_ops[i]))
		{
			zkl_wb_forget(&zkl_wb_ops[i]);
			continue;
		}
		zkl_wb_ops[n] = zkl_wb_ops[i];
		kinds[n] = zkl_wb_ops[n].kind;
		dirs[n] = zkl_wb_ops[n].dir;
		n++;
	}
	zkl_wb_nops = n;
	connected = zkl_zh != NULL && zkl_shared->session_state == ZKL_SESSION_CONNECTED;
	zkl_wb_flight_handle(&zkl_wb_in_flight, zkl_handle_number);
	if (zkl_wb_hold(zkl_wb_in_flight.count, n, connected, zkl_wb_rtt_shortest(&zkl_wb_rtts)))
		return;
	if (n == 1 && zkl_wb_ops[0].kind == ZKL_WB_DELETE && zkl_wb_linger(&zkl_wb_ops[0], false))
		return;

	zkl_wb_nops = 0;
	scratch = palloc(ZKL_WB_GROUP_SCRATCH(n));
	ngroups = zkl_wb_group(kinds, dirs, n, group, scratch);
	pfree(scratch);
	/* The members of each group, in their order: a counting sort. */
	first = palloc0(sizeof(int) * (ngroups + 1));
	for (int i = 0; i < n; i++)
		first[group[i] + 1]++;
	for (int g = 0; g < ngroups; g++)
		first[g + 1] += first[g];
	for (int i = 0; i < n; i++)
		members[first[group[i]]++] = &zkl_wb_ops[i];
	for (int g = 0, begin = 0; g < ngroups; begin = first[g], g++)
	{
		int			size = first[g] - begin;
		zkl_wb_op **in = members + begin;

		if (zkl_wb_as_multi(in[0]->kind, size, connected))
			zkl_wb_send_multi(in, size);
		else
		{
			for (int i = 0; i < size; i++)
				zkl_wb_send_alone(in[i]->kind, in[i]->slotno);
		}
	}
	pfree(first);
	for (int i = 0; i < n; i++)
		zkl_wb_forget(&zkl_wb_ops[i]);
}

/*
 * After a create of a multi, handled as a lone create's answer (created):
 * the listing.  The multi's setData of the lock directory told how many
 * children it had right after the create.  Only ours: that is the listing a
 * getChildren would have answered (ZooKeeper numbers later creates higher),
 * handed to the recipe without asking.  Others: the directory is listed, as
 * after a lone create.
 */
static void
zkl_wb_listed(int slotno, const zkl_event *created)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	zkl_work   *work = &zkl_works[slotno];
	zkl_event  *ev;

	if (work->opgen != created->opgen || work->phase != ZKL_PH_LISTING)
		return;
	if (zkl_wb_must_list(created->num_children))
	{
		zkl_send_listing(slotno, slot, ZKL_EV_CHILDREN);
		return;
	}
	ev = zkl_event_new(zkl_request_ctx(ZKL_EV_CHILDREN, slotno, created->opgen), ZOK);
	ev->children = malloc(sizeof(char *));
	if (ev->children == NULL || (ev->children[0] = strdup(slot->node)) == NULL)
		elog(ERROR, "out of memory");
	ev->nchildren = 1;
	ev->cversion = created->cversion;
	ev->num_children = created->num_children;
	ev->pzxid = created->pzxid;
	zkl_handle_event(ev);
	zkl_event_free(ev);
}

/*
 * A sync's round trip (sample_us, answered at now_us, on zkl_now()'s
 * clock): the network distance by which multis in flight are paced.
 */
void
zkl_batch_distance(int64 sample_us, int64 now_us)
{
	zkl_wb_rtt_note(&zkl_wb_rtts, sample_us, now_us);
}

/*
 * One operation's share of a multi's answer (ZKL_EV_BATCHED: type is its
 * kind, rc the multi's code, state its own).  Dropped when the slot has
 * moved on; otherwise handed to the recipes as the answer of a lone request,
 * or sent again alone when the multi failed as a whole.
 */
void
zkl_batch_answered(zkl_event *ev)
{
	zkl_wb_op	op;

	/* The multi's last share: what was held for its answer may go. */
	if (ev->multi_end)
	{
		int64		now = zkl_now();
		zkl_wb_outcome outcome = zkl_wb_outcome_of(ev->rc);

		zkl_wb_flight_answered(&zkl_wb_in_flight, ev->multi_handle);
		if (ev->rc == ZOK)
			zkl_wb_rtt_note(&zkl_wb_write_rtts, now - ev->multi_sent_at, now);
		/* Answered, so ZooKeeper had it: on the handle in use only. */
		if (ev->multi_handle == zkl_handle_number &&
			outcome != ZKL_WB_UNKNOWN && outcome != ZKL_WB_SESSION)
			zkl_session_heard(ev->multi_sent_at);
	}
	if (ev->slotno < 0 || ev->slotno >= zkl_shared->nslots)
		return;
	op.kind = (zkl_wb_kind) ev->type;
	op.slotno = ev->slotno;
	op.opgen = ev->opgen;
	/* A failed multi changed no directory; a lost one, who knows. */
	if (op.kind == ZKL_WB_CREATE && ev->rc != ZOK)
		zkl_wb_dir_forget(zkl_shared->slots[op.slotno].dir);
	if (!zkl_wb_current(&op))
		return;
	/* A reply the client could not match came as a lost answer (zk_events.c). */

	switch (zkl_wb_outcome_of(ev->rc))
	{
		case ZKL_WB_ALONE:
			if (ev->dir_refused && !zkl_wb_dir_refused(zkl_shared->slots[op.slotno].dir))
			{
				zkl_wb_refused[zkl_wb_refused_next] = zkl_wb_dir_hash(zkl_shared->slots[op.slotno].dir);
				zkl_wb_refused_next = (zkl_wb_refused_next + 1) % ZKL_WB_REFUSED_DIRS;
			}
			if (ev->dir_stale)
				ereport(DEBUG1,
						(errmsg_internal("the data of lock directory \"%s\" changed since it was read; its creates go alone until it is listed again",
										 zkl_shared->slots[op.slotno].dir)));
			if (ev->state != ZOK && ev->state != ZRUNTIMEINCONSISTENCY)
				ereport(DEBUG1,
						(errmsg_internal("a multi failed as a whole (%s on lock \"%s\"); each of its operations goes again alone",
										 zerror(ev->state), zkl_shared->slots[ev->slotno].name)));
			zkl_wb_send_alone(op.kind, op.slotno);
			return;
		case ZKL_WB_DONE:
		case ZKL_WB_UNKNOWN:
		case ZKL_WB_SESSION:
			/* The recipes' handlers of a lone create's or delete's answer. */
			ev->kind = op.kind == ZKL_WB_CREATE ? ZKL_EV_CREATED : ZKL_EV_DELETED;
			ev->type = 0;
			ev->state = 0;
			if (op.kind == ZKL_WB_CREATE && ev->rc == ZOK && ev->dir_stat)
				zkl_batch_note_dir(zkl_shared->slots[op.slotno].dir, ev->dir_version,
								   ev->dir_data_len);
			zkl_handle_event(ev);
			if (op.kind == ZKL_WB_CREATE && ev->rc == ZOK)
				zkl_wb_listed(op.slotno, ev);
			return;
	}
}
