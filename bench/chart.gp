# chart.gp: draws the benchmark's chart (bench/out/bench.png) from the data
# files bench.py writes, one per panel: chart-a.dat (shape a, median ms),
# chart-b.dat (b, acquisitions/s), chart-c.dat (c, handoffs/s), chart-d.dat
# (d, ZooKeeper requests per handoff), chart-g1.dat and chart-g2.dat (g at
# 1 ms one-way delay: median ms of the cycle, acquisitions/s of the
# clients on distinct locks; ZooKeeper remote, and the application remote
# too), chart-bz.dat (b at equal offered load, ZooKeeper's CPU per cycle,
# us) and chart-h.dat (h, the fleet's cycles/s).  Each line: "contender"
# value.  zklock appears as timed inside the backend ("zklock in-backend":
# no client round trip, not what a client sees), by pgbench over the Unix
# socket, and by pgbench over TCP with two threads (as users run it: the
# targets' row).  chart-sizes.gp, written with them, sets clients, waiters,
# clusters and load (the sizes of (b), (c), (d) and (h), smaller in the
# smoke run, and the offered load of the ZooKeeper CPU panel) for the titles.
#
#   gnuplot -e "datadir='DIR'; out='FILE.png'" bench/chart.gp

load datadir."/chart-sizes.gp"

set terminal pngcairo size 1500,2050 noenhanced font ",10"
set output out
set multiplot layout 4,2 title "zklock benchmark: zklock, Curator, kazoo, pg_advisory_lock and the bare ZooKeeper floor, one ZooKeeper server ((h): a three-server ensemble)"
set style data histograms
set style fill solid 0.7 border -1
set boxwidth 0.7
set grid ytics
set xtics rotate by -30 scale 0
set key off
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set bmargin 9

set title "(a) one client, uncontended acquire + release: median (ms, lower is better)"
plot datadir."/chart-a.dat" using 2:xtic(1) lc rgb "#4477aa", \
	'' using 0:2:(sprintf("%.3f", $2)) with labels offset 0,0.8

# pg_advisory_lock is two orders of magnitude faster: rates on a log scale.
set logscale y
set yrange [100:*]
set offsets 0, 0, 0, 0
set title sprintf("(b) %d clients on %d locks: acquisitions per second, log scale (higher is better)", clients, clients)
plot datadir."/chart-b.dat" using 2:xtic(1) lc rgb "#228833", \
	'' using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.8

set title sprintf("(c) %d clients on one lock: handoffs per second, log scale (higher is better)", clients)
plot datadir."/chart-c.dat" using 2:xtic(1) lc rgb "#ccbb44", \
	'' using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.8

unset logscale y
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set title sprintf("(d) %d waiters on one lock: ZooKeeper requests per handoff (lower is better)", waiters)
plot datadir."/chart-d.dat" using 2:xtic(1) lc rgb "#aa3377", \
	'' using 0:2:(sprintf("%.2f", $2)) with labels offset 0,0.8

set title "(g) 1 ms each way (app remote: to PostgreSQL too): uncontended cycle, median (ms, lower is better)"
plot datadir."/chart-g1.dat" using 2:xtic(1) lc rgb "#66ccee", \
	'' using 0:2:(sprintf("%.2f", $2)) with labels offset 0,0.8

set title sprintf("(g) 1 ms each way (app remote: to PostgreSQL too): %d clients, %d locks, cycles/s (higher is better)", clients, clients)
plot datadir."/chart-g2.dat" using 2:xtic(1) lc rgb "#ee6677", \
	'' using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.8

set title sprintf("(b) %d clients, %d locks, equal offered load %d cycles/s: ZooKeeper's CPU per cycle (us, lower is better)", clients, clients, load)
plot datadir."/chart-bz.dat" using 2:xtic(1) lc rgb "#bbbbbb", \
	'' using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.8

set title sprintf("(h) fleet: %d clusters x %d clients on distinct locks, 3-server ensemble: cycles per second (higher is better)", clusters, clients)
plot datadir."/chart-h.dat" using 2:xtic(1) lc rgb "#44aa99", \
	'' using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.8

unset multiplot
