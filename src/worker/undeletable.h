/*-------------------------------------------------------------------------
 *
 * undeletable.h
 *		Lock directories that refused the delete of a node zklock made
 *		there (undeletable.c): new requests there are refused before their
 *		create, rather than strand one more node each.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_UNDELETABLE_H
#define ZKLOCK_UNDELETABLE_H

#include "shared/shmem.h"

extern void zkl_delete_refused(const zkl_slot *slot, int rc);
extern bool zkl_undeletable(const char *dir);

#endif							/* ZKLOCK_UNDELETABLE_H */
