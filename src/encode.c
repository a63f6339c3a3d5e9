/*-------------------------------------------------------------------------
 *
 * encode.c
 *		Mapping of lock names to ZooKeeper node names.
 *
 * The mapping is injective and always yields one valid path component:
 * bytes outside [A-Za-z0-9_.-] become %XX (so "/" cannot leave the lock's
 * directory and "%" cannot be confused with an escape), and a leading "."
 * is escaped too, which rules out "." and "..".  Decoding is plain
 * percent-decoding, so distinct names never share a directory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"

#include "zklock.h"

static bool
zkl_byte_is_plain(unsigned char c, bool first)
{
	if (c == '.')
		return !first;
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Validate a lock name and return its encoded form (palloc'd). */
char *
zkl_encode_name(const char *name, int len)
{
	static const char hex[] = "0123456789ABCDEF";
	StringInfoData buf;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ZooKeeper lock name must not be empty")));
	if (len > ZKL_MAX_NAME_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("ZooKeeper lock name is too long"),
				 errdetail("The name has %d bytes; the limit is %d.", len, ZKL_MAX_NAME_LEN)));

	initStringInfo(&buf);
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) name[i];

		if (zkl_byte_is_plain(c, i == 0))
			appendStringInfoChar(&buf, (char) c);
		else
		{
			appendStringInfoChar(&buf, '%');
			appendStringInfoChar(&buf, hex[c >> 4]);
			appendStringInfoChar(&buf, hex[c & 0x0F]);
		}
	}
	return buf.data;
}

/* The absolute path of the directory holding the contenders for a name. */
char *
zkl_lock_dir(const char *name, int len)
{
	char	   *encoded = zkl_encode_name(name, len);

	if (strcmp(zkl_root, "/") == 0)
		return psprintf("/%s", encoded);
	return psprintf("%s/%s", zkl_root, encoded);
}
