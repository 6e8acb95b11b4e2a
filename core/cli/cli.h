// cli.h - the subcommands of the pyunwind command line that live in their own files; main.c
// parses the common commands (bt, line, list) and hands the others over.
#ifndef PYU_CLI_H
#define PYU_CLI_H

#include <stdbool.h>

// `pyunwind triage ...`: @argv[0] is "triage". Returns the exit status.
int pyu_cli_triage(int argc, char **argv);

struct pyu_stacks;
// Long work on @s (the heap census) from here until pyu_cli_progress_end(): a progress bar on
// stderr when stderr is a terminal (nothing otherwise), and Ctrl-C (SIGINT) stops the work
// cleanly instead of ending the program.
void pyu_cli_progress_begin(struct pyu_stacks *s, const char *what);
// Ends it: clears the bar, puts SIGINT back as it was. Returns whether SIGINT came.
bool pyu_cli_progress_end(struct pyu_stacks *s);

#endif
