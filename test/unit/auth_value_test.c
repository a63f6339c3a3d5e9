/*-------------------------------------------------------------------------
 *
 * auth_value_test.c
 *		Unit tests of auth_value.c: which values of zklock.auth are valid,
 *		that a value of the longest allowed length is and one byte more is
 *		not, and that the check hook refuses a bad value but the one found
 *		when the setting is defined, so that a refusal never leaves the
 *		server with no credentials where some were meant.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "rules/auth_value.h"
#include "unit_tap.h"

static void
test_judge(void)
{
	char		longest[ZKL_AUTH_MAX_LEN + 2];

	check(zkl_auth_judge(NULL) == ZKL_AUTH_NONE, "judge: no value is no credentials");
	check(zkl_auth_judge("") == ZKL_AUTH_NONE, "judge: empty is no credentials");
	check(zkl_auth_judge("alice:secret") == ZKL_AUTH_VALID, "judge: user:password is valid");
	check(zkl_auth_judge("alice:") == ZKL_AUTH_VALID, "judge: an empty password is ZooKeeper's to judge");
	check(zkl_auth_judge("a:b:c") == ZKL_AUTH_VALID, "judge: a colon in the password is kept");
	check(zkl_auth_judge("alicesecret") == ZKL_AUTH_NO_COLON, "judge: no colon is not user:password");

	memset(longest, 'x', sizeof(longest));
	longest[0] = 'u';
	longest[1] = ':';
	longest[ZKL_AUTH_MAX_LEN] = '\0';
	check(zkl_auth_judge(longest) == ZKL_AUTH_VALID, "judge: ZKL_AUTH_MAX_LEN bytes are valid");
	longest[ZKL_AUTH_MAX_LEN] = 'x';
	longest[ZKL_AUTH_MAX_LEN + 1] = '\0';
	check(zkl_auth_judge(longest) == ZKL_AUTH_TOO_LONG, "judge: one byte more is too long");
	longest[1] = 'x';
	check(zkl_auth_judge(longest) == ZKL_AUTH_TOO_LONG, "judge: too long is said before no colon");
	check(!zkl_auth_bad(NULL) && !zkl_auth_bad("") && !zkl_auth_bad("alice:secret"),
		  "bad: no credentials and valid ones are not bad");
	check(zkl_auth_bad("alicesecret") && zkl_auth_bad(longest), "bad: no colon and too long are");
}

static void
test_refuse(void)
{
	static const char *const values[] = {NULL, "", "alice:secret", "u:", "alicesecret", "nocolon"};
	int			n = sizeof(values) / sizeof(values[0]);
	int			bad = 0;

	check(!zkl_auth_refused("alicesecret", true), "refused: a bad value found when the setting is defined is taken");
	check(zkl_auth_refused("alicesecret", false), "refused: a bad value later (a reload, ALTER SYSTEM) is refused");
	check(!zkl_auth_refused("alice:secret", false), "refused: a valid value is taken");
	check(!zkl_auth_refused("", false), "refused: clearing the credentials is taken");

	/*
	 * At the definition, where a refusal falls back to no credentials:
	 * whatever value is found is what is in force after the hook, so a bad
	 * value never becomes no credentials.  Later, a refused value is bad, and
	 * a taken one is valid or none.
	 */
	for (int i = 0; i < n; i++)
	{
		zkl_auth_verdict v = zkl_auth_judge(values[i]);

		if (zkl_auth_refused(values[i], true))
			bad++;
		if (zkl_auth_refused(values[i], false) != (v == ZKL_AUTH_NO_COLON || v == ZKL_AUTH_TOO_LONG))
			bad++;
	}
	check(bad == 0, "refused: nothing at the definition; later, exactly the bad values");
}

int
main(void)
{
	test_judge();
	test_refuse();
	return tap_done();
}
