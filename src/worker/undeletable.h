/*-------------------------------------------------------------------------
 *
 * undeletable.h
 *		Lock directories where zklock may not delete the nodes it makes
 *		(undeletable.c): read from the directory's ACL before the first
 *		create there, or learnt from a refused delete.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_UNDELETABLE_H
#define ZKLOCK_UNDELETABLE_H

#include "rules/dir_acl.h"
#include "shared/shmem.h"
#include "worker/zk_events.h"

extern bool zkl_dir_checked(const char *dir, zkl_dir_verdict *verdict);
extern zkl_dir_verdict zkl_dir_acl_read(const char *dir, const zkl_event *ev);
extern void zkl_delete_refused(const zkl_slot *slot, int rc);
extern void zkl_delete_worked(const char *dir);
extern bool zkl_undeletable(const char *dir);

#endif							/* ZKLOCK_UNDELETABLE_H */
