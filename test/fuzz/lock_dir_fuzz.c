/*-------------------------------------------------------------------------
 *
 * lock_dir_fuzz.c
 *		Fuzz target of the lock directories and node names that a published
 *		wait names (src/names/lock_name.c: zkl_lock_dir_decode, zkl_node_name_ok,
 *		which deadlock detection asks before it reads a directory on a
 *		wait's word).  Input: the root on the first line, the directory on
 *		the second, the node on the third.
 *
 * Properties, beyond the sanitizers: a directory taken is exactly the root,
 * "/" and the encoding of the name it decodes to, so a wait can only lead
 * into a lock directory of that root; a node taken is printable ASCII
 * without a slash, within its bound.
 *
 *-------------------------------------------------------------------------
 */
#include "fuzz_util.h"
#include "names/lock_name.h"

#define MAX_LEN 255				/* as ZKL_MAX_NAME_LEN */
#define MAX_NODE 96				/* as ZKL_MAX_NODE_LEN */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *s = fuzz_cstring(data, size);
	char	   *lines[3] = {"/zklock", "", ""};
	char		name[MAX_LEN + 1];
	int			len;

	(void) fuzz_lines(s, size, lines, 3);

	len = zkl_lock_dir_decode(lines[0], lines[1], name, MAX_LEN);
	fuzz_assert(len == -1 || (len >= 1 && len <= MAX_LEN));
	if (len > 0)
	{
		char		encoded[ZKL_ENCODED_SIZE(MAX_LEN)];
		const char *root = strcmp(lines[0], "/") == 0 ? "" : lines[0];
		size_t		rlen = strlen(root);

		zkl_name_encode(name, len, encoded);
		fuzz_assert(strncmp(lines[1], root, rlen) == 0 && lines[1][rlen] == '/');
		fuzz_assert(strcmp(lines[1] + rlen + 1, encoded) == 0);
	}

	if (zkl_node_name_ok(lines[2], MAX_NODE))
	{
		size_t		nlen = strlen(lines[2]);

		fuzz_assert(nlen >= 1 && nlen < MAX_NODE);
		for (size_t i = 0; i < nlen; i++)
			fuzz_assert(lines[2][i] > 0x20 && lines[2][i] < 0x7F && lines[2][i] != '/');
	}
	free(s);
	return 0;
}
