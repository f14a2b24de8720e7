// SPDX-License-Identifier: BSD-3-Clause
// FUZZ_CHECK: the one assertion of the fuzz targets. A failed check prints what broke and
// aborts, which libFuzzer reports as a crash and saves the input that caused it (gtest's
// assertions do not stop a fuzzer). Kept out of the targets so each reads as its invariants.
#ifndef SKBNF_TESTS_FUZZ_FUZZ_CHECK_H_
#define SKBNF_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                                                \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                     \
      std::fprintf(stderr, "\n");                                                            \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

#endif  // SKBNF_TESTS_FUZZ_FUZZ_CHECK_H_
