# commscope: the two commands of the README, and their parts.
.PHONY: setup study test clean

setup:
	@scripts/setup.sh

# Set up, then run the default study on this machine; prints the report's path.
study: setup
	.venv/bin/commscope study

# Set up, then run the whole test suite (real MPI jobs, 2-4 ranks); as root, on a
# 4-node Slurm testbed too (scripts/test.sh).
test: setup
	@scripts/test.sh

clean:
	rm -rf build .pytest_cache
