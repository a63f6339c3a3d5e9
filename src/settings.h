/*-------------------------------------------------------------------------
 *
 * settings.h
 *		The zklock.* settings (settings.c), read by every process.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SETTINGS_H
#define ZKLOCK_SETTINGS_H

/* The longest zklock.root, in bytes. */
#define ZKL_MAX_ROOT_LEN	255

/* zklock.exclusive_layout */
typedef enum zkl_exclusive_layout
{
	ZKL_LAYOUT_MUTEX = 0,
	ZKL_LAYOUT_READWRITE
} zkl_exclusive_layout;

/* What a holder asked to give its lock up does (zklock.on_revoke). */
typedef enum zkl_on_revoke
{
	ZKL_ON_REVOKE_IGNORE = 0,	/* a log line and "revoke requested" */
	ZKL_ON_REVOKE_CANCEL,		/* give the lock up, as if lost */
	ZKL_ON_REVOKE_TERMINATE		/* end the backend */
} zkl_on_revoke;

/* What else happens to a backend whose lock is lost (zklock.on_lock_lost). */
typedef enum zkl_on_lost
{
	ZKL_ON_LOST_ERROR = 0,		/* only the next zklock call and COMMIT fail */
	ZKL_ON_LOST_CANCEL,			/* and its running statement is cancelled */
	ZKL_ON_LOST_TERMINATE		/* and the backend is terminated */
} zkl_on_lost;

extern char *zkl_hosts;
extern char *zkl_root;
extern int	zkl_session_timeout;
extern int	zkl_connect_timeout;
extern int	zkl_max_locks;
extern int	zkl_max_locks_per_backend;
extern int	zkl_max_locks_per_role;
extern char *zkl_auth;
extern int	zkl_on_lock_lost;
extern int	zkl_exclusive_layout_setting;
extern int	zkl_max_hold_time;
extern int	zkl_max_hold_time_limit;
extern int	zkl_hold_limit_ms(void);
extern int	zkl_on_revoke_setting;
extern bool zkl_batch_writes;
extern bool zkl_fence_bypass;

extern void zkl_define_settings(void);

#endif							/* ZKLOCK_SETTINGS_H */
