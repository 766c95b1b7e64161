/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* check-main.h: the suite and main() of a check program whose tests all
 * run in one test case, "general", as the programs here do unless they need
 * more (a fixture, a timeout). */
#ifndef __GST_TRAIN_TEST_CHECK_MAIN_H__
#define __GST_TRAIN_TEST_CHECK_MAIN_H__

#include <gst/check/gstcheck.h>

#define CHECK_MAIN_ADD_TEST(test) tcase_add_test (tc, test)

/* Defines @name_suite(), the suite @suite_name holding the test functions
 * that @TESTS lists (a macro that applies its argument to each, in order, a
 * statement each), each followed by @teardown (a checked fixture's, or
 * NULL), and main(), which runs it. */
#define CHECK_MAIN_WITH_TEARDOWN(name, suite_name, teardown, TESTS)            \
  static Suite *name##_suite (void)                                            \
  {                                                                            \
    Suite *s = suite_create (suite_name);                                      \
    TCase *tc = tcase_create ("general");                                      \
                                                                               \
    tcase_add_checked_fixture (tc, NULL, teardown);                            \
    suite_add_tcase (s, tc);                                                   \
    TESTS (CHECK_MAIN_ADD_TEST)                                                \
    return s;                                                                  \
  }                                                                            \
                                                                               \
  GST_CHECK_MAIN (name)

#define CHECK_MAIN(name, suite_name, TESTS)                                    \
  CHECK_MAIN_WITH_TEARDOWN (name, suite_name, NULL, TESTS)

#endif
