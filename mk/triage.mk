# pyunwind triage: a crash core per interpreter of the matrix against its truth, then a
# directory of them (compressed, truncated, foreign, non-core files): JSON Lines, the table,
# worker counts, progress on a terminal, exit status.
.PHONY: test-triage
test-triage: all
	@nice /usr/bin/python3 tests/e2e/test_triage.py
