/*-------------------------------------------------------------------------
 *
 * session_file.h
 *		The worker's record of its ZooKeeper session in the data directory
 *		(session_file.c), and the rule that decides who may act on it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SESSION_FILE_H
#define ZKLOCK_SESSION_FILE_H

/* What identifies the incarnation that may act on a recorded session. */
typedef struct zkl_incarnation
{
	uint64		system_identifier;
	uint64		data_dev;		/* of the data directory */
	uint64		data_ino;
	char		boot_id[40];	/* the kernel's; "" when unknown */
} zkl_incarnation;

extern bool zkl_same_incarnation(const zkl_incarnation *recorded,
								 const zkl_incarnation *here, const char **why);
extern void zkl_session_file_save(int64 session_id, const char *passwd);
extern bool zkl_session_file_load(int64 *session_id, char *passwd);
extern void zkl_session_file_remove(void);

#endif							/* ZKLOCK_SESSION_FILE_H */
