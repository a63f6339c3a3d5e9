/*
 * CuratorBench: the Apache Curator contender of zklock's benchmark
 * (bench/run.sh).  Every thread uses its own InterProcessMutex, created once
 * and reused; all threads share ONE CuratorFramework, as an application
 * would.  Results go to stdout as one JSON object per run (times in ms).
 *
 *   CuratorBench CONNECT serve
 *       one JVM kept warm for a whole shape: reads commands, one a line, on
 *       stdin, each the arguments of mode a or loop below ("a SECONDS
 *       WARMUP MAXN", "loop THREADS SECONDS WARMUP MODE START RATE"), runs
 *       it and prints its result; ends at "quit" or the end of stdin.  The
 *       harness sends warm-up windows first, until the JIT's compile time
 *       stops rising, then the measured rounds.  Each InterProcessMutex is
 *       made once, on its first use, and reused by every later command.
 *   CuratorBench CONNECT a SECONDS WARMUP MAXN [JDBCURL [bare]]
 *       one thread, one lock, uncontended acquire + release: per-cycle
 *       latency, after WARMUP unmeasured cycles, for SECONDS or MAXN cycles.
 *       With JDBCURL, a cycle is the application's transaction inside the
 *       lock, as a Curator user writes it: acquire, BEGIN and COMMIT on one
 *       JDBC connection to that URL (opened on first use and kept, its
 *       statements prepared by the driver as it does for any application),
 *       release; with "bare" too, the same transaction without the lock
 *       (what this client pays for it anyway);
 *   CuratorBench CONNECT loop THREADS SECONDS WARMUP distinct|same [START [RATE]]
 *       THREADS threads each doing WARMUP cycles, then, from a common start
 *       (once all are warm, and not before START, milliseconds since the
 *       epoch, when given and not 0: several processes then measure the
 *       same window), acquire + release for SECONDS on their own lock
 *       (distinct) or on one lock (same); every measured cycle is reported
 *       as [granted, released] relative to the start.  RATE, when given and
 *       not 0, is the offered load: cycles per second of all threads
 *       together, each thread starting its cycles on a Poisson schedule of
 *       RATE / THREADS a second, as pgbench -R schedules its transactions
 *       (a thread that falls behind starts its late cycles at once, as
 *       pgbench does);
 *   CuratorBench CONNECT waiters N
 *       prints "session 0x..." and waits for a line on stdin; a holder
 *       takes the lock and N threads queue behind it; prints "started" and
 *       waits for a line; the holder releases and each waiter, when
 *       granted, releases at once; prints "done {json}" and waits for a
 *       line before it closes the session.  In between, run.sh reads
 *       ZooKeeper's counters for the session.
 *
 * Every result of modes a and loop also says what the JVM spent in its
 * measured window, read from the JVM itself: jit_ms (CompilationMXBean's
 * total compilation time, its increase), gc_ms and gc_count (the
 * GarbageCollectorMXBeans' collection time and count, summed), and
 * jit_total_ms (compilation time since the JVM started).
 *
 * The locks live under /zkbench/curator, or under the path the system
 * property zkbench.root names (-Dzkbench.root=...): processes that must not
 * share locks each get their own.
 *
 * Modes a and loop print "measuring" when the measured part starts, and
 * after their result wait for a line or the end of stdin before they close
 * the session and exit, so that run.sh can read their CPU time first; in
 * mode serve the JVM simply waits for the next command.
 *
 * Compile and run with the jars of Debian's libcurator-recipes-java, and
 * libpostgresql-jdbc-java's for JDBCURL (see bench/run.sh): javac -cp "$CP"
 * -d DIR CuratorBench.java
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorBench
{
	private static final String ROOT = System.getProperty("zkbench.root", "/zkbench/curator");

	private static volatile long t0;

	/* The mutexes made so far, by path and thread: made once, reused. */
	private static final Map<String, InterProcessMutex> MUTEXES = new HashMap<>();

	/* The JDBC connections opened so far, by URL: opened once, reused. */
	private static final Map<String, Connection> CONNECTIONS = new HashMap<>();

	/* The JVM's own counters at the start of a measured window. */
	private static volatile long[] jvm0;

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
				case "loop":
					command(client, args, 1);
					waitForInput();
					break;
				case "serve":
					serve(client);
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
		System.err.println("usage: CuratorBench CONNECT a SECONDS WARMUP MAXN [JDBCURL [bare]]"
						   + " | loop THREADS SECONDS WARMUP distinct|same [START [RATE]]"
						   + " | waiters N | serve");
		System.exit(2);
	}

	/* Run mode a or loop, its arguments from args[at]. */
	private static void command(CuratorFramework client, String[] args, int at) throws Exception
	{
		if (args[at].equals("a") && args.length >= at + 4)
			uncontended(client, Double.parseDouble(args[at + 1]), Integer.parseInt(args[at + 2]),
						Integer.parseInt(args[at + 3]), args.length > at + 4 ? args[at + 4] : null,
						args.length > at + 5 && args[at + 5].equals("bare"));
		else if (args[at].equals("loop") && args.length >= at + 5)
			loop(client, Integer.parseInt(args[at + 1]), Double.parseDouble(args[at + 2]),
				 Integer.parseInt(args[at + 3]), args[at + 4].equals("same"),
				 args.length > at + 5 ? Long.parseLong(args[at + 5]) : 0,
				 args.length > at + 6 ? Double.parseDouble(args[at + 6]) : 0);
		else
			throw new IllegalArgumentException("unknown command: " + String.join(" ", args));
	}

	/* Mode serve: one command a line until "quit" or the end of stdin. */
	private static void serve(CuratorFramework client) throws Exception
	{
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		String line;

		System.out.println("ready");
		while ((line = in.readLine()) != null)
		{
			line = line.trim();
			if (line.isEmpty())
				continue;
			if (line.equals("quit"))
				break;

			/*
			 * A command that fails answers one line, "error ...", in place of
			 * the line the harness waits for ("measuring" or the result), and
			 * the JVM stays for the next command; a JDBC connection that saw
			 * the error is closed, and the next use opens another.
			 */
			try
			{
				command(client, line.split("\\s+"), 0);
			}
			catch (Exception e)
			{
				System.out.println("error " + String.valueOf(e).replace('\n', ' '));
				dropConnections();
			}
		}
	}

	private static synchronized InterProcessMutex mutex(CuratorFramework client, String path, int thread)
	{
		return MUTEXES.computeIfAbsent(path + "#" + thread, k -> new InterProcessMutex(client, path));
	}

	/* Compilation time (ms), GC time (ms) and GC count, from the JVM. */
	private static long[] jvmCounters()
	{
		long gcMs = 0;
		long gcCount = 0;

		for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans())
		{
			gcMs += Math.max(0, gc.getCollectionTime());
			gcCount += Math.max(0, gc.getCollectionCount());
		}
		return new long[] {ManagementFactory.getCompilationMXBean().getTotalCompilationTime(),
						   gcMs, gcCount};
	}

	/* The JVM's counters over the window that started at jvm0, as JSON fields. */
	private static String jvmJson()
	{
		long[] now = jvmCounters();

		return ", \"jit_ms\": " + (now[0] - jvm0[0]) + ", \"gc_ms\": " + (now[1] - jvm0[1])
			+ ", \"gc_count\": " + (now[2] - jvm0[2]) + ", \"jit_total_ms\": " + now[0];
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

	/*
	 * The application's transaction of a cycle in mode a with a JDBC URL:
	 * BEGIN and COMMIT, two round trips, as pgbench -M prepared sends them.
	 */
	private static final class Transaction implements AutoCloseable
	{
		private final PreparedStatement begin;
		private final PreparedStatement commit;

		Transaction(Connection conn) throws Exception
		{
			begin = conn.prepareStatement("BEGIN");
			commit = conn.prepareStatement("COMMIT");
		}

		void run() throws Exception
		{
			begin.execute();
			commit.execute();
		}

		@Override
		public void close() throws Exception
		{
			begin.close();
			commit.close();
		}
	}

	private static synchronized Connection connection(String url) throws Exception
	{
		Connection conn = CONNECTIONS.get(url);

		if (conn == null)
		{
			conn = DriverManager.getConnection(url);
			CONNECTIONS.put(url, conn);
		}
		return conn;
	}

	private static synchronized void dropConnections()
	{
		for (Connection conn : CONNECTIONS.values())
		{
			try
			{
				conn.close();
			}
			catch (Exception e)
			{
				/* closed anyway: the next use opens another */
			}
		}
		CONNECTIONS.clear();
	}

	/*
	 * One cycle of mode a: the lock (none: mutex null), and the transaction
	 * inside it if any.
	 */
	private static void uncontendedCycle(InterProcessMutex mutex, Transaction xact) throws Exception
	{
		if (mutex == null)
		{
			xact.run();
			return;
		}
		mutex.acquire();
		try
		{
			if (xact != null)
				xact.run();
		}
		finally
		{
			mutex.release();
		}
	}

	private static void uncontended(CuratorFramework client, double seconds, int warmup, int maxn,
									String jdbcUrl, boolean bare) throws Exception
	{
		InterProcessMutex mutex = bare ? null : mutex(client, ROOT + "/a", 0);
		Connection conn = jdbcUrl == null ? null : connection(jdbcUrl);
		String driver = conn == null ? null : conn.getMetaData().getDriverVersion();
		double[] lat = new double[maxn];
		int n = 0;
		double secondsRun;

		try (Transaction xact = conn == null ? null : new Transaction(conn))
		{
			for (int i = 0; i < warmup; i++)
				uncontendedCycle(mutex, xact);
			System.out.println("measuring");
			jvm0 = jvmCounters();
			long start = System.nanoTime();
			long end = start + (long) (seconds * 1e9);
			while (n < maxn && System.nanoTime() < end)
			{
				long s = System.nanoTime();

				uncontendedCycle(mutex, xact);
				lat[n++] = (System.nanoTime() - s) / 1e6;
			}
			secondsRun = (System.nanoTime() - start) / 1e9;
		}
		StringBuilder out = new StringBuilder();
		out.append("{\"n\": ").append(n)
			.append(", \"seconds\": ").append(secondsRun)
			.append(jvmJson())
			.append(driver == null ? "" : ", \"jdbc_driver\": \"" + driver + "\"")
			.append(", \"session\": \"").append(session(client)).append("\", \"lat_ms\": [");
		for (int i = 0; i < n; i++)
			out.append(i > 0 ? "," : "").append(String.format("%.4f", lat[i]));
		System.out.println(out.append("]}"));
	}

	/*
	 * The time to a thread's next scheduled cycle, in nanoseconds: drawn from
	 * an exponential distribution of mean "every", as pgbench -R draws its
	 * own, so that the cycles of all threads arrive as a Poisson process of
	 * the offered rate on both sides.  (A fixed schedule from a common start
	 * sent every thread's cycle at the same instant, a burst ZooKeeper
	 * commits with one fsync, which pgbench's clients never send.)
	 */
	private static long poissonGap(ThreadLocalRandom random, long every)
	{
		return (long) (-Math.log(1.0 - random.nextDouble()) * every);
	}

	private static void loop(CuratorFramework client, int threads, double seconds, int warmup,
							 boolean same, long startAt, double rate) throws Exception
	{
		/* Nanoseconds between the starts of a thread's cycles; 0: no limit. */
		long every = rate > 0 ? (long) (threads * 1e9 / rate) : 0;

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
			jvm0 = jvmCounters();
			t0 = System.nanoTime();
		});
		Workers workers = new Workers();

		for (int i = 0; i < threads; i++)
			workers.start(mutex(client, ROOT + (same ? "/c" : "/b" + i), i), (mutex, mine) -> {
				for (int w = 0; w < warmup; w++)
				{
					mutex.acquire();
					mutex.release();
				}
				barrier.await();
				long end = t0 + (long) (seconds * 1e9);
				ThreadLocalRandom random = ThreadLocalRandom.current();
				long next = every > 0 ? t0 + poissonGap(random, every) : t0;

				while (System.nanoTime() < end)
				{
					if (every > 0)
					{
						long now = System.nanoTime();

						if (now < next)
						{
							LockSupport.parkNanos(next - now);
							continue;
						}
						next += poissonGap(random, every);
					}
					cycle(mutex, mine);
				}
			});
		workers.join("a thread");
		String jvm = jvmJson();
		String out = eventsJson(workers.events, seconds, session(client));
		System.out.println(out.substring(0, out.length() - 1) + jvm + "}");
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
