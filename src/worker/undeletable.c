/*-------------------------------------------------------------------------
 *
 * undeletable.c
 *		Lock directories where zklock may not delete the nodes it makes
 *		(DELETE is a right of the parent in ZooKeeper, and another tool may
 *		have made the directory first, with an ACL of its own).  Such a
 *		node would stay until the cluster's ZooKeeper session ends, and
 *		hold the lock against everyone meanwhile, this cluster's own
 *		sessions too.  Runs in the worker's loop only.
 *
 * Before its first create in a directory, the worker reads the directory's
 * ACL (getACL) and decides with dir_acl.c whether zklock may delete there:
 * a directory that refuses is refused before anything is made there
 * (ZKL_RC_DELETE_REFUSED: the backend raises a clear error); one where only
 * entries zklock cannot evaluate grant DELETE (ip, x509, sasl) is used, and
 * the release of a node made there waits for its delete's answer
 * (zkl_slot.delete_unsure).  A directory that does not exist yet is made by
 * zklock, with its own ACL.  A delete refused all the same (the ACL changed
 * after the create) strands the node: the slot stays, shown "stranded" by
 * zk_locks, its delete tried again with each heartbeat tick, and the
 * directory is refused as above for the rest of the session.
 *
 * A verdict read from an ACL lasts ZKL_DIR_ACL_MS, so that a change of the
 * ACL is seen within minutes at the cost of one getACL per directory and
 * period; a refusal learnt from a delete lasts as long, and only within the
 * session whose node is stranded (a successful delete there forgets it).
 * The last ZKL_DIR_VERDICTS directories are kept.
 *
 * A verdict read from an ACL is also of the identities it was decided for:
 * zklock.auth's when it was read, and the session's.  A reload of
 * zklock.auth forgets every such verdict (the directory's ACL is read again
 * for the new identity, which may be granted what the old one was not), and
 * a verdict read in another session is not used: a new session has only the
 * credentials zklock.auth gives now, and a directory that granted DELETE to
 * the credentials of before would strand the node it let zklock make.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zookeeper/zookeeper.h>

#include "common/cryptohash.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "rules/clock.h"
#include "rules/dir_acl.h"
#include "settings.h"
#include "worker/undeletable.h"

#define ZKL_DIR_VERDICTS	256
#define ZKL_DIR_ACL_MS		(5 * 60 * 1000)
#define ZKL_SHA1_LEN		20

typedef struct zkl_dir_entry
{
	char	   *dir;			/* NULL: unused */
	zkl_dir_verdict verdict;
	int64		session_id;		/* a refusal learnt from a delete: the session
								 * whose node is stranded; 0: from the ACL */
	int64		read_session;	/* from the ACL: the session it was read in */
	int64		noted;			/* zkl_now() when it was learnt */
} zkl_dir_entry;

static zkl_dir_entry zkl_dirs[ZKL_DIR_VERDICTS];
static int	zkl_dir_next = 0;

/* zklock.auth when the verdicts read from ACLs were decided ("" for none). */
static char *zkl_dir_auth = NULL;

/*
 * After a reload that changed zklock.auth, forget the verdicts read from
 * ACLs: they were decided for the identity of before.
 */
static void
zkl_dir_auth_check(void)
{
	const char *now = zkl_auth != NULL ? zkl_auth : "";

	if (zkl_dir_auth != NULL && strcmp(zkl_dir_auth, now) == 0)
		return;
	if (zkl_dir_auth != NULL)
	{
		for (int i = 0; i < ZKL_DIR_VERDICTS; i++)
			if (zkl_dirs[i].dir != NULL && zkl_dirs[i].session_id == 0)
				zkl_dirs[i].noted = 0;
		pfree(zkl_dir_auth);
	}
	zkl_dir_auth = MemoryContextStrdup(TopMemoryContext, now);
}

/* The entry of dir still valid, or NULL. */
static zkl_dir_entry *
zkl_dir_find(const char *dir)
{
	int64		now = zkl_now();

	zkl_dir_auth_check();
	for (int i = 0; i < ZKL_DIR_VERDICTS; i++)
	{
		zkl_dir_entry *e = &zkl_dirs[i];

		if (e->dir == NULL || strcmp(e->dir, dir) != 0)
			continue;
		if ((e->session_id != 0 && e->session_id != zkl_shared->session_id) ||
			(e->session_id == 0 && e->read_session != zkl_shared->session_id) ||
			e->noted == 0 || now - e->noted >= (int64) ZKL_DIR_ACL_MS * 1000)
			return NULL;
		return e;
	}
	return NULL;
}

/* Note a verdict for dir, in place of any earlier one. */
static void
zkl_dir_note(const char *dir, zkl_dir_verdict verdict, int64 session_id)
{
	zkl_dir_entry *e = NULL;

	for (int i = 0; i < ZKL_DIR_VERDICTS && e == NULL; i++)
		if (zkl_dirs[i].dir != NULL && strcmp(zkl_dirs[i].dir, dir) == 0)
			e = &zkl_dirs[i];
	if (e == NULL)
	{
		e = &zkl_dirs[zkl_dir_next];
		zkl_dir_next = (zkl_dir_next + 1) % ZKL_DIR_VERDICTS;
		if (e->dir != NULL)
			pfree(e->dir);
		e->dir = MemoryContextStrdup(TopMemoryContext, dir);
	}
	e->verdict = verdict;
	e->session_id = session_id;
	e->read_session = zkl_shared->session_id;
	e->noted = zkl_now();
}

/*
 * Whether the worker knows if zklock may delete its nodes in dir, and
 * what: false when the directory's ACL must be read first.
 */
bool
zkl_dir_checked(const char *dir, zkl_dir_verdict *verdict)
{
	zkl_dir_entry *e = zkl_dir_find(dir);

	if (e == NULL)
		return false;
	*verdict = e->verdict;
	return true;
}

/* Whether a request in dir would strand its node there (see above). */
bool
zkl_undeletable(const char *dir)
{
	zkl_dir_entry *e = zkl_dir_find(dir);

	return e != NULL && e->verdict == ZKL_DIR_DELETE_REFUSED;
}

/*
 * SHA-1 of len bytes into out, with PostgreSQL's cryptohash.  Built with
 * OpenSSL, the server's cryptohash registers its context with
 * CurrentResourceOwner, which the worker has none of outside this call: a
 * resource owner of its own is made for it, and deleted once the context is
 * freed.  False when it could not be computed.
 */
static bool
zkl_sha1(const char *in, size_t len, uint8 *out)
{
	ResourceOwner outer = CurrentResourceOwner;
	ResourceOwner own = ResourceOwnerCreate(NULL, "zklock digest");
	bool		ok = false;

	CurrentResourceOwner = own;
	PG_TRY();
	{
		pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA1);

		if (ctx != NULL)
		{
			ok = pg_cryptohash_init(ctx) == 0 &&
				pg_cryptohash_update(ctx, (const uint8 *) in, len) == 0 &&
				pg_cryptohash_final(ctx, out, ZKL_SHA1_LEN) == 0;
			pg_cryptohash_free(ctx);
		}
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = outer;
		ResourceOwnerRelease(own, RESOURCE_RELEASE_BEFORE_LOCKS, false, true);
		ResourceOwnerRelease(own, RESOURCE_RELEASE_LOCKS, false, true);
		ResourceOwnerRelease(own, RESOURCE_RELEASE_AFTER_LOCKS, false, true);
		ResourceOwnerDelete(own);
	}
	PG_END_TRY();
	return ok;
}

/*
 * zklock's digest id, "<user>:<base64 of SHA-1 of user:password>", as the
 * server keeps it for zklock.auth; NULL without zklock.auth, or when it
 * cannot be computed (then only world entries are known to be zklock's).
 */
static char *
zkl_digest_id(void)
{
	uint8		sha1[ZKL_SHA1_LEN];
	char		b64[ZKL_BASE64_SIZE(ZKL_SHA1_LEN)];
	const char *colon;

	if (zkl_auth == NULL || zkl_auth[0] == '\0' || (colon = strchr(zkl_auth, ':')) == NULL)
		return NULL;
	if (!zkl_sha1(zkl_auth, strlen(zkl_auth), sha1))
		return NULL;
	zkl_base64(sha1, sizeof(sha1), b64);
	return psprintf("%.*s:%s", (int) (colon - zkl_auth), zkl_auth, b64);
}

/*
 * The answer of a directory's getACL (ZOK, or ZNONODE: the directory does
 * not exist, and zklock makes it with its own ACL): decide, note and
 * return the verdict.
 */
zkl_dir_verdict
zkl_dir_acl_read(const char *dir, const zkl_event *ev)
{
	zkl_dir_verdict verdict = ZKL_DIR_DELETE_ALLOWED;

	if (ev->rc == ZOK)
	{
		zkl_acl_entry *acl = palloc(sizeof(zkl_acl_entry) * Max(ev->nacl, 1));
		char	   *me = zkl_digest_id();

		for (int i = 0; i < ev->nacl; i++)
		{
			acl[i].perms = ev->acl[i].perms;
			acl[i].scheme = ev->acl[i].scheme;
			acl[i].id = ev->acl[i].id;
		}
		verdict = zkl_dir_delete_verdict(acl, ev->nacl, me);
		pfree(acl);
		if (me != NULL)
			pfree(me);
	}
	zkl_dir_note(dir, verdict, 0);
	if (verdict == ZKL_DIR_DELETE_UNSURE)
		ereport(LOG,
				(errmsg("only ACL entries it cannot evaluate grant DELETE in lock directory \"%s\"", dir),
				 errdetail("Releases there wait for the delete of their node, and report it if it is refused.")));
	return verdict;
}

/*
 * The delete of the slot's own node failed with rc, for good (a connection
 * loss is retried elsewhere).  The node stays until the session ends or
 * a delete works: say so once, and remember a directory that refused it.
 */
void
zkl_delete_refused(const zkl_slot *slot, int rc)
{
	if (slot->stranded)
	{
		/*
		 * Said when it was first refused; a retry refused again keeps the
		 * directory refused while the node stays, or the refusal would lapse
		 * after ZKL_DIR_ACL_MS and an ACL that cannot tell (ip, sasl) would
		 * let new requests strand more nodes, one slot each.
		 */
		if (rc == ZNOAUTH)
			zkl_dir_note(slot->dir, ZKL_DIR_DELETE_REFUSED, zkl_shared->session_id);
		return;
	}
	if (rc != ZNOAUTH)
	{
		ereport(LOG,
				(errmsg("could not delete ZooKeeper node \"%s/%s\": %s",
						slot->dir, slot->node, zerror(rc))));
		return;
	}
	ereport(WARNING,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("could not delete ZooKeeper node \"%s/%s\": %s",
					slot->dir, slot->node, zerror(rc)),
			 errdetail("The lock directory's ACL does not let this cluster's session delete its children: the node stays until the session ends or a later attempt deletes it, and new requests in that directory are refused meanwhile."),
			 errhint("Grant DELETE on the lock directory to zklock's identity (zklock.auth), or to anyone, as zklock's own directories do.")));
	zkl_dir_note(slot->dir, ZKL_DIR_DELETE_REFUSED, zkl_shared->session_id);
}

/* A node of ours in dir was deleted: a refusal learnt there is over. */
void
zkl_delete_worked(const char *dir)
{
	zkl_dir_entry *e = zkl_dir_find(dir);

	if (e != NULL && e->session_id != 0)
		e->noted = zkl_now() - (int64) ZKL_DIR_ACL_MS * 1000;
}
