# The README's order on a fresh clone (tests/fresh/run): `make demo` on a machine where
# `make deps` still installs something, then the build `make test` would reuse. Run by .ci/run
# (not a step of `make test`: it runs `make demo` itself).
.PHONY: test-fresh
test-fresh:
	@nice tests/fresh/run
