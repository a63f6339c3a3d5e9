/*-------------------------------------------------------------------------
 *
 * dir_acl_test.c
 *		Unit tests of dir_acl.c: whether a lock directory's ACL lets zklock
 *		delete the nodes it would make there (world, digest, ip, x509, sasl
 *		and unknown schemes; an empty ACL), and the base64 of zklock's
 *		digest id.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "rules/dir_acl.h"
#include "unit_tap.h"

#define ALL (ZKL_PERM_READ | ZKL_PERM_WRITE | ZKL_PERM_CREATE | ZKL_PERM_DELETE | ZKL_PERM_ADMIN)
#define CRWA (ALL & ~ZKL_PERM_DELETE)

static const char *me = "zk:sPuPQAg9HXkjz6j/fYvO5gzPdwo=";

int
main(void)
{
	zkl_acl_entry open[] = {{ALL, "world", "anyone"}};
	zkl_acl_entry crwa[] = {{CRWA, "world", "anyone"}};
	zkl_acl_entry admin[] = {{ZKL_PERM_ADMIN, "world", "anyone"}};
	zkl_acl_entry ours[] = {{CRWA, "world", "anyone"}, {ALL, "digest", "zk:sPuPQAg9HXkjz6j/fYvO5gzPdwo="}};
	zkl_acl_entry theirs[] = {{CRWA, "world", "anyone"}, {ALL, "digest", "billing:AAAAAAAAAAAAAAAAAAAAAAAAAAA="}};
	zkl_acl_entry ours_no_delete[] = {{CRWA, "digest", "zk:sPuPQAg9HXkjz6j/fYvO5gzPdwo="}};
	zkl_acl_entry ip[] = {{CRWA, "world", "anyone"}, {ALL, "ip", "10.9.9.9"}};
	zkl_acl_entry ip_no_delete[] = {{CRWA, "ip", "127.0.0.1"}};
	zkl_acl_entry x509[] = {{ALL, "x509", "CN=billing"}};
	zkl_acl_entry sasl[] = {{ALL, "sasl", "billing"}};
	zkl_acl_entry plugin[] = {{ALL, "custom", "whoever"}};
	zkl_acl_entry world_other[] = {{ALL, "world", "someone"}};
	zkl_acl_entry broken[] = {{ALL, NULL, NULL}};
	zkl_acl_entry ip_and_open[] = {{ZKL_PERM_READ, "ip", "10.0.0.0/8"}, {ALL, "world", "anyone"}};
	char		b64[ZKL_BASE64_SIZE(20)];
	const unsigned char sha1[20] = {0xb0, 0xfb, 0x8f, 0x40, 0x08, 0x3d, 0x1d, 0x79, 0x23, 0xcf,
	0xa8, 0xff, 0x7d, 0x8b, 0xce, 0xe6, 0x0c, 0xcf, 0x77, 0x0a};

	check(zkl_dir_delete_verdict(open, 1, NULL) == ZKL_DIR_DELETE_ALLOWED, "world:anyone:cdrwa: allowed");
	check(zkl_dir_delete_verdict(open, 1, me) == ZKL_DIR_DELETE_ALLOWED, "... with zklock.auth too");
	check(zkl_dir_delete_verdict(crwa, 1, NULL) == ZKL_DIR_DELETE_REFUSED, "world:anyone:crwa: refused");
	check(zkl_dir_delete_verdict(crwa, 1, me) == ZKL_DIR_DELETE_REFUSED, "... with zklock.auth too");
	check(zkl_dir_delete_verdict(admin, 1, NULL) == ZKL_DIR_DELETE_REFUSED, "ADMIN only: refused");
	check(zkl_dir_delete_verdict(ours, 2, me) == ZKL_DIR_DELETE_ALLOWED, "zklock's digest with DELETE: allowed");
	check(zkl_dir_delete_verdict(ours, 2, NULL) == ZKL_DIR_DELETE_REFUSED, "... but not without zklock.auth");
	check(zkl_dir_delete_verdict(ours, 2, "zk:AAAA") == ZKL_DIR_DELETE_REFUSED, "... nor with another password");
	check(zkl_dir_delete_verdict(theirs, 2, me) == ZKL_DIR_DELETE_REFUSED, "another digest's DELETE: refused");
	check(zkl_dir_delete_verdict(ours_no_delete, 1, me) == ZKL_DIR_DELETE_REFUSED, "zklock's digest without DELETE: refused");
	check(zkl_dir_delete_verdict(ip, 2, NULL) == ZKL_DIR_DELETE_UNSURE, "DELETE by ip only: unsure (zklock cannot see its address as the server does)");
	check(zkl_dir_delete_verdict(ip_no_delete, 1, NULL) == ZKL_DIR_DELETE_REFUSED, "an ip entry without DELETE: refused");
	check(zkl_dir_delete_verdict(x509, 1, me) == ZKL_DIR_DELETE_UNSURE, "DELETE by x509 only: unsure");
	check(zkl_dir_delete_verdict(sasl, 1, me) == ZKL_DIR_DELETE_UNSURE, "DELETE by sasl only: unsure");
	check(zkl_dir_delete_verdict(plugin, 1, me) == ZKL_DIR_DELETE_UNSURE, "DELETE by an unknown scheme: unsure");
	check(zkl_dir_delete_verdict(world_other, 1, me) == ZKL_DIR_DELETE_REFUSED, "world with another id names nobody: refused");
	check(zkl_dir_delete_verdict(broken, 1, me) == ZKL_DIR_DELETE_UNSURE, "an entry without scheme or id: unsure");
	check(zkl_dir_delete_verdict(ip_and_open, 2, NULL) == ZKL_DIR_DELETE_ALLOWED, "a sure grant wins over an unsure entry");
	check(zkl_dir_delete_verdict(NULL, 0, NULL) == ZKL_DIR_DELETE_ALLOWED, "an empty ACL: ZooKeeper checks nothing");

	zkl_base64((const unsigned char *) "", 0, b64);
	check(strcmp(b64, "") == 0, "base64 of nothing");
	zkl_base64((const unsigned char *) "f", 1, b64);
	check(strcmp(b64, "Zg==") == 0, "base64 of f");
	zkl_base64((const unsigned char *) "fo", 2, b64);
	check(strcmp(b64, "Zm8=") == 0, "base64 of fo");
	zkl_base64((const unsigned char *) "foobar", 6, b64);
	check(strcmp(b64, "Zm9vYmFy") == 0, "base64 of foobar");
	zkl_base64(sha1, 20, b64);
	check(strcmp(b64, "sPuPQAg9HXkjz6j/fYvO5gzPdwo=") == 0, "base64 of SHA-1(zk:secret): ZooKeeper's digest id");
	return tap_done();
}
