"""zkbench: the code of zklock's benchmark, run by bench/bench.py (which
bench/run.sh starts); bench/README.md says what every number means.

  processes    every process started, and stopping them by pid; drivers
  postgres     the clusters, and open psql sessions
  zookeeper    ZooKeeper's own counters (four-letter words mntr, cons)
  cpu          CPU time and context switches over a measured window
  stats        percentiles, medians, handoff delays
  results      the rows, the printed table, results.csv
  harness      what the shapes share: servers, sizes, rounds, pgbench
  uncontended  shape (a): one client, uncontended acquire + release
  loops        shapes (b) and (c): many clients, distinct locks or one; (b) at
               equal offered load; (c) across clusters
  waiters      shape (d): ZooKeeper requests per handoff to queued waiters
  many_locks   shape (e): 10,000 locks held at once by one cluster
  max_locks    shape (f): zklock.max_locks = 100000 against the default
  network      shape (g): the uncontended cycle and 16 distinct locks through
               zkrelay.c, a fixed delay each way between clients and ZooKeeper
               (and, app remote, between pgbench and PostgreSQL too)
  fleet        shape (h): three clusters on a three-server ensemble against
               three Curator processes: the fleet's cycles/s, ZooKeeper's CPU
  benchmark    Bench: every shape in order, the table, the chart's data
"""
