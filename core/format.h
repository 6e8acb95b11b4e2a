// format.h - the pieces of format.c that other formatters (triage.c) reuse, so a frame reads
// the same in every JSON document pyunwind prints.
#ifndef PYU_FORMAT_H
#define PYU_FORMAT_H

#include "stacks.h"
#include "strbuf.h"

// Appends frame @f as the JSON object of the bt document's "frames" lists. Cannot fail
// (the builder remembers a failure).
void pyu_format_json_frame(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			   const struct pyu_frame_info *f);

// The same with the frame's locals ("locals": [...], or "locals_error" saying why not).
void pyu_format_json_frame_locals(struct pyu_strbuf *sb, const struct pyu_stacks *s,
				  const struct pyu_frame_info *f);
// Appends "    name = repr" lines of the locals of @f (a line saying why when they cannot be
// read; nothing for an error frame). Cannot fail.
void pyu_format_text_frame_locals(struct pyu_strbuf *sb, const struct pyu_stacks *s,
				  const struct pyu_frame_info *f);

// Appends the exception thread @th is handling (sys.exc_info(), read by
// pyu_stacks_read_thread_values) as the bt document's "exception" object, or null (also for a
// NULL @th). Cannot fail.
void pyu_format_json_exception(struct pyu_strbuf *sb, const struct pyu_thread_info *th);

struct pyu_source_cache;

// Appends frame @f as py-bt prints it: "#@number  File ..., line N, in name", and with
// PYU_FMT_SOURCE its source line and carets (read through @cache, which may be NULL).
// Cannot fail.
void pyu_format_text_frame(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			   const struct pyu_frame_info *f, uint32_t number, uint32_t flags,
			   struct pyu_source_cache *cache);
// "File ..., line N, in name" of @f without a newline (an error frame: "<error: ...>\n").
// Cannot fail.
void pyu_format_text_location(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			      const struct pyu_frame_info *f);

#endif
