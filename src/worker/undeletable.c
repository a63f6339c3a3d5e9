/*-------------------------------------------------------------------------
 *
 * undeletable.c
 *		Lock directories whose ACL refused the delete of a node zklock
 *		made there (ZNOAUTH: DELETE is a right of the parent, and another
 *		tool may have made the directory first).  That node stays until
 *		the cluster's ZooKeeper session ends, and holds the lock against
 *		everyone meanwhile, this cluster's own sessions too; each later
 *		request there would leave one more.  So the worker remembers the
 *		directory and refuses new requests there before their create
 *		(ZKL_RC_DELETE_REFUSED: the backend raises a clear error).  Runs on
 *		the worker's main thread only.
 *
 * A directory is remembered for the session in which its delete was
 * refused (the stranded node goes with it) and for ZKL_UNDELETABLE_MS at
 * most, so that an ACL put right is used again within minutes; the last
 * ZKL_UNDELETABLE_DIRS such directories are kept.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zookeeper/zookeeper.h>

#include "utils/memutils.h"

#include "rules/clock.h"
#include "worker/undeletable.h"

#define ZKL_UNDELETABLE_DIRS	64
#define ZKL_UNDELETABLE_MS		(5 * 60 * 1000)

typedef struct zkl_undeletable_dir
{
	char	   *dir;			/* NULL: unused */
	int64		session_id;		/* the session whose node is stranded */
	int64		noted;			/* zkl_now() when the delete was refused */
} zkl_undeletable_dir;

static zkl_undeletable_dir zkl_undeletables[ZKL_UNDELETABLE_DIRS];
static int	zkl_undeletable_next = 0;

/*
 * The delete of the slot's own node failed with rc, for good (a connection
 * loss is retried elsewhere).  The node lasts until the session ends: say
 * so, and remember a directory that refused it.
 */
void
zkl_delete_refused(const zkl_slot *slot, int rc)
{
	zkl_undeletable_dir *e;

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
			 errdetail("The lock directory's ACL does not let this cluster's session delete its children: the node stays until the session ends, and new requests in that directory are refused meanwhile."),
			 errhint("Grant DELETE on the lock directory to zklock's identity (zklock.auth), or to anyone, as zklock's own directories do.")));
	if (zkl_undeletable(slot->dir))
		return;
	e = &zkl_undeletables[zkl_undeletable_next];
	zkl_undeletable_next = (zkl_undeletable_next + 1) % ZKL_UNDELETABLE_DIRS;
	if (e->dir != NULL)
		pfree(e->dir);
	e->dir = MemoryContextStrdup(TopMemoryContext, slot->dir);
	e->session_id = zkl_shared->session_id;
	e->noted = zkl_now();
}

/* Whether a request in dir would strand its node there (see above). */
bool
zkl_undeletable(const char *dir)
{
	int64		now = zkl_now();

	for (int i = 0; i < ZKL_UNDELETABLE_DIRS; i++)
	{
		zkl_undeletable_dir *e = &zkl_undeletables[i];

		if (e->dir != NULL && e->session_id == zkl_shared->session_id &&
			now - e->noted < (int64) ZKL_UNDELETABLE_MS * 1000 &&
			strcmp(e->dir, dir) == 0)
			return true;
	}
	return false;
}
