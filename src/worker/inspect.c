/*-------------------------------------------------------------------------
 *
 * inspect.c
 *		The worker's services to backends other than a lock: the reading
 *		of a lock's directory for zk_lock_contenders (and deadlock
 *		detection), the revocation request zk_lock_revoke writes on a
 *		holder's node, and the publication of a backend's wait under
 *		<root>/.waits, with the watch on <root>/.waits that tells backends
 *		when a wait was published or ended there.  Runs in the worker's
 *		loop only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "storage/dsm.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "names/encode.h"
#include "rules/lock_rule.h"
#include "rules/waits_for.h"
#include "shared/inspect_reply.h"
#include "worker/inspect.h"
#include "worker/slot_steps.h"

/*
 * Reads of children in flight at once for one zk_lock_contenders, at
 * most.  ZooKeeper answers a session's requests in order: a burst of one
 * read per child would queue the session's own traffic (the heartbeat,
 * other backends' creates and deletes) behind thousands of reads.  With a
 * window of reads, a request sent meanwhile waits for at most this many.
 */
#define ZKL_MAX_INSPECT_READS	32

static void zkl_publish_wait(int slotno, zkl_slot *slot, bool overwrite);
static bool zkl_is_waits_dir(const char *dir);

/* One child of an inspected directory, as read. */
typedef struct zkl_inspected
{
	char	   *name;
	int64		czxid;
	int64		owner;			/* ephemeralOwner */
	int64		ctime;
	char	   *data;
	int			data_len;
	bool		gone;			/* deleted between the listing and the read */
	bool		unreadable;		/* getData refused (ZNOAUTH): data unknown */
	bool		cached;			/* known from zkl_waits_cache: not read */
	bool		own;			/* a wait this worker published: its data is
								 * what it wrote */
} zkl_inspected;

/*
 * What zk_lock_contenders has read so far of one directory, in the work's
 * context (zkl_work_context): the work's end frees it all.
 */
typedef struct zkl_inspection
{
	int			nchildren;
	int			nread;			/* children whose getData was sent */
	int			nsent;			/* requests sent, getData and exists */
	int			nreplied;		/* answers taken: they come in the order sent */
	int		   *sent;			/* the child of each request, in order */
	zkl_inspected *children;
	bool		have_stat;		/* the listing's stat is known */
	int32		cversion;		/* the directory's, at the listing */
	int32		num_children;
	uint64		watch_gen;		/* .waits: waits_watch_gen as the listing set
								 * the watch, 0 if it did not */
	uint64		listed_seq;		/* .waits: zkl_waits_seq at the listing */
} zkl_inspection;

/*
 * The last reading of <root>/.waits, kept by the worker: a published
 * wait's node is written once, by its create, so a child of the same name
 * is the same node for as long as no create went unseen.  A reading of
 * .waits asks ZooKeeper only for the children it neither listed last time
 * nor published itself since, when the directory's cversion (its creates
 * and deletes) says that every create since was one of those
 * (zkl_waits_cache_usable); otherwise it reads every child.  The worker's
 * own publications are kept as it wrote them (zkl_own_waits), so that its
 * backends' waits cost no read at all.  A deadlock check of each of N
 * waiters then costs one listing, not N + 1 requests.  zklock itself never
 * rewrites a wait's data in place (zkl_publish_wait deletes and creates
 * again); one written in place by another client (or by zklock 1.4, which
 * did) is seen at the next full read, ZKL_WAITS_CACHE_MS after the last:
 * the children this worker published are not read again then, since no
 * zklock writes them in place (another client allowed to write them, under
 * an open ACL, could as well have deleted them).
 */
#define ZKL_WAITS_CACHE_MS	10000
static struct
{
	bool		valid;
	char	   *dir;
	TimestampTz read_at;		/* of the last full read */
	int32		cversion;
	int32		num_children;
	uint64		listed_seq;		/* zkl_waits_seq at its listing */
	int			n;
	zkl_inspected *children;	/* in cxt; none gone, none cached */
	MemoryContext cxt;
}			zkl_waits_cache;

/*
 * The order of the worker's listings of .waits and its own publications
 * there, as their answers came: ZooKeeper answers one session's requests
 * in the order it applied them, so a publication answered after a listing
 * was made after it.
 */
static uint64 zkl_waits_seq = 0;

/*
 * The waits this worker published (ZOK) since the reading in
 * zkl_waits_cache was listed, with the data it wrote: the next listing
 * takes them from here.  At most ZKL_MAX_OWN_WAITS; past that they are
 * forgotten, and the cache with them (every child is read once).
 */
#define ZKL_MAX_OWN_WAITS	1024
typedef struct zkl_own_publication
{
	char	   *name;
	char	   *data;
	int			data_len;
	int64		czxid;
	int64		ctime;
	int64		owner;
	uint64		seq;			/* zkl_waits_seq at its create's answer */
} zkl_own_publication;

static struct
{
	int			n;
	zkl_own_publication *waits; /* ZKL_MAX_OWN_WAITS entries, in cxt */
	MemoryContext cxt;
}			zkl_own_waits;

/* ---- zk_lock_contenders: a backend's read of one lock directory ---- */

/*
 * Start what a slot that is no lock asks (zkl_slot_op): read the directory,
 * or write the revocation message on a holder's node.
 */
void
zkl_inspect_start(int slotno, zkl_slot *slot)
{
	zkl_works[slotno].phase = ZKL_PH_INSPECTING;
	if (slot->op == ZKL_OP_PUBLISH)
	{
		zkl_publish_wait(slotno, slot, false);
		return;
	}
	if (slot->op == ZKL_OP_REVOKE)
	{
		char	   *path;

		/* A name too long for target came whole in the backend's segment. */
		if (slot->target[0] != '\0')
			path = zkl_child_path(slot, slot->target);
		else
		{
			dsm_segment *seg = dsm_attach(slot->reply_handle);

			/* The backend left and destroyed it: nobody waits. */
			if (seg == NULL)
			{
				zkl_fail_slot(slotno, ZSYSTEMERROR);
				return;
			}
			path = zkl_child_path(slot, dsm_segment_address(seg));
			dsm_detach(seg);
		}
		(void) zkl_sent_alone(slotno, zoo_aset(zkl_zh, path, ZKL_REVOKE_MESSAGE, strlen(ZKL_REVOKE_MESSAGE),
											   -1, zkl_stat_done, zkl_ctx(ZKL_EV_REVOKE_SET, slotno)));
		pfree(path);
		return;
	}

	/*
	 * The listing's stat tells a deadlock check what changed since; a listing
	 * of .waits sets the watch there (zkl_waits_watch_moved), one watcher
	 * whoever lists.
	 */
	if (zkl_is_waits_dir(slot->dir))
		(void) zkl_sent_alone(slotno, zoo_awget_children2(zkl_zh, slot->dir, zkl_node_watcher,
														  unconstify(void *, zkl_request_ctx(ZKL_EV_WAITS_WATCH, 0, 0)),
														  zkl_strings_stat_done,
														  zkl_ctx(ZKL_EV_INSPECT_CHILDREN, slotno)));
	else
		(void) zkl_sent_alone(slotno, zoo_aget_children2(zkl_zh, slot->dir, 0, zkl_strings_stat_done,
														 zkl_ctx(ZKL_EV_INSPECT_CHILDREN, slotno)));
}

/*
 * The revocation message was written (or the holder had left): tell the
 * backend.  Any other answer fails the slot, which leaves the holder's node
 * as it is (zkl_owns_node).
 */
static void
zkl_revoke_written(int slotno, zkl_slot *slot, int rc)
{
	bool		wanted;
	int			procno = 0;

	zkl_end_work(&zkl_works[slotno]);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	if (wanted)
	{
		slot->zk_rc = rc;
		slot->state = ZKL_SLOT_HELD;	/* the answer is ready */
		procno = slot->procno;
	}
	LWLockRelease(zkl_shared->lock);
	if (wanted)
		zkl_wake_procno(procno);
	else
		zkl_free_slot(slotno);
}

/*
 * Which children of an inspected directory are a peer's downgrade that a
 * waiting writer of this cluster found (holds), and which that writer
 * (waits): once the peer's write node is gone, nothing else tells.
 */
static void
zkl_downgrade_marks(const zkl_inspection *in, bool *holds, bool *waits)
{
	if (zkl_node_map == NULL)
		return;
	for (int i = 0; i < in->nchildren; i++)
	{
		const zkl_inspected *c = &in->children[i];
		zkl_node_entry *entry;
		zkl_work   *w;

		if (c->gone || strlen(c->name) >= ZKL_MAX_NODE_LEN)
			continue;
		entry = hash_search(zkl_node_map, c->name, HASH_FIND, NULL);
		if (entry == NULL)
			continue;
		w = &zkl_works[entry->slotno];
		if (w->nheld_behind == 0 || (w->phase != ZKL_PH_LISTING && w->phase != ZKL_PH_WATCHING))
			continue;
		waits[i] = true;
		for (int k = 0; k < w->nheld_behind; k++)
			for (int j = 0; j < in->nchildren; j++)
				if (!in->children[j].gone &&
					strcmp(in->children[j].name, w->held_behind[k]) == 0)
					holds[j] = true;
	}
}

/* Whether dir is <root>/.waits, as zklock.root says now. */
static bool
zkl_is_waits_dir(const char *dir)
{
	char	   *waits = zkl_waits_dir();
	bool		is = strcmp(dir, waits) == 0;

	pfree(waits);
	return is;
}

/* The latest of the worker's own publications named name since seq, or -1. */
static int
zkl_own_wait_after(const char *name, uint64 seq)
{
	int			found = -1;

	for (int i = 0; i < zkl_own_waits.n; i++)
		if (zkl_own_waits.waits[i].seq > seq && strcmp(zkl_own_waits.waits[i].name, name) == 0 &&
			(found < 0 || zkl_own_waits.waits[i].seq > zkl_own_waits.waits[found].seq))
			found = i;
	return found;
}

/*
 * A wait this worker published: its create was answered ZOK (ev), with the
 * data written.  Kept for the next listing of .waits.
 */
static void
zkl_own_wait_add(const char *name, const char *data, int data_len, const zkl_event *ev)
{
	zkl_own_publication *w;

	if (zkl_own_waits.cxt == NULL)
	{
		zkl_own_waits.cxt = AllocSetContextCreate(TopMemoryContext, "zklock own published waits",
												  ALLOCSET_DEFAULT_SIZES);
		zkl_own_waits.waits = MemoryContextAllocZero(zkl_own_waits.cxt,
													 sizeof(zkl_own_publication) * ZKL_MAX_OWN_WAITS);
	}
	if (zkl_own_waits.n >= ZKL_MAX_OWN_WAITS)
	{
		/* Forgotten: their creates make the cache unusable, read anew. */
		for (int i = 0; i < zkl_own_waits.n; i++)
		{
			pfree(zkl_own_waits.waits[i].name);
			if (zkl_own_waits.waits[i].data)
				pfree(zkl_own_waits.waits[i].data);
		}
		zkl_own_waits.n = 0;
		zkl_waits_cache.valid = false;
	}
	w = &zkl_own_waits.waits[zkl_own_waits.n++];
	w->name = MemoryContextStrdup(zkl_own_waits.cxt, name);
	w->data_len = Min(data_len, ZKL_MAX_INSPECT_DATA);
	w->data = NULL;
	if (w->data_len > 0)
	{
		w->data = MemoryContextAlloc(zkl_own_waits.cxt, w->data_len);
		memcpy(w->data, data, w->data_len);
	}
	w->czxid = ev->czxid;
	w->ctime = ev->ctime;
	w->owner = zkl_shared->session_id;
	w->seq = ++zkl_waits_seq;
}

/* Forget the own publications that the cache's listing came after. */
static void
zkl_own_waits_prune(uint64 seq)
{
	int			n = 0;

	for (int i = 0; i < zkl_own_waits.n; i++)
	{
		zkl_own_publication *w = &zkl_own_waits.waits[i];

		if (w->seq <= seq)
		{
			pfree(w->name);
			if (w->data)
				pfree(w->data);
			continue;
		}
		zkl_own_waits.waits[n++] = *w;
	}
	zkl_own_waits.n = n;
}

/*
 * A listing of .waits just came: take every child it can from the worker's
 * own publications since the cached reading, and from that reading, when
 * every create since was of a name neither lists, or one of those
 * publications (zkl_waits_cache_usable).  Past ZKL_WAITS_CACHE_MS, only
 * the worker's own are taken from the reading: the others are read again.
 */
static void
zkl_waits_cache_fill(zkl_slot *slot, zkl_inspection *in, MemoryContext cxt)
{
	int			fresh = 0;
	int			own_creates = 0;
	bool		expired;
	int		   *known;
	int		   *own;

	if (!zkl_waits_cache.valid || !in->have_stat || in->nchildren == 0 ||
		strcmp(slot->dir, zkl_waits_cache.dir) != 0 || !zkl_is_waits_dir(slot->dir))
		return;
	expired = TimestampDifferenceExceeds(zkl_waits_cache.read_at, GetCurrentTimestamp(),
										 ZKL_WAITS_CACHE_MS);
	for (int j = 0; j < zkl_own_waits.n; j++)
		if (zkl_own_waits.waits[j].seq > zkl_waits_cache.listed_seq)
			own_creates++;
	known = MemoryContextAlloc(cxt, sizeof(int) * in->nchildren);
	own = MemoryContextAlloc(cxt, sizeof(int) * in->nchildren);
	for (int i = 0; i < in->nchildren; i++)
	{
		own[i] = zkl_own_wait_after(in->children[i].name, zkl_waits_cache.listed_seq);
		known[i] = -1;
		for (int j = 0; j < zkl_waits_cache.n && known[i] < 0; j++)
			if (strcmp(in->children[i].name, zkl_waits_cache.children[j].name) == 0)
				known[i] = j;
		if (known[i] < 0 && own[i] < 0)
			fresh++;
	}
	if (zkl_waits_cache_usable(zkl_waits_cache.cversion, zkl_waits_cache.num_children,
							   in->cversion, in->num_children, fresh, own_creates))
		for (int i = 0; i < in->nchildren; i++)
		{
			zkl_inspected *c = &in->children[i];
			char	   *name = c->name;
			const char *data = NULL;

			if (own[i] >= 0)
			{
				const zkl_own_publication *w = &zkl_own_waits.waits[own[i]];

				c->czxid = w->czxid;
				c->owner = w->owner;
				c->ctime = w->ctime;
				c->data_len = w->data_len;
				c->own = true;
				data = w->data;
			}
			else if (known[i] >= 0 && (!expired || zkl_waits_cache.children[known[i]].own))
			{
				*c = zkl_waits_cache.children[known[i]];
				c->name = name;
				data = zkl_waits_cache.children[known[i]].data;
			}
			else
				continue;
			c->cached = true;
			c->data = NULL;
			if (c->data_len > 0)
			{
				c->data = MemoryContextAlloc(cxt, c->data_len);
				memcpy(c->data, data, c->data_len);
			}
		}
	pfree(known);
	pfree(own);
}

/* A reading of .waits is complete: it is what the next one starts from. */
static void
zkl_waits_cache_keep(zkl_slot *slot, const zkl_inspection *in)
{
	MemoryContext old;
	bool		full = true;
	int			n = 0;

	if (!in->have_stat || !zkl_is_waits_dir(slot->dir))
		return;
	/* A reading listed before the one kept (two at once) is older. */
	if (zkl_waits_cache.valid && in->listed_seq < zkl_waits_cache.listed_seq)
		return;
	if (zkl_waits_cache.cxt == NULL)
		zkl_waits_cache.cxt = AllocSetContextCreate(TopMemoryContext, "zklock published waits",
													ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < in->nchildren; i++)
		full = full && (!in->children[i].cached || in->children[i].own);
	/* The age is that of the last read of every child not its own. */
	if (full || !zkl_waits_cache.valid)
		zkl_waits_cache.read_at = GetCurrentTimestamp();
	MemoryContextReset(zkl_waits_cache.cxt);
	old = MemoryContextSwitchTo(zkl_waits_cache.cxt);
	zkl_waits_cache.dir = pstrdup(slot->dir);
	zkl_waits_cache.cversion = in->cversion;
	zkl_waits_cache.num_children = in->num_children;
	zkl_waits_cache.listed_seq = in->listed_seq;
	zkl_waits_cache.children = palloc(sizeof(zkl_inspected) * Max(in->nchildren, 1));
	for (int i = 0; i < in->nchildren; i++)
	{
		zkl_inspected *c = &zkl_waits_cache.children[n];

		/*
		 * One gone meanwhile is not listed; were it back, it is new.  Nor is
		 * one left unread (the backend gave the reading up): no answer set
		 * its czxid.
		 */
		if (in->children[i].gone ||
			(!in->children[i].cached && !in->children[i].unreadable && in->children[i].czxid == 0))
			continue;
		*c = in->children[i];
		c->name = pstrdup(in->children[i].name);
		c->cached = false;
		c->data = NULL;
		if (c->data_len > 0)
		{
			c->data = palloc(c->data_len);
			memcpy(c->data, in->children[i].data, c->data_len);
		}
		n++;
	}
	zkl_waits_cache.n = n;
	zkl_waits_cache.valid = true;
	MemoryContextSwitchTo(old);
	zkl_own_waits_prune(in->listed_seq);
}

/*
 * Write what was read into the backend's segment, reply: every child that
 * was not gone, or none when they do not all fit (the backend asks again).
 */
static void
zkl_inspect_write_reply(const zkl_inspection *in, zkl_inspect_reply *reply)
{
	char	   *out = (char *) reply + MAXALIGN(sizeof(zkl_inspect_reply));
	Size		needed = 0;
	int			n = 0;

	reply->have_stat = in->have_stat;
	reply->cversion = in->cversion;
	reply->num_children = in->num_children;
	reply->watch_gen = in->watch_gen;

	for (int i = 0; i < in->nchildren; i++)
		if (!in->children[i].gone)
			needed += MAXALIGN(sizeof(zkl_inspect_entry) +
							   strlen(in->children[i].name) + in->children[i].data_len);
	reply->needed = needed;
	reply->nchildren = 0;
	if (needed <= reply->capacity)
	{
		bool	   *holds = palloc0(sizeof(bool) * Max(in->nchildren, 1));
		bool	   *waits = palloc0(sizeof(bool) * Max(in->nchildren, 1));

		zkl_downgrade_marks(in, holds, waits);
		for (int i = 0; i < in->nchildren; i++)
		{
			const zkl_inspected *c = &in->children[i];
			zkl_inspect_entry *e = (zkl_inspect_entry *) out;
			int			name_len = strlen(c->name);

			if (c->gone)
				continue;
			e->czxid = c->czxid;
			e->owner = c->owner;
			e->ctime = c->ctime;
			e->name_len = name_len;
			e->data_len = c->data_len;
			e->unreadable = c->unreadable;
			e->downgrade_holds = holds[i];
			e->downgrade_waits = waits[i];
			memcpy(out + sizeof(zkl_inspect_entry), c->name, name_len);
			if (e->data_len > 0)
				memcpy(out + sizeof(zkl_inspect_entry) + name_len, c->data, e->data_len);
			out += MAXALIGN(sizeof(zkl_inspect_entry) + name_len + e->data_len);
			n++;
		}
		reply->nchildren = n;
		pfree(holds);
		pfree(waits);
	}
}

/* Give the backend what was read, then tell it. */
static void
zkl_inspect_finish(int slotno, zkl_slot *slot)
{
	zkl_work   *work = &zkl_works[slotno];
	zkl_inspection *in = work->inspection;
	bool		wanted;
	int			procno = 0;
	dsm_handle	handle;
	dsm_segment *seg = NULL;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	wanted = slot->wanted;
	handle = slot->reply_handle;
	LWLockRelease(zkl_shared->lock);

	/* A backend that left has destroyed its segment: nothing to attach. */
	if (wanted)
		seg = dsm_attach(handle);
	if (seg != NULL)
	{
		zkl_inspect_write_reply(in, dsm_segment_address(seg));
		dsm_detach(seg);
	}

	zkl_waits_cache_keep(slot, in);
	zkl_end_work(work);
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	if (wanted)
	{
		slot->state = ZKL_SLOT_HELD;	/* for a read: the reply is ready */
		procno = slot->procno;
	}
	LWLockRelease(zkl_shared->lock);
	if (wanted)
		zkl_wake_procno(procno);
	else
		zkl_free_slot(slotno);
}

/*
 * Ask for child i's data, or only its stat: a child whose data we may not
 * read (its ACL denies READ) is still a contender, and its stat is
 * anyone's (exists needs no right on the node).  Answers come in the order
 * asked.
 */
static void
zkl_inspect_ask(int slotno, zkl_slot *slot, zkl_inspection *in, int i, bool stat_only)
{
	char	   *path = zkl_child_path(slot, in->children[i].name);

	in->sent[in->nsent++] = i;
	zkl_check_sent(slotno, stat_only ?
				   zoo_aexists(zkl_zh, path, 0, zkl_stat_done,
							   zkl_ctx(ZKL_EV_INSPECT_STAT, slotno)) :
				   zoo_aget(zkl_zh, path, 0, zkl_data_done,
							zkl_ctx(ZKL_EV_INSPECT_DATA, slotno)));
	pfree(path);
}

/*
 * Keep ZKL_MAX_INSPECT_READS requests in flight while children are left to
 * read; none more once the backend has given the read up.
 */
static void
zkl_inspect_send(int slotno, zkl_slot *slot, zkl_inspection *in, bool wanted)
{
	while (wanted && in->nread < in->nchildren &&
		   in->nsent - in->nreplied < ZKL_MAX_INSPECT_READS)
	{
		int			i = in->nread++;

		if (!in->children[i].cached)
			zkl_inspect_ask(slotno, slot, in, i, false);
	}
}

static void
zkl_inspect_result(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];
	zkl_inspection *in = work->inspection;

	if (ev->kind == ZKL_EV_INSPECT_CHILDREN)
	{
		MemoryContext cxt = zkl_work_context(work);
		int			n = ev->rc == ZOK ? ev->nchildren : 0;

		/* A listing anew replaces what the last one read. */
		MemoryContextReset(cxt);
		in = MemoryContextAllocZero(cxt, sizeof(zkl_inspection));
		/* No directory is one with no child: counters of zero. */
		in->have_stat = (ev->rc == ZOK && ev->dir_stat) || ev->rc == ZNONODE;
		in->cversion = ev->cversion;
		in->num_children = ev->num_children;
		if (zkl_is_waits_dir(slot->dir))
		{
			/* Its watch is set from now on, until the count moves. */
			in->watch_gen = ev->rc == ZOK ? zkl_shared->waits_watch_gen : 0;
			in->listed_seq = ++zkl_waits_seq;
		}
		in->nchildren = n;
		if (n > 0)
		{
			in->children = MemoryContextAllocZero(cxt, sizeof(zkl_inspected) * n);
			/* A getData for each child, and an exists for an unreadable one. */
			in->sent = MemoryContextAlloc(cxt, sizeof(int) * 2 * n);
			for (int i = 0; i < n; i++)
				in->children[i].name = MemoryContextStrdup(cxt, ev->children[i]);
		}
		work->inspection = in;
		zkl_waits_cache_fill(slot, in, cxt);
	}
	else if (in != NULL && in->nreplied < in->nsent)
	{
		int			i = in->sent[in->nreplied++];
		zkl_inspected *c = &in->children[i];

		if (ev->rc == ZNONODE)
			c->gone = true;		/* deleted meanwhile: not listed */
		else if (ev->rc == ZOK)
		{
			c->czxid = ev->czxid;
			c->owner = ev->owner;
			c->ctime = ev->ctime;
			c->data_len = Min(ev->data_len, ZKL_MAX_INSPECT_DATA);
			if (c->data_len > 0)
			{
				c->data = MemoryContextAlloc(zkl_work_context(work), c->data_len);
				memcpy(c->data, ev->data, c->data_len);
			}
		}
		else
		{
			/* Listed all the same; its stat asked for, or unknown too. */
			c->unreadable = true;
			if (ev->kind == ZKL_EV_INSPECT_DATA && wanted)
				zkl_inspect_ask(slotno, slot, in, i, true);
		}
	}
	if (in == NULL)
		return;
	zkl_inspect_send(slotno, slot, in, wanted);
	if (in->nreplied == in->nsent)
		zkl_inspect_finish(slotno, slot);
}

/* ---- a backend's lasting wait, published for deadlock detection ---- */

/* The waits directory was created (or found) by this worker. */
static bool zkl_waits_dir_made = false;

/*
 * A path as a JSON string: its bytes as they are (an encoded lock name is
 * ASCII; zklock.root is the configuration's text), quotes, backslashes and
 * control characters escaped.
 */
static void
zkl_json_bytes(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, '"');
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			appendStringInfo(buf, "\\%c", c);
		else if (c < 0x20 || c == 0x7F)
			appendStringInfo(buf, "\\u%04x", c);
		else
			appendStringInfoChar(buf, (char) c);
	}
	appendStringInfoChar(buf, '"');
}

/* The data of a published wait (see zkl_publish_wait), into data. */
static void
zkl_wait_data(StringInfo data, const char *dir, const char *node, int64 czxid,
			  const char *timeout, const char *description)
{
	appendStringInfoString(data, "{\"lock_dir\":");
	zkl_json_bytes(data, dir);
	appendStringInfoString(data, ",\"lock_node\":");
	zkl_json_bytes(data, node);
	appendStringInfo(data, ",\"czxid\":" INT64_FORMAT, czxid);
	/* The backend's deadlock_timeout, in ms, as it wrote it (digits). */
	if (timeout[0] != '\0' && strspn(timeout, "0123456789") == strlen(timeout))
		appendStringInfo(data, ",\"deadlock_timeout\":%s", timeout);
	/* Then the request's own description, its fields beside these. */
	if (description[0] == '{' && description[1] != '}' && description[1] != '\0')
		appendStringInfo(data, ",%s", description + 1);
	else
		appendStringInfoChar(data, '}');
}

/*
 * Publish what the backend's waiting request (the slot's sibling) waits
 * for, as the ephemeral node <root>/.waits/<session>-<pid>: its data, one
 * JSON object, names the request's directory, node and czxid (lock_dir,
 * lock_node, czxid), the backend's deadlock_timeout in ms
 * (deadlock_timeout), and has the request's own description's fields.  A
 * wait that ended, or whose node is not known yet, is
 * answered with nothing published.  overwrite: the node exists (left by an
 * earlier worker in this session), so it is deleted first.
 */
static void
zkl_publish_wait(int slotno, zkl_slot *slot, bool overwrite)
{
	zkl_slot   *wait = NULL;
	StringInfoData data;
	char	   *path;
	bool		waiting;
	bool		wanted;
	char		dir[ZKL_MAX_DIR_LEN];
	char		node[ZKL_MAX_NODE_LEN];
	char		description[ZKL_MAX_DATA_LEN];
	char		timeout[12];
	int64		czxid = 0;

	if (slot->sibling_slotno >= 0 && slot->sibling_slotno < zkl_shared->nslots)
		wait = &zkl_shared->slots[slot->sibling_slotno];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	wanted = slot->wanted;
	waiting = wait != NULL && wait->generation == slot->sibling_generation &&
		wait->state == ZKL_SLOT_WAITING && wait->node[0] != '\0';
	if (waiting)
	{
		strlcpy(dir, wait->dir, sizeof(dir));
		strlcpy(node, wait->node, sizeof(node));
		strlcpy(description, wait->data, sizeof(description));
		czxid = wait->token;
		strlcpy(timeout, slot->data, sizeof(timeout));
		snprintf(slot->node, sizeof(slot->node), "%016llx-%d",
				 (unsigned long long) zkl_shared->session_id, slot->pid);
	}
	else if (wanted)
		slot->state = ZKL_SLOT_HELD;	/* nothing to publish: answered */
	LWLockRelease(zkl_shared->lock);

	/*
	 * The wait ended, but an earlier create of the node (cut off by a
	 * connection loss, or of the worker before this one) may have taken
	 * effect: it is deleted, now or when the backend gives it up.
	 */
	if (!waiting && slot->node[0] != '\0')
	{
		zkl_works[slotno].phase = ZKL_PH_PUBLISHED;
		if (!wanted)
			zkl_send_delete(slotno, slot);
		return;
	}
	if (!waiting)
	{
		zkl_end_work(&zkl_works[slotno]);
		if (!wanted)
			zkl_free_slot(slotno);
		return;
	}

	initStringInfo(&data);
	zkl_wait_data(&data, dir, node, czxid, timeout, description);

	path = zkl_child_path(slot, slot->node);

	/*
	 * A node of ours left there is deleted and created again, never written
	 * in place: the directory's cversion then counts the new wait, which
	 * readers of .waits rely on (zkl_waits_cache).
	 */
	if (overwrite)
		zkl_check_sent(slotno, zoo_adelete(zkl_zh, path, -1, zkl_void_done,
										   zkl_ctx(ZKL_EV_IGNORE, slotno)));
	if (!zkl_waits_dir_made || zkl_works[slotno].parent_attempts > 0)
		zkl_check_sent(slotno, zoo_acreate(zkl_zh, slot->dir, NULL, -1, zkl_acl(), ZOO_PERSISTENT,
										   zkl_void_string_done, zkl_ctx(ZKL_EV_IGNORE, slotno)));
	zkl_waits_dir_made = true;
	/* What is written, for zkl_own_wait_add once it is. */
	zkl_works[slotno].published = MemoryContextStrdup(zkl_work_context(&zkl_works[slotno]), data.data);
	zkl_check_sent(slotno, zoo_acreate2(zkl_zh, path, data.data, data.len, zkl_acl(), ZOO_EPHEMERAL,
										zkl_string_stat_done, zkl_ctx(ZKL_EV_PUBLISHED, slotno)));
	pfree(path);
	pfree(data.data);
}

/* The wait node was written: the backend may give it up from now on. */
static void
zkl_on_published(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	zkl_work   *work = &zkl_works[slotno];

	/* A node of this name is ours: take it over, or delete it unwanted. */
	if (ev->rc == ZNODEEXISTS && wanted && work->parent_attempts < 3)
	{
		work->parent_attempts++;
		zkl_publish_wait(slotno, slot, true);
		return;
	}
	/* Written: what the next listing of .waits needs not read. */
	if (ev->rc == ZOK && work->published != NULL)
		zkl_own_wait_add(slot->node, work->published, strlen(work->published), ev);
	if ((ev->rc == ZNODEEXISTS || ev->rc == ZOK) && !wanted)
	{
		zkl_send_delete(slotno, slot);
		return;
	}
	if (ev->rc == ZNONODE && work->parent_attempts < 3)
	{
		work->parent_attempts++;
		zkl_publish_wait(slotno, slot, false);
		return;
	}
	if (ev->rc != ZOK)
	{
		zkl_request_failed(slotno, ev->rc);
		return;
	}
	work->phase = ZKL_PH_PUBLISHED;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->state == ZKL_SLOT_WAITING)
		slot->state = ZKL_SLOT_HELD;
	LWLockRelease(zkl_shared->lock);
}

static void
zkl_on_inspected(int slotno, zkl_slot *slot, zkl_event *ev, bool wanted)
{
	/* One child refused (ZNOAUTH, ...) is no failure of the directory. */
	bool		child = ev->kind == ZKL_EV_INSPECT_DATA || ev->kind == ZKL_EV_INSPECT_STAT;

	if (ev->kind == ZKL_EV_REVOKE_SET && (ev->rc == ZOK || ev->rc == ZNONODE))
		zkl_revoke_written(slotno, slot, ev->rc);
	else if (ev->rc == ZOK || ev->rc == ZNONODE || (child && !zkl_session_trouble(ev->rc)))
		zkl_inspect_result(slotno, slot, ev, wanted);
	else
		zkl_request_failed(slotno, ev->rc);
}

/* The services' answers, by phase (dispatch.c routes them). */
const zkl_event_route zkl_inspect_routes[] = {
	{ZKL_EV_INSPECT_CHILDREN, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_INSPECT_DATA, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_INSPECT_STAT, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_REVOKE_SET, ZKL_PH_INSPECTING, false, zkl_on_inspected},
	{ZKL_EV_PUBLISHED, ZKL_PH_INSPECTING, false, zkl_on_published},
	{0, 0, false, NULL}
};
