// The two early-return macros every reader in apps/input shares: each
// returns the error of a failed Status or Result from the enclosing function
// (whose own return type holds that error). PPB_ASSIGN_OR_RETURN also
// assigns a Result's value to `lhs` when it succeeded.
#pragma once

#define PPB_RETURN_IF_ERROR(expr)                       \
  do {                                                  \
    if (auto ppb_status_ = (expr); !ppb_status_.ok()) { \
      return ppb_status_.error();                       \
    }                                                   \
  } while (0)

#define PPB_ASSIGN_OR_RETURN(lhs, expr)                 \
  do {                                                  \
    auto ppb_result_ = (expr);                          \
    if (!ppb_result_.ok()) return ppb_result_.error();  \
    lhs = *ppb_result_;                                 \
  } while (0)
