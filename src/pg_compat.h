/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *		What differs between the PostgreSQL majors zklock builds against
 *		(15 to 18), in one place, keyed on PG_VERSION_NUM; the rest of the
 *		code is written once.  15 and 18 run the whole suite, 17 is
 *		compiled, and 16 lies within the bounds below (16 has none of the
 *		17 changes).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_PG_COMPAT_H
#define ZKLOCK_PG_COMPAT_H

#include "common/jsonapi.h"

/*
 * A lexer over a counted text, palloc'd in the current memory context.  17
 * takes an optional context to fill in as first argument.  Frontend code
 * (json_fields.c in the fuzz targets, test/fuzz) uses it too: everything
 * else here is the server's alone.
 */
#if PG_VERSION_NUM >= 170000
#define zkl_json_lexer(json, len, encoding) \
	makeJsonLexContextCstringLen(NULL, (json), (len), (encoding), false)
#else
#define zkl_json_lexer(json, len, encoding) \
	makeJsonLexContextCstringLen((char *) (json), (len), (encoding), false)
#endif

#ifndef FRONTEND

#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"

/*
 * The varlena macros (VARSIZE_ANY_EXHDR, VARDATA_ANY) are postgres.h's
 * before 16 and varatt.h's from 16 on.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 18 writes pg_noreturn before a declaration and has no
 * pg_attribute_noreturn(); before 18 the attribute works in that place too.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * This process's index in ProcGlobal->allProcs: PGPROC's pgprocno became
 * MyProcNumber in 17.
 */
#if PG_VERSION_NUM >= 170000
#define ZKL_MY_PROCNO	MyProcNumber
#else
#define ZKL_MY_PROCNO	(MyProc->pgprocno)
#endif

/*
 * A wait event set that lives as long as the process.  Before 17 it takes
 * the memory context to live in; since 17 a resource owner, none meaning
 * the process's lifetime.
 */
#if PG_VERSION_NUM >= 170000
#define zkl_process_wait_event_set(nevents) CreateWaitEventSet(NULL, (nevents))
#else
#define zkl_process_wait_event_set(nevents) \
	CreateWaitEventSet(TopMemoryContext, (nevents))
#endif

/*
 * The module's name and version in pg_get_loaded_modules() (18).
 * ZKLOCK_VERSION comes from zklock.control's default_version (Makefile).
 */
#if PG_VERSION_NUM >= 180000
#define ZKL_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "zklock", .version = ZKLOCK_VERSION)
#else
#define ZKL_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/*
 * Custom wait events came in 17; before, every wait of an extension is
 * "Extension", whatever its name.
 */
#if PG_VERSION_NUM < 170000
#define WaitEventExtensionNew(wait_event_name) \
	((void) (wait_event_name), (uint32) PG_WAIT_EXTENSION)
#endif

#endif							/* !FRONTEND */

#endif							/* ZKLOCK_PG_COMPAT_H */
