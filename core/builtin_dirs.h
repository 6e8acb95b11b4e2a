// builtin_dirs.h - the names in each builtin type's __dict__, per CPython version (3.12+ keep
// the dicts of static builtin types in the interpreter state, out of tp_dict's reach): generated
// data (builtin_dirs.c, tools/gen-builtin-dirs). Pure.
#ifndef PYU_BUILTIN_DIRS_H
#define PYU_BUILTIN_DIRS_H

#include <stddef.h>
#include <stdint.h>

struct pyu_builtin_dir {
	const char *type; // tp_name after its last '.' ("str", "SimpleNamespace", "NoneType")
	const char *const *names;
	uint32_t count;
};

struct pyu_builtin_dirs {
	uint32_t version_hex; // 0xMMmm0000
	const struct pyu_builtin_dir *types;
	uint32_t count;
};

extern const struct pyu_builtin_dirs pyu_builtin_dirs[];
extern const size_t pyu_builtin_dirs_count;

#endif
