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

#include "rules/session_record.h"

extern void zkl_session_file_save(int64 session_id, const char *passwd);
extern bool zkl_session_file_load(int64 *session_id, char *passwd);
extern void zkl_session_file_remove(void);

#endif							/* ZKLOCK_SESSION_FILE_H */
