/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The background worker that owns the ZooKeeper session
 *		(worker.c): registered by _PG_init.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_WORKER_H
#define ZKLOCK_WORKER_H

#include "postgres.h"

extern void zkl_register_worker(void);
PGDLLEXPORT void zkl_worker_main(Datum arg);

#endif							/* ZKLOCK_WORKER_H */
