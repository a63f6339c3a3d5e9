#!/usr/bin/python3
"""The explorer (`make explore`; a short run in test/run_all.sh): generated
programs of what users do with zklock, across two PostgreSQL clusters and a
foreign kazoo client, with faults injected between steps, checked against
zklock's promises after every step, shrunk by hypothesis to a short failing
program, printed as a replayable script.  See test/explore/README.md.

A program is a list of steps (tuples); each step is interpreted against the
state the previous ones left (a session not in a transaction begins one, a
step that makes no sense is skipped), so that any sub-list is a program too
and hypothesis can shrink freely.  The oracles (check_*):

  O1  a COMMIT, PREPARE or COMMIT PREPARED that fails leaves none of its
      transaction's rows visible, on either cluster (postgres_fdw too);
  O2  a transaction that wrote while holding a lock whose node zklock had
      seen go (deleted, revoked) before the COMMIT was sent never commits;
  V   no other holder (zklock in either cluster, kazoo) is granted a lock
      between a write under it and the end of that write's successful
      COMMIT, unless the writer released it before;
  X   zklock never grants a lock that the foreign kazoo client holds;
  F   a fenced write (zk_fence_trigger) commits only from a session holding
      the fence's lock;
  T   release then try in one statement, with nobody else around: true;
  E   no error of class XX; no crash line in either server log;
  Q   at quiescence (every session closed): no node left in the example's
      lock directories, no slot used;
  J   the batch job's write through dblink never lands after its cluster
      was cut off ZooKeeper for longer than the session timeout;
  C   zk_lock_check is never true for a lock the session lost while
      another holds it exclusively;
  S   a semaphore of one permit never has two holders;
  P   the row a procedure rolled back is never visible.

A COMMIT waiting for a synchronous standby is excused from V when a loss
from outside zklock (a node deleted, a session expired) comes during that
wait: doc/failures.md leaves that unbounded wait to fencing.
"""

import argparse
import json
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# Each feature of the grammar or the nemesis, and the issue whose defects it
# reaches: CI enables only those whose issue is closed (ENABLED_IN_CI);
# EXPLORE_ALL=1 (--all) enables every one.
FEATURES = {
	# feature: (issue it waits for, or None when always on, what it adds)
	"core": (None, "transactions, savepoints, exclusive/shared acquire, try, release, session and transaction scope, writes, kazoo holders, deletion of a held node"),
	"cursor": (40, "cursors whose query takes a lock, FETCHes that fail (division by zero), in and out of savepoints"),
	"fdw": (40, "writes to the other cluster through postgres_fdw"),
	"prepare": (40, "PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED"),
	"stall": (40, "a COMMIT stalled on a synchronous standby that is not there, a hold limit (zklock.max_hold_time)"),
	"revoke": (40, "zk_lock_revoke under zklock.on_revoke = cancel"),
	"fence": (43, "fenced writes: the ORM's save of every column, MERGE, inheritance children"),
	"acl": (41, "lock directories made first by another client with ACLs refusing DELETE or WRITE; release then try in one statement"),
	"longname": (41, "kazoo contenders with long names and unreadable nodes"),
	"cut": (40, "a cluster cut off ZooKeeper (a relay) until its session expires, then reconnected"),
	"signal": (44, "pg_cancel_backend() on the zklock worker"),
	"freeze": (44, "a worker frozen (SIGSTOP) then thawed, so that the requests posted meanwhile land in one pass"),
	"notify": (40, "NOTIFY in a writing transaction; another transaction holding the NOTIFY queue lock (its COMMIT stalled)"),
	"job": (40, "the batch job of doc/integrations.md: a lock tried, the work, a write through dblink, in one statement"),
	"downgrade": (40, "a holder taking its lock shared too, then releasing the exclusive hold (a downgrade)"),
	"plpgsql": (40, "PL/pgSQL: EXCEPTION blocks around an acquire, a cursor FETCH failing in one, procedures with COMMIT and ROLLBACK"),
	"semaphore": (44, "semaphores (zk_semaphore_try, _acquire, _release) in both scopes"),
}
# Features whose issue is closed on main: the CI run enables these (issues
# 40, 43, 44 and 47 are resolved; 41 is not).
ENABLED_IN_CI = ["core", "cursor", "fdw", "prepare", "stall", "revoke", "fence", "cut", "signal", "freeze",
				 "notify", "job", "downgrade", "plpgsql", "semaphore"]

ALLOWED_CLASSES_FORBIDDEN = ("XX",)
# A crash: a signal, a PANIC, an assertion; or the worker ending on an ERROR
# or FATAL of its own (its exit code 1 alone is its ordinary restart).
CRASH_RE = re.compile(r"PANIC|TRAP:|terminated by signal|was terminated by|database system was interrupted")
PID_RE = re.compile(r"^\S+ \S+ \S+ \[(\d+)\]")
WORKER_RE = re.compile(r"zklock (connecting to|reattaching to|connected to) ZooKeeper|\(PID (\d+)\) exited with exit code")

SESSIONS = [("s0", "a"), ("s1", "a"), ("s2", "b")]
NLOCKS = 2


def now():
	return time.monotonic()


class Violation(Exception):
	pass


# ---------------------------------------------------------------- processes

class Env:
	"""ZooKeeper, two clusters (a, b) and the relay in a work directory;
	everything started is stopped by pid in stop()."""

	def __init__(self, top, pg_config, work):
		self.top = top
		self.pgbin = subprocess.check_output([pg_config, "--bindir"], text=True).strip()
		self.work = work
		self.zkdir = os.path.join(work, "zk")
		self.started_zk = False
		self.clusters = {}
		self.log_pos = {}

	def run(self, *cmd, **kw):
		return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw).stdout

	def start(self):
		self.zk = self.run("bash", os.path.join(self.top, "test/zkserver.sh"), "start", self.zkdir, "1").strip().splitlines()[-1]
		self.started_zk = True
		self.relays = {}
		for c in ("a", "b"):
			self.relays[c] = Relay(self.zk)
			d = os.path.join(self.work, c)
			# On b, a lost lock cancels nothing ("error"): a COMMIT stalled
			# there stays stalled whatever zklock does to its locks.
			lost = "cancel" if c == "a" else "error"
			self.run(os.path.join(self.pgbin, "initdb"), "-D", d + "/data", "-U", "postgres", "-A", "trust",
					 "-E", "UTF8", "--locale=C", "--no-sync")
			port = free_port()
			with open(d + "/data/postgresql.conf", "a") as f:
				f.write(f"""
cluster_name = 'explore_{c}'
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{d}'
shared_preload_libraries = 'zklock'
zklock.hosts = '127.0.0.1:{self.relays[c].port}'
zklock.session_timeout = '4s'
zklock.on_revoke = 'cancel'
zklock.on_lock_lost = '{lost}'
fsync = off
max_prepared_transactions = 10
max_connections = 40
synchronous_standby_names = 'ghost'
synchronous_commit = local
log_line_prefix = '%m [%p] %q%a '
""")
			self.run(os.path.join(self.pgbin, "pg_ctl"), "-D", d + "/data", "-l", d + "/server.log", "-w", "-t", "60", "start")
			self.clusters[c] = {"dir": d, "port": port, "log": d + "/server.log"}
			self.log_pos[c] = 0

	def dsn(self, c, user="postgres"):
		return f"host=127.0.0.1 port={self.clusters[c]['port']} dbname=postgres user={user}"

	def new_log_lines(self, c):
		with open(self.clusters[c]["log"], errors="replace") as f:
			f.seek(self.log_pos[c])
			data = f.read()
			self.log_pos[c] = f.tell()
		return data.splitlines()

	def stop(self):
		for r in getattr(self, "relays", {}).values():
			r.close()
		for c, info in self.clusters.items():
			pidf = info["dir"] + "/data/postmaster.pid"
			try:
				pid = int(open(pidf).readline())
			except (OSError, ValueError):
				continue
			subprocess.run([os.path.join(self.pgbin, "pg_ctl"), "-D", info["dir"] + "/data", "-m", "immediate",
							"-w", "-t", "20", "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
			for _ in range(50):
				try:
					os.kill(pid, 0)
				except OSError:
					break
				time.sleep(0.1)
			else:
				try:
					os.kill(pid, signal.SIGKILL)
				except OSError:
					pass
		if self.started_zk:
			subprocess.run(["bash", os.path.join(self.top, "test/zkserver.sh"), "stop", self.zkdir],
						   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port():
	for _ in range(2000):
		p = 20000 + random.randrange(12000)
		s = socket.socket()
		try:
			s.bind(("127.0.0.1", p))
			return p
		except OSError:
			pass
		finally:
			s.close()
	raise RuntimeError("no free port")


class Relay:
	"""A TCP relay between one cluster's zklock and ZooKeeper: cut() closes
	its connections and refuses new ones until heal(), so that the cluster's
	ZooKeeper session expires while the rest of the world goes on."""

	def __init__(self, target):
		host, port = target.split(",")[0].rsplit(":", 1)
		self.target = (host, int(port))
		self.lsock = socket.socket()
		self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		self.lsock.bind(("127.0.0.1", 0))
		self.lsock.listen(16)
		self.port = self.lsock.getsockname()[1]
		self.cut_now = False
		self.conns = []
		self.lock = threading.Lock()
		self.closed = False
		threading.Thread(target=self._accept, daemon=True).start()

	def _accept(self):
		while not self.closed:
			try:
				c, _ = self.lsock.accept()
			except OSError:
				return
			if self.cut_now:
				c.close()
				continue
			try:
				u = socket.create_connection(self.target, timeout=5)
			except OSError:
				c.close()
				continue
			with self.lock:
				self.conns += [c, u]
			threading.Thread(target=self._pump, args=(c, u), daemon=True).start()
			threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

	def _pump(self, a, b):
		try:
			while True:
				d = a.recv(65536)
				if not d or self.cut_now:
					break
				b.sendall(d)
		except OSError:
			pass
		for x in (a, b):
			try:
				x.close()
			except OSError:
				pass

	def cut(self):
		self.cut_now = True
		with self.lock:
			for c in self.conns:
				try:
					c.shutdown(socket.SHUT_RDWR)
					c.close()
				except OSError:
					pass
			self.conns = []

	def heal(self):
		self.cut_now = False

	def close(self):
		self.closed = True
		self.cut()
		self.lsock.close()


# ---------------------------------------------------------------- sessions

class Stmt:
	"""One statement run by a thread: done, result, error, returned_at."""

	def __init__(self, conn, sql):
		self.sql = sql
		self.done = threading.Event()
		self.rows = None
		self.status = None
		self.error = None
		self.sent_at = now()
		self.returned_at = None
		self.t = threading.Thread(target=self._run, args=(conn,), daemon=True)
		self.t.start()

	def _run(self, conn):
		try:
			with conn.cursor() as cur:
				cur.execute(self.sql)
				self.status = cur.statusmessage
				try:
					self.rows = cur.fetchall()
				except Exception:
					self.rows = None
		except Exception as e:
			self.error = e
		self.returned_at = now()
		self.done.set()


class Hold:
	def __init__(self, sess, lock, mode, scope, depth, limited):
		self.sess, self.lock, self.mode, self.scope, self.depth = sess, lock, mode, scope, depth
		self.acquired_at = now()
		self.lost_at = None			# when zklock was seen to know it lost it
		self.released_at = None		# released by the user
		self.limited = limited
		self.cursor = None			# the cursor (portal) whose query took it


class Xact:
	def __init__(self, tag):
		self.tag = tag
		self.writes = []			# (depth, returned_at, [holds], kind)
		self.fenced = []			# (depth, held_fence_lock, kind)
		self.overtaken = []			# (lock, holder, visible at the grant or None)
		self.failed = False
		self.sps = []
		self.cursors = []
		self.stalled = False		# its COMMIT waits for the standby that is not there
		self.excused = False		# a loss from outside during that wait (fencing's case)


class Session:
	def __init__(self, name, cluster, conn, pid):
		self.name, self.cluster, self.conn, self.pid = name, cluster, conn, pid
		self.holds = []				# live holds, as the user sees them
		self.xact = None
		self.pending = None			# (Stmt, kind, extra)
		self.limited = False
		self.prepared = []			# (gid, Xact)
		self.ncur = 0


# ---------------------------------------------------------------- one run

class Explorer:
	def __init__(self, env, features, log):
		import psycopg2
		from kazoo.client import KazooClient
		self.psycopg2 = psycopg2
		self.env = env
		self.features = set(features)
		self.log = log
		self.example = 0
		self.stats = {"programs": 0, "steps": 0, "faults": 0, "checks": 0, "statements": 0}
		self.admin = {}
		for c in ("a", "b"):
			conn = psycopg2.connect(env.dsn(c))
			conn.autocommit = True
			with conn.cursor() as cur:
				cur.execute("SET statement_timeout = '60s'")
			self.admin[c] = conn
		self.setup_databases()
		self.kz = KazooClient(hosts=env.zk, auth_data=[("digest", "explore:secret")], timeout=10)
		self.kz.start(timeout=30)

	def sql_admin(self, c, sql):
		with self.admin[c].cursor() as cur:
			cur.execute(sql)
			try:
				return cur.fetchall()
			except Exception:
				return None

	def setup_databases(self):
		for c in ("a", "b"):
			other = "b" if c == "a" else "a"
			self.sql_admin(c, f"""
				CREATE EXTENSION IF NOT EXISTS zklock;
				CREATE EXTENSION IF NOT EXISTS postgres_fdw;
				DO $$ BEGIN CREATE ROLE app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
				GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO app;
				ALTER ROLE app SET statement_timeout = '12s';
				ALTER ROLE app SET zklock.connect_timeout = '3s';
				CREATE TABLE ledger (tag text, lock text, sess text, at timestamptz DEFAULT clock_timestamp());
				GRANT ALL ON ledger TO app;
				CREATE SERVER other FOREIGN DATA WRAPPER postgres_fdw
					OPTIONS (host '127.0.0.1', port '{self.env.clusters[other]['port']}', dbname 'postgres');
				CREATE USER MAPPING FOR app SERVER other OPTIONS (user 'app', password_required 'false');
				CREATE USER MAPPING FOR postgres SERVER other OPTIONS (user 'postgres');
				CREATE FOREIGN TABLE fledger (tag text, lock text, sess text, at timestamptz)
					SERVER other OPTIONS (table_name 'ledger');
				GRANT ALL ON fledger TO app;
				GRANT USAGE ON FOREIGN SERVER other TO app;
				CREATE EXTENSION IF NOT EXISTS dblink;
				-- doc/integrations.md's batch job: the lock tried, the work,
				-- its result kept in the other cluster through dblink (as
				-- its owner, who may use dblink without a password).
				CREATE FUNCTION explore_job(lock text, tag text, work float8) RETURNS boolean
				LANGUAGE plpgsql SECURITY DEFINER AS $f$
				BEGIN
					IF NOT zk_lock_try_xact(lock) THEN
						RETURN false;
					END IF;
					PERFORM pg_sleep(work);
					PERFORM dblink_exec('host=127.0.0.1 port={self.env.clusters[other]['port']} dbname=postgres user=postgres',
						format('INSERT INTO ledger (tag, lock, sess) VALUES (%L, %L, %L)', tag, lock, 'job'));
					RETURN true;
				END $f$;
				GRANT EXECUTE ON FUNCTION explore_job(text, text, float8) TO app;
				-- A procedure that commits and rolls back under the lock.
				CREATE PROCEDURE explore_proc(lock text, tag text) LANGUAGE plpgsql AS $f$
				BEGIN
					PERFORM zk_lock_acquire_xact(lock, '2s');
					INSERT INTO ledger (tag, lock, sess) VALUES (tag, lock, 'proc');
					COMMIT;
					PERFORM zk_lock_acquire_xact(lock, '2s');
					INSERT INTO ledger (tag, lock, sess) VALUES (tag || '.r', lock, 'proc');
					ROLLBACK;
					PERFORM zk_lock_acquire(lock, '2s');
					PERFORM zk_lock_release(lock);
				END $f$;
				GRANT EXECUTE ON PROCEDURE explore_proc(text, text) TO app;
			""")

	# ---- per example

	def begin_example(self):
		import psycopg2
		self.example += 1
		n = self.example
		# Lines logged since the last example's check belong to no program.
		for c in ("a", "b"):
			self.env.new_log_lines(c)
		self.locks = [f"x{os.getpid()}.{n}.l{i}" for i in range(NLOCKS)]
		self.paths = {}
		for L in self.locks:
			self.paths[L] = self.sql_admin("a", f"SELECT zk_lock_path('{L}')")[0][0]
		self.script = []
		self.grants = {L: [] for L in self.locks}		# (time, holder, mode)
		self.kzholds = {}								# lock -> (node, since)
		self.kzwaiting = []
		self.sess = []
		self.cut_clusters = set()
		self.cut_wall = {}		# cluster -> time.time() of its last cut
		self.frozen = {}			# cluster -> (worker pid, since)
		self.blockers = {}		# cluster -> (conn, pid, Stmt): a NOTIFY whose COMMIT is stalled
		self.prepared = []			# (gid, Xact, session name)
		self.sems = {}				# semaphore -> [session names holding a permit]
		self.cancelled = set()
		self.tagn = 0
		self.fence_tables = {}
		if "fence" in self.features:
			for c in ("a", "b"):
				t = f"fz{n}"
				self.sql_admin(c, f"""
					CREATE TABLE {t} (id int PRIMARY KEY, body text, token bigint NOT NULL);
					CREATE TRIGGER {t}_fence BEFORE INSERT OR UPDATE ON {t}
						FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('{self.locks[0]}', 'token');
					CREATE TRIGGER {t}_fence_del BEFORE DELETE ON {t}
						FOR EACH ROW EXECUTE FUNCTION zk_fence_delete_trigger('{self.locks[0]}');
					INSERT INTO {t} VALUES (1, 'init', 1);
					GRANT ALL ON {t} TO app;
				""")
				child = None
				try:
					self.sql_admin(c, f"CREATE TABLE {t}_c () INHERITS ({t}); INSERT INTO {t}_c VALUES (2, 'init', 1); GRANT ALL ON {t}_c TO app;")
					child = f"{t}_c"
				except psycopg2.Error:
					pass
				self.fence_tables[c] = (t, child)
		for name, c in SESSIONS:
			conn = psycopg2.connect(self.env.dsn(c, "app"))
			conn.autocommit = True
			with conn.cursor() as cur:
				cur.execute("SELECT pg_backend_pid()")
				pid = cur.fetchone()[0]
			self.sess.append(Session(name, c, conn, pid))

	def note(self, who, text):
		self.script.append((who, text))

	def end_example(self):
		"""Ends every statement, transaction and session, then checks
		quiescence (Q) and the logs (E)."""
		for c in list(self.frozen):
			self.thaw(c)
		for c in list(self.blockers):
			self.notify_unblock(c)
		for s in self.sess:
			if s.pending:
				self.sql_admin(s.cluster, f"SELECT pg_cancel_backend({s.pid})")
				self.finish_pending(s, 40)
		for gid, x, owner in self.prepared:
			c = [t.cluster for t in self.sess if t.name == owner][0]
			try:
				self.sql_admin(c, f"ROLLBACK PREPARED '{gid}'")
			except self.psycopg2.Error:
				pass
		self.prepared = []
		for s in self.sess:
			try:
				s.conn.close()
			except Exception:
				pass
		for L, (node, _) in list(self.kzholds.items()):
			self.kz_delete(node)
		self.kzholds = {}
		for c in list(self.cut_clusters):
			self.heal(c)
		for c in self.cancelled:
			self.restart_worker(c)
		# Q: every slot back and no node left, within a generous bound (an
		# expired session's nodes go at its expiry, 4 s after a cut).
		deadline = now() + 20
		while True:
			left = {}
			for L in self.locks:
				kids = self.children(L)
				if kids:
					left[L] = kids
			for name in self.sems:
				kids = self.sem_nodes(name)
				if kids:
					left[name] = kids
			used = {c: self.sql_admin(c, "SELECT slots_used FROM zk_status()")[0][0] for c in ("a", "b")}
			if not left and not any(used.values()):
				break
			if now() > deadline:
				self.cleanup_dirs()
				raise Violation(f"Q: at quiescence, nodes left {left}, slots used {used}")
			time.sleep(0.2)
		self.stats["checks"] += 1
		self.cleanup_dirs()
		self.check_logs()
		for c, (t, child) in self.fence_tables.items():
			self.sql_admin(c, f"DROP TABLE {t} CASCADE")
		self.fence_tables = {}

	def sem_nodes(self, name):
		from kazoo.exceptions import NoNodeError
		if name not in self.paths:
			self.paths[name] = self.sql_admin("a", f"SELECT zk_lock_path('{name}')")[0][0]
		out = []
		for sub in ("leases", "locks"):
			try:
				out += [sub + "/" + k for k in self.kz.get_children(self.paths[name] + "/" + sub)]
			except NoNodeError:
				pass
		return out

	def cleanup_dirs(self):
		from kazoo.exceptions import NoNodeError
		for names, nodes_of in ((self.sems, self.sem_nodes), (self.locks, self.children)):
			for name in names:
				for k in nodes_of(name):
					self.kz_delete(self.paths[name] + "/" + k)
				try:
					self.kz.delete(self.paths[name], recursive=True)
				except Exception:
					pass

	def children(self, L):
		from kazoo.exceptions import NoNodeError
		try:
			return sorted(self.kz.get_children(self.paths[L]))
		except NoNodeError:
			return []

	def kz_delete(self, path):
		from kazoo.exceptions import NoNodeError
		try:
			self.kz.delete(path)
		except NoNodeError:
			pass

	def check_logs(self):
		for c in ("a", "b"):
			lines = self.env.new_log_lines(c)
			workers = set()
			for line in lines:
				m = WORKER_RE.search(line)
				if m:
					workers.add(m.group(2) or (PID_RE.match(line) or [None, None])[1])
			for line in lines:
				if CRASH_RE.search(line):
					raise Violation(f"E: crash line in cluster {c}'s log: {line}")
				m = PID_RE.match(line)
				if m and m.group(1) in workers and re.search(r" (ERROR|FATAL|PANIC): ", line):
					raise Violation(f"E: the zklock worker of cluster {c} ended on an error: {line}")
		self.stats["checks"] += 1

	# ---- statements

	def run(self, s, sql, kind="sql", wait=20.0, extra=None):
		"""Runs sql in session s; returns the Stmt when it finished within
		wait seconds, else leaves it pending (None)."""
		if s.pending:
			self.finish_pending(s, 40)
		full = wait
		if s.cluster in self.frozen:
			# The worker is frozen: whatever waits for it is left running.
			wait = min(wait, 0.3)
		self.note(s.name + "@" + s.cluster, sql)
		self.stats["statements"] += 1
		self.last_sent = now()
		st = Stmt(s.conn, sql)
		if not st.done.wait(wait) and kind == "sql" and s.cluster in self.frozen:
			# A statement the program waits for: the worker is thawed.
			self.thaw(s.cluster)
			st.done.wait(full)
		if not st.done.is_set():
			s.pending = (st, kind, extra)
			self.note(s.name + "@" + s.cluster, "-- (still running; the program goes on)")
			return None
		self.note(s.name + "@" + s.cluster, "--   " + describe(st))
		return st

	def exec(self, s, sql, then, wait=20.0):
		"""Runs sql in s and calls then(st) when it returned: now, or when
		the pending statement is collected."""
		st = self.run(s, sql, kind="cb", wait=wait, extra=then)
		if st is not None:
			then(st)

	def poll_pending(self):
		# Grants first: each is judged against what the database shows now,
		# which a COMMIT that returned meanwhile can only have made visible.
		for s in sorted(self.sess, key=lambda t: 0 if t.pending and t.pending[1] == "acquire" else 1):
			if s.pending and s.pending[0].done.is_set():
				self.finish_pending(s, 0)

	def finish_pending(self, s, wait):
		st, kind, extra = s.pending
		if kind == "commit" and extra[2]:
			# A COMMIT stalled on the standby that is not there: an operator
			# cancels its wait after a while.
			wait = min(wait, 4.0)
		if not st.done.wait(wait):
			# A statement that outlives statement_timeout by far: cancel it.
			self.sql_admin(s.cluster, f"SELECT pg_cancel_backend({s.pid})")
			if not st.done.wait(60):
				raise Violation(f"E: statement of {s.name} runs for ever: {st.sql}")
		s.pending = None
		self.note(s.name + "@" + s.cluster, f"-- (returned: {describe(st)})")
		if kind == "acquire":
			self.after_acquire(s, st, *extra)
		elif kind == "cb":
			extra(st)
		elif kind == "commit":
			self.after_commit(s, st, extra)
		else:
			self.after_error(s, st)

	def after_error(self, s, st):
		"""The state after a statement: an error aborts the transaction (or
		the savepoint); ZK002 tells the session of its lost holds."""
		if st.error is None:
			return
		code = getattr(st.error, "pgcode", None) or ""
		if code[:2] in ALLOWED_CLASSES_FORBIDDEN:
			raise Violation(f"E: internal error {code} from {st.sql!r}: {st.error}")
		if s.xact:
			s.xact.failed = True
		if code == "ZK002":
			for h in list(s.holds):
				if h.lost_at is not None or h.limited:
					self.drop_hold(s, h, user=False)

	def drop_hold(self, s, h, user=True):
		if h in s.holds:
			s.holds.remove(h)
		if user and h.released_at is None:
			h.released_at = getattr(self, "last_sent", now())

	# ---- transactions

	def ensure_xact(self, s):
		if s.xact is None:
			st = self.run(s, "BEGIN")
			self.tagn += 1
			s.xact = Xact(f"{self.example}.{s.name}.{self.tagn}")
		return not s.xact.failed

	def depth(self, s):
		return len(s.xact.sps) if s.xact else 0

	def end_xact_holds(self, s):
		for h in list(s.holds):
			if h.scope == "xact":
				self.drop_hold(s, h)

	def visible(self, tag):
		n = 0
		for c in ("a", "b"):
			n += self.sql_admin(c, f"SELECT count(*) FROM ledger WHERE tag = '{tag}'")[0][0]
		return n

	def commit(self, s, stall=False):
		if s.xact is None:
			return
		x = s.xact
		if stall and not x.failed:
			self.run(s, "SET LOCAL synchronous_commit = on")
			x.stalled = True
		sent = now()
		wait = 0.5 if stall or self.blockers else 3.0
		st = self.run(s, "COMMIT", kind="commit", wait=wait, extra=(x, sent, x.stalled))
		if st is not None:
			self.after_commit(s, st, (x, sent, x.stalled))

	def excuse_stalled(self, c=None):
		"""A loss from outside zklock (a node deleted, a session expired)
		while a COMMIT waits for a synchronous standby: an unbounded wait
		after the check that doc/failures.md leaves to fencing."""
		for t in self.sess:
			if t.pending and t.pending[1] == "commit" and t.pending[2][2] and (c is None or t.cluster == c):
				t.pending[2][0].excused = True

	def after_commit(self, s, st, extra):
		x, sent, _ = extra
		s.xact = None
		self.end_xact_holds(s)
		if st.error is not None:
			self.after_error(s, st)
			# O1: nothing of a refused COMMIT is visible.  A COMMIT that
			# failed for a reason of its own (a cancel while it waited)
			# in a transaction that wrote under no lock is postgres_fdw's
			# own lack of atomicity (its remote COMMIT comes before the
			# local one), not zklock's.
			code = getattr(st.error, "pgcode", "") or ""
			zkl = code.startswith("ZK") or any(w[2] for w in x.writes)
			if zkl and self.visible(x.tag):
				raise Violation(f"O1({'fdw' if any(w[3] == 'fdw' for w in x.writes) else 'local'}): COMMIT failed ({describe(st)}) but rows of its transaction are visible")
			self.stats["checks"] += 1
			return
		if st.status != "COMMIT":
			return	# an aborted transaction rolled back
		self.check_committed(s, x, sent, st.returned_at, "COMMIT")

	def check_committed(self, s, x, sent, returned, what):
		kinds = set(w[3] for w in x.writes)
		only = "fdw-only" if kinds == {"fdw"} else "+".join(sorted(kinds))
		for depth, w_at, holds, kind in x.writes:
			for h in holds:
				# O2: a loss zklock knew of before the COMMIT was sent.
				if h.lost_at is not None and h.lost_at < sent and (h.released_at is None or h.lost_at < h.released_at):
					raise Violation(f"O2({only},{h.mode}{',cursor' if h.cursor else ''}): {what} of {s.name} succeeded although its lock {h.lock} ({h.scope}, "
									f"{h.mode}) was lost before it; the write ({kind}) committed")
		if x.excused:
			x.overtaken = [o for o in x.overtaken if o[2] is None]
		for L, holder, vis, _ in x.overtaken:
			if vis is None:
				raise Violation(f"V({'+'.join(sorted(kinds))}): {holder} held {L} while {s.name}'s transaction, which wrote under it, "
								f"had not begun to commit; {what} then succeeded")
			if not vis:
				why = "stalled" if x.stalled else ("notify" if "notify" in kinds else "")
				raise Violation(f"V-commit({why}): {holder} was granted {L} while {s.name}'s {what} was running, before its "
								f"rows were visible; the {what} then succeeded")
		for depth, held, kind in x.fenced:
			if not held:
				# Named by what the write did to the token and where.
				how = {"orm": "token copied", "orm_reload": "token copied", "upsert": "token copied",
					   "merge": "merge", "on_conflict": "token left alone", "own": "own token",
					   "child_update": "inheritance child", "child_insert": "inheritance child",
					   "delete": "inheritance child"}.get(kind, kind)
				raise Violation(f"F({how}): {s.name} committed a fenced write ({kind}) without holding the fence's lock")
		self.stats["checks"] += 1

	# ---- locks

	def conflicts(self, a, b):
		return a == "exclusive" or b == "exclusive"

	def protected(self, s, L, mode):
		"""The depth of the outermost write of s's transaction made under
		L, still held, in a mode that conflicts with mode; None if none."""
		if s.xact is None:
			return None
		d = None
		for depth, w_at, holds, kind in s.xact.writes:
			for h in holds:
				if h.lock == L and h.released_at is None and self.conflicts(h.mode, mode):
					d = depth if d is None else min(d, depth)
		return d

	def granted(self, s_name, L, mode, hold):
		"""V: another holder granted L (zklock in any session, kazoo): each
		transaction that wrote under L and still holds it must not commit;
		one whose COMMIT is running must have committed already."""
		self.grants[L].append((now(), s_name, mode))
		for t in self.sess:
			d = None if t.name == s_name else self.protected(t, L, mode)
			if d is None:
				continue
			pend = t.pending and t.pending[1] == "commit"
			vis = (self.visible(t.xact.tag) > 0) if pend else None
			t.xact.overtaken.append((L, s_name, vis, d))
		self.stats["checks"] += 1

	def current_holders(self, L, me):
		out = []
		for t in self.sess:
			if t.name == me:
				continue
			for h in t.holds:
				if h.lock == L and h.released_at is None and h.lost_at is None and not h.limited:
					out.append((t.name, h.mode))
		if L in self.kzholds:
			out.append(("kazoo", "exclusive"))
		return out

	def after_acquire(self, s, st, lock, mode, scope, depth, fn):
		if st.error is not None:
			self.after_error(s, st)
			return
		row = st.rows[0][0] if st.rows else None
		if row is None or row is False:
			return
		h = Hold(s.name, lock, mode, scope, depth, s.limited)
		h.acquired_at = st.returned_at
		s.holds.append(h)
		self.granted(s.name, lock, mode, h)
		# X: never granted while the foreign client holds it.
		if lock in self.kzholds:
			raise Violation(f"X: {s.name} was granted {lock} ({mode}, {fn}) while the kazoo client holds it "
							f"({self.kzholds[lock][0].rsplit('/', 1)[1][:40]}...)")
		self.stats["checks"] += 1

	def acquire(self, s, lock, mode, scope, fn):
		if scope == "xact" and not self.ensure_xact(s):
			return
		if scope == "session" and s.xact and s.xact.failed:
			return
		L = self.locks[lock]
		sql = {
			"acquire": f"SELECT zk_lock_acquire{'_xact' if scope == 'xact' else ''}{'_shared' if mode == 'shared' else ''}('{L}', '2s')",
			"try": f"SELECT zk_lock_try{'_xact' if scope == 'xact' else ''}{'_shared' if mode == 'shared' else ''}('{L}')",
			"set": f"SELECT zk_lock_acquire{'_xact' if scope == 'xact' else ''}(ARRAY['{L}'], '2s')",
		}[fn]
		extra = (L, mode, scope, self.depth(s), fn)
		st = self.run(s, sql, kind="acquire", wait=0.5, extra=extra)
		if st is not None:
			self.after_acquire(s, st, *extra)

	def release(self, s, lock, mode):
		if s.xact and s.xact.failed:
			return
		L = self.locks[lock]
		hs = [h for h in s.holds if h.lock == L and h.mode == mode and h.scope == "session"]
		fn = "zk_lock_release_shared" if mode == "shared" else "zk_lock_release"

		def then(st):
			if st.error is None and hs:
				self.drop_hold(s, hs[-1])
			self.after_error(s, st)

		self.exec(s, f"SELECT {fn}('{L}')", then)

	def release_all(self, s):
		if s.xact and s.xact.failed:
			return
		st = self.run(s, "SELECT zk_lock_release_all()")
		if st is None:
			return
		if st.error is None:
			for h in list(s.holds):
				if h.scope == "session":
					self.drop_hold(s, h)
			for holders in self.sems.values():
				if s.name in holders:
					holders.remove(s.name)
		self.after_error(s, st)

	def write(self, s, kind):
		if not self.ensure_xact(s):
			return
		table = "fledger" if kind == "fdw" else "ledger"
		tag = s.xact.tag
		# A notification goes with a row, which shows whether it committed.
		st = self.run(s, f"INSERT INTO {table} (tag, lock, sess) VALUES ('{tag}', "
					  f"'{','.join(sorted(set(h.lock for h in s.holds)))}', '{s.name}')"
					  + (f"; NOTIFY explore, '{tag}'" if kind == "notify" else ""))
		if st is None:
			return
		if st.error is None:
			s.xact.writes.append((self.depth(s), st.returned_at, list(s.holds), kind))
			self.overtaken_at_write(s)
		self.after_error(s, st)

	def overtaken_at_write(self, s):
		for h in s.holds:
			for name, mode in self.current_holders(h.lock, s.name):
				if self.conflicts(h.mode, mode):
					s.xact.overtaken.append((h.lock, name, None, self.depth(s)))

	def fenced_write(self, s, kind):
		if s.cluster not in self.fence_tables or not self.ensure_xact(s):
			return
		t, child = self.fence_tables[s.cluster]
		L = self.locks[0]
		if kind == "orm_reload":
			# The ORM reloads the row, then saves every column as it read them.
			st = self.run(s, f"SELECT id, body, token FROM {t} WHERE id = 1")
			if st is None:
				return
			if st.error is not None or not st.rows:
				self.after_error(s, st)
				return
			tok = st.rows[0][2]
		sql = {
			"orm_reload": f"UPDATE {t} SET body = 'reload {s.name}', token = {tok if kind == 'orm_reload' else 0} WHERE id = 1",
			"upsert": f"INSERT INTO {t} AS r VALUES (1, 'upsert {s.name}', (SELECT token FROM {t} WHERE id = 1)) "
					  f"ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = EXCLUDED.token",
			"on_conflict": f"INSERT INTO {t} VALUES (1, 'conflict {s.name}', 1) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
			"delete": f"DELETE FROM {t} WHERE id >= 100",
			"orm": f"UPDATE {t} SET body = 'orm {s.name}', token = token WHERE id = 1",
			"own": f"UPDATE {t} SET body = 'own {s.name}', token = zk_lock_token('{L}') WHERE id = 1",
			"merge": f"MERGE INTO {t} USING (SELECT 1 AS id) v ON {t}.id = v.id "
					 f"WHEN MATCHED AND false THEN UPDATE SET token = 0 "
					 f"WHEN MATCHED THEN UPDATE SET body = 'merge {s.name}'",
			"child_update": f"UPDATE {t} SET body = 'child {s.name}' WHERE id = 2",
			"child_insert": f"INSERT INTO {child} VALUES ({100 + self.tagn}, 'child {s.name}', 1)",
		}[kind]
		if kind.startswith("child") and child is None:
			return
		# A hold under a hold limit counts as held: the limit's take-away
		# is not seen from here (the COMMIT's proof judges it).
		held = any(h.lock == L and h.mode == "exclusive" and h.lost_at is None for h in s.holds)
		st = self.run(s, sql)
		if st is None:
			return
		if st.error is None and st.status not in ("UPDATE 0", "MERGE 0", "INSERT 0 0", "DELETE 0"):
			s.xact.fenced.append((self.depth(s), held, kind))
			s.xact.writes.append((self.depth(s), st.returned_at, list(s.holds), "fenced " + kind))
			self.overtaken_at_write(s)
		self.after_error(s, st)

	def leader(self, s):
		"""A leader: holds the fence's lock for its session, writes with its
		own token, commits (and goes on holding)."""
		L = self.locks[0]
		if s.xact is not None:
			self.commit(s)
			if s.pending:
				return
		if not any(h.lock == L and h.mode == "exclusive" and h.scope == "session" and h.lost_at is None
				   for h in s.holds):
			self.acquire(s, 0, "exclusive", "session", "acquire")
			if s.pending:
				return
		self.fenced_write(s, "own")
		if s.pending:
			return
		self.commit(s)

	# ---- savepoints

	def savepoint(self, s):
		if not self.ensure_xact(s):
			return
		name = f"sp{len(s.xact.sps)}"
		st = self.run(s, f"SAVEPOINT {name}")
		if st is None:
			return
		if st.error is None:
			s.xact.sps.append(name)
		self.after_error(s, st)

	def rollback_to(self, s):
		if s.xact is None or not s.xact.sps:
			return
		i = len(s.xact.sps) - 1
		st = self.run(s, f"ROLLBACK TO {s.xact.sps[i]}")
		if st is None:
			return
		if st.error is not None:
			self.after_error(s, st)
			return
		s.xact.failed = False
		s.xact.writes = [w for w in s.xact.writes if w[0] <= i]
		s.xact.fenced = [w for w in s.xact.fenced if w[0] <= i]
		s.xact.overtaken = [o for o in s.xact.overtaken if o[3] <= i]
		failed = set(c[0] for c in s.xact.cursors if c[4])
		for h in list(s.holds):
			if h.scope == "xact" and (h.depth > i or h.cursor in failed):
				self.drop_hold(s, h)
		# Cursors declared after the savepoint are gone.
		s.xact.cursors = [c for c in getattr(s.xact, "cursors", []) if c[1] <= i]

	def release_sp(self, s):
		if s.xact is None or not s.xact.sps or s.xact.failed:
			return
		name = s.xact.sps[-1]
		st = self.run(s, f"RELEASE {name}")
		if st is None:
			return
		if st.error is None:
			s.xact.sps.pop()
			d = len(s.xact.sps)
			s.xact.writes = [(min(w[0], d),) + w[1:] for w in s.xact.writes]
			s.xact.fenced = [(min(w[0], d),) + w[1:] for w in s.xact.fenced]
			s.xact.overtaken = [o[:3] + (min(o[3], d),) for o in s.xact.overtaken]
			for h in s.holds:
				h.depth = min(h.depth, d)
		self.after_error(s, st)

	def rollback(self, s):
		if s.xact is None:
			return
		self.run(s, "ROLLBACK")
		s.xact = None
		self.end_xact_holds(s)

	# ---- cursors (feature "cursor")

	def declare(self, s, lock, div_first=False):
		if not self.ensure_xact(s):
			return
		s.ncur += 1
		name = f"c{s.ncur}"
		L = self.locks[lock]
		cols = [f"zk_lock_acquire_xact('{L}', '2s') AS t", "1 / (2 - i) AS q"]
		if div_first:
			cols.reverse()
		st = self.run(s, f"DECLARE {name} CURSOR FOR SELECT {', '.join(cols)} FROM generate_series(1, 3) i")
		if st is None:
			return
		if st.error is None:
			if not hasattr(s.xact, "cursors"):
				s.xact.cursors = []
			s.xact.cursors.append([name, self.depth(s), L, 0, False])
		self.after_error(s, st)

	def fetch(self, s):
		if s.xact is None or s.xact.failed or not getattr(s.xact, "cursors", None):
			return
		cur = s.xact.cursors[-1]
		st = self.run(s, f"FETCH 1 FROM {cur[0]}", kind="acquire_fetch", wait=3.0)
		if st is None:
			return
		if st.error is None and st.rows and cur[3] == 0:
			# The first row took the lock, at the depth of this FETCH.
			h = Hold(s.name, cur[2], "exclusive", "xact", self.depth(s), s.limited)
			h.acquired_at = st.returned_at
			h.cursor = cur[0]
			s.holds.append(h)
			self.granted(s.name, cur[2], "exclusive", h)
			if cur[2] in self.kzholds:
				raise Violation(f"X: {s.name} was granted {cur[2]} by a cursor while the kazoo client holds it")
		if st.error is None:
			cur[3] += 1
		elif self.depth(s) > 0:
			# Failed inside a savepoint: rolled back, the portal gives back
			# its holds, as pg_advisory_xact_lock's would be.
			cur[4] = True
		self.after_error(s, st)

	def open_cursor(self, s, lock, div_first=False):
		"""DECLARE, then FETCH the first row (which takes the lock)."""
		self.declare(s, lock, div_first)
		self.fetch(s)

	def fetch_in_savepoint(self, s):
		"""SAVEPOINT, FETCH (the second row divides by zero), ROLLBACK TO."""
		if s.xact is None or s.xact.failed or not getattr(s.xact, "cursors", None):
			return
		self.savepoint(s)
		self.fetch(s)
		self.rollback_to(s)

	# ---- two-phase commit (feature "prepare")

	def prepare(self, s):
		if s.xact is None:
			return
		x = s.xact
		gid = f"g{x.tag}"
		sent = now()
		st = self.run(s, f"PREPARE TRANSACTION '{gid}'")
		if st is None:
			return
		s.xact = None
		self.end_xact_holds(s)
		if st.error is not None:
			self.after_error(s, st)
			if self.visible(x.tag):
				raise Violation("O1: PREPARE failed but rows of its transaction are visible")
			return
		if st.status == "PREPARE TRANSACTION":
			for depth, w_at, holds, kind in x.writes:
				for h in holds:
					if h.lost_at is not None and h.lost_at < sent and h.released_at is None:
						raise Violation(f"O2(PREPARE): PREPARE of {s.name} succeeded although {h.lock} was lost before it")
			self.prepared.append((gid, x, s.name))

	def finish_prepared(self, s, commit):
		"""COMMIT PREPARED or ROLLBACK PREPARED, by any session of the
		cluster (an operator recovering by hand)."""
		mine = [p for p in self.prepared if [t for t in self.sess if t.name == p[2]][0].cluster == s.cluster]
		if not mine or s.xact is not None:
			return
		gid, x, owner = mine[0]
		self.prepared.remove(mine[0])
		word = "COMMIT" if commit else "ROLLBACK"
		st = self.run(s, f"{word} PREPARED '{gid}'")
		if st is None:
			return
		if st.error is not None:
			code = getattr(st.error, "pgcode", "")
			self.after_error(s, st)
			left = self.sql_admin(s.cluster, f"SELECT count(*) FROM pg_prepared_xacts WHERE gid = '{gid}'")[0][0]
			if commit and self.visible(x.tag):
				raise Violation(f"O1(COMMIT PREPARED): COMMIT PREPARED failed ({code}) but it committed: its rows are visible")
			if not commit and not left:
				raise Violation(f"O1(ROLLBACK PREPARED): ROLLBACK PREPARED failed ({code}) but the prepared transaction is gone")
			if left:
				self.prepared.insert(0, (gid, x, owner))

	# ---- foreign client

	def kz_try(self, lock, longname, unreadable):
		from kazoo.security import make_digest_acl, ACL, Permissions, Id
		L = self.locks[lock]
		if L in self.kzholds:
			return
		ident = ("k" * 150) if longname else "3f0c2a6e9b1d4c7f8e5a2b6c9d0e1f2a"
		acl = [make_digest_acl("explore", "secret", all=True)]
		if unreadable:
			acl.append(ACL(Permissions.CREATE | Permissions.WRITE | Permissions.DELETE, Id("world", "anyone")))
		else:
			acl.append(ACL(Permissions.ALL, Id("world", "anyone")))
		self.kz.ensure_path(self.paths[L])
		node = self.kz.create(self.paths[L] + "/" + ident + "__lock__", b"explorer", acl=acl, ephemeral=True, sequence=True)
		self.note("kazoo", f"create {node.rsplit('/', 1)[1][:60]}{'...' if longname else ''} (ephemeral, sequential"
				  f"{', unreadable' if unreadable else ''}) in zk_lock_path('{L}')")
		seq = int(node[-10:])
		kids = self.children(L)
		lowest = min(int(k[-10:]) for k in kids if k[-10:].isdigit())
		if seq == lowest:
			self.kzholds[L] = (node, now())
			self.granted("kazoo", L, "exclusive", None)
			self.note("kazoo", f"holds {L}")
		else:
			self.kz_delete(node)
			self.note("kazoo", f"does not hold {L}: its node deleted")

	def kz_release(self, lock):
		L = self.locks[lock]
		if L in self.kzholds:
			self.kz_delete(self.kzholds.pop(L)[0])
			self.note("kazoo", f"releases {L} (its node deleted)")

	def kz_acl_dir(self, lock, refuse):
		"""A lock directory made by another tool before zklock used the name,
		whose ACL refuses DELETE or WRITE to everyone but its maker."""
		from kazoo.security import make_digest_acl, ACL, Permissions, Id
		L = self.locks[lock]
		if self.kz.exists(self.paths[L]):
			return
		perms = Permissions.ALL & ~(Permissions.DELETE if refuse == "delete" else Permissions.WRITE)
		parent = self.paths[L].rsplit("/", 1)[0]
		self.kz.ensure_path(parent)
		self.kz.create(self.paths[L], b"", acl=[make_digest_acl("explore", "secret", all=True), ACL(perms, Id("world", "anyone"))])
		self.note("kazoo", f"create zk_lock_path('{L}') with an ACL refusing {refuse.upper()} to anyone but its maker")

	# ---- the worker frozen (feature "freeze")

	def worker_pid(self, c):
		rows = self.sql_admin(c, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'")
		return rows[0][0] if rows else None

	def freeze(self, c):
		if c in self.frozen or c in self.cut_clusters:
			return
		pid = self.worker_pid(c)
		if pid is None:
			return
		self.note("nemesis", f"kill -STOP <zklock worker of cluster {c}>")
		self.stats["faults"] += 1
		os.kill(pid, signal.SIGSTOP)
		self.frozen[c] = (pid, now())

	def thaw(self, c):
		if c not in self.frozen:
			return
		pid, since = self.frozen.pop(c)
		self.note("nemesis", f"kill -CONT <zklock worker of cluster {c}>")
		try:
			os.kill(pid, signal.SIGCONT)
		except OSError:
			pass
		time.sleep(0.2)
		self.poll_pending()

	def thaw_old(self):
		# Frozen longer than half the session timeout, the worker would lose
		# its session: thawed in time, as the step after next would.
		for c, (pid, since) in list(self.frozen.items()):
			if now() - since > 1.5:
				self.thaw(c)

	# ---- NOTIFY (feature "notify")

	def notify_block(self, c):
		"""Another application's transaction that notified and whose COMMIT
		waits for the standby that is not there: it holds the NOTIFY queue's
		lock until its wait ends."""
		if c in self.blockers:
			return
		conn = self.psycopg2.connect(self.env.dsn(c))
		conn.autocommit = True
		with conn.cursor() as cur:
			cur.execute("SELECT pg_backend_pid()")
			pid = cur.fetchone()[0]
		sql = ("BEGIN; INSERT INTO ledger (tag) VALUES ('other'); NOTIFY explore_other; "
			   "SET LOCAL synchronous_commit = on; COMMIT")
		self.note("nemesis", f"[another application on {c}, as postgres] {sql}  -- waits for the standby, "
				  f"holding the NOTIFY queue lock")
		self.stats["faults"] += 1
		st = Stmt(conn, sql)
		self.blockers[c] = (conn, pid, st)
		deadline = now() + 5
		while now() < deadline and not st.done.is_set():
			rows = self.sql_admin(c, f"SELECT wait_event FROM pg_stat_activity WHERE pid = {pid}")
			if rows and rows[0][0] == "SyncRep":
				break
			time.sleep(0.02)

	def notify_unblock(self, c):
		if c not in self.blockers:
			return
		conn, pid, st = self.blockers.pop(c)
		self.note("nemesis", f"[another application on {c}] its COMMIT's wait cancelled (pg_cancel_backend)")
		self.sql_admin(c, f"SELECT pg_cancel_backend({pid})")
		st.done.wait(20)
		try:
			conn.close()
		except Exception:
			pass
		time.sleep(0.2)
		self.poll_pending()

	# ---- the batch job (feature "job")

	def job(self, s, lock):
		"""doc/integrations.md's job in one statement: zk_lock_try_xact, two
		seconds of work, its result written to the other cluster through
		dblink.  J: that write never lands after the job's cluster was cut
		off for longer than the session timeout."""
		if s.xact is not None:
			return
		L = self.locks[lock]
		self.tagn += 1
		tag = f"{self.example}.{s.name}.job{self.tagn}"
		started = time.time()
		other = "b" if s.cluster == "a" else "a"

		def then(st):
			if st.error is not None:
				self.after_error(s, st)
				return
			if not (st.rows and st.rows[0][0]):
				return
			self.granted(s.name, L, "exclusive", None)
			rows = self.sql_admin(other, f"SELECT extract(epoch FROM at) FROM ledger WHERE tag = '{tag}'")
			cut = self.cut_wall.get(s.cluster)
			if rows and cut is not None and cut >= started - 0.5 and float(rows[0][0]) > cut + 4.5:
				raise Violation(f"J: {s.name}'s job, which took {L}, wrote through dblink {float(rows[0][0]) - cut:.1f} s "
								f"after cluster {s.cluster} was cut off ZooKeeper (its session of 4 s expired)")
			self.stats["checks"] += 1

		self.exec(s, f"SELECT explore_job('{L}', '{tag}', 6)", then, wait=0.3)

	# ---- downgrade (feature "downgrade")

	def downgrade(self, s, lock, release):
		"""An exclusive holder takes the lock shared too (for its session),
		then, with release, gives up the exclusive hold in the same
		statement: a downgrade."""
		L = self.locks[lock]
		ex = [h for h in s.holds if h.lock == L and h.mode == "exclusive" and h.scope == "session"
			  and h.lost_at is None]
		if not ex or (s.xact and s.xact.failed):
			return

		def then(st):
			if st.error is not None:
				self.after_error(s, st)
				return
			h = Hold(s.name, L, "shared", "session", self.depth(s), s.limited)
			h.acquired_at = st.returned_at
			s.holds.append(h)
			if release and st.rows and st.rows[0][1]:
				self.drop_hold(s, ex[-1])

		sql = f"SELECT zk_lock_acquire_shared('{L}', '2s')" + (f", zk_lock_release('{L}')" if release else "")
		self.exec(s, sql, then, wait=3.0)

	# ---- PL/pgSQL (feature "plpgsql")

	def plpgsql(self, s, lock, kind):
		L = self.locks[lock]
		if kind == "proc":
			if s.xact is not None:
				return
			self.tagn += 1
			tag = f"{self.example}.{s.name}.proc{self.tagn}"

			def then(st):
				if st.error is not None:
					self.after_error(s, st)
					return
				self.granted(s.name, L, "exclusive", None)
				if self.visible(tag + ".r"):
					raise Violation(f"P: the row a procedure rolled back under {L} is visible")
				self.stats["checks"] += 1

			self.exec(s, f"CALL explore_proc('{L}', '{tag}')", then, wait=6.0)
			return
		if not self.ensure_xact(s):
			return
		if kind == "exception":
			# The acquire's subtransaction rolled back: the hold goes with it.
			sql = (f"DO $$ BEGIN PERFORM zk_lock_acquire_xact('{L}', '2s'); PERFORM 1 / 0; "
				   f"EXCEPTION WHEN division_by_zero THEN NULL; END $$")
			self.exec(s, sql, lambda st: self.after_error(s, st), wait=3.0)
			return
		d = self.depth(s)
		if kind == "fetch_exc":
			# A FETCH in an exception block: the first row takes the lock,
			# the second divides by zero, caught: the portal's holds go.
			if not s.xact.cursors:
				return
			cur = s.xact.cursors[-1]
			sql = (f"DO $$ DECLARE c refcursor := '{cur[0]}'; r record; BEGIN "
				   f"BEGIN FETCH c INTO r; EXCEPTION WHEN division_by_zero THEN NULL; END; END $$")

			def then(st):
				if st.error is not None:
					self.after_error(s, st)
					return
				if cur[3] == 0:
					h = Hold(s.name, cur[2], "exclusive", "xact", d, s.limited)
					h.acquired_at = st.returned_at
					h.cursor = cur[0]
					s.holds.append(h)
					self.granted(s.name, cur[2], "exclusive", h)
				else:
					cur[4] = True
					for h in list(s.holds):
						if h.cursor == cur[0]:
							self.drop_hold(s, h)
				cur[3] += 1

			self.exec(s, sql, then, wait=3.0)
			return
		# A cursor opened (a portal that lives until the transaction ends)
		# and its first row fetched in a block: the lock is held.
		self.tagn += 1
		name = f"pc{self.tagn}"
		sql = (f"DO $$ DECLARE c refcursor := '{name}'; r record; BEGIN "
			   f"OPEN c FOR SELECT 1 / (2 - i) AS q, zk_lock_acquire_xact('{L}', '2s') AS t FROM generate_series(1, 3) i; "
			   f"FETCH c INTO r; END $$")

		def then(st):
			if st.error is not None:
				self.after_error(s, st)
				return
			h = Hold(s.name, L, "exclusive", "xact", d, s.limited)
			h.acquired_at = st.returned_at
			h.cursor = name
			s.holds.append(h)
			s.xact.cursors.append([name, d, L, 1, False])
			self.granted(s.name, L, "exclusive", h)

		self.exec(s, sql, then, wait=3.0)

	# ---- semaphores (feature "semaphore")

	def sem(self, s, lock, op):
		"""One permit of a semaphore of one permit; S: never two holders."""
		name = self.locks[lock] + ".sem"
		holders = self.sems.setdefault(name, [])
		if s.xact and s.xact.failed:
			return
		if op == "release":
			def then(st):
				self.after_error(s, st)
				if st.error is None and s.name in holders:
					holders.remove(s.name)
			self.exec(s, f"SELECT zk_semaphore_release('{name}')", then)
			return

		def then(st):
			if st.error is not None:
				self.after_error(s, st)
				return
			if st.rows and st.rows[0][0] not in (None, False):
				if holders:
					raise Violation(f"S: {s.name} was granted the one permit of {name} that {holders[0]} holds")
				holders.append(s.name)
				self.stats["checks"] += 1

		if s.name in holders:
			return
		fn = "zk_semaphore_try('%s', 1)" if op == "try" else "zk_semaphore_acquire('%s', 1, '1s')"
		self.exec(s, "SELECT " + fn % name, then, wait=2.0)

	# ---- zk_lock_check (with "downgrade")

	def check(self, s, lock):
		"""zk_lock_check, asked again after a ZK002 (the application caught
		it). C: never true for a lock this session lost while another holds
		it exclusively."""
		L = self.locks[lock]
		if s.xact and s.xact.failed:
			return

		def then(st, again=True):
			if st.error is not None:
				code = getattr(st.error, "pgcode", "")
				self.after_error(s, st)
				if code == "ZK002" and again and s.xact is None:
					self.exec(s, f"SELECT zk_lock_check('{L}')", lambda st2: then(st2, False))
				return
			if not (st.rows and st.rows[0][0]):
				return
			live = [h for h in s.holds if h.lock == L and h.lost_at is None and h.released_at is None]
			others = [(n, m) for n, m in self.current_holders(L, s.name) if m == "exclusive"]
			if not live and others:
				raise Violation(f"C: zk_lock_check('{L}') is true in {s.name}, which lost its holds of it, "
								f"while {others[0][0]} holds it exclusively")
			self.stats["checks"] += 1

		self.exec(s, f"SELECT zk_lock_check('{L}')", then)

	def op_check(self, s, lock):
		self.check(s, lock)

	# ---- an operator's cancel

	def cancel(self, s):
		if not s.pending:
			return
		self.note("nemesis", f"SELECT pg_cancel_backend(<{s.name}>)")
		self.sql_admin(s.cluster, f"SELECT pg_cancel_backend({s.pid})")
		self.finish_pending(s, 20)

	# ---- nemesis

	def wait_noticed(self, s, h, znode):
		"""Waits until zklock shows it knows the hold is gone (zk_locks
		shows it lost or no more), then marks it lost."""
		deadline = now() + 15
		while now() < deadline:
			rows = self.sql_admin(s.cluster, f"SELECT state FROM zk_locks WHERE pid = {s.pid} AND znode = '{znode}'")
			if not rows or rows[0][0] == "lost":
				h.lost_at = now()
				return
			time.sleep(0.05)
		raise Violation(f"Q: zklock did not notice in 15 s that {h.lock}'s node {znode} was deleted")

	def znode_of(self, s, h):
		rows = self.sql_admin(s.cluster, f"SELECT znode FROM zk_locks WHERE pid = {s.pid} AND name = '{h.lock}' "
							  f"AND mode = '{h.mode}' AND scope = '{'transaction' if h.scope == 'xact' else 'session'}' "
							  f"AND state = 'held'")
		if not rows:
			rows = self.sql_admin(s.cluster, f"SELECT znode FROM zk_locks WHERE pid = {s.pid} AND name = '{h.lock}' "
								  f"AND mode = '{h.mode}' AND state = 'held'")
		return rows[0][0] if rows else None

	def delete_node(self, si, lock):
		# The hold named, else any hold of that session, else any hold: a
		# fault is worth more than a skipped step.
		cands = [(self.sess[si], self.locks[lock])] + [(self.sess[si], None)] + [(o, None) for o in self.sess]
		for s, L in cands:
			hs = [h for h in s.holds if (L is None or h.lock == L) and h.lost_at is None]
			if hs and not s.pending and s.cluster not in self.cut_clusters:
				break
		else:
			return
		h = hs[0]
		L = h.lock
		znode = self.znode_of(s, h)
		if znode is None:
			return
		path = znode if znode.startswith("/") else self.paths[L] + "/" + znode
		self.note("nemesis", f"delete {s.name}'s node of {L} ({h.mode}): {path.rsplit('/', 1)[1]}")
		self.stats["faults"] += 1
		self.kz_delete(path)
		self.wait_noticed(s, h, znode)
		for o in s.holds:
			if o is not h and o.lock == L and o.mode == h.mode and self.znode_of(s, o) is None:
				o.lost_at = h.lost_at
			# A shared hold taken while the session held the lock exclusively
			# rests on that hold (doc/reference.md): lost with it.
			if h.mode == "exclusive" and o.lock == L and o.mode == "shared" and o.lost_at is None \
					and o.acquired_at >= h.acquired_at:
				o.lost_at = h.lost_at

	def revoke(self, lock):
		L = self.locks[lock]
		if self.cut_clusters:
			return
		self.note("nemesis", f"SELECT zk_lock_revoke('{L}')  -- as superuser, zklock.on_revoke = cancel")
		self.stats["faults"] += 1
		targets = []
		for s in self.sess:
			for h in s.holds:
				if h.lock == L and h.lost_at is None and not s.pending:
					targets.append((s, h, self.znode_of(s, h)))
		self.sql_admin("a", f"SELECT zk_lock_revoke('{L}')")
		for s, h, z in targets:
			if z:
				self.wait_noticed(s, h, z)

	def cancel_worker(self, c):
		rows = self.sql_admin(c, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'")
		if not rows:
			return
		self.note("nemesis", f"SELECT pg_cancel_backend(<zklock worker of cluster {c}>)")
		self.stats["faults"] += 1
		self.sql_admin(c, f"SELECT pg_cancel_backend({rows[0][0]})")
		self.cancelled.add(c)
		time.sleep(0.5)

	def restart_worker(self, c):
		"""A cancel the worker has not acted on yet would end it in a later
		program: terminate it (its ordinary restart, which logs) so that what
		the cancel does shows in this one, and wait for the next worker."""
		q = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'"
		rows = self.sql_admin(c, q)
		old = rows[0][0] if rows else None
		if old:
			self.sql_admin(c, f"SELECT pg_terminate_backend({old})")
		deadline = now() + 30
		while now() < deadline:
			rows = self.sql_admin(c, q)
			if rows and rows[0][0] != old and self.sql_admin(c, "SELECT state FROM zk_status()")[0][0] == "connected":
				return
			time.sleep(0.2)

	def hold_limit(self, s):
		if s.limited or (s.xact and s.xact.failed):
			return
		st = self.run(s, "SET zklock.max_hold_time = '1s'")
		if st is None:
			return
		if st.error is None:
			s.limited = True

	def cut(self, c):
		"""Cuts cluster c off ZooKeeper until its session expired (the
		negotiated timeout and a margin), marks its sessions' holds lost."""
		if self.env.relays[c].cut_now:
			return
		self.note("nemesis", f"cut cluster {c} off ZooKeeper; wait 7 s (its session of 4 s expires)")
		self.stats["faults"] += 1
		self.env.relays[c].cut()
		self.cut_clusters.add(c)
		self.cut_wall[c] = time.time()
		time.sleep(7)
		self.excuse_stalled(c)
		for name, holders in self.sems.items():
			holders[:] = [n for n in holders if [t for t in self.sess if t.name == n][0].cluster != c]
		for s in self.sess:
			if s.cluster == c:
				for h in s.holds:
					if h.lost_at is None:
						h.lost_at = now()

	def heal(self, c):
		if not self.env.relays[c].cut_now:
			return
		self.note("nemesis", f"reconnect cluster {c} to ZooKeeper")
		self.env.relays[c].heal()
		self.cut_clusters.discard(c)

	def pause(self):
		self.note("nemesis", "sleep 1.5 s")
		time.sleep(1.5)

	def release_then_try(self, s, lock):
		"""T: release then try in one statement, nobody else around."""
		if s.xact and s.xact.failed:
			return
		L = self.locks[lock]
		mine = [h for h in s.holds if h.lock == L]
		alone = (len(mine) == 1 and mine[0].scope == "session" and mine[0].mode == "exclusive"
				 and mine[0].lost_at is None and not mine[0].limited and L not in self.kzholds
				 and not any(o is not s and (o.pending or any(h.lock == L for h in o.holds)) for o in self.sess))
		def then(st):
			if st.error is not None:
				self.after_error(s, st)
				return
			if mine:
				self.drop_hold(s, mine[0])
			if st.rows[0][1]:
				h = Hold(s.name, L, "exclusive", "session", self.depth(s), s.limited)
				s.holds.append(h)
				self.granted(s.name, L, "exclusive", h)
			elif alone and st.rows[0][0] and not any(o is not s and any(h.lock == L for h in o.holds) for o in self.sess):
				raise Violation(f"T: {s.name} released {L} and tried it again in one statement: false, "
								f"with nobody else holding or waiting for it")

		self.exec(s, f"SELECT zk_lock_release('{L}'), zk_lock_try('{L}')", then)

	# ---- one step

	def step(self, stp):
		self.poll_pending()
		self.thaw_old()
		self.stats["steps"] += 1
		op = stp[0]
		args = stp[1:]
		nemesis = {"freeze": self.freeze, "thaw": self.thaw, "notify_block": self.notify_block,
				   "notify_unblock": self.notify_unblock}
		if op in nemesis:
			nemesis[op](*args)
			return
		if op in ("nemesis_delete", "revoke", "cancel_worker", "cut"):
			# These wait for a worker's answer or its notice: none is frozen.
			for c in list(self.frozen):
				self.thaw(c)
		if op in ("nemesis_delete", "revoke", "kz_try", "kz_release", "kz_acl_dir", "cancel_worker", "pause", "cut", "heal"):
			if op == "cut":
				self.cut(*args)
			elif op == "heal":
				self.heal(*args)
			elif op == "nemesis_delete":
				self.delete_node(*args)
			elif op == "revoke":
				self.revoke(*args)
			elif op == "kz_try":
				self.kz_try(*args)
			elif op == "kz_release":
				self.kz_release(*args)
			elif op == "kz_acl_dir":
				self.kz_acl_dir(*args)
			elif op == "cancel_worker":
				self.cancel_worker(*args)
			else:
				self.pause()
			return
		s = self.sess[args[0]]
		rest = args[1:]
		if op == "cancel":
			self.cancel(s)
			return
		if op == "pass":
			# The worker frozen around the step: its requests land in one pass.
			inner = tuple(rest[0])
			if s.pending or s.cluster in self.cut_clusters:
				return
			self.freeze(s.cluster)
			getattr(self, "op_" + inner[0])(s, *inner[1:])
			self.thaw(s.cluster)
			return
		if s.pending:
			# The session waits for its statement: a frozen worker is thawed.
			self.thaw(s.cluster)
			self.finish_pending(s, 40)
		getattr(self, "op_" + op)(s, *rest)

	def op_begin(self, s):
		self.ensure_xact(s)

	def op_commit(self, s, stall=False):
		self.commit(s, stall)

	def op_rollback(self, s):
		self.rollback(s)

	def op_acquire(self, s, lock, mode, scope, fn):
		self.acquire(s, lock, mode, scope, fn)

	def op_release(self, s, lock, mode):
		self.release(s, lock, mode)

	def op_release_all(self, s):
		self.release_all(s)

	def op_write(self, s, kind):
		self.write(s, kind)

	def op_fenced(self, s, kind):
		self.fenced_write(s, kind)

	def op_savepoint(self, s):
		self.savepoint(s)

	def op_rollback_to(self, s):
		self.rollback_to(s)

	def op_release_sp(self, s):
		self.release_sp(s)

	def op_declare(self, s, lock, div_first=False):
		self.declare(s, lock, div_first)

	def op_fetch(self, s):
		self.fetch(s)

	def op_open_cursor(self, s, lock, div_first=False):
		self.open_cursor(s, lock, div_first)

	def op_fetch_in_savepoint(self, s):
		self.fetch_in_savepoint(s)

	def op_prepare(self, s):
		self.prepare(s)

	def op_finish_prepared(self, s, commit):
		self.finish_prepared(s, commit)

	def op_hold_limit(self, s):
		self.hold_limit(s)

	def op_release_then_try(self, s, lock):
		self.release_then_try(s, lock)

	def op_leader(self, s):
		self.leader(s)

	def op_job(self, s, lock):
		self.job(s, lock)

	def op_downgrade(self, s, lock, release=True):
		self.downgrade(s, lock, release)

	def op_plpgsql(self, s, lock, kind):
		self.plpgsql(s, lock, kind)

	def op_sem(self, s, lock, op):
		self.sem(s, lock, op)

	def op_cancel(self, s):
		self.cancel(s)

	def run_program(self, program):
		self.stats["programs"] += 1
		self.begin_example()
		try:
			for stp in program:
				self.step(tuple(stp))
			for c in list(self.frozen):
				self.thaw(c)
			for c in list(self.blockers):
				self.notify_unblock(c)
			# The end of a program: commit every open transaction, so that
			# what was written is judged.
			for s in self.sess:
				if s.pending:
					self.finish_pending(s, 40)
				if s.xact:
					self.commit(s)
			for s in self.sess:
				if s.pending:
					self.finish_pending(s, 40)
		finally:
			try:
				self.end_example()
			except Violation:
				if sys.exc_info()[0] is None:
					raise
				raise

	def format_script(self):
		out = []
		for who, text in self.script:
			out.append(f"[{who}] {text}")
		return "\n".join(out)


def describe(st):
	if st.error is not None:
		return f"ERROR {getattr(st.error, 'pgcode', '?')}: {str(st.error).splitlines()[0]}"
	if st.rows:
		return f"{st.status} {st.rows[0]}"
	return st.status


# ---------------------------------------------------------------- grammar

def strategies(features):
	from hypothesis import strategies as st
	# A program is mostly one session's, on one lock, as users' are; the
	# others come in between (s0 and s1 on a, s2 on b).
	S = st.sampled_from([0, 0, 0, 1, 1, 2])
	K = st.sampled_from([0, 0, 1])
	steps = [
		st.tuples(st.just("begin"), S),
		st.tuples(st.just("commit"), S),
		st.tuples(st.just("commit"), S),
		st.tuples(st.just("rollback"), S),
		st.tuples(st.just("acquire"), S, K, st.sampled_from(["exclusive", "exclusive", "shared"]),
				  st.sampled_from(["xact", "session"]), st.sampled_from(["acquire", "try"])),
		st.tuples(st.just("acquire"), S, K, st.just("exclusive"), st.sampled_from(["xact", "session"]), st.just("set")),
		st.tuples(st.just("release"), S, K, st.sampled_from(["exclusive", "shared"])),
		st.tuples(st.just("release_all"), S),
		st.tuples(st.just("write"), S, st.just("local")),
		st.tuples(st.just("write"), S, st.just("local")),
		st.tuples(st.just("savepoint"), S),
		st.tuples(st.just("rollback_to"), S),
		st.tuples(st.just("release_sp"), S),
		st.tuples(st.just("nemesis_delete"), S, K),
		st.tuples(st.just("kz_try"), K, st.just(False), st.just(False)),
		st.tuples(st.just("kz_release"), K),
		st.tuples(st.just("pause")),
	]
	C = st.sampled_from(["a", "b"])
	if "cursor" in features:
		steps += [st.tuples(st.just("declare"), S, K, st.booleans()), st.tuples(st.just("fetch"), S),
				  st.tuples(st.just("open_cursor"), S, K, st.booleans()), st.tuples(st.just("fetch_in_savepoint"), S)]
	if "fdw" in features:
		steps += [st.tuples(st.just("write"), S, st.just("fdw"))] * 2
	if "prepare" in features:
		steps += [st.tuples(st.just("prepare"), S), st.tuples(st.just("finish_prepared"), S, st.booleans())] * 2
	if "stall" in features:
		steps += [st.tuples(st.just("commit"), S, st.just(True)), st.tuples(st.just("commit"), S, st.just(True)),
				  st.tuples(st.just("hold_limit"), S), st.tuples(st.just("cancel"), S)]
	if "revoke" in features:
		steps += [st.tuples(st.just("revoke"), K)]
	if "fence" in features:
		# The fence's lock is l0: a leader holds it for its session and
		# writes with its token; the others write as applications do.
		steps += [st.tuples(st.just("leader"), S)] * 2
		steps += [st.tuples(st.just("fenced"), S, st.sampled_from(
			["orm", "orm_reload", "upsert", "on_conflict", "own", "merge", "merge", "child_update", "child_insert", "delete"]))] * 3
	if "acl" in features:
		steps += [st.tuples(st.just("kz_acl_dir"), K, st.sampled_from(["delete", "write"])),
				  st.tuples(st.just("release_then_try"), S, K)]
	if "longname" in features:
		steps += [st.tuples(st.just("kz_try"), K, st.booleans(), st.booleans())]
	if "cut" in features:
		steps += [st.tuples(st.just("cut"), st.sampled_from(["a", "b"])), st.tuples(st.just("heal"), st.sampled_from(["a", "b"]))]
	if "signal" in features:
		steps += [st.tuples(st.just("cancel_worker"), st.sampled_from(["a", "b"]))]
	if "freeze" in features:
		steps += [st.tuples(st.just("freeze"), C), st.tuples(st.just("thaw"), C)]
		inner = [st.tuples(st.just("release_then_try"), K), st.tuples(st.just("release"), K, st.just("exclusive")),
				 st.tuples(st.just("acquire"), K, st.sampled_from(["exclusive", "shared"]), st.sampled_from(["xact", "session"]),
						   st.sampled_from(["acquire", "try"]))]
		steps += [st.tuples(st.just("pass"), S, st.one_of(*inner))] * 2
	if "notify" in features:
		steps += [st.tuples(st.just("write"), S, st.just("notify"))] * 2
		steps += [st.tuples(st.just("notify_block"), C), st.tuples(st.just("notify_unblock"), C)]
	if "job" in features:
		steps += [st.tuples(st.just("job"), S, K)]
	if "downgrade" in features:
		steps += [st.tuples(st.just("downgrade"), S, K, st.booleans())]
		steps += [st.tuples(st.just("check"), S, K)]
	if "plpgsql" in features:
		steps += [st.tuples(st.just("plpgsql"), S, K, st.sampled_from(["exception", "cursor", "fetch_exc", "proc"]))]
	if "semaphore" in features:
		steps += [st.tuples(st.just("sem"), S, K, st.sampled_from(["try", "acquire", "release"]))]
	# Deleting a held node is the commonest fault: it needs a hold first, so
	# it is drawn more often than the rest.
	steps += [st.tuples(st.just("nemesis_delete"), S, K)] * 2
	single = st.one_of(*steps)
	scenario = scenarios(st, features)
	# A program: a few blocks, each a user's scenario around one feature
	# (drawn feature first, so that every feature weighs alike whatever its
	# number of steps) or a few single steps of the whole grammar (the
	# combinations nobody thought of), flattened into one list of steps.
	block = st.one_of(scenario, scenario, scenario, st.lists(single, min_size=1, max_size=4))
	return st.lists(block, min_size=1, max_size=4).map(lambda bs: [stp for b in bs for stp in b])


# Sessions 0 and 1 are on cluster a, 2 on b.
CLUSTER_OF = {0: "a", 1: "a", 2: "b"}


def scenarios(st, features):
	"""A user's transaction around one feature: a feature drawn first, then
	what comes before it (a foreign holder, a leader, a blocked NOTIFY
	queue, a hold limit), the acquire, the feature's steps mixed with
	writes, the end (COMMIT, a stalled COMMIT, PREPARE, ROLLBACK), and a
	contender after it; a fault drawn from the nemesis is put at one of the
	moments that matter (after the acquire, after a write, between the
	feature's steps, during the COMMIT, after it)."""

	@st.composite
	def scenario(draw):
		# Features with many kinds of step weigh more (fence's nine
		# writes, PL/pgSQL's four blocks), so that each kind weighs about
		# like a feature of one kind.
		f = draw(st.sampled_from(sorted(features) + [x for x in ("fence", "fence", "plpgsql") if x in features]))
		s = draw(st.sampled_from([0, 0, 1, 2]))
		if f == "stall":
			# The stalled COMMIT waits on b (zklock.on_lock_lost = error).
			s = draw(st.sampled_from([2, 2, 2, 0]))
		o = draw(st.sampled_from([x for x in (0, 1, 2) if x != s]))
		k = draw(st.sampled_from([0, 0, 1]))
		c = CLUSTER_OF[s]
		pre, body, after = [], [], []
		acquire = draw(st.sampled_from([True, True, True, False]))
		mode = draw(st.sampled_from(["exclusive", "exclusive", "shared"]))
		scope = draw(st.sampled_from(["xact", "session"]))
		fn = draw(st.sampled_from(["acquire", "acquire", "try", "set"]))
		if fn == "set":
			mode = "exclusive"
		end = draw(st.sampled_from(["commit", "commit", "commit", "stall", "rollback", "none"]))
		key = None	# the feature's moment that matters (a place in steps), if not the COMMIT
		write = draw(st.sampled_from(["local", "local", "fdw", "notify"] if "fdw" in features and "notify" in features
									 else ["local"]))
		if f == "core":
			body = draw(st.lists(st.sampled_from([("write", s, "local"), ("savepoint", s), ("rollback_to", s),
												  ("release_sp", s), ("release", s, k, mode), ("release_all", s)]),
								 min_size=1, max_size=4))
		elif f == "cursor":
			sp = draw(st.booleans())
			body = [(draw(st.sampled_from(["open_cursor", "declare"])), s, k, draw(st.booleans())), ("write", s, write),
					("fetch_in_savepoint", s) if sp else ("fetch", s)]
			acquire = draw(st.booleans())
			key = -1	# before the FETCH
		elif f == "fdw":
			body = draw(st.permutations([("write", s, "fdw"), ("write", s, "local")]))[:draw(st.sampled_from([1, 2, 2]))]
			key = 0		# before the writes
		elif f == "prepare":
			body = [("write", s, write), ("prepare", s), ("finish_prepared", draw(st.sampled_from([s, o])), draw(st.booleans()))]
			end = "none"
			key = -1	# between PREPARE and its end
		elif f == "stall":
			if draw(st.booleans()):
				pre = [("hold_limit", s)]
			body = [("write", s, write)]
			end = "stall"
		elif f == "revoke":
			body = [("write", s, write), ("revoke", k)]
		elif f == "fence":
			kind = draw(st.sampled_from(["orm", "orm_reload", "upsert", "on_conflict", "own", "merge",
										 "child_update", "child_insert", "delete"]))
			# Fencing is for a leader elected elsewhere: most scenarios
			# have one, and an application that writes beside it seldom
			# waits for its lock first.
			leader = draw(st.sampled_from([True, True, True, False]))
			# A fence table is per database: its leader is a session of
			# the same cluster (there is one on b, so the scenario runs on a).
			if leader:
				s = draw(st.sampled_from([0, 0, 1]))
				c, o = CLUSTER_OF[s], 1 - s
				pre = [("leader", o)]
			k = 0
			acquire = draw(st.sampled_from([True, False, False, False] if leader else [True, False]))
			mode, scope, fn = "exclusive", draw(st.sampled_from(["xact", "session"])), "acquire"
			body = [("fenced", s, kind)]
		elif f == "acl":
			pre = [("kz_acl_dir", k, draw(st.sampled_from(["delete", "write"])))]
			scope, mode = "session", "exclusive"
			rt = ("release_then_try", s, k)
			body = [draw(st.sampled_from([rt, ("pass", s, ["release_then_try", k])])) for _ in range(draw(st.integers(1, 2)))]
			end = draw(st.sampled_from(["commit", "none"]))
		elif f == "longname":
			pre = [("kz_try", k, draw(st.booleans()), draw(st.booleans()))]
			body = [draw(st.sampled_from([("open_cursor", s, k, False), ("write", s, write)]))]
		elif f == "cut":
			body = [("write", s, write), ("cut", c)]
			if draw(st.booleans()):
				after = [("heal", c)]
		elif f == "signal":
			body = [("write", s, write), ("cancel_worker", c)]
		elif f == "freeze":
			inner = draw(st.sampled_from([["release_then_try", k], ["release", k, "exclusive"],
										  ["acquire", k, mode, scope, draw(st.sampled_from(["acquire", "try"]))]]))
			body = [("pass", s, inner), ("write", s, write)]
		elif f == "notify":
			pre = [("notify_block", c)] if draw(st.booleans()) else []
			body = [("write", s, "notify")]
			if pre:
				after = [("notify_unblock", c)]
				end = draw(st.sampled_from(["commit", "commit", "stall", "rollback"]))
		elif f == "job":
			acquire = False
			body = [("job", s, k)]
			end = "none"
			key = 1		# while it runs
		elif f == "downgrade":
			mode, scope, fn, acquire = "exclusive", "session", "acquire", True
			body = [("downgrade", s, k, draw(st.booleans())), ("check", s, k)]
			if draw(st.booleans()):
				# Another session queued behind the exclusive hold.
				body.insert(0, ("acquire", o, k, "exclusive", "session", "acquire"))
			key = -1	# before the check
		elif f == "plpgsql":
			body = [("plpgsql", s, k, draw(st.sampled_from(["exception", "cursor", "fetch_exc", "proc"])))]
		elif f == "semaphore":
			body = draw(st.lists(st.tuples(st.just("sem"), st.sampled_from([s, o]), st.just(k),
										   st.sampled_from(["try", "acquire", "release"])), min_size=1, max_size=3))
		steps = list(pre)
		if acquire:
			steps.append(("acquire", s, k, mode, scope, fn))
		first = len(steps)
		if key is not None:
			key = first + (key if key >= 0 else len(body) + key)
		steps += body
		if end in ("commit", "stall") and key is None:
			key = len(steps) + 1	# during (a stalled one) or right after the COMMIT
		if end == "commit":
			steps.append(("commit", s))
		elif end == "stall":
			steps.append(("commit", s, True))
		elif end == "rollback":
			steps.append(("rollback", s))
		# The contender: another session wanting the lock after (or while)
		# the first commits.
		if draw(st.sampled_from([True, True, False])):
			steps.append(("acquire", o, k, "exclusive", draw(st.sampled_from(["xact", "session"])), "acquire"))
		steps += after
		# The fault, at one of the moments that matter.
		nem = [("nemesis_delete", s, k), ("nemesis_delete", s, k), ("nemesis_delete", s, k), None]
		if "cut" in features:
			nem += [("cut", c)]
		if "revoke" in features:
			nem += [("revoke", k)]
		if "signal" in features:
			nem += [("cancel_worker", c)]
		if "stall" in features:
			nem += [("hold_limit", s)]
		if "longname" in features:
			nem += [("kz_try", k, True, True)]
		fault = draw(st.sampled_from(nem))
		if fault is not None:
			# Half the time at the feature's moment that matters (during
			# or right after the COMMIT, before a FETCH, between PREPARE
			# and its end, ...), else anywhere after the acquire.
			if key is not None and key <= len(steps) and draw(st.booleans()):
				at = key
			else:
				at = draw(st.integers(first, len(steps)))
			steps.insert(at, fault)
		if draw(st.booleans()):
			steps.append(("pause",))
		return [list(x) for x in steps]

	return scenario()


# ---------------------------------------------------------------- main

def main():
	ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	ap.add_argument("--seconds", type=float, default=180)
	ap.add_argument("--seed", type=int, default=None, help="default: random, printed")
	ap.add_argument("--all", action="store_true", help="every feature, also those waiting for their issue")
	ap.add_argument("--features", default=None, help="comma-separated features (default: those enabled in CI)")
	ap.add_argument("--pg-config", default=os.environ.get("PG_CONFIG", "pg_config"))
	ap.add_argument("--found", default=None, help="directory where a failure's script is written")
	ap.add_argument("--replay", default=None, nargs="+", metavar="FILE",
					help="run the program (JSON) of each found script, once, in one set of clusters")
	ap.add_argument("--shrink", default=None, metavar="FILE",
					help="shrink the program of a found script further (for --shrink-seconds, default 300), "
						 "keeping the same oracle, and print the shorter script")
	ap.add_argument("--tap", action="store_true", help="print TAP")
	ap.add_argument("--shrink-seconds", type=float, default=None,
					help="bound on shrinking a failure (default: 600, or the run's length if longer)")
	ap.add_argument("--keep-going", action="store_true", help="after a failure, go on exploring")
	ap.add_argument("--list-features", action="store_true")
	args = ap.parse_args()

	if args.list_features:
		for f, (issue, what) in FEATURES.items():
			state = "on in CI" if f in ENABLED_IN_CI else f"waits for issue {issue}"
			print(f"{f:10} {state:22} {what}")
		return 0

	logging.basicConfig(level=logging.CRITICAL)
	if os.geteuid() == 0:
		# PostgreSQL refuses root: run as the postgres account.
		os.execvp("runuser", ["runuser", "-u", "postgres", "--", sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

	top = os.environ.get("EXPLORE_TOP") or os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
	if args.replay:
		features = list(FEATURES)
	elif args.all or os.environ.get("EXPLORE_ALL") == "1":
		features = list(FEATURES)
	elif args.features:
		features = ["core"] + [f for f in args.features.split(",") if f in FEATURES]
	else:
		features = list(ENABLED_IN_CI)

	seeds = [args.seed] if args.seed is not None else [random.randrange(1 << 31)]
	work = tempfile.mkdtemp(prefix="zklock-explore.")
	env = Env(top, args.pg_config, work)
	out = sys.stdout
	failures = []
	ok = False
	ex = None

	def stop(*_):
		raise KeyboardInterrupt

	signal.signal(signal.SIGTERM, stop)
	try:
		env.start()
		ex = Explorer(env, features, out)
		if args.shrink:
			with open(args.shrink) as f:
				program = json.loads(re.search(r"^-- program: (.*)$", f.read(), re.M).group(1))
			try:
				ex.run_program(program)
				print("shrink: the program passes: nothing to shrink")
				return 1
			except Violation as v:
				best = (program, str(v), ex.format_script())
			until = now() + (args.shrink_seconds if args.shrink_seconds is not None else 300)
			program, v, script = remove_steps(ex, best, until)
			report(ex, program, v, script, args.seed or 0, 0, args, sys.stdout, 0)
			ok = True
			return 0
		if args.replay:
			bad = 0
			for n, path in enumerate(args.replay, 1):
				with open(path) as f:
					program = json.loads(re.search(r"^-- program: (.*)$", f.read(), re.M).group(1))
				name = os.path.basename(path)
				try:
					ex.run_program(program)
					print(f"replay {name}: no violation\n{ex.format_script()}", flush=True)
					if args.tap:
						print(f"ok {n} - replay {name}")
				except Violation as v:
					bad += 1
					print(f"replay {name}: {v}\n{ex.format_script()}", flush=True)
					if args.tap:
						print(f"not ok {n} - replay {name}")
			if args.tap:
				print(f"1..{len(args.replay)}")
			ok = bad == 0
			return 0 if ok else 1
		print(f"explore: features {','.join(features)}; seed {seeds[0]}; {args.seconds:.0f} s; work {work}", flush=True)
		failures = explore(ex, features, seeds[0], args, out)
		ok = not failures
	except KeyboardInterrupt:
		print("explore: interrupted", file=sys.stderr)
	finally:
		if ex is not None:
			try:
				ex.kz.stop()
				ex.kz.close()
			except Exception:
				pass
		env.stop()
		if ok:
			shutil.rmtree(work, ignore_errors=True)
		else:
			print(f"explore: work directory kept: {work}", file=sys.stderr)
	if args.tap:
		print("1..1")
		print(("ok" if ok else "not ok") + f" 1 - explore, seed {seeds[0]}, {len(features)} features")
	return 0 if ok else 1


def explore(ex, features, seed, args, out):
	from hypothesis import given, settings, seed as hseed, HealthCheck, Phase
	from hypothesis.errors import Flaky

	programs = strategies(features)
	start = now()
	end_explore = start + args.seconds
	found = []
	state = {"best": None, "shrink_end": None, "fail_at": None, "kind": None}
	known = set()	# with --keep-going: the kinds already found pass

	def attempt(program):
		if state["shrink_end"] is not None and now() > state["shrink_end"]:
			return	# shrinking is over: the best failure so far stands
		if state["shrink_end"] is None and now() > end_explore:
			return
		try:
			ex.run_program(program)
		except Violation as v:
			kind = str(v).split(":")[0]
			if kind in known:
				return
			if state["kind"] is not None and kind != state["kind"]:
				# Shrinking keeps to the first violation's kind: another one
				# met on the way would take its place and lose its script.
				print(f"explore: while shrinking, another violation, left to a later batch: {v}", flush=True)
				return
			script = ex.format_script()
			best = state["best"]
			if best is None or len(program) < len(best[0]) or (len(program) == len(best[0]) and len(script) < len(best[2])):
				state["best"] = (list(program), str(v), script)
			if state["shrink_end"] is None:
				state["kind"] = kind
				state["fail_at"] = now()
				budget = args.shrink_seconds if args.shrink_seconds is not None else max(600, args.seconds)
				state["shrink_end"] = now() + budget
				print(f"explore: violation after {now() - start:.0f} s, {ex.stats['programs']} programs: {v}; shrinking", flush=True)
			raise

	batch = 0
	# Each batch's seed is drawn from the run's seed: neighbouring seeds
	# (seed + batch) would repeat programs of another run's batches.
	batch_seeds = random.Random(seed)
	while now() < end_explore:
		batch += 1
		state.update(best=None, shrink_end=None, kind=None)
		test = settings(max_examples=20, deadline=None, database=None, derandomize=False, print_blob=False,
						suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
						phases=[Phase.generate, Phase.shrink])(given(programs)(attempt))
		test = hseed(batch_seeds.randrange(1 << 31))(test)
		try:
			test()
		except Exception:
			pass
		if state["best"]:
			state["best"] = remove_steps(ex, state["best"], now() + (args.shrink_seconds if args.shrink_seconds is not None else 600) / 2)
			program, v, script = state["best"]
			found.append(state["best"])
			known.add(v.split(":")[0])
			report(ex, program, v, script, seed, batch, args, out, state["fail_at"] - start)
			if not args.keep_going:
				break
		print(f"explore: {now() - start:.0f} s, {ex.stats}", flush=True)
	print(f"explore: done: {ex.stats}, violations {len(found)}", flush=True)
	return found


def remove_steps(ex, best, until):
	"""Hypothesis's shrinking gives up on a failure that does not come back
	every time (a race): this pass goes on from its best, removing chunks of
	steps, then single steps, and keeps each smaller program that fails the
	same way (the same oracle), trying each twice."""
	program, v, script = best
	kind = v.split(":")[0]

	def fails(p):
		for _ in range(2):
			if now() > until:
				return None
			try:
				ex.run_program(p)
			except Violation as e:
				if str(e).split(":")[0] == kind:
					return (p, str(e), ex.format_script())
		return None

	n = 2
	while len(program) > 1 and now() < until:
		chunk = max(1, len(program) // n)
		i = 0
		progress = False
		while i < len(program) and now() < until:
			cand = program[:i] + program[i + chunk:]
			r = fails(cand) if cand else None
			if r:
				program, v, script = r
				progress = True
			else:
				i += chunk
		if chunk == 1 and not progress:
			break
		if not progress:
			n *= 2
	return (program, v, script)


def report(ex, program, v, script, seed, batch, args, out, after):
	text = (f"-- zklock explorer: a violation, found after {after:.0f} s (seed {seed}, batch {batch})\n"
			f"-- {v}\n"
			f"-- replay: python3 test/explore/explore.py --replay THIS_FILE\n"
			f"-- program: {json.dumps(program)}\n"
			+ "\n".join("-- " + l if not l.startswith("[") else l for l in script.splitlines()) + "\n")
	print("explore: shrunk to", len(program), "steps:\n" + text, flush=True)
	if args.found:
		os.makedirs(args.found, exist_ok=True)
		name = re.sub(r"[^a-z0-9]+", "-", v.split(":")[0].lower()) + f"-{seed}-{batch}.sql"
		with open(os.path.join(args.found, name), "w") as f:
			f.write(text)


if __name__ == "__main__":
	sys.exit(main())
