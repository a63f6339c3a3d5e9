"""kazoo_peer: a kazoo lock client that zklock's interop tests drive over
stdin/stdout, to show that Python programs and SQL sessions share one lock.

One command per line, one reply line per command:

    connect HOSTS            ok                 (one KazooClient)
    lock_try PATH [S]        true | false       (kazoo.recipe.lock.Lock)
    lock_release PATH        ok
    rlock_try PATH [S]       true | false       (ReadLock)
    rlock_release PATH       ok
    wlock_try PATH [S]       true | false       (WriteLock)
    wlock_release PATH       ok
    lock_token PATH          czxid              (of the held lock's node; rlock_token and
                                                 wlock_token alike)
    children PATH            child,child,...    (sorted; empty if none)
    set_acl PATH ACL[,ACL]   ok                 (ACL: scheme:id:perms, perms from
                                                 "rwcda", e.g. world:anyone:rcda)
    set_data PATH DATA       ok                 (the node's data: DATA, no spaces)
    quit                     bye

A try waits S seconds (default: not at all); a try that fails leaves no
node behind (kazoo deletes it).  Every failure is answered with
"error <message>" and the program goes on.  Lock nodes carry the data
"kazoo-peer".

kazoo only counts nodes named like its own as contenders unless told
otherwise, so each recipe is given the node names of zklock (and Curator)
that exclude it: an exclusive or write lock yields to every contender,
exclusive ("-lock-", "__WRIT__") or shared ("__READ__"); a read lock yields
only to exclusive ones.  zklock, for its part, reads kazoo's "__lock__"
nodes as exclusive and "__rlock__" nodes as shared.

Run with Debian's python3-kazoo: /usr/bin/python3 kazoo_peer.py
"""

import sys

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout, NoNodeError
from kazoo.recipe.lock import Lock, ReadLock, WriteLock
from kazoo.security import ACL, Id, Permissions

IDENTIFIER = "kazoo-peer"
EXCLUSIVE_PATTERNS = ("-lock-", "__WRIT__")
ALL_PATTERNS = EXCLUSIVE_PATTERNS + ("__READ__",)

RECIPES = {
    "lock": (Lock, ALL_PATTERNS),
    "rlock": (ReadLock, EXCLUSIVE_PATTERNS),
    "wlock": (WriteLock, ALL_PATTERNS),
}


class Peer:
    def __init__(self):
        self.client = None
        # (recipe, path) -> the lock object that holds it
        self.held = {}

    def connect(self, hosts):
        if self.client is not None:
            raise RuntimeError("already connected")
        self.client = KazooClient(hosts=hosts, timeout=10.0)
        self.client.start(timeout=15)
        return "ok"

    def zk(self):
        if self.client is None:
            raise RuntimeError("not connected")
        return self.client

    def try_lock(self, recipe, path, wait):
        if (recipe, path) in self.held:
            raise RuntimeError("%s %s already held (kazoo locks are not reentrant)"
                               % (recipe, path))
        cls, patterns = RECIPES[recipe]
        lock = cls(self.zk(), path, identifier=IDENTIFIER,
                   extra_lock_patterns=patterns)
        try:
            if wait is None:
                got = lock.acquire(blocking=False)
            else:
                got = lock.acquire(timeout=wait)
        except LockTimeout:
            got = False
        if got:
            self.held[(recipe, path)] = lock
        return "true" if got else "false"

    def release(self, recipe, path):
        lock = self.held.pop((recipe, path), None)
        if lock is None:
            raise RuntimeError("%s %s not held" % (recipe, path))
        lock.release()
        return "ok"

    def token(self, recipe, path):
        lock = self.held.get((recipe, path))
        if lock is None:
            raise RuntimeError("%s %s not held" % (recipe, path))
        _, stat = self.zk().get(lock.path + "/" + lock.node)
        return str(stat.czxid)

    def children(self, path):
        try:
            kids = self.zk().get_children(path)
        except NoNodeError:
            return ""
        return ",".join(sorted(kids))

    def set_acl(self, path, acls):
        perms = {"r": Permissions.READ, "w": Permissions.WRITE,
                 "c": Permissions.CREATE, "d": Permissions.DELETE,
                 "a": Permissions.ADMIN}
        entries = []
        for acl in acls.split(","):
            scheme, rest = acl.split(":", 1)
            ident, letters = rest.rsplit(":", 1)
            entries.append(ACL(sum(perms[c] for c in letters), Id(scheme, ident)))
        self.zk().set_acls(path, entries)
        return "ok"

    def set_data(self, path, data):
        self.zk().set(path, data.encode())
        return "ok"

    def close(self):
        if self.client is not None:
            for lock in self.held.values():
                lock.release()
            self.client.stop()
            self.client.close()

    def execute(self, cmd):
        name, args = cmd[0], cmd[1:]
        if name == "quit":
            return "bye"
        if not args:
            raise ValueError("%s: missing argument" % name)
        if name == "connect":
            return self.connect(args[0])
        if name == "children":
            return self.children(args[0])
        if name == "set_acl":
            return self.set_acl(args[0], args[1])
        if name == "set_data":
            return self.set_data(args[0], args[1])
        recipe, _, action = name.partition("_")
        if recipe in RECIPES and action == "try":
            wait = float(args[1]) if len(args) > 1 else None
            return self.try_lock(recipe, args[0], wait)
        if recipe in RECIPES and action == "token":
            return self.token(recipe, args[0])
        if recipe in RECIPES and action == "release":
            return self.release(recipe, args[0])
        raise ValueError("unknown command " + name)


def serve(peer):
    """Answer the commands on stdin with peer.execute, one line each, then
    peer.close(); kazoo_nodes.py serves its commands the same way."""
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            reply = peer.execute(cmd)
        except Exception as e:  # every failure is a reply, not an exit
            reply = "error %s: %s" % (type(e).__name__, str(e).replace("\n", " "))
        print(reply, flush=True)
        if reply == "bye":
            break
    peer.close()


def main():
    serve(Peer())


if __name__ == "__main__":
    main()
