/*
 * CuratorPeer: an Apache Curator lock client that zklock's interop tests
 * drive over stdin/stdout, to show that Curator programs and SQL sessions
 * share one lock.  One command per line, one reply line per command:
 *
 *   connect HOSTS             ok                (one CuratorFramework)
 *   mutex_try PATH [MS]       true | false      (InterProcessMutex)
 *   mutex_release PATH        ok
 *   read_try PATH [MS]        true | false      (InterProcessReadWriteLock)
 *   read_release PATH         ok
 *   write_try PATH [MS]       true | false
 *   write_release PATH        ok
 *   children PATH             child,child,...   (sorted; empty if none)
 *   quit                      bye
 *
 * A try waits MS milliseconds (default 0: never waits for another holder);
 * a try that fails leaves no node behind (Curator deletes it).  One lock
 * object is kept per path and recipe, so a release finds what a try took.
 * Every failure is answered with "error <message>"; the program goes on.
 * Lock nodes carry the data "curator-peer" (the client's default data).
 *
 * Compile and run with the jars of Debian's libcurator-recipes-java:
 *   javac -cp "$CP" -d DIR CuratorPeer.java; java -cp "DIR:$CP" CuratorPeer
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;

public final class CuratorPeer
{
	private static final int SESSION_TIMEOUT_MS = 10000;
	private static final int CONNECT_TIMEOUT_MS = 15000;

	private CuratorFramework client;
	private final Map<String, InterProcessMutex> mutexes = new HashMap<>();
	private final Map<String, InterProcessReadWriteLock> rwLocks = new HashMap<>();

	public static void main(String[] args) throws Exception
	{
		BufferedReader in = new BufferedReader(
			new InputStreamReader(System.in, StandardCharsets.UTF_8));
		PrintStream out = new PrintStream(System.out, true, "UTF-8");
		CuratorPeer peer = new CuratorPeer();
		String line;

		while ((line = in.readLine()) != null)
		{
			line = line.trim();
			if (line.isEmpty())
				continue;
			String reply;
			try
			{
				reply = peer.execute(line.split("\\s+"));
			}
			catch (Exception e)
			{
				reply = "error " + e.getClass().getSimpleName() + ": "
					+ String.valueOf(e.getMessage()).replace('\n', ' ');
			}
			out.println(reply);
			if (reply.equals("bye"))
				break;
		}
		peer.close();
		System.exit(0);
	}

	private String execute(String[] cmd) throws Exception
	{
		switch (cmd[0])
		{
			case "connect":
				return connect(arg(cmd, 1));
			case "mutex_try":
				return String.valueOf(mutex(arg(cmd, 1)).acquire(waitMs(cmd), TimeUnit.MILLISECONDS));
			case "mutex_release":
				mutex(arg(cmd, 1)).release();
				return "ok";
			case "read_try":
				return String.valueOf(rw(arg(cmd, 1)).readLock().acquire(waitMs(cmd), TimeUnit.MILLISECONDS));
			case "read_release":
				rw(arg(cmd, 1)).readLock().release();
				return "ok";
			case "write_try":
				return String.valueOf(rw(arg(cmd, 1)).writeLock().acquire(waitMs(cmd), TimeUnit.MILLISECONDS));
			case "write_release":
				rw(arg(cmd, 1)).writeLock().release();
				return "ok";
			case "children":
				return children(arg(cmd, 1));
			case "quit":
				return "bye";
			default:
				throw new IllegalArgumentException("unknown command " + cmd[0]);
		}
	}

	private static String arg(String[] cmd, int i)
	{
		if (cmd.length <= i)
			throw new IllegalArgumentException(cmd[0] + ": missing argument");
		return cmd[i];
	}

	private static long waitMs(String[] cmd)
	{
		return cmd.length > 2 ? Long.parseLong(cmd[2]) : 0;
	}

	private String connect(String hosts) throws InterruptedException
	{
		if (client != null)
			throw new IllegalStateException("already connected");
		client = CuratorFrameworkFactory.builder()
			.connectString(hosts)
			.sessionTimeoutMs(SESSION_TIMEOUT_MS)
			.connectionTimeoutMs(CONNECT_TIMEOUT_MS)
			.retryPolicy(new RetryNTimes(3, 200))
			.defaultData("curator-peer".getBytes(StandardCharsets.UTF_8))
			.build();
		client.start();
		if (!client.blockUntilConnected(CONNECT_TIMEOUT_MS, TimeUnit.MILLISECONDS))
			throw new IllegalStateException("no connection to " + hosts);
		return "ok";
	}

	private CuratorFramework client()
	{
		if (client == null)
			throw new IllegalStateException("not connected");
		return client;
	}

	private InterProcessMutex mutex(String path)
	{
		return mutexes.computeIfAbsent(path, p -> new InterProcessMutex(client(), p));
	}

	private InterProcessReadWriteLock rw(String path)
	{
		return rwLocks.computeIfAbsent(path, p -> new InterProcessReadWriteLock(client(), p));
	}

	private String children(String path) throws Exception
	{
		List<String> kids;

		try
		{
			kids = new ArrayList<>(client().getChildren().forPath(path));
		}
		catch (KeeperException.NoNodeException e)
		{
			return "";
		}
		Collections.sort(kids);
		return String.join(",", kids);
	}

	private void close()
	{
		if (client != null)
			client.close();
	}
}
