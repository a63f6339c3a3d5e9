"""kazoo_writer: a kazoo client that writes the nodes it is told to, for
tests of what zklock believes of nodes that another ZooKeeper client
writes (forged waits under .waits, lock directories in spellings zklock
never writes).  Driven over stdin/stdout like kazoo_peer.py, one reply
line per command:

    connect HOSTS            ok
    session                  its session id, as 16 lower-case hex digits
                             (as zklock names a wait under .waits)
    create PATH DATA         the created path: an ephemeral node of this
                             session, parents made; sequential when PATH
                             ends in "-" or "__"; DATA is the rest of the line
    createhex PATH HEX       the same, DATA given as hex digits (any bytes,
                             up to ZooKeeper's limit of about 1 MB)
    createplain PATH HEX     the same, never sequential, whatever PATH ends in
    czxid PATH               the node's czxid
    delete PATH              ok
    quit                     bye

Every failure is answered with "error <message>" and the program goes on.

Run with Debian's python3-kazoo: /usr/bin/python3 kazoo_writer.py
"""

import sys

from kazoo.client import KazooClient


def execute(state, cmd):
    name, args = cmd[0], cmd[1:]
    if name == "connect":
        state["zk"] = KazooClient(hosts=args[0], timeout=10.0)
        state["zk"].start(timeout=15)
        return "ok"
    zk = state["zk"]
    if zk is None:
        raise RuntimeError("not connected")
    if name == "session":
        return "%016x" % zk.client_id[0]
    if name == "create":
        path, data = args[0], args[1] if len(args) > 1 else ""
        return zk.create(path, data.encode(), ephemeral=True,
                         sequence=path.endswith(("-", "__")), makepath=True)
    if name in ("createhex", "createplain"):
        path, data = args[0], bytes.fromhex(args[1] if len(args) > 1 else "")
        return zk.create(path, data, ephemeral=True,
                         sequence=name == "createhex" and path.endswith(("-", "__")),
                         makepath=True)
    if name == "czxid":
        return str(zk.exists(args[0]).czxid)
    if name == "delete":
        zk.delete(args[0])
        return "ok"
    raise ValueError("unknown command " + name)


def main():
    state = {"zk": None}
    for line in sys.stdin:
        cmd = line.rstrip("\n").split(" ", 2)
        if not cmd[0]:
            continue
        if cmd[0] == "quit":
            print("bye", flush=True)
            break
        try:
            reply = execute(state, cmd)
        except Exception as e:  # every failure is a reply, not an exit
            reply = "error %s: %s" % (type(e).__name__, str(e).replace("\n", " "))
        print(reply, flush=True)
    if state["zk"] is not None:
        state["zk"].stop()
        state["zk"].close()


if __name__ == "__main__":
    main()
