/*-------------------------------------------------------------------------
 *
 * acquire.h
 *		Taking a lock (acquire.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_ACQUIRE_H
#define ZKLOCK_ACQUIRE_H

#include "backend/request.h"

extern bool zkl_acquire(text *name, zkl_mode mode, int permits, bool xact, bool try_only, int64 timeout_ms, int64 *token);
extern void zkl_acquire_set(const char **names, int n, bool xact, int64 timeout_ms, int64 *tokens);

#endif							/* ZKLOCK_ACQUIRE_H */
