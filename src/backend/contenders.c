/*-------------------------------------------------------------------------
 *
 * contenders.c
 *		zk_lock_contenders(): every contender for one lock, from every
 *		client (zklock clusters, Curator, kazoo), in queue order, with the
 *		holder's description from the node data.
 *
 * Backends never talk to ZooKeeper: the worker reads the directory and
 * each child's data into a dynamic shared memory segment that the backend
 * creates, sized by a guess and made larger when the reply did not fit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zookeeper/zookeeper.h>

#include "access/xact.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/dsm.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/resowner.h"

#include "backend/contenders.h"
#include "backend/locks.h"
#include "backend/request.h"
#include "names/encode.h"
#include "names/name_text.h"
#include "pg_compat.h"
#include "rules/json_fields.h"
#include "result_shape.h"
#include "rules/lock_rule.h"
#include "shared/inspect_reply.h"

static int
zkl_cmp_contenders(const void *a, const void *b)
{
	const zkl_contender *x = a;
	const zkl_contender *y = b;

	return zkl_seq_compare(x->name.seq, y->name.seq);
}

/*
 * Whether data, UTF-8 from ZooKeeper, is valid text here as it is: zklock
 * writes ASCII with \u escapes, which jsonb turns into this database's
 * characters where it can (zkl_try_jsonb copes where it cannot).
 */
static bool
zkl_json_fits_database(const char *data, int len)
{
	if (GetDatabaseEncoding() == PG_UTF8)
		return pg_verifymbstr(data, len, true);
	for (int i = 0; i < len; i++)
		if (IS_HIGHBIT_SET(data[i]))
			return false;
	return true;
}

/*
 * The description as jsonb, or 0 when jsonb will not take it.  Data that
 * the JSON lexer accepts may still be refused by jsonb (a number beyond
 * numeric's range, an escape of U+0000): any client can write any data, and
 * one odd node must not break the listing of the others.
 */
static Datum
zkl_try_jsonb(const char *data)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Datum		result = (Datum) 0;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		result = DirectFunctionCall1(jsonb_in, CStringGetDatum(data));
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		result = (Datum) 0;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return result;
}

const char *
zkl_client_of(const zkl_contender *c, bool is_zklock)
{
	if (is_zklock)
		return "zklock";
	return zkl_node_client(c->node);
}

/* Raw data as text: as it is when valid in the database encoding, else hex. */
static text *
zkl_data_text(const char *data, int len)
{
	StringInfoData buf;

	if (pg_verifymbstr(data, len, true))
		return cstring_to_text_with_len(data, len);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "\\x");
	for (int i = 0; i < len; i++)
		appendStringInfo(&buf, "%02x", (unsigned char) data[i]);
	return cstring_to_text(buf.data);
}

/*
 * Ask the worker, growing the segment until the reply fits.  The first
 * guess for the directory this backend read last is what its reply needed
 * then: a large directory read again is read once, not twice.  A reply
 * without have_stat is a read that failed (a deadlock check's, which
 * reports nothing).
 */
dsm_segment *
zkl_fetch_directory(const char *name, const char *dir)
{
	static char last_dir[ZKL_MAX_DIR_LEN];
	static Size last_needed = 0;
	Size		capacity = 64 * 1024;

	if (strcmp(dir, last_dir) == 0)
		capacity = Max(capacity, last_needed + last_needed / 4);
	/* Arm the way out that gives the slot asked for back (zkl_claim_slot). */
	zkl_local_init();

	for (int attempt = 0;; attempt++)
	{
		dsm_segment *seg = dsm_create(MAXALIGN(sizeof(zkl_inspect_reply)) + capacity, 0);
		zkl_inspect_reply *reply = dsm_segment_address(seg);

		reply->capacity = capacity;
		reply->needed = 0;
		reply->nchildren = 0;
		reply->have_stat = false;
		reply->watch_gen = 0;
		(void) zkl_ask_worker(name, dir, ZKL_OP_INSPECT, NULL, dsm_segment_handle(seg));
		strlcpy(last_dir, dir, sizeof(last_dir));
		last_needed = reply->needed;
		if (reply->needed <= capacity)
			return seg;
		if (attempt == 3)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("could not read the contenders of ZooKeeper lock \"%s\"", name),
					 errdetail("The lock directory kept growing while it was read.")));
		capacity = reply->needed + reply->needed / 4;
		dsm_detach(seg);
	}
}

/*
 * The contenders in the worker's reply, in listing order: the children of
 * a layout zklock reads, each with its data, zklock's description as jsonb
 * when the data is one, and its owner.  *count gets how many there are.
 */
static zkl_contender *
zkl_contenders_of(zkl_inspect_reply *reply, bool leases, bool describe, int *count)
{
	static const char *const keys[] = {"system_identifier", "pid", "cluster", "host", "port"};

	zkl_contender *all;
	char	   *p;
	int			n = 0;

	all = palloc(sizeof(zkl_contender) * Max(reply->nchildren, 1));
	p = (char *) reply + MAXALIGN(sizeof(zkl_inspect_reply));
	for (int i = 0; i < reply->nchildren; i++)
	{
		zkl_inspect_entry *e = (zkl_inspect_entry *) p;
		zkl_contender *c = &all[n];
		char	   *f[lengthof(keys)];

		CHECK_FOR_INTERRUPTS();
		c->node = pnstrdup(p + sizeof(zkl_inspect_entry), e->name_len);
		c->data = pnstrdup(p + sizeof(zkl_inspect_entry) + e->name_len, e->data_len);
		c->data_len = e->data_len;
		c->czxid = e->czxid;
		c->session = e->owner;
		c->downgrade_holds = e->downgrade_holds;
		c->downgrade_waits = e->downgrade_waits;
		c->ctime = e->ctime;
		c->pid = 0;
		c->holder = (Datum) 0;
		c->owner = NULL;
		c->unreadable = e->unreadable;
		c->is_zklock = zkl_is_zklock_json(c->data, c->data_len, GetDatabaseEncoding());
		/* Who it is, from the description in any encoding (UTF-8 here). */
		if (c->is_zklock &&
			zkl_json_fields(c->data, c->data_len, keys, f, lengthof(keys)) && f[0] && f[1])
		{
			c->pid = (int32) strtol(f[1], NULL, 10);
			c->cluster = f[2];
			c->host = f[3];
			c->port = f[4];

			/*
			 * The backend it belongs to: its cluster's ZooKeeper session (the
			 * node's ephemeralOwner) and its pid, as deadlock detection and
			 * the worker know backends.  A description alone names no one: a
			 * clone of the machine writes the same system identifier, host,
			 * port and perhaps pid, from a session of its own.
			 */
			if (e->owner != 0)
				c->owner = psprintf("%016llx-%d", (unsigned long long) e->owner, c->pid);
		}
		else
			c->cluster = c->host = c->port = NULL;
		/* The description as jsonb, where this database can take it. */
		if (describe && c->is_zklock && zkl_json_fits_database(c->data, c->data_len))
			c->holder = zkl_try_jsonb(c->data);
		p += MAXALIGN(sizeof(zkl_inspect_entry) + e->name_len + e->data_len);
		/* Children of no lock layout we know are not contenders. */
		if (leases ? zkl_lease_parse(c->node, &c->name) : zkl_contender_parse(c->node, &c->name))
			n++;
	}
	*count = n;
	return all;
}

/*
 * The contenders of lock name (whose directory is dir) in queue order,
 * each marked held or not by the lock rule (zkl_holders: the nodes of the
 * same backend are its own; peers' nodes have no owner here, only their
 * session, which tells a downgrade), and whether
 * another contender shares its sequence number (an anomaly), in
 * O(n log n) for n children; *count gets how many.  A semaphore's leases
 * hold no lock: none is marked.
 */
zkl_contender *
zkl_read_contenders(const char *name, const char *dir, bool leases, bool describe, int *count)
{
	return zkl_contenders_in(zkl_fetch_directory(name, dir), leases, describe, count);
}

/* The same, from the worker's reply in seg, which it detaches. */
zkl_contender *
zkl_contenders_in(dsm_segment *seg, bool leases, bool describe, int *count)
{
	zkl_contender *all;
	zkl_contender_name *queue;
	const char **owners;
	int64	   *sessions;
	bool	   *held;
	bool	   *equal;
	const char *const **scratch;
	int			n;

	all = zkl_contenders_of(dsm_segment_address(seg), leases, describe, &n);
	dsm_detach(seg);

	/* Queue order is serial-number order, right across the counter's wrap. */
	qsort(all, n, sizeof(zkl_contender), zkl_cmp_contenders);
	CHECK_FOR_INTERRUPTS();
	queue = palloc(sizeof(zkl_contender_name) * Max(n, 1));
	owners = palloc(sizeof(char *) * Max(n, 1));
	sessions = palloc(sizeof(int64) * Max(n, 1));
	held = palloc(sizeof(bool) * Max(n, 1));
	equal = palloc(sizeof(bool) * Max(n, 1));
	scratch = palloc(sizeof(*scratch) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		queue[i] = all[i].name;
		owners[i] = all[i].owner;
		/* Only Curator's read-write lock downgrades. */
		sessions[i] = zkl_is_curator_rw(all[i].node) ? all[i].session : 0;
	}
	zkl_holders(queue, owners, (const int64_t *) sessions, n, held, equal, scratch);
	for (int i = 0; i < n; i++)
	{
		all[i].held = !leases && held[i];
		all[i].equal = !leases && equal[i];

		/*
		 * Once a peer's write is gone, only the worker of a writer that waits
		 * for the peer's downgrade knows it (worker/lock_recipe.c): what it
		 * knows counts.
		 */
		if (!leases && all[i].downgrade_holds)
		{
			all[i].held = true;
			all[i].equal = false;
		}
		else if (!leases && all[i].downgrade_waits)
			all[i].held = false;
	}
	*count = n;
	return all;
}

/*
 * One row of zk_lock_contenders or zk_semaphore_contenders; kind is the
 * mode of a lock's contender, or the role of a semaphore's.
 */
static void
zkl_put_contender(ReturnSetInfo *rsinfo, int position, const char *kind, const char *state,
				  const char *dir, zkl_contender *c)
{
	Datum		values[ZKL_COLUMNS_CONTENDERS];
	bool		nulls[ZKL_COLUMNS_CONTENDERS] = {0};
	int			col = 0;

	values[col++] = Int32GetDatum(position);
	values[col++] = CStringGetTextDatum(kind);
	values[col++] = CStringGetTextDatum(state);
	/* Other clients may name their nodes in any UTF-8. */
	values[col++] = PointerGetDatum(zkl_text_for_reader(psprintf("%s/%s", dir, c->node),
														strlen(dir) + 1 + strlen(c->node), PG_UTF8));
	values[col++] = Int64GetDatum(c->czxid);
	values[col++] = CStringGetTextDatum(zkl_client_of(c, c->is_zklock));
	/* A node we may not read: its description and data are unknown. */
	if (c->unreadable)
	{
		nulls[col++] = true;
		nulls[col++] = true;
	}
	else if (c->holder != (Datum) 0)
	{
		values[col++] = c->holder;
		nulls[col++] = true;
	}
	else
	{
		nulls[col++] = true;
		values[col++] = PointerGetDatum(zkl_data_text(c->data, c->data_len));
	}
	Assert(col == ZKL_COLUMNS_CONTENDERS);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

void
zkl_list_contenders(FunctionCallInfo fcinfo, text *name)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		key[ZKL_MAX_NAME_LEN + 1];
	char	   *dir;
	zkl_contender *all;
	int			n = 0;

	zkl_require_shmem();
	zkl_name_key(name, key);
	dir = zkl_lock_dir(key, strlen(key));
	InitMaterializedSRF(fcinfo, 0);

	all = zkl_read_contenders(key, dir, false, true, &n);
	zkl_local_init();
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		zkl_put_contender(rsinfo, i + 1, all[i].name.shared ? "shared" : "exclusive",
						  all[i].held ? "held" : all[i].equal ? "anomaly" : "waiting", dir, &all[i]);
	}
}

/*
 * zk_semaphore_contenders: the leases (holders), then the requests queued
 * in the semaphore's mutex.  The lease of the mutex holder is still being
 * counted: it waits.
 */
void
zkl_list_semaphore(FunctionCallInfo fcinfo, text *name)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		key[ZKL_MAX_NAME_LEN + 1];
	char	   *locks_dir;
	char	   *leases_dir;
	zkl_contender *leases;
	zkl_contender *queued;
	int			nleases;
	int			nqueued;
	int			position = 0;

	zkl_require_shmem();
	zkl_name_key(name, key);
	locks_dir = psprintf("%s/locks", zkl_lock_dir(key, strlen(key)));
	leases_dir = psprintf("%s/leases", zkl_lock_dir(key, strlen(key)));
	InitMaterializedSRF(fcinfo, 0);

	queued = zkl_read_contenders(key, locks_dir, false, true, &nqueued);
	leases = zkl_read_contenders(key, leases_dir, true, true, &nleases);
	for (int i = 0; i < nleases; i++)
	{
		/* Protected names start "_c_<uuid>-"; the same uuid is one request. */
		size_t		prefix = strlen(ZKL_PROTECTED_PREFIX);
		bool		counting = nqueued > 0 &&
		strncmp(queued[0].node, ZKL_PROTECTED_PREFIX, prefix) == 0 &&
		strncmp(leases[i].node, queued[0].node, prefix + ZKL_UUID_LEN) == 0;

		zkl_put_contender(rsinfo, ++position, "lease", counting ? "waits" : "holds",
						  leases_dir, &leases[i]);
	}
	for (int i = 0; i < nqueued; i++)
		zkl_put_contender(rsinfo, ++position, "mutex", "waits", locks_dir, &queued[i]);
}

/*
 * zk_lock_verify: whether the contender whose czxid is token holds lock
 * name now, by ZooKeeper's listing and the lock rule; any client's.
 */
bool
zkl_verify_token(text *name, int64 token)
{
	char		key[ZKL_MAX_NAME_LEN + 1];
	zkl_contender *all;
	int			n;

	zkl_require_shmem();
	zkl_name_key(name, key);
	all = zkl_read_contenders(key, zkl_lock_dir(key, strlen(key)), false, false, &n);
	for (int i = 0; i < n; i++)
		if (all[i].czxid == token)
			return all[i].held;
	return false;
}

/*
 * zk_lock_revoke: write Curator's revocation message on the node of every
 * holder of lock name; returns how many were asked (a holder that left
 * meanwhile is not).  A holder whose node's ACL denies us WRITE (ZNOAUTH)
 * is not asked: a WARNING says so and it is not counted, while the others
 * are still asked, since the messages already written stay written.  Its
 * node is left alone: a revocation deletes nothing.
 */
int
zkl_revoke_holders(text *name)
{
	char		key[ZKL_MAX_NAME_LEN + 1];
	char	   *dir;
	zkl_contender *all;
	int			n;
	int			rc;
	int			asked = 0;

	zkl_require_shmem();
	zkl_name_key(name, key);
	dir = zkl_lock_dir(key, strlen(key));
	all = zkl_read_contenders(key, dir, false, true, &n);
	for (int i = 0; i < n; i++)
	{
		/* Any name, however long: zkl_ask_worker passes it whole. */
		if (!all[i].held)
			continue;
		rc = zkl_ask_worker(key, dir, ZKL_OP_REVOKE, all[i].node, 0);
		if (rc == ZOK)
			asked++;
		else if (rc == ZNOAUTH)
			ereport(WARNING,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("could not ask a holder of ZooKeeper lock \"%s\" to give it up", key),
					 errdetail("ZooKeeper answered ZNOAUTH to the write of the revocation message on node \"%s/%s\": its ACL does not let this cluster's session write it. That holder keeps the lock and is not counted.",
							   dir, all[i].node),
					 errhint("zk_lock_revoke reaches a holder whose node allows WRITE to this cluster's identity (zklock.auth).")));
	}
	return asked;
}
