/*-------------------------------------------------------------------------
 *
 * json_fields.h
 *		Fields of the JSON that ZooKeeper nodes carry (json_fields.c): the
 *		descriptions of zklock's contenders and its published waits, read
 *		with PostgreSQL's JSON lexer.  Built into the server, and into the
 *		fuzz targets (test/fuzz) against PostgreSQL's frontend libpgcommon.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_JSON_FIELDS_H
#define ZKLOCK_JSON_FIELDS_H

extern bool zkl_is_zklock_json(const char *data, int len, int encoding);
extern bool zkl_json_fields(const char *data, int len, const char *const *keys,
							char **values, int nkeys);

#endif							/* ZKLOCK_JSON_FIELDS_H */
