/*-------------------------------------------------------------------------
 *
 * session_record_test.c
 *		Unit tests of the session file's check (src/rules/session_record.c),
 *		without a server: a whole record of this version, written by this
 *		very incarnation, is acted on; a file truncated, longer, corrupted,
 *		of another version, of another cluster, copied to another data
 *		directory or machine, or naming no session is not, and says why.
 *		Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "rules/session_record.h"
#include "unit_tap.h"

static const zkl_incarnation here = {
	.system_identifier = UINT64_C(7311447301416251424),
	.data_dev = 2049,
	.data_ino = 1835010,
	.boot_id = "5f0c3d7e-2b7a-4a53-9d61-0b8e4c2f9a17",
};

static zkl_session_record
this_record(void)
{
	zkl_session_record r;

	memset(&r, 0, sizeof(r));
	r.magic = ZKL_SESSION_MAGIC;
	r.version = ZKL_SESSION_VERSION;
	r.writer = here;
	r.session_id = INT64_C(0x0100000a3f2c0005);
	memcpy(r.passwd, "0123456789abcdef", ZKL_SESSION_PASSWD_LEN);
	return r;
}

/* Whether the bytes are refused, for the reason that begins with why. */
static void
check_refused(const void *bytes, size_t len, const char *why, const char *what)
{
	int64_t		session = 0;
	char		passwd[ZKL_SESSION_PASSWD_LEN] = {0};
	const char *got = NULL;
	bool		ok = zkl_session_record_check(bytes, len, &here, &session, passwd, &got);

	check(!ok && session == 0 && got != NULL && strncmp(got, why, strlen(why)) == 0, what);
}

int
main(void)
{
	zkl_session_record r = this_record();
	zkl_session_record o;
	char		longer[sizeof(r) + 1];
	int64_t		session = 0;
	char		passwd[ZKL_SESSION_PASSWD_LEN] = {0};
	const char *why = NULL;

	check(zkl_session_record_check(&r, sizeof(r), &here, &session, passwd, &why) &&
		  session == r.session_id && memcmp(passwd, r.passwd, sizeof(passwd)) == 0,
		  "this server's record is acted on");

	check_refused(&r, 0, "its format", "an empty file is refused");
	check_refused(&r, sizeof(r) - 1, "its format", "a truncated file is refused");
	memcpy(longer, &r, sizeof(r));
	longer[sizeof(r)] = 'x';
	check_refused(longer, sizeof(longer), "its format", "a longer file is refused");
	o = r;
	o.magic ^= 1;
	check_refused(&o, sizeof(o), "its format", "a corrupted magic is refused");
	o = r;
	o.version = 1;
	check_refused(&o, sizeof(o), "its format", "another version is refused");
	o = r;
	o.session_id = 0;
	check_refused(&o, sizeof(o), "it names no session", "a record of no session is refused");
	o = r;
	o.writer.system_identifier++;
	check_refused(&o, sizeof(o), "it belongs to another", "another cluster's record is refused");
	o = r;
	o.writer.data_ino++;
	check_refused(&o, sizeof(o), "it was written in another data directory",
				  "a copy's record is refused");
	o = r;
	strcpy(o.writer.boot_id, "0b7e4c2f-9a17-4a53-9d61-5f0c3d7e2b7a");
	check_refused(&o, sizeof(o), "it was written by another machine", "another boot's record is refused");
	o = r;
	o.writer.boot_id[0] = '\0';
	check_refused(&o, sizeof(o), "the machine's boot id is unknown", "an unknown boot id is refused");
	o = r;
	memset(o.writer.boot_id, 'x', sizeof(o.writer.boot_id));
	check_refused(&o, sizeof(o), "it was written by another machine",
				  "a boot id without its NUL is refused, read within its field");
	return tap_done();
}
