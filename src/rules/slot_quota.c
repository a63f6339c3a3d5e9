/*-------------------------------------------------------------------------
 *
 * slot_quota.c
 *		The rule that decides whether a backend may take one more shared
 *		slot.  Runs in backends, inside shmem.c's claim, under the lock
 *		that guards the counts; pure, so test/unit proves it.
 *
 * The lock slots (zklock.max_locks) are shared by every role.  A role's
 * sessions together take at most zklock.max_locks_per_role of them,
 * counting every slot until it is free again (a hold, a wait, and a
 * release or cancel whose node the worker is still deleting), so no
 * churn of acquires and releases lets a role exceed its share; each
 * session also holds at most zklock.max_locks_per_backend distinct locks
 * (backend/request.c counts those).  Superusers have no per-role limit, as a role's
 * CONNECTION LIMIT does not bind them.
 *
 * Reads and revocations (zk_lock_contenders, zk_semaphore_contenders,
 * zk_lock_verify, zk_fence's check, zk_lock_revoke) and deadlock
 * detection never take a lock slot: they draw from a reserve of
 * ZKL_RESERVE_PER_BACKEND slots per possible backend, and each backend
 * takes at most that many of it at once.  So whatever other sessions hold,
 * ask or give up, a backend finds its reserve slots.
 *
 *-------------------------------------------------------------------------
 */
#include "rules/slot_quota.h"

/* zklock.max_locks_per_backend; -1: a tenth of max_locks, at least 64. */
int
zkl_backend_cap_of(int setting, int max_locks)
{
	if (setting >= 0)
		return setting;
	return max_locks / 10 > ZKL_BACKEND_CAP_FLOOR ? max_locks / 10 : ZKL_BACKEND_CAP_FLOOR;
}

/*
 * zklock.max_locks_per_role; -1: half of max_locks, so that one role's
 * sessions leave the other half to the rest.
 */
int
zkl_role_cap_of(int setting, int max_locks)
{
	if (setting >= 0)
		return setting;
	return max_locks / 2;
}

/*
 * May one more slot of the kind asked be taken?  The caller's own limit is
 * named before the pool's: it is what the caller can act on.
 */
zkl_claim_verdict
zkl_claim_rule(const zkl_claim_state *s)
{
	if (s->reserve)
	{
		if (s->backend_reserve_used >= ZKL_RESERVE_PER_BACKEND)
			return ZKL_CLAIM_BACKEND_FULL;
	}
	else if (!s->role_exempt && s->role_used >= s->role_cap)
		return ZKL_CLAIM_ROLE_FULL;
	if (!s->pool_free)
		return ZKL_CLAIM_POOL_FULL;
	return ZKL_CLAIM_OK;
}
