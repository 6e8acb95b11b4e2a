// seeds_target.c - writes starting inputs for fuzz_core and fuzz_elf into a directory: a
// small synthetic core (segments, NT_FILE, NT_PRSTATUS, NT_PRPSINFO, NT_AUXV) for the one,
// and this program's own ELF file for the other (run by tests/fuzz/run-target). It runs as
// a one-test Check suite because the fixture's builders assert with Check.
#include <stdio.h>

#include "elf_fixture.h"

static const char *core_dir, *elf_dir;

START_TEST(write_seeds)
{
	struct fx_seg segs[] = {
		{0x400000, 0x2000, 0x2000, 6, NULL},
		{0x600000, 0x2000, 0x1000, 5, NULL},
	};
	struct fx_file_entry files[] = {{0x600000, 0x602000, 1, "/usr/lib/libpython3.so"}};
	struct fx_buf nt_file = {0}, st = {0}, ps = {0}, auxv = {0}, core = {0};
	fx_nt_file(&nt_file, files, 1);
	fx_prstatus(&st, 100);
	fx_zero(&ps, 136);
	fx_u64(&auxv, 9), fx_u64(&auxv, 0x600010), fx_u64(&auxv, 0), fx_u64(&auxv, 0);
	struct fx_note notes[] = {
		{"CORE", 3, ps.data, ps.len},
		{"CORE", 1, st.data, st.len},
		{"CORE", 6, auxv.data, auxv.len},
		{"CORE", 0x46494c45, nt_file.data, nt_file.len},
	};
	fx_core(&core, segs, 2, notes, 4, NULL);
	char path[4096];
	snprintf(path, sizeof(path), "%s/synthetic.core", core_dir);
	fx_write_file(path, core.data, core.len);

	FILE *self = fopen("/proc/self/exe", "rb");
	ck_assert_ptr_nonnull(self);
	static unsigned char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), self);
	fclose(self);
	snprintf(path, sizeof(path), "%s/self.elf", elf_dir);
	fx_write_file(path, buf, n);
	fx_free(&nt_file), fx_free(&st), fx_free(&ps), fx_free(&auxv), fx_free(&core);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s CORE_SEED_DIR ELF_SEED_DIR\n", argv[0]);
		return 2;
	}
	core_dir = argv[1];
	elf_dir = argv[2];
	Suite *s = suite_create("seeds");
	TCase *tc = tcase_create("seeds");
	tcase_add_test(tc, write_seeds);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
