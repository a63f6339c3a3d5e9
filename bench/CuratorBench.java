/*
 * CuratorBench: the Apache Curator contender of zklock's benchmark
 * (bench/run.sh).  Every thread uses its own InterProcessMutex; all threads
 * share ONE CuratorFramework, as an application would.  Results go to
 * stdout as one JSON object per run (times in ms).
 *
 *   CuratorBench CONNECT a SECONDS WARMUP MAXN
 *       one thread, one lock, uncontended acquire + release: per-cycle
 *       latency, after WARMUP unmeasured cycles, for SECONDS or MAXN cycles;
 *   CuratorBench CONNECT loop THREADS SECONDS WARMUP distinct|same [START]
 *       THREADS threads each doing WARMUP cycles, then, from a common start
 *       (once all are warm, and not before START, milliseconds since the
 *       epoch, when given: several processes then measure the same window),
 *       acquire + release for SECONDS on their own lock (distinct) or on
 *       one lock (same); every measured cycle is reported as [granted,
 *       released] relative to the start;
 *   CuratorBench CONNECT waiters N
 *       prints "session 0x..." and waits for a line on stdin; a holder
 *       takes the lock and N threads queue behind it; prints "started" and
 *       waits for a line; the holder releases and each waiter, when
 *       granted, releases at once; prints "done {json}" and waits for a
 *       line before it closes the session.  In between, run.sh reads
 *       ZooKeeper's counters for the session.
 *
 * The locks live under /zkbench/curator, or under the path the system
 * property zkbench.root names (-Dzkbench.root=...): processes that must not
 * share locks each get their own.
 *
 * Modes a and loop print "measuring" when the measured part starts, and
 * after their result wait for a line or the end of stdin before they close
 * the session and exit, so that run.sh can read their CPU time first.
 *
 * Compile and run with the jars of Debian's libcurator-recipes-java (see
 * bench/run.sh): javac -cp "$CP" -d DIR CuratorBench.java
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorBench
{
	private static final String ROOT = System.getProperty("zkbench.root", "/zkbench/curator");

	private static volatile long t0;

	public static void main(String[] args) throws Exception
	{
		if (args.length < 2)
			usage();
		CuratorFramework client = CuratorFrameworkFactory.builder()
			.connectString(args[0])
			.sessionTimeoutMs(10000)
			.connectionTimeoutMs(15000)
			.retryPolicy(new RetryNTimes(3, 200))
			.build();
		client.start();
		if (!client.blockUntilConnected(15, TimeUnit.SECONDS))
			throw new IllegalStateException("no connection to " + args[0]);
		try
		{
			switch (args[1])
			{
				case "a":
					uncontended(client, Double.parseDouble(args[2]), Integer.parseInt(args[3]),
								Integer.parseInt(args[4]));
					waitForInput();
					break;
				case "loop":
					loop(client, Integer.parseInt(args[2]), Double.parseDouble(args[3]),
						 Integer.parseInt(args[4]), args[5].equals("same"),
						 args.length > 6 ? Long.parseLong(args[6]) : 0);
					waitForInput();
					break;
				case "waiters":
					waiters(client, Integer.parseInt(args[2]));
					break;
				default:
					usage();
			}
		}
		finally
		{
			client.close();
		}
		System.exit(0);
	}

	private static void usage()
	{
		System.err.println("usage: CuratorBench CONNECT a SECONDS WARMUP MAXN"
						   + " | loop THREADS SECONDS WARMUP distinct|same [START] | waiters N");
		System.exit(2);
	}

	private static void waitForInput() throws Exception
	{
		new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
	}

	private static double ms(long nanos)
	{
		return (nanos - t0) / 1e6;
	}

	private static String session(CuratorFramework client) throws Exception
	{
		return "0x" + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
	}

	private static void uncontended(CuratorFramework client, double seconds, int warmup, int maxn)
		throws Exception
	{
		InterProcessMutex mutex = new InterProcessMutex(client, ROOT + "/a");
		double[] lat = new double[maxn];
		int n = 0;

		for (int i = 0; i < warmup; i++)
		{
			mutex.acquire();
			mutex.release();
		}
		System.out.println("measuring");
		long start = System.nanoTime();
		long end = start + (long) (seconds * 1e9);
		while (n < maxn && System.nanoTime() < end)
		{
			long s = System.nanoTime();

			mutex.acquire();
			mutex.release();
			lat[n++] = (System.nanoTime() - s) / 1e6;
		}
		StringBuilder out = new StringBuilder();
		out.append("{\"n\": ").append(n)
			.append(", \"seconds\": ").append((System.nanoTime() - start) / 1e9)
			.append(", \"session\": \"").append(session(client)).append("\", \"lat_ms\": [");
		for (int i = 0; i < n; i++)
			out.append(i > 0 ? "," : "").append(String.format("%.4f", lat[i]));
		System.out.println(out.append("]}"));
	}

	private static void loop(CuratorFramework client, int threads, double seconds, int warmup,
							 boolean same, long startAt) throws Exception
	{
		CyclicBarrier barrier = new CyclicBarrier(threads, () -> {
			long wait = startAt - System.currentTimeMillis();

			if (wait > 0)
			{
				try
				{
					Thread.sleep(wait);
				}
				catch (InterruptedException e)
				{
					Thread.currentThread().interrupt();
				}
			}
			System.out.println("measuring");
			t0 = System.nanoTime();
		});
		Workers workers = new Workers();

		for (int i = 0; i < threads; i++)
			workers.start(new InterProcessMutex(client, ROOT + (same ? "/c" : "/b" + i)), (mutex, mine) -> {
				for (int w = 0; w < warmup; w++)
				{
					mutex.acquire();
					mutex.release();
				}
				barrier.await();
				long end = t0 + (long) (seconds * 1e9);
				while (System.nanoTime() < end)
					cycle(mutex, mine);
			});
		workers.join("a thread");
		System.out.println(eventsJson(workers.events, seconds, session(client)));
	}

	/* Acquire, then release at once; adds [granted, released] to mine. */
	private static void cycle(InterProcessMutex mutex, List<double[]> mine) throws Exception
	{
		mutex.acquire();
		long granted = System.nanoTime();
		long released = System.nanoTime();
		mutex.release();
		mine.add(new double[] {ms(granted), ms(released)});
	}

	/* What a thread of Workers runs: its mutex, and its list of events. */
	private interface Body
	{
		void run(InterProcessMutex mutex, List<double[]> mine) throws Exception;
	}

	/*
	 * Threads each running a Body on a mutex of their own, each with its own
	 * list of [granted, released] events (in events, in the order the threads
	 * were started); join() waits for all of them and rethrows the first
	 * failure.
	 */
	private static final class Workers
	{
		final List<List<double[]>> events = new ArrayList<>();
		private final List<Thread> all = new ArrayList<>();
		private final List<Throwable> failures = new ArrayList<>();

		void start(InterProcessMutex mutex, Body body)
		{
			List<double[]> mine = new ArrayList<>();

			events.add(mine);
			Thread t = new Thread(() -> {
				try
				{
					body.run(mutex, mine);
				}
				catch (Throwable e)
				{
					synchronized (failures)
					{
						failures.add(e);
					}
				}
			});
			all.add(t);
			t.start();
		}

		void join(String who) throws Exception
		{
			for (Thread t : all)
				t.join();
			if (!failures.isEmpty())
				throw new IllegalStateException(who + " failed", failures.get(0));
		}
	}

	private static String eventsJson(List<List<double[]>> events, double seconds, String session)
	{
		StringBuilder out = new StringBuilder();
		int n = 0;

		for (List<double[]> mine : events)
			n += mine.size();
		out.append("{\"n\": ").append(n).append(", \"seconds\": ").append(seconds)
			.append(", \"session\": \"").append(session).append("\", \"events\": [");
		boolean first = true;
		for (List<double[]> mine : events)
			for (double[] e : mine)
			{
				out.append(first ? "" : ",").append(String.format("[%.4f,%.4f]", e[0], e[1]));
				first = false;
			}
		return out.append("]}").toString();
	}

	private static void waiters(CuratorFramework client, int n) throws Exception
	{
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		String path = ROOT + "/d" + n;
		InterProcessMutex holder = new InterProcessMutex(client, path);
		Workers workers = new Workers();

		System.out.println("session " + session(client));
		in.readLine();
		holder.acquire();
		t0 = System.nanoTime();
		for (int i = 0; i < n; i++)
			workers.start(new InterProcessMutex(client, path), CuratorBench::cycle);
		System.out.println("started");
		in.readLine();
		t0 = System.nanoTime();
		holder.release();
		workers.join("a waiter");
		System.out.println("done " + eventsJson(workers.events, ms(System.nanoTime()) / 1e3, session(client)));
		in.readLine();
	}
}
