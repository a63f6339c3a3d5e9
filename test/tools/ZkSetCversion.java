/*
 * ZkSetCversion: sets the child counter of one znode in the data directory
 * of a stopped ZooKeeper server, with ZooKeeper's own classes, so that a
 * test reaches the counter's top without 2^31 creates.
 *
 *   java -cp <zookeeper jars>:<classes> ZkSetCversion DATADIR PATH NEXT
 *
 * The counter ZooKeeper keeps (3.5 and later) is the count of the node's
 * child creates, the number its next sequential child gets: NEXT.  (The
 * cversion a client reads in the node's Stat is twice that count less the
 * children, in 32 bits.)  The program reads the newest snapshot and the
 * transaction logs after it, as the server does when it starts, sets the
 * counter (keeping the node's pzxid, and the tree's digest up to date),
 * and writes a new snapshot at the same zxid: the server, started again,
 * loads it and has no transaction after it to replay (it logs that the
 * digest recorded for that zxid is not the tree's, and goes on).  Run it
 * only while the server is stopped.  Prints the counter before and after.
 */
import java.io.File;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;

public class ZkSetCversion
{
	public static void main(String[] args) throws Exception
	{
		if (args.length != 3)
		{
			System.err.println("usage: ZkSetCversion DATADIR PATH NEXT");
			System.exit(2);
		}
		File dir = new File(args[0]);
		String path = args[1];
		int cversion = Integer.parseInt(args[2]);
		FileTxnSnapLog log = new FileTxnSnapLog(dir, dir);
		DataTree tree = new DataTree();
		ConcurrentHashMap<Long, Integer> sessions = new ConcurrentHashMap<>();

		log.restore(tree, sessions, (hdr, rec, digest) -> {
		});
		DataNode node = tree.getNode(path);
		if (node == null)
		{
			System.err.println("ZkSetCversion: no node " + path);
			System.exit(1);
		}
		int before = node.stat.getCversion();
		if (cversion <= before)
		{
			System.err.println("ZkSetCversion: " + path + " is at " + before + ", not below " + cversion);
			System.exit(1);
		}
		tree.setCversionPzxid(path, cversion, node.stat.getPzxid());
		log.save(tree, sessions, true);
		log.close();
		System.out.println(before + " " + tree.getNode(path).stat.getCversion());
	}
}
