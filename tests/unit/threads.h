// threads.h - runs @n threads of @fn at once, each given its number, and sums what they return
// (each returns how many wrong answers it saw): for the suites of what is kept library-wide.
#ifndef PYU_CHECK_THREADS_H
#define PYU_CHECK_THREADS_H

#include <check.h>
#include <pthread.h>
#include <stdint.h>

#define PYU_CHECK_THREADS_MAX 16

static inline uintptr_t run_threads(void *(*fn)(void *), uintptr_t n)
{
	pthread_t th[PYU_CHECK_THREADS_MAX];
	ck_assert_uint_le(n, PYU_CHECK_THREADS_MAX);
	for (uintptr_t i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, fn, (void *)i), 0);
	uintptr_t wrong = 0;
	for (uintptr_t i = 0; i < n; i++) {
		void *ret;
		ck_assert_int_eq(pthread_join(th[i], &ret), 0);
		wrong += (uintptr_t)ret;
	}
	return wrong;
}

#endif
