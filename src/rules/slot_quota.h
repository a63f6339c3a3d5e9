/*-------------------------------------------------------------------------
 *
 * slot_quota.h
 *		Who may take one more shared slot (slot_quota.c): the pure rule of
 *		zklock.max_locks, zklock.max_locks_per_role and the reserve that
 *		inspection, revocation and deadlock detection draw from.  Plain C,
 *		no PostgreSQL, so that unit tests (test/unit) prove it without a
 *		server; shmem.c applies it under the lock that guards the counts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SLOT_QUOTA_H
#define ZKLOCK_SLOT_QUOTA_H

#include <stdbool.h>

/*
 * Reserve slots each backend may use at once: a published wait, the one it
 * replaces while that is being deleted, the one read or revocation it asks
 * of the worker, and one such read given up (cancelled) that the worker is
 * still finishing.  The reserve holds this many per possible backend.
 */
#define ZKL_RESERVE_PER_BACKEND	4

/* The floor of zklock.max_locks_per_backend's default. */
#define ZKL_BACKEND_CAP_FLOOR	64

/* What a claim of one slot may do. */
typedef enum zkl_claim_verdict
{
	ZKL_CLAIM_OK = 0,
	ZKL_CLAIM_POOL_FULL,		/* no free slot of the kind asked */
	ZKL_CLAIM_ROLE_FULL,		/* the role uses all zklock.max_locks_per_role
								 * allows it */
	ZKL_CLAIM_BACKEND_FULL		/* the backend uses all its reserve slots */
} zkl_claim_verdict;

/* What the rule looks at, read under the lock that guards the counts. */
typedef struct zkl_claim_state
{
	bool		reserve;		/* a reserve slot (inspection, revocation,
								 * deadlock detection), not a lock slot */
	bool		pool_free;		/* a slot of that kind is free */
	bool		role_exempt;	/* a superuser's: no per-role limit */
	int			role_used;		/* lock slots the role uses, of every state */
	int			role_cap;		/* zklock.max_locks_per_role in force */
	int			backend_reserve_used;	/* reserve slots the backend uses */
} zkl_claim_state;

extern int	zkl_backend_cap_of(int setting, int max_locks);
extern int	zkl_role_cap_of(int setting, int max_locks);
extern zkl_claim_verdict zkl_claim_rule(const zkl_claim_state *s);

#endif							/* ZKLOCK_SLOT_QUOTA_H */
