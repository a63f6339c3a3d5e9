/*-------------------------------------------------------------------------
 *
 * encode.c
 *		Lock names as ZooKeeper node names, for the backends: the checks
 *		and allocations around lock_name.c's pure mapping (whose top says
 *		what the mapping is), and the text zklock shows.
 *
 * Text that zklock shows comes from elsewhere too: lock names of databases
 * of other encodings, node names that other ZooKeeper clients chose.  What
 * is not valid in the reading database's encoding is shown the same way,
 * with %XX, so that no query breaks on it (name_text.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "names/lock_name.h"
#include "names/name_limits.h"
#include "names/encode.h"

/* Validate a lock name and return its encoded form (palloc'd). */
char	   *
zkl_encode_name(const char *name, int len)
{
	char	   *encoded;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ZooKeeper lock name must not be empty")));
	if (len > ZKL_MAX_NAME_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("ZooKeeper lock name is too long"),
				 errdetail("The name has %d bytes; the limit is %d.", len, ZKL_MAX_NAME_LEN)));

	encoded = palloc(ZKL_ENCODED_SIZE(len));
	zkl_name_encode(name, len, encoded);
	return encoded;
}

/*
 * The lock name (its bytes, in the encoding of the database that named it)
 * of an encoded name, as zkl_encode_name writes them; NULL for anything
 * that function cannot have written.
 */
char	   *
zkl_decode_name(const char *encoded)
{
	char	   *name = palloc(ZKL_MAX_NAME_LEN + 1);

	if (zkl_name_decode(encoded, name, ZKL_MAX_NAME_LEN) < 0)
	{
		pfree(name);
		return NULL;
	}
	return name;
}

/* The absolute path of the directory holding the contenders for a name. */
char	   *
zkl_lock_dir(const char *name, int len)
{
	char	   *encoded = zkl_encode_name(name, len);

	if (strcmp(zkl_root, "/") == 0)
		return psprintf("/%s", encoded);
	return psprintf("%s/%s", zkl_root, encoded);
}

/*
 * The directory of published waits (waits_graph.c): a leading "." is escaped
 * in every encoded name, so no lock's directory can be this one.
 */
char	   *
zkl_waits_dir(void)
{
	if (strcmp(zkl_root, "/") == 0)
		return pstrdup("/.waits");
	return psprintf("%s/.waits", zkl_root);
}

/*
 * Append value to buf as a JSON string of ASCII only: whatever the
 * database's encoding, the node data is then valid UTF-8 for every
 * ZooKeeper client and valid text in every database that reads it.
 * Non-ASCII characters become \u escapes of four hex digits (in a SQL_ASCII database,
 * bytes that are not UTF-8 become U+FFFD).
 */
void
zkl_json_ascii(StringInfo buf, const char *value)
{
	int			len = strlen(value);
	const unsigned char *s;
	const unsigned char *end;
	bool		utf8;

	if (GetDatabaseEncoding() == PG_SQL_ASCII)
	{
		s = (const unsigned char *) value;
		utf8 = pg_verify_mbstr(PG_UTF8, value, len, true);
	}
	else
	{
		s = (const unsigned char *) pg_server_to_any(value, len, PG_UTF8);
		len = strlen((const char *) s);
		utf8 = true;
	}
	end = s + len;

	appendStringInfoChar(buf, '"');
	while (s < end)
	{
		if (!IS_HIGHBIT_SET(*s))
		{
			if (*s == '"' || *s == '\\')
				appendStringInfo(buf, "\\%c", *s);
			else if (*s < 0x20 || *s == 0x7F)
				appendStringInfo(buf, "\\u%04x", *s);
			else
				appendStringInfoChar(buf, (char) *s);
			s++;
		}
		else if (utf8)
		{
			pg_wchar	cp = utf8_to_unicode(s);

			if (cp > 0xFFFF)
				appendStringInfo(buf, "\\u%04x\\u%04x",
								 (unsigned int) (0xD800 + ((cp - 0x10000) >> 10)),
								 (unsigned int) (0xDC00 + ((cp - 0x10000) & 0x3FF)));
			else
				appendStringInfo(buf, "\\u%04x", (unsigned int) cp);
			s += pg_utf_mblen(s);
		}
		else
		{
			appendStringInfoString(buf, "\\ufffd");
			s++;
		}
	}
	appendStringInfoChar(buf, '"');
}
