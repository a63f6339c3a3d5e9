/*-------------------------------------------------------------------------
 *
 * name_limits.h
 *		The longest lock name, node name and lock directory zklock handles:
 *		the sizes of every buffer that holds one, in shared memory and in
 *		each process.  Plain C, for pure code and unit tests too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_NAME_LIMITS_H
#define ZKLOCK_NAME_LIMITS_H

#include "settings.h"

/*
 * Lock names are at most this many bytes; encoded, at most three times that.
 * A directory is "<root>/<encoded name>", and a semaphore's slot holds its
 * "/locks" or "/leases" below that: room for the longest root, name and
 * suffix, so that no path a slot holds is ever cut.
 */
#define ZKL_MAX_NAME_LEN	255
#define ZKL_MAX_DIR_LEN		(ZKL_MAX_ROOT_LEN + 1 + 3 * ZKL_MAX_NAME_LEN + sizeof("/leases"))
#define ZKL_MAX_NODE_LEN	96	/* "_c_<uuid>-lock-<seq>" and peers' layouts */
#define ZKL_UUID_LEN		36

#endif							/* ZKLOCK_NAME_LIMITS_H */
