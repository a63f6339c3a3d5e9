/*-------------------------------------------------------------------------
 *
 * encode.h
 *		Lock names as ZooKeeper paths, for the backends (encode.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_ENCODE_H
#define ZKLOCK_ENCODE_H

#include "lib/stringinfo.h"

extern char *zkl_encode_name(const char *name, int len);
extern char *zkl_lock_dir(const char *name, int len);
extern char *zkl_waits_dir(void);
extern char *zkl_decode_name(const char *encoded);
extern void zkl_json_ascii(StringInfo buf, const char *value);

#endif							/* ZKLOCK_ENCODE_H */
