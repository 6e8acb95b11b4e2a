# The Debian package (debian/, tools/make-deb) and its test: installed on this machine, gdb
# with no init file of ours has the commands, lldb one import away, then removed again.
.PHONY: deb test-deb
deb:
	@tools/make-deb

test-deb:
	@nice /usr/bin/python3 tests/e2e/test_deb.py
