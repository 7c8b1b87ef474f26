# commscope: the two commands of the README, and their parts.
.PHONY: setup study test check format bench screenshots clean

setup:
	@scripts/setup.sh

# Set up, then run the default study on this machine; prints the report's path.
study: setup
	.venv/bin/commscope study

# Set up, then run the whole test suite (real MPI jobs, 2-4 ranks); as root, on a
# 4-node Slurm testbed too (scripts/test.sh).
test: setup
	@scripts/test.sh

# Set up, then the lint and format checks and the fast tier: every test that launches no
# MPI job, builds nothing and opens no browser (under a minute; scripts/test.sh --fast).
check: setup
	@scripts/test.sh --fast

# Format the tree (ruff format, clang-format on native/); `make test` checks it.
format: setup
	@scripts/format.sh

# Set up, then run every benchmark and figure script in scripts/ (scripts/bench.py):
# `make bench` the full pass, the figures the docs cite, into build/bench/full/<script>.txt;
# `make bench QUICK=1` each script's --quick mode (a few minutes), into build/bench/.
# SCRIPTS="a b" runs only those.
bench: setup
	.venv/bin/python scripts/bench.py $(if $(filter-out 0,$(QUICK)),--quick) $(SCRIPTS)

# Set up, then full-page screenshots of a study report and of its profile run's report at
# 1366 and 1920 px into docs/screenshots/ (scripts/report_screenshots.py): the newest
# study under studies/ (STUDY=DIR for another), else a new quick study first. Look at them.
screenshots: setup
	.venv/bin/python scripts/report_screenshots.py $(if $(STUDY),--study $(STUDY))

clean:
	rm -rf build .pytest_cache
