/*-------------------------------------------------------------------------
 *
 * zk_events.c
 *		The ZooKeeper request layer of the worker, in the worker process: the
 *		callbacks that libzookeeper runs, and the queue through which their
 *		results reach the worker's loop.
 *
 * The library has no thread of its own (zk_io.c drives it from the loop),
 * so its callbacks run on the worker's only thread, but in the middle of
 * the library's own work: inside zookeeper_process(), inside
 * zookeeper_interest() when a connection times out or is refused, inside
 * zookeeper_close(); its log lines come from any of its calls.  An
 * ereport(ERROR) there would jump out of the library with its state half
 * changed, so the callbacks never touch PostgreSQL (no palloc, no elog, no
 * LWLock): they copy what they need with malloc into a zkl_event and append
 * it to a list, which the loop takes whole at the start of its next pass
 * (zkl_events_take).  A request's callback context packs the slot, the
 * event kind and the slot's opgen into one pointer-sized value.
 *
 * An answer the library could not match to its request fails with
 * ZRUNTIMEINCONSISTENCY: the request may or may not have been carried out,
 * which is a lost answer, and is handed on as one (ZOPERATIONTIMEOUT).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "rules/lock_rule.h"
#include "worker/zk_events.h"

/* The session's handle: worker.c opens it, the recipes send on it. */
zhandle_t  *zkl_zh = NULL;

/*
 * Results filled in by the callbacks, taken by the loop; and how many of
 * them are more than the library's log lines, which alone never cut the
 * loop's sleep short (the library logs each failed connection attempt:
 * counted, they would defeat its delay between attempts).
 */
static zkl_event *zkl_events_head = NULL;
static zkl_event *zkl_events_tail = NULL;
static int	zkl_events_answers = 0;

/*
 * The handle is being closed only to open another on the same session
 * (session.c): the requests it fails (ZCLOSING) lost their connection, not
 * their session.
 */
static bool zkl_events_closing_for_reattach = false;

/*
 * A request's callback context is the one pointer libzookeeper hands back:
 * it carries, with nothing allocated per request, the slot (the low 24
 * bits), the kind of event its answer is (the next 8) and the slot's work
 * generation (the high 32).  24 bits number every slot: zklock.max_locks
 * is at most 1,000,000 and the reserve ZKL_RESERVE_PER_BACKEND (4) for
 * each of at most 2^18 backends, 2,048,576 in all; the kinds are a few.
 * Pointers are 64 bits wide on every platform zklock builds on.
 */
#define ZKL_CTX_SLOT_BITS	24
#define ZKL_CTX_KIND_BITS	8
#define ZKL_CTX_OPGEN_SHIFT	32

StaticAssertDecl(sizeof(uintptr_t) >= sizeof(uint64),
				 "a callback context holds 64 bits");
StaticAssertDecl(ZKL_CTX_SLOT_BITS + ZKL_CTX_KIND_BITS <= ZKL_CTX_OPGEN_SHIFT,
				 "the fields of a callback context do not overlap");

/* The callback context of a request of slot slotno, in work opgen. */
const void *
zkl_request_ctx(zkl_event_kind kind, int slotno, uint32 opgen)
{
	uint64		ctx = ((uint64) opgen << ZKL_CTX_OPGEN_SHIFT) |
	((uint64) kind << ZKL_CTX_SLOT_BITS) | (uint64) slotno;

	return (const void *) (uintptr_t) ctx;
}

/* ---- inside libzookeeper's calls: malloc and the list only ---- */

/*
 * Queue an event for the loop: the callbacks below, and write_batch.c's
 * multi completion.  The loop does not sleep while one is queued
 * (zk_io.c).
 */
void
zkl_event_post(zkl_event *ev)
{
	if (ev->kind != ZKL_EV_LOG)
		zkl_events_answers++;
	if (zkl_events_tail)
		zkl_events_tail->next = ev;
	else
		zkl_events_head = ev;
	zkl_events_tail = ev;
}

/* A new event of the request whose callback context is data. */
zkl_event  *
zkl_event_new(const void *data, int rc)
{
	uintptr_t	ctx = (uintptr_t) data;
	zkl_event  *ev = calloc(1, sizeof(zkl_event));

	if (ev == NULL)
		abort();				/* no ereport inside the library */
	ev->slotno = (int) (ctx & ((UINT64CONST(1) << ZKL_CTX_SLOT_BITS) - 1));
	ev->kind = (zkl_event_kind) ((ctx >> ZKL_CTX_SLOT_BITS) &
								 ((UINT64CONST(1) << ZKL_CTX_KIND_BITS) - 1));
	ev->opgen = (uint32) (ctx >> ZKL_CTX_OPGEN_SHIFT);
	ev->rc = rc == ZRUNTIMEINCONSISTENCY ? ZOPERATIONTIMEOUT :
		(rc == ZCLOSING && zkl_events_closing_for_reattach) ? ZCONNECTIONLOSS : rc;
	return ev;
}

static char *
zkl_strdup(const char *s)
{
	char	   *copy = s ? strdup(s) : NULL;

	if (s && copy == NULL)
		abort();
	return copy;
}

void
zkl_string_stat_done(int rc, const char *value, const struct Stat *stat, const void *data)
{
	zkl_event  *ev = zkl_event_new(data, rc);

	if (rc == ZOK)
	{
		ev->path = zkl_strdup(value);
		ev->czxid = stat ? stat->czxid : 0;
		ev->ctime = stat ? stat->ctime : 0;
		ev->owner = stat ? stat->ephemeralOwner : 0;
	}
	zkl_event_post(ev);
}

static void
zkl_strings_done_cversion(int rc, const struct String_vector *strings, const struct Stat *stat,
						  const void *data)
{
	zkl_event  *ev = zkl_event_new(data, rc);

	if (rc == ZOK && stat)
	{
		ev->cversion = stat->cversion;
		ev->num_children = stat->numChildren;
		ev->pzxid = stat->pzxid;
		ev->dir_stat = true;
		ev->dir_version = stat->version;
		ev->dir_data_len = stat->dataLength;
	}

	if (rc == ZOK && strings && strings->count > 0)
	{
		ev->children = malloc(sizeof(char *) * strings->count);
		if (ev->children == NULL)
			abort();
		for (int i = 0; i < strings->count; i++)
			ev->children[i] = zkl_strdup(strings->data[i]);
		ev->nchildren = strings->count;
	}
	zkl_event_post(ev);
}

void
zkl_strings_done(int rc, const struct String_vector *strings, const void *data)
{
	zkl_strings_done_cversion(rc, strings, NULL, data);
}

/* A listing with the directory's Stat: its child counter and children too. */
void
zkl_strings_stat_done(int rc, const struct String_vector *strings,
					  const struct Stat *stat, const void *data)
{
	zkl_strings_done_cversion(rc, strings, stat, data);
}

void
zkl_stat_done(int rc, const struct Stat *stat, const void *data)
{
	zkl_event  *ev = zkl_event_new(data, rc);

	if (rc == ZOK && stat)
	{
		ev->czxid = stat->czxid;
		ev->owner = stat->ephemeralOwner;
		ev->ctime = stat->ctime;
	}
	zkl_event_post(ev);
}

void
zkl_void_done(int rc, const void *data)
{
	zkl_event_post(zkl_event_new(data, rc));
}

void
zkl_void_string_done(int rc, const char *value, const void *data)
{
	zkl_event_post(zkl_event_new(data, rc));
}

/* A directory's ACL: every entry copied (the library frees its own). */
void
zkl_acl_done(int rc, struct ACL_vector *acl, struct Stat *stat, const void *data)
{
	zkl_event  *ev = zkl_event_new(data, rc);

	if (rc == ZOK && acl != NULL && acl->count > 0)
	{
		ev->acl = calloc(acl->count, sizeof(zkl_event_acl));
		if (ev->acl == NULL)
			abort();
		for (int i = 0; i < acl->count; i++)
		{
			ev->acl[i].perms = acl->data[i].perms;
			ev->acl[i].scheme = zkl_strdup(acl->data[i].id.scheme);
			ev->acl[i].id = zkl_strdup(acl->data[i].id.id);
		}
		ev->nacl = acl->count;
	}
	zkl_event_post(ev);
}

/* Where needle is in the len bytes at hay (which need not end in '\0'). */
static const char *
zkl_memmem(const char *hay, int len, const char *needle)
{
	size_t		n = strlen(needle);

	for (int i = 0; i + (int) n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return hay + i;
	return NULL;
}

void
zkl_data_done(int rc, const char *value, int value_len, const struct Stat *stat, const void *data)
{
	zkl_event  *ev = zkl_event_new(data, rc);

	if (rc == ZOK && stat)
	{
		ev->czxid = stat->czxid;
		ev->owner = stat->ephemeralOwner;
		ev->ctime = stat->ctime;
	}
	/* A holder's own node: does it carry Curator's revocation message? */
	if (rc == ZOK && ev->kind == ZKL_EV_OWN_EXISTS)
		ev->revoke_message = value != NULL && value_len == strlen(ZKL_REVOKE_MESSAGE) &&
			memcmp(value, ZKL_REVOKE_MESSAGE, value_len) == 0;

	/*
	 * A predecessor, or a read node behind a waiter: is it zklock's (the JSON
	 * description, with the system identifier), or a peer's?
	 */
	if (rc == ZOK && (ev->kind == ZKL_EV_READER_DATA || ev->kind == ZKL_EV_PRED_EXISTS))
		ev->zklock_data = value != NULL && value_len > 0 && value[0] == '{' &&
			zkl_memmem(value, value_len, "\"system_identifier\"") != NULL;
	/* Only zk_lock_contenders reads data; watches on predecessors ignore it. */
	if (rc == ZOK && value && value_len > 0 && ev->kind == ZKL_EV_INSPECT_DATA)
	{
		ev->data = malloc(value_len);
		if (ev->data == NULL)
			abort();
		memcpy(ev->data, value, value_len);
		ev->data_len = value_len;
	}
	zkl_event_post(ev);
}

void
zkl_node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	zkl_event  *ev = zkl_event_new(ctx, ZOK);

	ev->type = type;
	ev->state = state;
	zkl_event_post(ev);
}

void
zkl_session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	/* The handle's context is its number (session.c). */
	if (type == ZOO_SESSION_EVENT)
		zkl_session_event_post(state, (uint32) (uintptr_t) ctx);
}

/*
 * A change of the session's state on handle number handle, as its watcher
 * reports it; the loop also says one the library left unsaid (zk_io.c).
 * The number goes in opgen: the loop may drain the event after the handle
 * was closed and another opened.
 */
void
zkl_session_event_post(int state, uint32 handle)
{
	zkl_event  *ev = zkl_event_new(zkl_request_ctx(ZKL_EV_SESSION, 0, handle), ZOK);

	ev->state = state;
	zkl_event_post(ev);
}

/* The library's log lines, from inside any of its calls. */
void
zkl_library_log(const char *message)
{
	zkl_event  *ev = calloc(1, sizeof(zkl_event));

	if (ev == NULL)
		return;					/* a log line is not worth an abort */
	ev->kind = ZKL_EV_LOG;
	ev->path = strdup(message);
	if (ev->path == NULL)
	{
		free(ev);
		return;
	}
	zkl_event_post(ev);
}

void
zkl_event_free(zkl_event *ev)
{
	for (int i = 0; i < ev->nchildren; i++)
		free(ev->children[i]);
	free(ev->children);
	for (int i = 0; i < ev->nacl; i++)
	{
		free(ev->acl[i].scheme);
		free(ev->acl[i].id);
	}
	free(ev->acl);
	free(ev->data);
	free(ev->path);
	free(ev);
}

/* ---- the loop ---- */

/* Closing a handle to reattach to its session: see zkl_events_closing_for_reattach. */
void
zkl_events_closing_to_reattach(bool closing)
{
	zkl_events_closing_for_reattach = closing;
}

/*
 * Whether an answer, a watch or a session event waits to be taken: the loop
 * must not sleep then.  Log lines alone wait for the next pass.
 */
bool
zkl_events_queued(void)
{
	return zkl_events_answers > 0;
}

/* Every event queued so far, oldest first; the caller frees each. */
zkl_event  *
zkl_events_take(void)
{
	zkl_event  *ev = zkl_events_head;

	zkl_events_head = zkl_events_tail = NULL;
	zkl_events_answers = 0;
	return ev;
}
