# Every command and option the CLI's and the debugger commands' parsers accept is in the CLI's
# --help, the man page, doc/commands.md, gdb's and lldb's help, the Debian description and
# gdbinit.d file (tests/e2e/test_docs.py; a few seconds).
.PHONY: test-docs
test-docs: all
	@nice /usr/bin/python3 tests/e2e/test_docs.py
