// progress.c - progress and Ctrl-C for the command line's long work (the heap census): a bar
// on stderr when it is a terminal, redrawn at most ten times a second; SIGINT sets a flag that
// the core's progress callback returns, so the work stops with what it had and the program
// still prints it (and releases a held process) instead of dying.
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "include/pyunwind.h"

#define BAR_WIDTH 30
#define REDRAW_NS 100000000ll // 0.1 s

static volatile sig_atomic_t interrupted;
static struct sigaction saved;
static bool bar, drawn;
static const char *what_text;
static int64_t last_draw;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

// Looked into @done of the @total objects found so far (0: still walking the lists).
static int32_t progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	if (bar && !interrupted) {
		int64_t now = now_ns();
		if (now - last_draw >= REDRAW_NS) {
			last_draw = now;
			char line[BAR_WIDTH + 1];
			size_t fill = total ? (size_t)((double)done / (double)total * BAR_WIDTH) : 0;
			if (fill > BAR_WIDTH)
				fill = BAR_WIDTH;
			memset(line, '#', fill);
			memset(line + fill, total ? '.' : ' ', BAR_WIDTH - fill);
			line[BAR_WIDTH] = '\0';
			if (total)
				fprintf(stderr, "\r%s [%s] %" PRIu64 " of %" PRIu64 " objects looked "
					"into (Ctrl-C stops)\033[K", what_text, line, done, total);
			else
				fprintf(stderr, "\r%s: %" PRIu64 " objects on the collector's lists "
					"(Ctrl-C stops)\033[K", what_text, done);
			fflush(stderr);
			drawn = true;
		}
	}
	return interrupted ? 1 : 0;
}

void pyu_cli_progress_begin(struct pyu_stacks *s, const char *what)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	interrupted = 0;
	sigaction(SIGINT, &sa, &saved);
	bar = isatty(STDERR_FILENO) == 1;
	drawn = false;
	what_text = what;
	last_draw = now_ns(); // no bar for work shorter than a redraw
	pyu_stacks_set_progress(s, progress, NULL);
}

bool pyu_cli_progress_end(struct pyu_stacks *s)
{
	pyu_stacks_set_progress(s, NULL, NULL);
	sigaction(SIGINT, &saved, NULL);
	if (drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	if (interrupted)
		fputs("pyunwind: interrupted: what was counted until then follows\n", stderr);
	return interrupted != 0;
}
