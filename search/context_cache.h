// Internal to search/: the schedule choices' contexts of one problem, built
// once and shared by every search of it.
//
// Contract: MakeContext builds one choice's context (its program, template
// spec and memory profile: O(p v m) work). A ContextCache keeps each
// choice's context, or its refusal, from the first request on, so that
// every search of one problem (a target search's setting bounds, each
// setting's search and the least capacity; the placement search; each
// framework's deployable search after the main one: SearchOptions::contexts)
// builds each at most once; the contexts it hands out are copies that share
// the immutable program and profile, so threads may read them at once. It
// also keeps what one simulation of the problem took, once SearchFixed has
// timed one. It serves the first problem it is asked for (by address, with
// the same p, m and choices); a request for another is built apart and not
// kept. Thread-safe.
//
// Deadline: a context is built in two steps (its program; its memory
// profile), and past the deadline neither is started, except for the first
// context of a request that has none yet when its program is small (at most
// Engine::kDeadlineCheckOps ops: microseconds, and the engine too runs such
// a program to its end whatever the clock), so a small problem still gets
// an answer and a large one stops. A step started is finished and kept: a
// later request (a search after this one) goes on from it.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <vector>

#include "search/context.h"

namespace ppb::search_detail {

// One choice's context; a refusal of the schedule as an error.
Result<ChoiceContext> MakeContext(const SearchProblem& pb, int index);

class ContextCache {
 public:
  // The contexts of the choices the schedules accept, in choice order; the
  // first refusal when they accept none and none was left out. Choices left
  // out at `deadline` (see the contract) set *cut when it is given.
  Result<std::vector<ChoiceContext>> Contexts(const SearchProblem& problem,
                                              Clock::time_point deadline, bool* cut);
  // Seconds one simulation of `problem` took (0: not timed yet, or another
  // problem).
  double SimulationSeconds(const SearchProblem& problem);
  void SetSimulationSeconds(const SearchProblem& problem, double seconds);
  // Contexts begun so far (each choice of the problem at most once).
  int built() const;

 private:
  // Whether this cache serves `problem` (the first one asked binds it).
  // REQUIRES: mu_ held.
  bool Serves(const SearchProblem& problem);

  mutable std::mutex mu_;
  const SearchProblem* problem_ = nullptr;
  int p_ = 0, m_ = 0;
  size_t choices_ = 0;
  std::vector<std::optional<Result<ChoiceContext>>> made_;  // per choice
  std::vector<std::optional<ChoiceContext>> begun_;  // program only, no profile yet
  double simulation_s_ = 0;
  int built_ = 0;
};

// The contexts of the choices the schedules accept, from options.contexts
// (one is made here, and not kept, when it has none), with its deadline.
Result<std::vector<ChoiceContext>> MakeContexts(const SearchProblem& problem,
                                                const SearchOptions& options,
                                                bool* cut = nullptr);

}  // namespace ppb::search_detail
