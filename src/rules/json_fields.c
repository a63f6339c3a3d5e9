/*-------------------------------------------------------------------------
 *
 * json_fields.c
 *		The JSON of ZooKeeper nodes, read in the backends: whether a node's
 *		data is zklock's description of a contender, and the top-level
 *		fields of a description or of a published wait (waits_graph.c).
 *
 * Any client with write access to zklock's root can write any bytes
 * there, so everything here takes any data without harm.  Built into the
 * server, and as frontend code (FRONTEND, against PostgreSQL's libpgcommon)
 * into the fuzz targets of test/fuzz, which feed it hostile data in bulk.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FRONTEND
#include "postgres.h"
#else
#include "postgres_fe.h"
#endif

#include "common/jsonapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"

#include "rules/json_fields.h"
#include "pg_compat.h"

/*
 * How deep JSON of a node may nest.  zklock's descriptions and published
 * waits are flat objects; PostgreSQL's parser recurses once per level, and
 * a client may write a megabyte of "[".  The worker reads at most
 * ZKL_MAX_INSPECT_DATA bytes of a node, so the server's stack is not at
 * risk today, but the frontend build's was (test/fuzz), and no reader
 * should depend on that bound.  Deeper data is not zklock's, and is not
 * parsed.
 */
#define ZKL_JSON_MAX_DEPTH 64

/* Whether data nests no deeper than ZKL_JSON_MAX_DEPTH, strings aside. */
static bool
zkl_json_depth_ok(const char *data, int len)
{
	int			depth = 0;
	bool		in_string = false;

	for (int i = 0; i < len; i++)
	{
		char		c = data[i];

		if (in_string)
		{
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		}
		else if (c == '"')
			in_string = true;
		else if (c == '{' || c == '[')
		{
			if (++depth > ZKL_JSON_MAX_DEPTH)
				return false;
		}
		else if (c == '}' || c == ']')
			depth--;
	}
	return true;
}

/*
 * Whether data (len bytes, a NUL after them) is zklock's own description:
 * JSON, valid in encoding, with the cluster's system identifier.
 */
bool
zkl_is_zklock_json(const char *data, int len, int encoding)
{
	JsonLexContext *lex;

	if (len == 0 || data[0] != '{' || memchr(data, '\0', len) != NULL ||
		strstr(data, "\"system_identifier\"") == NULL || !zkl_json_depth_ok(data, len))
		return false;
	lex = zkl_json_lexer(data, len, encoding);
	return pg_parse_json(lex, &nullSemAction) == JSON_SUCCESS;
}

/* The value of a hexadecimal digit, or -1. */
static int
zkl_json_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int
zkl_hex4(const char *s)
{
	int			v = 0;

	for (int i = 0; i < 4; i++)
	{
		int			d = zkl_json_hex_digit(s[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/*
 * A JSON string token (quotes included, escapes checked by the lexer) as
 * UTF-8: no conversion to the database's encoding, which may lack its
 * characters.  NULL for an escape of U+0000 or a broken surrogate.
 */
static char *
zkl_json_string_utf8(const char *tok, int len)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 1; i < len - 1; i++)
	{
		char		c = tok[i];
		int			code;
		unsigned char utf8[8];

		if (c != '\\')
		{
			appendStringInfoChar(&buf, c);
			continue;
		}
		c = tok[++i];
		switch (c)
		{
			case 'b':
				appendStringInfoChar(&buf, '\b');
				break;
			case 'f':
				appendStringInfoChar(&buf, '\f');
				break;
			case 'n':
				appendStringInfoChar(&buf, '\n');
				break;
			case 'r':
				appendStringInfoChar(&buf, '\r');
				break;
			case 't':
				appendStringInfoChar(&buf, '\t');
				break;
			case 'u':
				if (i + 4 >= len - 1 || (code = zkl_hex4(tok + i + 1)) <= 0)
					goto broken;
				i += 4;
				if (code >= 0xD800 && code <= 0xDBFF)
				{
					int			low = i + 6 < len - 1 && tok[i + 1] == '\\' && tok[i + 2] == 'u' ?
					zkl_hex4(tok + i + 3) : -1;

					if (low < 0xDC00 || low > 0xDFFF)
						goto broken;
					code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
					i += 6;
				}
				else if (code >= 0xDC00 && code <= 0xDFFF)
					goto broken;
				unicode_to_utf8((pg_wchar) code, utf8);

				/*
				 * its length from the code point: pg_utf_mblen's name is not
				 * the same in every major's frontend library
				 */
				appendBinaryStringInfo(&buf, (char *) utf8,
									   code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4);
				break;
			default:
				appendStringInfoChar(&buf, c);	/* " \ / */
				break;
		}
	}
	return buf.data;

broken:
	/* Nothing kept: a megabyte of broken keys would keep a kilobyte each. */
	pfree(buf.data);
	return NULL;
}

/*
 * The field whose value comes after the key at tok (an index of keys), or
 * -1 when it is none of them.  A later duplicate decides, as in jsonb: the
 * earlier value is dropped.
 */
static int
zkl_json_key(const char *tok, int toklen, const char *const *keys, char **values, int nkeys)
{
	char	   *key = zkl_json_string_utf8(tok, toklen);
	int			want = -1;

	for (int k = 0; key && k < nkeys; k++)
		if (strcmp(key, keys[k]) == 0)
			want = k;
	if (want >= 0 && values[want] != NULL)
	{
		pfree(values[want]);
		values[want] = NULL;
	}

	/*
	 * Nothing is kept of what is not a field (in a backend it would last
	 * until the end of the query): a megabyte of keys would keep a kilobyte
	 * each.
	 */
	if (key)
		pfree(key);
	return want;
}

/*
 * The top-level string and number fields keys[i] of JSON data into
 * values[i] (NULL when absent), strings as UTF-8 whatever the database's
 * encoding, so that a description with characters this database lacks is
 * still read.  False, and every value NULL, when data is no JSON object.
 */
bool
zkl_json_fields(const char *data, int len, const char *const *keys, char **values, int nkeys)
{
	JsonLexContext *lex;
	int			depth = 0;
	int			want = -1;		/* the key whose value comes next */
	bool		expect_key = false;

	memset(values, 0, sizeof(char *) * nkeys);
	if (len == 0 || data[0] != '{' || memchr(data, '\0', len) != NULL ||
		!zkl_json_depth_ok(data, len))
		return false;
	/* The whole text is JSON first; escapes are not decoded (converted). */
	lex = zkl_json_lexer(data, len, PG_UTF8);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		return false;
	lex = zkl_json_lexer(data, len, PG_UTF8);
	while (json_lex(lex) == JSON_SUCCESS && lex->token_type != JSON_TOKEN_END)
	{
		const char *tok = lex->token_start;
		int			toklen = lex->token_terminator - lex->token_start;

		switch (lex->token_type)
		{
			case JSON_TOKEN_OBJECT_START:
			case JSON_TOKEN_ARRAY_START:
				depth++;
				expect_key = depth == 1;
				want = -1;
				break;
			case JSON_TOKEN_OBJECT_END:
			case JSON_TOKEN_ARRAY_END:
				depth--;
				break;
			case JSON_TOKEN_COMMA:
				expect_key = depth == 1;
				break;
			case JSON_TOKEN_STRING:
				if (depth == 1 && expect_key)
				{
					want = zkl_json_key(tok, toklen, keys, values, nkeys);
					expect_key = false;
				}
				else if (depth == 1 && want >= 0)
				{
					values[want] = zkl_json_string_utf8(tok, toklen);
					want = -1;
				}
				break;
			case JSON_TOKEN_NUMBER:
				if (depth == 1 && want >= 0)
					values[want] = pnstrdup(tok, toklen);
				want = -1;
				break;
			case JSON_TOKEN_COLON:
				break;
			default:
				if (depth == 1)
					want = -1;
				break;
		}
	}
	return true;
}
