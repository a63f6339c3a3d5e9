/*-------------------------------------------------------------------------
 *
 * session_file.c
 *		The file zklock.session in the data directory: the ZooKeeper session
 *		of the running incarnation, so that after a crash the next worker can
 *		close it at once and free the dead incarnation's locks.
 *
 * A file in the data directory is copied by everything that copies a data
 * directory: pg_basebackup for a standby, a file-level backup that is
 * restored, a cold copy, a cloned volume or virtual machine.  A copy that
 * closed the recorded session would close the original's live session and
 * take every lock of the original away.  So the file also records which
 * data directory on which running system wrote it:
 *
 * - the cluster's system identifier (a different cluster never matches);
 * - the device and inode of the data directory (a copy, on this machine or
 *   another, is a different directory; moving a directory within one file
 *   system keeps both, and it is still the same instance);
 * - the kernel's boot id (a clone of the whole machine or volume, booted
 *   elsewhere, has another one, even with the same device and inode).
 *
 * Only a file whose three marks all match the running server is acted on:
 * a crash restart (the postmaster re-initialises shared memory) and a stop
 * with "pg_ctl -m immediate" followed by a start on the same machine.  Any
 * other file is reported and removed; the worker then opens a session of
 * its own and the original's session is left alone.  Where the boot id
 * cannot be read, no file matches: a crashed incarnation's locks are then
 * freed by ZooKeeper after the session timeout, as for a machine that died.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "storage/fd.h"

#include "worker/session_file.h"

#define ZKL_SESSION_FILE	"zklock.session"
#define ZKL_BOOT_ID_FILE	"/proc/sys/kernel/random/boot_id"

/*
 * Whether this worker process has dealt with the file: removed it, or tried
 * to.  From then on the file is no longer read.  In a data directory where
 * it cannot be removed (read-only), it would otherwise be read again at
 * every session the worker opens, and the session it names, closed already,
 * reattached to and found expired, again and again: the worker would never
 * open a session of its own.
 */
static bool zkl_session_file_done = false;

/* This server's marks; the working directory is the data directory. */
static void
zkl_this_incarnation(zkl_incarnation *here)
{
	struct stat st;
	FILE	   *f;

	memset(here, 0, sizeof(*here));
	here->system_identifier = GetSystemIdentifier();
	if (stat(".", &st) == 0)
	{
		here->data_dev = (uint64) st.st_dev;
		here->data_ino = (uint64) st.st_ino;
	}
	f = AllocateFile(ZKL_BOOT_ID_FILE, "r");
	if (f != NULL)
	{
		if (fgets(here->boot_id, sizeof(here->boot_id), f) == NULL)
			here->boot_id[0] = '\0';
		here->boot_id[strcspn(here->boot_id, "\n")] = '\0';
		FreeFile(f);
	}
}

/* Record the session just established, for a later crash restart. */
void
zkl_session_file_save(int64 session_id, const char *passwd)
{
	zkl_session_record rec;
	FILE	   *f;

	memset(&rec, 0, sizeof(rec));
	rec.magic = ZKL_SESSION_MAGIC;
	rec.version = ZKL_SESSION_VERSION;
	zkl_this_incarnation(&rec.writer);
	rec.session_id = session_id;
	memcpy(rec.passwd, passwd, sizeof(rec.passwd));

	f = AllocateFile(ZKL_SESSION_FILE ".tmp", PG_BINARY_W);
	if (f == NULL)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", ZKL_SESSION_FILE ".tmp")));
		return;
	}
	if (fwrite(&rec, sizeof(rec), 1, f) != 1 || FreeFile(f) != 0 ||
		durable_rename(ZKL_SESSION_FILE ".tmp", ZKL_SESSION_FILE, LOG) != 0)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not save the ZooKeeper session in \"%s\": %m", ZKL_SESSION_FILE)));
}

/*
 * The session a crashed incarnation of this very server left behind, to be
 * closed; false when there is none.  A file written elsewhere (a copy of
 * the data directory) is reported and removed, never acted on.
 */
bool
zkl_session_file_load(int64 *session_id, char *passwd)
{
	FILE	   *f;
	char		bytes[sizeof(zkl_session_record) + 1];
	size_t		len;
	zkl_incarnation here;
	const char *why;

	if (zkl_session_file_done)
		return false;
	f = AllocateFile(ZKL_SESSION_FILE, PG_BINARY_R);
	if (f == NULL)
	{
		if (errno != ENOENT)
		{
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", ZKL_SESSION_FILE),
					 errdetail("This server opens a ZooKeeper session of its own.")));

			/*
			 * Not trusted, and in the way: durable_rename opens the file it
			 * replaces, so an unreadable one would keep every later record
			 * out.
			 */
			zkl_session_file_remove();
		}
		return false;
	}
	/* One byte more than a record: a longer file is no record either. */
	len = fread(bytes, 1, sizeof(bytes), f);
	FreeFile(f);

	zkl_this_incarnation(&here);
	if (zkl_session_record_check(bytes, len, &here, session_id, passwd, &why))
		return true;

	ereport(LOG,
			(errmsg("ignoring the ZooKeeper session recorded in \"%s\": %s",
					ZKL_SESSION_FILE, why),
			 errdetail("Only the server that wrote the file closes that session after a crash; this server opens a session of its own.")));
	zkl_session_file_remove();
	return false;
}

/* The recorded session is over: nothing is left for a later incarnation to close. */
void
zkl_session_file_remove(void)
{
	zkl_session_file_done = true;
	if (unlink(ZKL_SESSION_FILE) != 0 && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", ZKL_SESSION_FILE)));
}
