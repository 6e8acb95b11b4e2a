// main.c - the pyunwind command line: Python stacks of a process or core without a debugger.
#include <stdio.h>
#include <string.h>

#include "include/pyunwind.h"

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("pyunwind ABI %u\n", pyu_abi_version());
		return 0;
	}
	fprintf(stderr, "usage: pyunwind bt [--all] [--json] PID | COREFILE [EXECUTABLE]\n");
	return 2;
}
