"""kazoo_nodes: a kazoo client that makes the odd lock directories zklock's
tests need (a contender nobody may read, thousands of contenders), driven
over stdin/stdout like kazoo_peer.py.

One command per line, one reply line per command:

    connect HOSTS            ok
    unreadable PATH          NODE CZXID   (an ephemeral sequential node
                                           PATH<seq> whose ACL grants every
                                           right but READ to anyone; its
                                           parents, if missing, are made
                                           open to all)
    many PATH N              ok           (N ephemeral sequential nodes
                                           PATH<seq>, created asynchronously,
                                           with data "kazoo-nodes")
    quit                     bye

The nodes are ephemeral: they go when the program quits.  Every failure
is answered with "error <message>" and the program goes on.

Run with Debian's python3-kazoo: /usr/bin/python3 kazoo_nodes.py
"""

from kazoo.client import KazooClient
from kazoo.security import make_acl

from kazoo_peer import serve

DATA = b"kazoo-nodes"


class Nodes:
    def __init__(self):
        self.client = None

    def connect(self, hosts):
        self.client = KazooClient(hosts=hosts, timeout=10.0)
        self.client.start(timeout=15)
        return "ok"

    def unreadable(self, path):
        acl = [make_acl("world", "anyone", read=False, write=True,
                        create=True, delete=True, admin=True)]
        self.client.ensure_path(path.rsplit("/", 1)[0])
        node = self.client.create(path, DATA, acl=acl, ephemeral=True,
                                  sequence=True)
        # exists needs no right on the node: its stat is anyone's.
        return "%s %d" % (node, self.client.exists(node).czxid)

    def many(self, path, n):
        self.client.ensure_path(path.rsplit("/", 1)[0])
        pending = [self.client.create_async(path, DATA, ephemeral=True,
                                            sequence=True)
                   for _ in range(n)]
        for p in pending:
            p.get(timeout=60)
        return "ok"

    def execute(self, cmd):
        name, args = cmd[0], cmd[1:]
        if name == "quit":
            return "bye"
        if name == "connect":
            return self.connect(args[0])
        if name == "unreadable":
            return self.unreadable(args[0])
        if name == "many":
            return self.many(args[0], int(args[1]))
        raise ValueError("unknown command " + name)

    def close(self):
        if self.client is not None:
            self.client.stop()
            self.client.close()


def main():
    serve(Nodes())


if __name__ == "__main__":
    main()
