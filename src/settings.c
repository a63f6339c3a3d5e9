/*-------------------------------------------------------------------------
 *
 * settings.c
 *		The zklock.* settings: their variables, their checks and their
 *		definitions.  Defined in the postmaster by _PG_init (zklock.c) and
 *		read in every process.  Of zklock's other files it uses only the
 *		pure rule of zklock.auth's values (rules/auth_value.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "rules/auth_value.h"
#include "settings.h"

char	   *zkl_hosts = NULL;
char	   *zkl_root = NULL;
int			zkl_session_timeout = 10000;
int			zkl_connect_timeout = 10000;
int			zkl_max_locks = 1024;
int			zkl_max_locks_per_backend = -1;
int			zkl_max_locks_per_role = -1;
char	   *zkl_auth = NULL;
int			zkl_on_lock_lost = ZKL_ON_LOST_CANCEL;
int			zkl_exclusive_layout_setting = ZKL_LAYOUT_MUTEX;
int			zkl_max_hold_time = 0;
int			zkl_max_hold_time_limit = 0;
int			zkl_on_revoke_setting = ZKL_ON_REVOKE_IGNORE;
bool		zkl_batch_writes = true;
bool		zkl_fence_bypass = true;

static const struct config_enum_entry zkl_on_revoke_options[] = {
	{"ignore", ZKL_ON_REVOKE_IGNORE, false},
	{"cancel", ZKL_ON_REVOKE_CANCEL, false},
	{"terminate", ZKL_ON_REVOKE_TERMINATE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry zkl_on_lost_options[] = {
	{"error", ZKL_ON_LOST_ERROR, false},
	{"cancel", ZKL_ON_LOST_CANCEL, false},
	{"terminate", ZKL_ON_LOST_TERMINATE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry zkl_layout_options[] = {
	{"mutex", ZKL_LAYOUT_MUTEX, false},
	{"readwrite", ZKL_LAYOUT_READWRITE, false},
	{NULL, 0, false}
};

/*
 * A connect string the client library can use: "host:port" pairs separated
 * by commas (a host may be "[v6 address]"), optionally followed by a chroot
 * path.  The library takes an empty string and then never connects, so a
 * reload with a mistake would leave the worker without a server while the
 * session expires: refuse it here, and the session keeps its servers.
 */
static bool
check_hosts(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";
	const char *end = p + strcspn(p, "/");
	bool		ok = p < end;

	while (ok && p < end)
	{
		const char *comma = memchr(p, ',', end - p);
		const char *item_end = comma ? comma : end;
		const char *colon = NULL;
		long		port = 0;

		for (const char *c = p; c < item_end; c++)
			if (*c == ':')
				colon = c;
		ok = colon != NULL && colon > p && colon + 1 < item_end && item_end - colon <= 6;
		for (const char *c = colon ? colon + 1 : item_end; ok && c < item_end; c++)
		{
			ok = *c >= '0' && *c <= '9';
			port = port * 10 + (*c - '0');
		}
		ok = ok && port >= 1 && port <= 65535;
		for (const char *c = p; ok && c < colon; c++)
			ok = !isspace((unsigned char) *c);
		p = comma ? comma + 1 : end;
		ok = ok && !(comma && p == end);
	}
	if (!ok)
	{
		GUC_check_errdetail("zklock.hosts must be a comma-separated list of host:port pairs, such as \"zk1:2181,zk2:2181\".");
		return false;
	}
	return true;
}

static bool
check_root(char **newval, void **extra, GucSource source)
{
	const char *p = *newval;

	if (p == NULL || p[0] != '/' || (p[1] != '\0' && p[strlen(p) - 1] == '/') ||
		strstr(p, "//") != NULL || strlen(p) > ZKL_MAX_ROOT_LEN)
	{
		GUC_check_errdetail("zklock.root must be an absolute ZooKeeper path of at most %d bytes, without a trailing slash.",
							ZKL_MAX_ROOT_LEN);
		return false;
	}
	return true;
}

/* True while zklock.auth is being defined (zkl_define_settings). */
static bool zkl_defining_auth = false;

/*
 * A bad value is refused, but for the one found when the setting is
 * defined: that one is taken, and the worker starts no session with it
 * (rules/auth_value.c says why).
 */
static bool
check_auth(char **newval, void **extra, GucSource source)
{
	if (!zkl_auth_refused(*newval, zkl_defining_auth))
		return true;
	/* PostgreSQL's own message would print the value: a password. */
	GUC_check_errmsg("invalid value for parameter \"%s\"", "zklock.auth");
	if (zkl_auth_judge(*newval) == ZKL_AUTH_TOO_LONG)
		GUC_check_errdetail("zklock.auth is %zu bytes long; it may be at most %d.",
							strlen(*newval), ZKL_AUTH_MAX_LEN);
	else
		GUC_check_errdetail("zklock.auth must have the form \"user:password\".");
	return false;
}

/*
 * The zklock.* settings (README, "Settings"), but for those of the
 * statistics (shared/stats.c).
 */
void
zkl_define_settings(void)
{
	DefineCustomStringVariable("zklock.hosts",
							   "ZooKeeper connect string used by the zklock worker.",
							   "A comma-separated list of host:port pairs.",
							   &zkl_hosts,
							   "127.0.0.1:2181",
							   PGC_SIGHUP,
							   0,
							   check_hosts, NULL, NULL);
	DefineCustomStringVariable("zklock.root",
							   "ZooKeeper path under which lock directories live.",
							   NULL,
							   &zkl_root,
							   "/zklock",
							   PGC_POSTMASTER,
							   0,
							   check_root, NULL, NULL);
	DefineCustomIntVariable("zklock.session_timeout",
							"ZooKeeper session timeout requested by the worker.",
							"The server may negotiate it within its own bounds; zk_status() shows the result.",
							&zkl_session_timeout,
							10000, 1000, 600000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zklock.connect_timeout",
							"Longest time a lock request waits for an absent ZooKeeper session.",
							"Lock timeouts shorter than this still apply.",
							&zkl_connect_timeout,
							10000, 0, 3600000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zklock.max_locks",
							"Number of shared slots for lock requests and holds of the whole cluster.",
							NULL,
							&zkl_max_locks,
							1024, 16, 1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zklock.max_locks_per_backend",
							"Number of slots one backend may use at once.",
							"-1 means a tenth of zklock.max_locks, but at least 64.",
							&zkl_max_locks_per_backend,
							-1, -1, 1000000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	/*
	 * A session applies its own value to the slots of its login role: set per
	 * role with ALTER ROLE ... SET (superusers only, or roles granted SET on
	 * it), as temp_file_limit or work_mem are.  See slot_quota.c.
	 */
	DefineCustomIntVariable("zklock.max_locks_per_role",
							"Number of lock slots the sessions of one role may use at once, together.",
							"-1 means half of zklock.max_locks. Superusers have no such limit.",
							&zkl_max_locks_per_role,
							-1, -1, 1000000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	/* The value found now is taken even if bad (check_auth). */
	zkl_defining_auth = true;
	PG_TRY();
	{
		DefineCustomStringVariable("zklock.auth",
								   "Digest credentials (\"user:password\") the worker presents to ZooKeeper.",
								   NULL,
								   &zkl_auth,
								   "",
								   PGC_SIGHUP,
								   GUC_SUPERUSER_ONLY,
								   check_auth, NULL, NULL);
	}
	PG_FINALLY();
	{
		zkl_defining_auth = false;
	}
	PG_END_TRY();

	DefineCustomEnumVariable("zklock.on_lock_lost",
							 "What happens at once to a backend whose ZooKeeper lock is lost.",
							 "Its commit fails in every case; \"cancel\" also cancels its running statement, "
							 "\"terminate\" ends the backend.",
							 &zkl_on_lock_lost,
							 ZKL_ON_LOST_CANCEL,
							 zkl_on_lost_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	/*
	 * A role that may write the fencing tables could write any token by hand;
	 * by default it needs no lock for a fenced write, as a superuser bypasses
	 * row security (doc/fencing.md).  Anyone may turn it off for itself: off
	 * only takes an exemption away, on grants none.
	 */
	DefineCustomBoolVariable("zklock.fence_bypass",
							 "Whether a role that may write zklock's fencing tables bypasses the proof of fenced writes.",
							 "Off: its fenced writes need the lock, as any role's do.",
							 &zkl_fence_bypass,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Curator's InterProcessMutex and InterProcessReadWriteLock sort each
	 * other's nodes wrongly, so no one node name suits both; zklock reads
	 * every layout, the choice only matters to the peers.
	 */
	DefineCustomEnumVariable("zklock.exclusive_layout",
							 "Node layout of exclusive requests, for peers that share the locks.",
							 "\"mutex\" (-lock-) is Curator's InterProcessMutex and kazoo's Lock; "
							 "\"readwrite\" (__WRIT__) is the writer of Curator's InterProcessReadWriteLock.",
							 &zkl_exclusive_layout_setting,
							 ZKL_LAYOUT_MUTEX,
							 zkl_layout_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/* Read by the backend when it asks; the worker acts on the request's. */
	DefineCustomIntVariable("zklock.max_hold_time",
							"Longest time one backend may hold a ZooKeeper lock; 0 means no limit.",
							"A hold that lasts longer is given up by the worker and counts as lost.",
							&zkl_max_hold_time,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * The administrator's cap on zklock.max_hold_time (two settings, since a
	 * session may lower its limit, which one superuser setting would not let
	 * it): see zkl_hold_limit_ms.
	 */
	DefineCustomIntVariable("zklock.max_hold_time_limit",
							"Longest time any backend may hold a ZooKeeper lock, whatever zklock.max_hold_time says; 0 means no cap.",
							"Sessions may set a lower zklock.max_hold_time, not a higher one nor none.",
							&zkl_max_hold_time_limit,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("zklock.on_revoke",
							 "What a backend does when it is asked to give up a ZooKeeper lock it holds.",
							 "\"ignore\" logs it and shows \"revoke requested\" in zk_locks; \"cancel\" gives the "
							 "lock up as if it were lost; \"terminate\" ends the backend.",
							 &zkl_on_revoke_setting,
							 ZKL_ON_REVOKE_IGNORE,
							 zkl_on_revoke_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("zklock.batch_writes",
							 "Sends the lock creates and deletes that are ready at the same moment as one ZooKeeper multi.",
							 "A lone request is always sent at once, alone.",
							 &zkl_batch_writes,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

/*
 * The hold limit of a request made now: zklock.max_hold_time, bounded by
 * the administrator's zklock.max_hold_time_limit (0 in either: none).
 */
int
zkl_hold_limit_ms(void)
{
	if (zkl_max_hold_time_limit > 0 &&
		(zkl_max_hold_time == 0 || zkl_max_hold_time > zkl_max_hold_time_limit))
		return zkl_max_hold_time_limit;
	return zkl_max_hold_time;
}
