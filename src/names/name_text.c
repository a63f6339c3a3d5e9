/*-------------------------------------------------------------------------
 *
 * name_text.c
 *		Bytes that zklock shows as text of the reading database, in
 *		backends: lock names of databases of other encodings, node names
 *		that other ZooKeeper clients chose.  What is not valid in the
 *		reading database's encoding is shown with %XX (lock_name.c's
 *		escape), so that no query breaks on it.  Apart from encode.c, so
 *		that the views of shared memory alone (stats.c) need nothing of
 *		the settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "names/lock_name.h"
#include "names/name_text.h"

static void
zkl_append_percent(StringInfo buf, unsigned char c)
{
	char		escape[3];

	zkl_name_percent(escape, c);
	appendBinaryStringInfo(buf, escape, sizeof(escape));
}

/*
 * Bytes of text in encoding src_encoding, as text of the current database:
 * as they are when they are ASCII, or valid here and of this database's
 * encoding; otherwise each non-ASCII byte and each '%' as %XX.
 */
text	   *
zkl_text_for_reader(const char *bytes, int len, int src_encoding)
{
	bool		ascii = true;
	StringInfoData buf;

	for (int i = 0; i < len && ascii; i++)
		ascii = !IS_HIGHBIT_SET(bytes[i]);
	if (ascii || (src_encoding == GetDatabaseEncoding() && pg_verifymbstr(bytes, len, true)))
		return cstring_to_text_with_len(bytes, len);

	initStringInfo(&buf);
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) bytes[i];

		if (IS_HIGHBIT_SET(c) || c == '%')
			zkl_append_percent(&buf, c);
		else
			appendStringInfoChar(&buf, (char) c);
	}
	return cstring_to_text_with_len(buf.data, buf.len);
}
