// cli.h - the subcommands of the pyunwind command line that live in their own files; main.c
// parses the common commands (bt, line, list) and hands the others over.
#ifndef PYU_CLI_H
#define PYU_CLI_H

// `pyunwind triage ...`: @argv[0] is "triage". Returns the exit status.
int pyu_cli_triage(int argc, char **argv);

#endif
