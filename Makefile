# zklock: PGXS build of the extension and its test suites.

MODULE_big = zklock
# The sources by process (see doc/internals.md): the module's entry and its
# settings on top of src/; shared/ is the shared-memory protocol both sides
# use; rules/ and names/ are pure code (unit-tested in test/unit without a
# server); backend/ runs in the backends; worker/ in the background worker.
OBJS = src/zklock.o src/settings.o \
	src/shared/shmem.o src/shared/stats.o src/shared/wait_events.o \
	src/rules/clock.o src/rules/heartbeat.o src/rules/json_fields.o src/rules/lock_rule.o src/rules/recent_read.o \
	src/rules/session_record.o src/rules/slot_quota.o src/rules/stats_record.o src/rules/waits_for.o \
	src/names/encode.o src/names/lock_name.o src/names/name_text.o \
	src/backend/request.o src/backend/locks.o src/backend/xact_holds.o src/backend/acquire.o src/backend/xact_end.o \
	src/backend/contenders.o src/backend/recent_read.o src/backend/fence.o src/backend/fence_trigger.o \
	src/backend/waits_graph.o src/backend/deadlock_check.o src/backend/waits_view.o \
	src/backend/functions.o \
	src/worker/worker.o src/worker/session.o src/worker/zk_events.o src/worker/slot_steps.o src/worker/lock_recipe.o \
	src/worker/semaphore.o src/worker/inspect.o src/worker/dispatch.o src/worker/slot_recovery.o \
	src/worker/session_file.o src/worker/session_auth.o src/worker/send_hold.o src/worker/write_batch.o src/rules/write_batch_rule.o src/rules/dir_acl.o \
	src/rules/pass_budget.o src/worker/undeletable.o src/worker/zk_io.o src/rules/zk_wait.o \
	src/rules/auth_value.o
SRC_DIRS = src src/shared src/rules src/names src/backend src/worker

EXTENSION = zklock
# The first version's script and every update after it, in order; the
# versions before the newest are reached only through the updates.
UPDATES = zklock--1.0--1.1.sql zklock--1.1--1.2.sql zklock--1.2--1.3.sql zklock--1.3--1.4.sql zklock--1.4--1.5.sql
DATA = zklock--1.0.sql $(UPDATES)
# The full script of the newest version (zklock.control's default_version)
# is the first one plus every update, so that a fresh install and an
# updated one cannot differ.  Each piece's psql guard (\echo ... \quit) is
# dropped and the whole gets one of its own, as every script that ships has.
DATA_built = zklock--1.5.sql
PGFILEDESC = "zklock - ZooKeeper distributed locks"

# libzookeeper's single-threaded build: the worker's loop drives it
# (src/worker/zk_io.c).  Debian's libzookeeper-st-dev conflicts with
# libzookeeper-mt-dev, whose headers are the same, so the headers come from
# the latter and the library is linked by its soname (libzookeeper-st2).
SHLIB_LINK = -l:libzookeeper_st.so.2
# The module's version (PG_MODULE_MAGIC_EXT, 18) is the extension's.
ZKLOCK_VERSION = $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(srcdir)/zklock.control)
PG_CPPFLAGS = -I$(srcdir)/src -DZKLOCK_VERSION='"$(ZKLOCK_VERSION)"'
# An out-of-tree build (make VPATH=..., as Debian's pg_buildext does in
# build-15/) writes the objects to src/ of the build directory: make it.
ifdef VPATH
$(shell mkdir -p $(SRC_DIRS))
endif

# Suites need a server started with zklock preloaded and a ZooKeeper
# (test/run_all.sh sets both up).
# upgrade replaces the fresh extension by 1.0 updated to the newest version,
# and the suites after it run on that; old_shapes calls each version's
# declarations through the library, and leaves 1.0 updated too.
REGRESS = setup basic lifetimes scopes input security hostile_input semaphore fence stats upgrade old_shapes basic
ISOLATION = timeout timeout_infinity shared fence_race stats_wait
ISOLATION_OPTS = --load-extension=zklock

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(DATA_built): zklock--1.0.sql $(UPDATES)
	{ echo '/* $@: SQL objects of the zklock extension (built from zklock--1.0.sql and the upgrade scripts) */'; \
	  echo; printf '%s\n' '\echo Use "CREATE EXTENSION zklock" to load this file. \quit'; \
	  for f in $^; do echo; sed -e '1{/^\/\*/d}' -e '/^\\echo /d' "$$f"; done; } | cat -s > $@

# PGXS tracks no header dependencies: a changed struct must rebuild every
# object that sees it.
$(OBJS): $(foreach d,$(SRC_DIRS),$(wildcard $(srcdir)/$(d)/*.h))

# The benchmark (bench/run.sh): zklock beside Curator, kazoo, pg_advisory_lock
# and bare ZooKeeper requests; see bench/README.md.
# BENCH_QUICK=1: every shape briefly (bench/run.sh --smoke), to check the
# harness in a few minutes; its figures mean little.
bench:
	bash bench/run.sh $(if $(BENCH_QUICK),--smoke)
.PHONY: bench

# The fuzz targets of every parser of data from ZooKeeper or from disk
# (test/fuzz, built with clang's libFuzzer and sanitizers, without a
# server): each runs for FUZZ_SECONDS seconds (default 60) and prints the
# inputs it executed and its crashes; see test/fuzz/README.md.
fuzz:
	$(MAKE) -C $(srcdir)/test/fuzz PG_CONFIG=$(PG_CONFIG) run
.PHONY: fuzz

# The explorer (test/explore): generated programs across two clusters and a
# kazoo client, with faults between steps and zklock's promises checked
# after each; a violation is shrunk and printed as a replayable script.
# EXPLORE_SECONDS (default 180), EXPLORE_SEED, EXPLORE_ALL=1 (every feature,
# also those waiting for their issue), EXPLORE_FOUND (where scripts go); see
# test/explore/README.md.  Needs zklock installed into PG_CONFIG's PostgreSQL.
explore:
	PG_CONFIG=$(PG_CONFIG) bash $(srcdir)/test/explore/run.sh
.PHONY: explore

# The soak (test/soak): two clusters and a three-server ensemble under every
# kind of lock, with faults on a schedule, for SOAK_SECONDS seconds (default
# 1800); it prints the growth of memory, slots and nodes after warm-up and
# the overlaps, both 0.  See test/README.md.
soak:
	PG_CONFIG=$(PG_CONFIG) bash $(srcdir)/test/soak/run.sh
.PHONY: soak

# PostgreSQL's own habits: `make indent` formats the C sources as pgindent
# formats PostgreSQL's (pg_bsd_indent with pgindent's options and
# src/typedefs.list, which `make typedefs` renews from the debug information
# of the build, as PostgreSQL's find_typedef does); `make check-static`
# fails when a source is not so formatted, when a -Wall -Wextra build warns,
# when the tree's shape breaks doc/internals.md's rules (test/tools/
# layout_check.py: a circle between files, a file or a function too long, a
# file without its opening comment), when an extension script calls an
# operator, a function or a cast that is not pg_catalog's by name
# (test/tools/script_check.py: such a call is hijacked by an object planted
# in the target schema), when META.json, zklock.control, debian/changelog
# and doc/majors.md disagree (test/tools/metadata_check.py), when .ci/run
# lets through a variable that shortens the suite (test/tools/
# ci_run_check.sh), or when cppcheck finds something.
# run_all.sh runs check-static.
PG_BSD_INDENT ?= pg_bsd_indent
PGINDENT_OPTS = -bad -bap -bbb -bc -bl -cli1 -cp33 -cdb -nce -d0 -di12 -nfc1 -i4 -l79 \
	-lp -lpl -nip -npro -sac -tpg -ts4
INDENT_FILES = $(wildcard $(foreach d,$(SRC_DIRS),$(srcdir)/$(d)/*.c $(srcdir)/$(d)/*.h) $(srcdir)/test/unit/*.c \
	$(srcdir)/test/tools/*.c $(srcdir)/bench/*.c $(srcdir)/test/fuzz/*.c $(srcdir)/test/fuzz/*.h)

indent:
	@for f in $(INDENT_FILES); do \
		$(PG_BSD_INDENT) $(PGINDENT_OPTS) -U$(srcdir)/src/typedefs.list "$$f" "$$f.indent" && \
		if cmp -s "$$f" "$$f.indent"; then rm -f "$$f.indent"; \
		else mv "$$f.indent" "$$f"; echo "indented $$f"; fi || exit 1; \
	done

typedefs: all
	{ objdump -W $(shlib) | awk '/DW_TAG_typedef/ { t = 1 } t && /DW_AT_name/ { print $$NF; t = 0 }'; \
	  sed -n 's/^} *\([A-Za-z_][A-Za-z0-9_]*\);/\1/p' $(INDENT_FILES); } | \
	  LC_ALL=C sort -u > $(srcdir)/src/typedefs.list

# LINT=no leaves out the format and cppcheck, which do not depend on the
# major: run_all.sh runs them on 15 only, the -Wall -Wextra build on each.
LINT ?= yes

check-static:
	@status=0; \
	[ "$(LINT)" = no ] || for f in $(INDENT_FILES); do \
		$(PG_BSD_INDENT) $(PGINDENT_OPTS) -U$(srcdir)/src/typedefs.list "$$f" /dev/stdout 2>&1 | \
			diff -u "$$f" - >/dev/null || { echo "not indented (run make indent): $$f"; status=1; }; \
	done; \
	$(MAKE) -s clean && \
	$(MAKE) -s COPT='-Wall -Wextra -Wno-unused-parameter -Werror' all >/dev/null || { echo "the -Wall -Wextra build warns"; status=1; }; \
	[ "$(LINT)" = no ] || $(MAKE) -s check-layout || status=1; \
	[ "$(LINT)" = no ] || $(MAKE) -s check-copies || status=1; \
	python3 $(srcdir)/test/tools/script_check.py $(srcdir) || { echo "an extension script relies on search_path"; status=1; }; \
	python3 $(srcdir)/test/tools/metadata_check.py $(srcdir) || { echo "the metadata disagree with the project"; status=1; }; \
	bash $(srcdir)/test/tools/ci_run_check.sh $(srcdir) || status=1; \
	bash $(srcdir)/test/tools/tap_compile_check.sh $(srcdir) $(dir $(PGXS))../../src/test/perl || status=1; \
	$(MAKE) -s -C $(srcdir)/test/unit PG_CONFIG=$(PG_CONFIG) all || status=1; \
	[ "$(LINT)" = no ] || cppcheck -j$(shell nproc) --quiet --error-exitcode=1 --std=c99 --enable=warning,performance,portability \
		--suppress='*:/usr/include/*' --suppress='*:$(shell $(PG_CONFIG) --includedir-server)/*' \
		--suppress=toomanyconfigs \
		-I$(srcdir)/src -I$(shell $(PG_CONFIG) --includedir-server) \
		$(foreach d,$(SRC_DIRS),$(srcdir)/$(d)/*.c) $(srcdir)/test/unit/*.c || { echo "cppcheck found something"; status=1; }; \
	exit $$status

# Every copy into a buffer in src/ and the length check guarding it
# (test/tools/fixed_copies.txt): a copy with none named fails; `python3
# test/tools/fixed_copies.py` prints the whole list.
check-copies:
	@out=$$(python3 $(srcdir)/test/tools/fixed_copies.py $(srcdir)) || \
		{ echo "$$out" | grep -E 'no guard|no such copy|not FILE'; exit 1; }

# The tree's shape (doc/internals.md, "The source tree"), read from the
# sources and the objects beside them: after a build in the source tree; an
# out-of-tree build (VPATH) has its objects elsewhere and skips it.
check-layout:
	@if [ "$$(cd $(srcdir) && pwd)" = "$$(pwd)" ]; then \
		python3 $(srcdir)/test/tools/layout_check.py $(srcdir); \
	else echo "check-layout: skipped in an out-of-tree build"; fi

.PHONY: indent typedefs check-static check-layout check-copies
