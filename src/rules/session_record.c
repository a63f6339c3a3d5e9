/*-------------------------------------------------------------------------
 *
 * session_record.c
 *		Whether the record of a session file may be acted on: the file's
 *		bytes, whatever they are (truncated, corrupted, of another version
 *		or another cluster), are checked here before anything believes
 *		them.  Plain C with no PostgreSQL, ZooKeeper or file: the worker
 *		(session_file.c, whose top says what the file is for) calls it with
 *		what it read, test/unit and test/fuzz without a server.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "rules/session_record.h"

/*
 * Whether a recorded incarnation is this one; when not, *why says what
 * differs.  A boot id is compared within its field: a record's need not
 * end in a NUL.
 */
bool
zkl_same_incarnation(const zkl_incarnation *recorded, const zkl_incarnation *here,
					 const char **why)
{
	if (recorded->system_identifier != here->system_identifier)
		*why = "it belongs to another database system";
	else if (recorded->boot_id[0] == '\0' || here->boot_id[0] == '\0')
		*why = "the machine's boot id is unknown";
	else if (strncmp(recorded->boot_id, here->boot_id, sizeof(recorded->boot_id)) != 0)
		*why = "it was written by another machine, or before this machine booted";
	else if (recorded->data_dev != here->data_dev || recorded->data_ino != here->data_ino)
		*why = "it was written in another data directory: this one is a copy";
	else
		return true;
	return false;
}

/*
 * Whether the len bytes of a session file are a record of this version,
 * naming a session, written by this very incarnation (here): then its
 * session goes to *session_id and its password to passwd (room for
 * ZKL_SESSION_PASSWD_LEN bytes).  Otherwise false, and *why says why the
 * file is not acted on.
 */
bool
zkl_session_record_check(const void *bytes, size_t len, const zkl_incarnation *here,
						 int64_t *session_id, char *passwd, const char **why)
{
	zkl_session_record rec;

	if (len != sizeof(rec))
	{
		*why = "its format is not this version's";
		return false;
	}
	memcpy(&rec, bytes, sizeof(rec));
	if (rec.magic != ZKL_SESSION_MAGIC || rec.version != ZKL_SESSION_VERSION)
		*why = "its format is not this version's";
	else if (rec.session_id == 0)
		*why = "it names no session";
	else if (zkl_same_incarnation(&rec.writer, here, why))
	{
		*session_id = rec.session_id;
		memcpy(passwd, rec.passwd, sizeof(rec.passwd));
		return true;
	}
	return false;
}
