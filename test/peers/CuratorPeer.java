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
 *   mutex_try_revocable PATH [MS] [release|keep]
 *                             true | false      (the mutex made revocable)
 *   mutex_token PATH          czxid             (of the held mutex node)
 *   revoked PATH              true | false      (asked to give the mutex up)
 *   revoke NODEPATH           ok                (Revoker.attemptRevoke)
 *   sem_acquire PATH N [MS]   true | false      (InterProcessSemaphoreV2, N leases)
 *   sem_token PATH            czxid             (of the held lease node)
 *   sem_release PATH          ok
 *   children PATH             child,child,...   (sorted; empty if none)
 *   czxid NODEPATH            czxid             (of any node)
 *   quit                      bye
 *
 * A try (and sem_acquire) waits MS milliseconds (default 0: never waits for
 * another holder); a try that fails leaves no node behind (Curator deletes
 * it).  One lock object is kept per path and recipe, so a release finds
 * what a try took.  The leases of a semaphore path are kept in a stack:
 * sem_acquire pushes one more, sem_release returns the latest and
 * sem_token names its node (so one peer may hold several permits).
 *
 * Revocation (Curator's protocol: the data "__REVOKE__" written on a
 * holder's node): mutex_try_revocable makes the path's mutex revocable
 * before it tries.  Its listener records the request (revoked answers
 * whether one came since that try) and, with "release" (the default),
 * releases the mutex; with "keep" it only records.  An InterProcessMutex
 * may only be released by the thread that acquired it, and Curator calls
 * the listener on its event thread: so every mutex is acquired, released
 * and asked for its node by a thread of its own (one per path), on which
 * the listener runs too.
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
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorPeer
{
	private static final int SESSION_TIMEOUT_MS = 10000;
	private static final int CONNECT_TIMEOUT_MS = 15000;

	private CuratorFramework client;
	private final Map<String, OwnedMutex> mutexes = new HashMap<>();
	private final Map<String, InterProcessReadWriteLock> rwLocks = new HashMap<>();
	private final Map<String, InterProcessSemaphoreV2> semaphores = new HashMap<>();
	private final Map<String, Integer> semaphorePermits = new HashMap<>();
	private final Map<String, Deque<Lease>> leases = new HashMap<>();

	/* An InterProcessMutex that tells which node it holds (for the thread asking). */
	private static final class PeerMutex extends InterProcessMutex
	{
		PeerMutex(CuratorFramework client, String path)
		{
			super(client, path);
		}

		String heldNode()
		{
			return getLockPath();
		}
	}

	/*
	 * A mutex with the thread that owns it: acquire, release, heldNode and
	 * the revocation listener all run there, one after the other.
	 */
	private static final class OwnedMutex
	{
		final PeerMutex mutex;
		final ExecutorService owner = Executors.newSingleThreadExecutor(r -> {
			Thread t = new Thread(r, "mutex-owner");
			t.setDaemon(true);
			return t;
		});
		volatile boolean revoked;

		OwnedMutex(CuratorFramework client, String path)
		{
			mutex = new PeerMutex(client, path);
		}

		<T> T run(Callable<T> task) throws Exception
		{
			try
			{
				return owner.submit(task).get();
			}
			catch (ExecutionException e)
			{
				Throwable cause = e.getCause();
				if (cause instanceof Exception)
					throw (Exception) cause;
				throw e;
			}
		}

		void makeRevocable(boolean release)
		{
			revoked = false;
			mutex.makeRevocable(m -> {
				revoked = true;
				if (release && m.isOwnedByCurrentThread())
				{
					try
					{
						m.release();
					}
					catch (Exception e)
					{
						System.err.println("revocation: release failed: " + e);
					}
				}
			}, owner);
		}
	}

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
				return mutexTry(mutex(arg(cmd, 1)), waitMs(cmd));
			case "mutex_try_revocable":
				return mutexTryRevocable(cmd);
			case "mutex_release":
				return mutexRelease(mutex(arg(cmd, 1)));
			case "mutex_token":
				return mutexToken(mutex(arg(cmd, 1)));
			case "revoked":
				return String.valueOf(mutex(arg(cmd, 1)).revoked);
			case "revoke":
				Revoker.attemptRevoke(client(), arg(cmd, 1));
				return "ok";
			case "sem_acquire":
				return semAcquire(arg(cmd, 1), Integer.parseInt(arg(cmd, 2)),
								  cmd.length > 3 ? Long.parseLong(cmd[3]) : 0);
			case "sem_token":
				return String.valueOf(czxid(leaseNode(arg(cmd, 1))));
			case "sem_release":
				lease(arg(cmd, 1)).close();
				leases.get(cmd[1]).pop();
				return "ok";
			case "czxid":
				return String.valueOf(czxid(arg(cmd, 1)));
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

	private OwnedMutex mutex(String path)
	{
		return mutexes.computeIfAbsent(path, p -> new OwnedMutex(client(), p));
	}

	private static String mutexTry(OwnedMutex m, long ms) throws Exception
	{
		return String.valueOf(m.run(() -> m.mutex.acquire(ms, TimeUnit.MILLISECONDS)));
	}

	private String mutexTryRevocable(String[] cmd) throws Exception
	{
		String mode = cmd.length > 3 ? cmd[3] : "release";

		if (!mode.equals("release") && !mode.equals("keep"))
			throw new IllegalArgumentException("mutex_try_revocable: release or keep, not " + mode);
		OwnedMutex m = mutex(arg(cmd, 1));
		m.makeRevocable(mode.equals("release"));
		return mutexTry(m, waitMs(cmd));
	}

	private static String mutexRelease(OwnedMutex m) throws Exception
	{
		m.run(() -> {
			m.mutex.release();
			return null;
		});
		return "ok";
	}

	private String mutexToken(OwnedMutex m) throws Exception
	{
		String node = m.run(m.mutex::heldNode);

		if (node == null)
			throw new IllegalStateException("mutex not held");
		return String.valueOf(czxid(node));
	}

	private String semAcquire(String path, int permits, long ms) throws Exception
	{
		InterProcessSemaphoreV2 sem = semaphores.get(path);
		if (sem == null || semaphorePermits.get(path) != permits)
		{
			if (!leases.getOrDefault(path, new ArrayDeque<>()).isEmpty())
				throw new IllegalStateException("leases of " + path + " are held with other permits");
			sem = new InterProcessSemaphoreV2(client(), path, permits);
			semaphores.put(path, sem);
			semaphorePermits.put(path, permits);
		}
		Lease lease = sem.acquire(ms, TimeUnit.MILLISECONDS);
		if (lease == null)
			return "false";
		leases.computeIfAbsent(path, p -> new ArrayDeque<>()).push(lease);
		return "true";
	}

	private Lease lease(String path)
	{
		Lease lease = leases.getOrDefault(path, new ArrayDeque<>()).peek();

		if (lease == null)
			throw new IllegalStateException("no lease of " + path + " held");
		return lease;
	}

	/* Lease.getNodeName() is the node's name in the semaphore's leases/. */
	private String leaseNode(String path)
	{
		String name = lease(path).getNodeName();

		return name.startsWith("/") ? name : path + "/leases/" + name;
	}

	private long czxid(String node) throws Exception
	{
		Stat stat = client().checkExists().forPath(node);

		if (stat == null)
			throw new IllegalStateException("no node " + node);
		return stat.getCzxid();
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
