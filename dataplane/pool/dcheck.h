// SPDX-License-Identifier: BSD-3-Clause
// SKBNF_DCHECK: the pool's invariants, checked in debug builds (no NDEBUG) at the boundaries
// where objects change hands between layers (layer.h's folds in pool.h: configure, flush,
// detach; the burst chain). Release builds compile the condition out entirely: these sit on
// the per-packet path, and the release build's exactness is checked by the audit instead.
// A failed check prints the condition, the place and the explanation, then aborts: an object
// counted in two places (or none) would make every later count wrong, so there is nothing safe
// to continue with.
#ifndef SKBNF_DATAPLANE_POOL_DCHECK_H_
#define SKBNF_DATAPLANE_POOL_DCHECK_H_

#ifdef NDEBUG
#define SKBNF_DCHECK(cond, why) \
  do {                          \
  } while (false)
#else
#include <cstdio>
#include <cstdlib>
#define SKBNF_DCHECK(cond, why)                                                                  \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "%s:%d: pool invariant broken: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   why);                                                                         \
      std::abort();                                                                              \
    }                                                                                            \
  } while (false)
#endif

#endif  // SKBNF_DATAPLANE_POOL_DCHECK_H_
