// checkmain.h - the main() every Check suite uses: runs the suite, prints Check's own summary
// and then "N passed, N failed" for tests/run_all. Use PYU_CHECK_MAIN(my_suite) once per file.
#ifndef PYU_CHECKMAIN_H
#define PYU_CHECKMAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define PYU_CHECK_MAIN(suite_fn)                                                             \
	int main(void)                                                                       \
	{                                                                                    \
		SRunner *sr = srunner_create(suite_fn());                                    \
		srunner_run_all(sr, CK_NORMAL);                                              \
		int run = srunner_ntests_run(sr);                                            \
		int failed = srunner_ntests_failed(sr);                                      \
		srunner_free(sr);                                                            \
		printf("%d passed, %d failed\n", run - failed, failed);                     \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                 \
	}

#endif
