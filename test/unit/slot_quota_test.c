/*-------------------------------------------------------------------------
 *
 * slot_quota_test.c
 *		Unit tests of slot_quota.c: the defaults of the per-backend and
 *		per-role limits, the order in which a refused claim names them,
 *		and, over random runs of claims and frees by several roles and
 *		backends, that no role passes its share, that what one role leaves
 *		is always there for the others, and that a backend within its
 *		share of the reserve always finds a reserve slot.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "rules/slot_quota.h"
#include "unit_tap.h"

static zkl_claim_state
lock_claim(int pool_free, int role_used, int role_cap, int exempt)
{
	zkl_claim_state s;

	memset(&s, 0, sizeof(s));
	s.pool_free = pool_free;
	s.role_used = role_used;
	s.role_cap = role_cap;
	s.role_exempt = exempt;
	return s;
}

static void
test_defaults(void)
{
	check(zkl_backend_cap_of(-1, 1024) == 102, "backend cap: a tenth of 1024 is 102");
	check(zkl_backend_cap_of(-1, 200) == 64, "backend cap: at least 64");
	check(zkl_backend_cap_of(-1, 16) == 64, "backend cap: 64 even above max_locks (the pool and the role refuse first)");
	check(zkl_backend_cap_of(5, 1024) == 5, "backend cap: a set value is taken as is");
	check(zkl_backend_cap_of(0, 1024) == 0, "backend cap: 0 is no lock at all");
	check(zkl_role_cap_of(-1, 1024) == 512, "role cap: half of 1024");
	check(zkl_role_cap_of(-1, 64) == 32, "role cap: half of 64, below the backend cap, so one session cannot take all");
	check(zkl_role_cap_of(-1, 17) == 8, "role cap: half, rounded down");
	check(zkl_role_cap_of(3, 1024) == 3, "role cap: a set value is taken as is");
	check(zkl_role_cap_of(5000, 1024) == 5000, "role cap: may exceed the pool (then only the pool limits)");
	for (int m = 16; m <= 100000; m = m * 3 + 1)
		if (zkl_role_cap_of(-1, m) * 2 > m)
		{
			check(0, "role cap: the default leaves at least half to the others");
			return;
		}
	check(1, "role cap: the default leaves at least half of every pool size to the others");
}

static void
test_verdicts(void)
{
	zkl_claim_state s;

	s = lock_claim(1, 0, 10, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_OK, "lock: room in the pool and the role");
	s = lock_claim(1, 9, 10, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_OK, "lock: the role's last slot");
	s = lock_claim(1, 10, 10, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_ROLE_FULL, "lock: the role at its cap is refused");
	s = lock_claim(1, 11, 10, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_ROLE_FULL, "lock: a role above a lowered cap is refused");
	s = lock_claim(0, 10, 10, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_ROLE_FULL, "lock: role and pool full: the role's limit is named");
	s = lock_claim(0, 3, 10, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_POOL_FULL, "lock: the pool full, the role not: the pool is named");
	s = lock_claim(1, 50, 10, 1);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_OK, "lock: a superuser has no role cap");
	s = lock_claim(0, 50, 10, 1);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_POOL_FULL, "lock: a superuser still needs a free slot");
	s = lock_claim(1, 0, 0, 0);
	check(zkl_claim_rule(&s) == ZKL_CLAIM_ROLE_FULL, "lock: a cap of 0 refuses the first slot");

	memset(&s, 0, sizeof(s));
	s.reserve = 1;
	s.pool_free = 1;
	s.role_used = 1000;			/* a role's lock slots do not matter */
	s.role_cap = 0;
	check(zkl_claim_rule(&s) == ZKL_CLAIM_OK, "reserve: a role with no lock slot left still reads");
	s.backend_reserve_used = ZKL_RESERVE_PER_BACKEND - 1;
	check(zkl_claim_rule(&s) == ZKL_CLAIM_OK, "reserve: the backend's last reserve slot");
	s.backend_reserve_used = ZKL_RESERVE_PER_BACKEND;
	check(zkl_claim_rule(&s) == ZKL_CLAIM_BACKEND_FULL, "reserve: the backend at its share is refused");
	s.pool_free = 0;
	check(zkl_claim_rule(&s) == ZKL_CLAIM_BACKEND_FULL, "reserve: backend and reserve full: the backend's share is named");
	s.backend_reserve_used = 0;
	check(zkl_claim_rule(&s) == ZKL_CLAIM_POOL_FULL, "reserve: the reserve full: named");
}

/*
 * A model of the shared table, with the counts that shmem.c keeps, driven
 * by random claims and frees: the invariants hold after every step.
 */
#define NROLES		4
#define NBACKENDS	12
#define MAXSLOTS	64

typedef struct
{
	int			role;			/* -1: free */
	int			backend;
	int			reserve;
} model_slot;

static void
test_model(unsigned seed)
{
	int			max_locks = 16 + (int) (seed % 48);
	int			nreserve = ZKL_RESERVE_PER_BACKEND * NBACKENDS;
	int			role_cap = zkl_role_cap_of(seed % 3 == 0 ? -1 : (int) (seed % 11), max_locks);
	model_slot	lock[MAXSLOTS];
	model_slot	res[ZKL_RESERVE_PER_BACKEND * NBACKENDS];
	int			role_used[NROLES] = {0};
	int			backend_res[NBACKENDS] = {0};
	int			nlock_used = 0;
	int			nres_used = 0;
	int			ok = 1;
	int			others_served = 1;
	int			reserve_served = 1;

	srand(seed);
	for (int i = 0; i < max_locks; i++)
		lock[i].role = -1;
	for (int i = 0; i < nreserve; i++)
		res[i].role = -1;

	for (int step = 0; step < 4000; step++)
	{
		int			backend = rand() % NBACKENDS;
		int			role = backend % NROLES;	/* role 0 is the hostile one */
		int			exempt = role == 3; /* role 3 is a superuser */
		int			what = rand() % 10;

		/* The hostile role claims far more often than it frees. */
		if (role == 0 && what < 7)
			what = 0;
		if (what < 4)
		{
			zkl_claim_state s;
			int			free_slot = -1;

			for (int i = 0; i < max_locks && free_slot < 0; i++)
				if (lock[i].role < 0)
					free_slot = i;
			s = lock_claim(free_slot >= 0, role_used[role], role_cap, exempt);
			if (zkl_claim_rule(&s) == ZKL_CLAIM_OK)
			{
				lock[free_slot].role = role;
				role_used[role]++;
				nlock_used++;
			}
			else if (nlock_used < max_locks && (exempt || role_used[role] < role_cap))
				others_served = 0;	/* refused with room in pool and role */
		}
		else if (what < 6)
		{
			zkl_claim_state s;
			int			free_slot = -1;

			memset(&s, 0, sizeof(s));
			for (int i = 0; i < nreserve && free_slot < 0; i++)
				if (res[i].role < 0)
					free_slot = i;
			s.reserve = 1;
			s.pool_free = free_slot >= 0;
			s.backend_reserve_used = backend_res[backend];
			if (zkl_claim_rule(&s) == ZKL_CLAIM_OK)
			{
				res[free_slot].role = role;
				res[free_slot].backend = backend;
				backend_res[backend]++;
				nres_used++;
			}
			else if (backend_res[backend] < ZKL_RESERVE_PER_BACKEND)
				reserve_served = 0;
		}
		else if (what < 8 && nlock_used > 0)
		{
			int			i = rand() % max_locks;

			if (lock[i].role >= 0)
			{
				role_used[lock[i].role]--;
				lock[i].role = -1;
				nlock_used--;
			}
		}
		else if (nres_used > 0)
		{
			int			i = rand() % nreserve;

			if (res[i].role >= 0)
			{
				backend_res[res[i].backend]--;
				res[i].role = -1;
				nres_used--;
			}
		}
		for (int r = 0; r < 3; r++)
			if (role_used[r] > role_cap)
				ok = 0;
		if (nlock_used > max_locks || nres_used > nreserve)
			ok = 0;
		for (int b = 0; b < NBACKENDS; b++)
			if (backend_res[b] > ZKL_RESERVE_PER_BACKEND)
				ok = 0;
	}
	if (!ok || !others_served || !reserve_served)
	{
		char		what[128];

		snprintf(what, sizeof(what), "model, seed %u: ok %d, others served %d, reserve served %d",
				 seed, ok, others_served, reserve_served);
		check(0, what);
	}
}

int
main(void)
{
	test_defaults();
	test_verdicts();
	for (unsigned seed = 1; seed <= 2000; seed++)
		test_model(seed);
	check(1, "2,000 random runs against a hostile role: no role above its cap, none refused below it while the pool has room, so a cap of half leaves half; every backend within its share finds a reserve slot");
	return tap_done();
}
