/*-------------------------------------------------------------------------
 *
 * session_record.h
 *		The contents of the session file (session_record.c), and the rule
 *		that decides whether a file's record may be acted on, as pure
 *		functions: plain C, no PostgreSQL, ZooKeeper or file, so that unit
 *		tests and fuzz targets (test/unit, test/fuzz) run them without a
 *		server.  session_file.c reads and writes the file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SESSION_RECORD_H
#define ZKLOCK_SESSION_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZKL_SESSION_MAGIC	0x5A4B4C53	/* "ZKLS" */
#define ZKL_SESSION_VERSION	2
/* ZooKeeper's session password: clientid_t's passwd (zookeeper.h). */
#define ZKL_SESSION_PASSWD_LEN 16

/* What identifies the incarnation that may act on a recorded session. */
typedef struct zkl_incarnation
{
	uint64_t	system_identifier;
	uint64_t	data_dev;		/* of the data directory */
	uint64_t	data_ino;
	char		boot_id[40];	/* the kernel's; "" when unknown */
} zkl_incarnation;

/* The file's contents. */
typedef struct zkl_session_record
{
	uint32_t	magic;
	uint32_t	version;
	zkl_incarnation writer;
	int64_t		session_id;
	char		passwd[ZKL_SESSION_PASSWD_LEN];
} zkl_session_record;

extern bool zkl_same_incarnation(const zkl_incarnation *recorded,
								 const zkl_incarnation *here, const char **why);
extern bool zkl_session_record_check(const void *bytes, size_t len,
									 const zkl_incarnation *here,
									 int64_t *session_id, char *passwd,
									 const char **why);

#endif							/* ZKLOCK_SESSION_RECORD_H */
