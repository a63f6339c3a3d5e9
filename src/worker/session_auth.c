/*-------------------------------------------------------------------------
 *
 * session_auth.c
 *		The credentials the worker gives its ZooKeeper session, in the
 *		worker process.
 *
 * ZooKeeper keeps credentials per connection, and the client library gives
 * every one a handle was given again on each of its own reconnections.  A
 * session given zklock.auth's value, then another after a reload, has made
 * nodes and directories under both (the creator-only ACL names the
 * credentials of the connection that created them), and only a connection
 * with both can still read, watch and delete them all.  A new handle on the
 * same session (a reattachment after a connection the library dropped
 * without a word, a worker restarted onto the session) is therefore given
 * every one of them again, not only zklock.auth's current value.  A new
 * session starts with zklock.auth's value alone.
 *
 * They are kept in shared memory with the session they were given to
 * (zkl_shared->auths and auths_session, which only the worker reads and
 * writes, under zkl_shared->lock), so that a restarted worker finds them.
 * The library refuses a credential between two attempts at connecting
 * (ZINVALIDSTATE): one refused is not recorded, and the loop gives it
 * again at its next pass (zkl_give_auth).
 *
 * A bad value of zklock.auth (rules/auth_value.c) is given to no session,
 * and no new session starts while it is set (zkl_auth_usable): the worker
 * would otherwise create nodes without the credentials the administrator
 * meant to protect them with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "rules/auth_value.h"
#include "settings.h"
#include "shared/shmem.h"
#include "worker/session_auth.h"

/* Four values of zklock.auth always fit the record (zkl_auth_record). */
StaticAssertDecl(4 * (ZKL_AUTH_MAX_LEN + 1) + 1 <= ZKL_SESSION_AUTHS_LEN,
				 "four values of zklock.auth fit zkl_shared->auths");

/* zklock.auth's value as last given and recorded (TopMemoryContext). */
static char *zkl_auth_given = NULL;

/* zklock.auth's bad value last said in the log (TopMemoryContext). */
static char *zkl_auth_reported = NULL;

static void
zkl_auth_forget_given(void)
{
	if (zkl_auth_given)
		pfree(zkl_auth_given);
	zkl_auth_given = NULL;
}

/* Whether auth is among the credentials recorded.  Caller holds the lock. */
static bool
zkl_auth_recorded(const char *auth)
{
	for (const char *p = zkl_shared->auths; *p != '\0'; p += strlen(p) + 1)
	{
		if (strcmp(p, auth) == 0)
			return true;
	}
	return false;
}

/*
 * Record auth as given to the session in use.  One that does not fit is
 * given all the same but not recorded: a later handle on this session
 * lacks it, which the log says.
 */
static void
zkl_auth_record(const char *auth)
{
	size_t		used = 0;
	size_t		len = strlen(auth);
	bool		fits;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	while (zkl_shared->auths[used] != '\0')
		used += strlen(zkl_shared->auths + used) + 1;
	/* The entry, its terminator and the list's closing empty string. */
	fits = used + len + 2 <= sizeof(zkl_shared->auths);
	if (fits)
	{
		memcpy(zkl_shared->auths + used, auth, len + 1);
		zkl_shared->auths[used + len + 1] = '\0';
	}
	LWLockRelease(zkl_shared->lock);
	if (!fits)
		ereport(LOG,
				(errmsg("the ZooKeeper session's credentials exceed %zu bytes: a new handle on this session will not be given zklock.auth's value as now set",
						sizeof(zkl_shared->auths))));
}

/*
 * A handle was just made, for session session_id (0: a new session).  On
 * the session the credentials were recorded for, it is given every one of
 * them; otherwise the record starts again, with zklock.auth's value alone.
 * The handle has not connected yet: the library keeps them for its
 * handshake.
 */
void
zkl_auth_new_handle(zhandle_t *zh, int64 session_id)
{
	bool		same;

	zkl_auth_forget_given();
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	same = session_id != 0 && zkl_shared->auths_session == session_id;
	if (!same)
	{
		zkl_shared->auths_session = session_id;
		zkl_shared->auths[0] = '\0';
	}
	LWLockRelease(zkl_shared->lock);

	if (same)
	{
		/* Only the worker writes the record: read without the lock. */
		for (const char *p = zkl_shared->auths; *p != '\0'; p += strlen(p) + 1)
			(void) zoo_add_auth(zh, "digest", p, strlen(p), NULL, NULL);
	}
	zkl_give_auth(zh);
}

/*
 * The handle connected to session session_id: a new session's credentials
 * are recorded as its own.
 */
void
zkl_auth_session_known(int64 session_id)
{
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->auths_session = session_id;
	LWLockRelease(zkl_shared->lock);
}

/*
 * Whether zklock.auth's value may be given to a session, and a session be
 * started with it: no credentials, or valid ones.  A bad value is said in
 * the server log once, the first time it is found.
 */
bool
zkl_auth_usable(void)
{
	if (!zkl_auth_bad(zkl_auth))
		return true;
	if (zkl_auth_reported != NULL && strcmp(zkl_auth_reported, zkl_auth) == 0)
		return false;
	ereport(LOG,
			(errmsg("zklock.auth is not valid"),
			 zkl_auth_judge(zkl_auth) == ZKL_AUTH_TOO_LONG ?
			 errdetail("zklock.auth is %zu bytes long; it may be at most %d. The zklock worker gives it to no ZooKeeper session, and starts no new session while it is set.",
					   strlen(zkl_auth), ZKL_AUTH_MAX_LEN) :
			 errdetail("zklock.auth must have the form \"user:password\". The zklock worker gives it to no ZooKeeper session, and starts no new session while it is set."),
			 errhint("Correct zklock.auth and reload the configuration.")));
	if (zkl_auth_reported)
		pfree(zkl_auth_reported);
	zkl_auth_reported = MemoryContextStrdup(TopMemoryContext, zkl_auth);
	return false;
}

/*
 * Give the session zklock.auth's credentials unless it has them already:
 * at a handle's start, after a reload, and at each pass until the library
 * takes them.  A reload that sets new credentials adds them to the session
 * in use, before any create that follows, so the creator-only ACL of new
 * nodes names them.  A bad value is given to none (zkl_auth_usable).
 */
void
zkl_give_auth(zhandle_t *zh)
{
	bool		recorded;

	if (zh == NULL || zkl_auth == NULL || zkl_auth[0] == '\0')
		return;
	if (zkl_auth_given != NULL && strcmp(zkl_auth_given, zkl_auth) == 0)
		return;
	if (!zkl_auth_usable())
		return;
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	recorded = zkl_auth_recorded(zkl_auth);
	LWLockRelease(zkl_shared->lock);
	if (!recorded)
	{
		if (zoo_add_auth(zh, "digest", zkl_auth, strlen(zkl_auth), NULL, NULL) != ZOK)
			return;				/* between two connections: the next pass */
		zkl_auth_record(zkl_auth);
	}
	zkl_auth_forget_given();
	zkl_auth_given = MemoryContextStrdup(TopMemoryContext, zkl_auth);
}
