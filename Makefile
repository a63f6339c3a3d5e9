# zklock: PGXS build of the extension and its test suites.

MODULE_big = zklock
OBJS = src/zklock.o src/shmem.o src/encode.o src/worker.o src/session_file.o src/lock_rule.o src/recipe.o \
	src/backend.o src/contenders.o src/functions.o

EXTENSION = zklock
DATA = zklock--1.0.sql
PGFILEDESC = "zklock - ZooKeeper distributed locks"

SHLIB_LINK = -lzookeeper_mt -lpthread
PG_CPPFLAGS = -I$(srcdir)/src

# Suites need a server started with zklock preloaded and a ZooKeeper
# (test/run_all.sh sets both up).
REGRESS = setup basic lifetimes input security hostile_input
ISOLATION = timeout shared
ISOLATION_OPTS = --load-extension=zklock

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: a changed struct must rebuild every
# object that sees it.
$(OBJS): $(wildcard $(srcdir)/src/*.h)

# The benchmark (bench/run.sh): zklock beside Curator, kazoo, pg_advisory_lock
# and bare ZooKeeper requests; see bench/README.md.
bench:
	bash bench/run.sh
.PHONY: bench
