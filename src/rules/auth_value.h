/*-------------------------------------------------------------------------
 *
 * auth_value.h
 *		Which values of zklock.auth the worker may give its ZooKeeper
 *		session, and when a new value is refused rather than taken
 *		(auth_value.c).  Plain C, no PostgreSQL: test/unit proves it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_AUTH_VALUE_H
#define ZKLOCK_AUTH_VALUE_H

#include <stdbool.h>

/*
 * The longest value of zklock.auth, in bytes.  The worker records the
 * credentials it gave a session in ZKL_SESSION_AUTHS_LEN bytes of shared
 * memory (shared/shmem.h), each with its terminator, the list closed by an
 * empty string: four values of this length always fit, which a static
 * assertion in session_auth.c keeps true.
 */
#define ZKL_AUTH_MAX_LEN	250

typedef enum zkl_auth_verdict
{
	ZKL_AUTH_NONE = 0,			/* empty: no credentials */
	ZKL_AUTH_VALID,				/* "user:password", short enough */
	ZKL_AUTH_NO_COLON,			/* not of the form "user:password" */
	ZKL_AUTH_TOO_LONG			/* longer than ZKL_AUTH_MAX_LEN */
}			zkl_auth_verdict;

extern zkl_auth_verdict zkl_auth_judge(const char *value);
extern bool zkl_auth_bad(const char *value);
extern bool zkl_auth_refused(const char *value, bool at_definition);

#endif							/* ZKLOCK_AUTH_VALUE_H */
