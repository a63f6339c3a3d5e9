/*-------------------------------------------------------------------------
 *
 * session_file_fuzz.c
 *		Fuzz target of the session file's check (src/rules/session_record.c):
 *		the input is the file's bytes, as a crash, a bad disk, a copy from
 *		another cluster or another version may leave them.
 *
 * Properties, beyond the sanitizers: a file is acted on only when it is a
 * whole record of this version, naming a session, written by this very
 * incarnation; otherwise a reason is given and nothing is taken from it.
 *
 *-------------------------------------------------------------------------
 */
#include "fuzz_util.h"
#include "rules/session_record.h"

/* The incarnation of the server that reads the file (seeds/: its record). */
static const zkl_incarnation here = {
	.system_identifier = UINT64_C(7311447301416251424),
	.data_dev = 2049,
	.data_ino = 1835010,
	.boot_id = "5f0c3d7e-2b7a-4a53-9d61-0b8e4c2f9a17",
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exactly the file's bytes, as fread leaves them. */
	uint8_t    *bytes = malloc(size ? size : 1);
	int64_t		session_id = 0;
	char		passwd[ZKL_SESSION_PASSWD_LEN];
	const char *why = NULL;
	bool		ok;

	memcpy(bytes, data, size);
	memset(passwd, 0, sizeof(passwd));
	ok = zkl_session_record_check(bytes, size, &here, &session_id, passwd, &why);
	if (ok)
	{
		zkl_session_record rec;

		fuzz_assert(size == sizeof(rec));
		memcpy(&rec, bytes, sizeof(rec));
		fuzz_assert(rec.magic == ZKL_SESSION_MAGIC && rec.version == ZKL_SESSION_VERSION);
		fuzz_assert(session_id != 0 && session_id == rec.session_id);
		fuzz_assert(rec.writer.system_identifier == here.system_identifier &&
					rec.writer.data_dev == here.data_dev &&
					rec.writer.data_ino == here.data_ino &&
					strncmp(rec.writer.boot_id, here.boot_id, sizeof(here.boot_id)) == 0);
		fuzz_assert(memcmp(passwd, rec.passwd, sizeof(passwd)) == 0);
	}
	else
		fuzz_assert(why != NULL && session_id == 0 && strlen(why) > 0);
	free(bytes);
	return 0;
}
