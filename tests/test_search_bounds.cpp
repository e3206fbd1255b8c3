// The lower bounds of open search trees (search/) never exceed the true
// optimum given by the exhaustive enumerator (tests/brute_force.h), on
// random reproducible instances (tests/random_instances.h): decoder stacks,
// where the bound couples per-rank decoder counts with the schedule's paths,
// and the general random instances, also at a node limit.
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/model.h"
#include "search/search.h"
#include "brute_force.h"
#include "random_instances.h"

namespace ppb {

using namespace brute;  // NOLINT: the enumerator is this file's subject

// A random stack of identical decoders between an embedding and a head on
// p = 2..3 ranks: the shape in which the bound of an open tree couples
// per-rank decoder counts with the schedule's paths. `uneven` adds per-rank
// speeds and links, random message sizes, a selective recompute option and
// blocking sends (memory is unlimited; tests set capacities).
namespace {

SearchProblem RandomDecoderStack(std::mt19937_64& rng, bool uneven) {
  SearchProblem pr;
  pr.p = Uniform(rng, 2, 3);
  const bool interleaved = Chance(rng, 0.5);
  pr.m = interleaved ? pr.p * Uniform(rng, 1, 2) : Uniform(rng, 2, 6);
  ScheduleChoice c;
  c.schedule = interleaved ? "interleaved" : (Chance(rng, 0.5) ? "1f1b" : "gpipe");
  c.v = interleaved ? 2 : 1;
  pr.choices = {c};
  if (uneven && Chance(rng, 0.3)) pr.comm = CommMode::Blocking;
  auto layer = [&](const char* name, LayerKind kind, Nanos f) {
    Layer x;
    x.name = name;
    x.kind = kind;
    x.forward = f;
    x.backward_input = 2 * f;
    x.static_memory = 1 << 20;
    x.activation = (uneven ? 4 : 2) << 20;
    x.output_bytes = uneven ? Uniform(rng, 1, 64) << 16 : 1 << 16;
    return x;
  };
  pr.layers.push_back(layer("emb", LayerKind::Embedding, Uniform(rng, 1, 3) * 10'000));
  const int decoders = pr.p * c.v + Uniform(rng, 0, 3);
  Layer d = layer("d", LayerKind::Decoder, Uniform(rng, 5, 9) * 100'000);
  if (uneven) d.recompute.push_back(RecomputeOption{"selective", 1 << 20, Uniform(rng, 1, 3) * 50'000});
  for (int i = 0; i < decoders; ++i) {
    d.name = "d" + std::to_string(i);  // names differ, costs do not
    pr.layers.push_back(d);
  }
  pr.layers.push_back(layer("head", LayerKind::Head, Uniform(rng, 2, 6) * 100'000));
  for (int r = 0; r < pr.p; ++r) {
    pr.cluster.devices.push_back(Device{kUnlimited, uneven ? 0.5 * Uniform(rng, 1, 4) : 1.0});
    pr.cluster.links.push_back(uneven ? Link{Uniform(rng, 0, 50) * 1000,
                                             Uniform(rng, 1, 20) * 1'000'000'000LL}
                                      : Link{Uniform(rng, 0, 50) * 1000, 10'000'000'000});
  }
  return pr;
}

}  // namespace

TEST_CASE("lower bounds of an open tree on decoder stacks never exceed the optimum",
          "[search]") {
  // The open-tree bound's branch-and-bound over boxes of decoder counts
  // (exact LP, column generation from critical paths, least message time on
  // every hop) stays at or below the exhaustive optimum, also when speeds,
  // links and memory differ per rank and recompute is on offer. With
  // memory unlimited and even ranks nothing is relaxed but real-valued
  // counts, which the bound branches to whole numbers: there it closes on
  // the optimum up to its rounding allowance of 4 ns per micro-batch and
  // stage.
  for (const bool uneven : {false, true}) {
    for (std::uint64_t seed : Seeds(uneven ? 7301 : 7001, uneven ? 40 : 30)) {
      std::mt19937_64 rng(seed);
      SearchProblem pr = RandomDecoderStack(rng, uneven);
      const std::vector<Point> points = Enumerate(pr);
      if (uneven) SetCapacities(pr, RandomFeasibleCapacities(rng, points, pr.p));
      INFO("seed " << seed << "\n" << Describe(pr));
      const std::optional<Objective> best = Optimum(points, Capacities(pr));
      REQUIRE(best.has_value());
      const Nanos opt_makespan = std::get<0>(*best);
      const Nanos allowance =
          static_cast<Nanos>(pr.m) * (pr.p * pr.choices.front().v + 1) * 4 + 1;
      for (std::int64_t limit : {1, 4, 50}) {
        SearchOptions opt;
        opt.node_limit = limit;
        opt.threads = 1;
        const SearchResult r = MustSearch(pr, opt);
        INFO("node limit " << limit << ": " << r.stop_reason << " lb " << r.lower_bound);
        CHECK(r.lower_bound <= opt_makespan);
        if (r.found) CHECK(r.best.makespan >= opt_makespan);
        // Proved by the open tree's bound: the optimum, ties included.
        if (r.proved_optimal) CHECK(ObjectiveOf(r.best) == *best);
        if (!uneven && r.found && r.best.makespan == opt_makespan) {
          CHECK(r.lower_bound >= opt_makespan - allowance);
        }
      }
    }
  }
}

TEST_CASE("lower bounds never exceed the optimum, also at a node limit",
          "[search]") {
  for (std::uint64_t seed : Seeds(9001, 12)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 1500;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    INFO("optimum " << Show(*in.optimum));
    const Nanos opt_makespan = std::get<0>(*in.optimum);
    for (std::int64_t limit : {0, 1, 5, 20}) {
      INFO("node limit " << limit);
      SearchOptions opt;
      opt.node_limit = limit;
      opt.seed = seed;
      // Progress reports state bounds too: each must be valid.
      std::vector<SearchProgress> reports;
      opt.progress_interval_s = 0;
      opt.progress = [&](const SearchProgress& pg) { reports.push_back(pg); };
      const SearchResult r = MustSearch(in.problem, opt);
      INFO("search: " << r.stop_reason << " nodes " << r.nodes << " lb "
                      << r.lower_bound << " best " << Show(ObjectiveOf(r.best))
                      << " " << Show(r.best.strategy) << " choice "
                      << r.best.choice);
      CHECK(r.lower_bound <= opt_makespan);
      for (const SearchProgress& pg : reports) {
        INFO("progress at node " << pg.nodes << ": incumbent " << pg.incumbent
                                 << ", lower bound " << pg.lower_bound);
        CHECK(pg.lower_bound <= opt_makespan);
        CHECK((pg.incumbent == -1 || pg.incumbent >= opt_makespan));
        CHECK(pg.gap >= 0);
        CHECK(pg.gap <= 1);
      }
      if (r.found) CHECK(ObjectiveOf(r.best) >= *in.optimum);
      if (r.proved_optimal) {
        // Closing the tree means the answer is the optimum.
        REQUIRE(r.found);
        CHECK(ObjectiveOf(r.best) == *in.optimum);
      } else {
        CHECK(limit > 0);
      }
      CheckReported(in.problem, opt, r);
    }
  }
}

}  // namespace ppb
