/*-------------------------------------------------------------------------
 *
 * auth_value.c
 *		The rule of zklock.auth's values: which ones the worker may give
 *		its ZooKeeper session, and which ones the setting's check hook
 *		refuses (settings.c).  Plain C with no PostgreSQL; test/unit proves
 *		it without a server.
 *
 * A refusal by the check hook is not the end of a bad value everywhere.
 * On a reload it is: the value in force stays, and the server log says
 * why; ALTER SYSTEM refuses it with an error.  When the library defines
 * the setting (in the postmaster, at server start) it is not: a value from
 * the configuration file refused there falls back to the default with no
 * more than a WARNING, and zklock.auth's default is no credentials, under
 * which the worker creates nodes that any ZooKeeper client may delete.  A
 * typo in a password would silently open every lock to the world.  So the
 * value found when the setting is defined is taken even if bad; and the
 * worker, which judges the value again, starts no session while it is bad
 * and gives it to no session (worker/session.c, worker/session_auth.c),
 * saying why in the server log.  Locks then fail for want of a session
 * rather than succeed unprotected.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "rules/auth_value.h"

/* What value is, as a value of zklock.auth (NULL is no value: none). */
zkl_auth_verdict
zkl_auth_judge(const char *value)
{
	if (value == NULL || value[0] == '\0')
		return ZKL_AUTH_NONE;
	if (strlen(value) > ZKL_AUTH_MAX_LEN)
		return ZKL_AUTH_TOO_LONG;
	if (strchr(value, ':') == NULL)
		return ZKL_AUTH_NO_COLON;
	return ZKL_AUTH_VALID;
}

/* Whether value is bad: neither no credentials nor valid ones. */
bool
zkl_auth_bad(const char *value)
{
	zkl_auth_verdict v = zkl_auth_judge(value);

	return v != ZKL_AUTH_NONE && v != ZKL_AUTH_VALID;
}

/*
 * Whether the check hook refuses value: a bad one, but for the value found
 * when the setting is defined (at_definition), which a refusal would
 * replace by no credentials.
 */
bool
zkl_auth_refused(const char *value, bool at_definition)
{
	return zkl_auth_bad(value) && !at_definition;
}
