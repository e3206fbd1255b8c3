// search.target at its edges (search/deployable.h, search/target_search.cpp):
// Megatron's micro-batch group rule closes a schedule choice Megatron cannot
// run; when nothing deployable fits, the least capacity at which a
// deployable strategy does equals the brute force's; the placement search
// under a target equals the brute force over every device order restricted
// to the framework's expressible strategies; Megatron's many block settings
// are bounded, searched best bound first and pruned, with the same answer
// as searching each alone.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "app_helpers.h"
#include "brute_force.h"
#include "random_instances.h"
#include "search/deployable.h"
#include "search/search.h"

namespace ppb {
namespace {

using namespace brute;  // NOLINT: the enumerator is what these tests compare to

constexpr Nanos kUs = 1000;
constexpr Bytes kMiB = Bytes{1} << 20;

// Embedding, `decoders` decoders offering full (and selective when asked),
// head.
std::vector<Layer> Model(int decoders, Nanos f, Bytes act, bool selective) {
  std::vector<Layer> layers = {MakeLayer("emb", LayerKind::Embedding, kUs, kMiB)};
  for (int i = 0; i < decoders; ++i) {
    Layer l = MakeLayer("dec" + std::to_string(i), LayerKind::Decoder, f, act);
    l.recompute.push_back({"full", 0, f});
    if (selective) l.recompute.push_back({"selective", act / 2, f / 4});
    layers.push_back(l);
  }
  layers.push_back(MakeLayer("head", LayerKind::Head, kUs, kMiB));
  return layers;
}

SearchProblem FixedProblem(std::vector<Layer> layers, int p, int m, Bytes capacity) {
  SearchProblem pr;
  pr.layers = std::move(layers);
  pr.p = p;
  pr.m = m;
  for (int d = 0; d < p; ++d) {
    pr.cluster.devices.push_back({capacity, 1.0});
    pr.cluster.links.push_back(Link{kUs, BytesPerSec{1'000'000'000}});
  }
  return pr;
}

bool PointDeployable(DeployTarget t, const SearchProblem& pr, const Point& pt) {
  const ScheduleChoice& ch = pr.choices[static_cast<size_t>(pt.choice)];
  const bool v_placement = ch.schedule == "zbv-zero-bubble" || ch.schedule == "dualpipev";
  return Deployable(t, pr.layers, pt.strategy, pr.p, ch.v, v_placement);
}

TEST_CASE("search.target megatron: a choice Megatron's micro-batch group rule refuses is closed",
          "[search][target]") {
  // p = 2, m = 3: Megatron runs every v = 2 interleaved with its group,
  // p = 2 unless given; 3 mod 2 = 1 < p is refused. looped-bfs (v = 2) would
  // run with that default; torch-flavoured interleaved groups m / max(1,
  // m / p) = 3 micro-batches, which Megatron runs (3 mod 3 = 0).
  SearchProblem pr = FixedProblem(Model(4, 2 * kUs, 4 * kMiB, false), 2, 3, brute::kUnlimited);
  ScheduleChoice bfs{"looped-bfs", 2, {}};
  ScheduleChoice torch{"interleaved", 2, {}};
  torch.params.flavor = Flavor::PyTorch;
  pr.choices = {bfs, torch};
  CHECK(EffectiveGroup(bfs, 2, 3) == 0);
  CHECK(EffectiveGroup(torch, 2, 3) == 3);
  CHECK(ChoiceRefusal(DeployTarget::Megatron, pr.layers, 2, false, 2, 3, 0) ==
        "--microbatch-group-size-per-virtual-pipeline-stage must satisfy p <= g <= m and m mod "
        "g = 0 or >= p (Megatron-LM); got g=2, p=2, m=3");
  CHECK(ChoiceRefusal(DeployTarget::Megatron, pr.layers, 2, false, 2, 3, 3).empty());
  // The rule is Megatron's: MindFormers runs both.
  CHECK(ChoiceRefusal(DeployTarget::MindFormers, pr.layers, 2, false, 2, 3, 0).empty());

  const std::vector<Point> points = Enumerate(pr);
  std::optional<Objective> megatron;
  for (const Point& pt : points) {
    if (pt.choice == 1 && PointDeployable(DeployTarget::Megatron, pr, pt) &&
        (!megatron || ObjectiveOf(pt) < *megatron)) {
      megatron = ObjectiveOf(pt);
    }
  }
  REQUIRE(megatron);
  SearchOptions opt;
  opt.target = DeployTarget::Megatron;
  Result<SearchResult> r = Search(pr, opt);
  REQUIRE(r.ok());
  REQUIRE(r->found);
  CHECK(r->proved_optimal);
  CHECK(r->best.choice == 1);
  CHECK(ObjectiveOf(r->best) == *megatron);
  for (const Candidate& c : r->top) CHECK(c.choice == 1);
  // The refused choice alone: nothing deployable, proved, and no capacity
  // makes one fit.
  SearchProblem alone = pr;
  alone.choices = {bfs};
  Result<SearchResult> none = Search(alone, opt);
  REQUIRE(none.ok());
  CHECK_FALSE(none->found);
  CHECK(none->proved_infeasible);
  CHECK(none->min_capacity_needed == 0);
  CHECK_FALSE(none->min_capacity_cut);
}

// Random small framework-shaped problems (embedding, 2..4 decoders with
// full and maybe selective, head; p = 2; 1f1b or interleaved v = 2).
SearchProblem RandomProblem(std::mt19937_64& rng) {
  const int decoders = Uniform(rng, 2, 4);
  SearchProblem pr = FixedProblem(Model(decoders, Uniform(rng, 1, 3) * kUs, Uniform(rng, 1, 4) * kMiB,
                                        Uniform(rng, 0, 1) == 1),
                                  2, 2 * Uniform(rng, 1, 2), brute::kUnlimited);
  for (Layer& l : pr.layers) l.static_memory = Uniform(rng, 0, 2) * kMiB;
  const bool v2 = decoders >= 2 && Uniform(rng, 0, 2) == 0;
  pr.choices = {v2 ? ScheduleChoice{"interleaved", 2, {}} : ScheduleChoice{"1f1b", 1, {}}};
  return pr;
}

TEST_CASE("search.target: when nothing deployable fits, the least capacity at which one does",
          "[search][target]") {
  int checked = 0, none = 0;
  for (int i = 0; i < 24; ++i) {
    const std::uint64_t seed = 9100 + 17 * static_cast<std::uint64_t>(i);
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    SearchProblem pr = RandomProblem(rng);
    const std::vector<Point> points = Enumerate(pr);
    INFO(Describe(pr));
    for (DeployTarget t : FrameworkTargets()) {
      INFO("target " << TargetName(t));
      Bytes least = kUnlimited, least_any = kUnlimited;
      for (const Point& pt : points) {
        least_any = std::min(least_any, pt.max_peak);
        if (PointDeployable(t, pr, pt)) least = std::min(least, pt.max_peak);
      }
      SearchProblem tight = pr;
      // A byte below the least deployable peak (and below every peak when
      // the target has nothing at all).
      const Bytes cap = (least < kUnlimited ? least : least_any) - 1;
      for (Device& d : tight.cluster.devices) d.memory_capacity = cap;
      SearchOptions opt;
      opt.target = t;
      Result<SearchResult> r = Search(tight, opt);
      REQUIRE(r.ok());
      CHECK_FALSE(r->found);
      CHECK(r->proved_infeasible);
      CHECK_FALSE(r->min_capacity_cut);
      if (least == kUnlimited) {
        CHECK(r->min_capacity_needed == 0);  // nothing it can run at any capacity
        ++none;
        continue;
      }
      ++checked;
      CHECK(r->min_capacity_needed == least);
      // At that capacity the search finds a deployable strategy.
      for (Device& d : tight.cluster.devices) d.memory_capacity = least;
      Result<SearchResult> at = Search(tight, opt);
      REQUIRE(at.ok());
      CHECK(at->found);
      CHECK(at->best.max_peak <= least);
    }
  }
  CHECK(checked >= 60);
  CHECK(none >= 2);  // DeepSpeed with v = 2
}

// A heterogeneous cluster (2 types of speed and memory, 1..2 nodes) of
// `n` devices whose order the search decides, on a framework-shaped model.
SearchProblem RandomPlacement(std::mt19937_64& rng, int n) {
  SearchProblem pr;
  pr.layers = Model(Uniform(rng, n - 1, n), Uniform(rng, 1, 3) * 100 * kUs, Uniform(rng, 1, 4) * kMiB,
                    Uniform(rng, 0, 1) == 1);
  for (Layer& l : pr.layers) {
    l.static_memory = Uniform(rng, 1, 3) * kMiB;
    l.output_bytes = Uniform(rng, 1, 8) * (kMiB / 4);
  }
  pr.p = n;
  pr.m = Uniform(rng, 2, 4);
  Topology& t = pr.topology;
  const double speeds[] = {0.5, 1.0, 2.0};
  for (int i = 0; i < 2; ++i) {
    DeviceType dt;
    dt.name = "t" + std::to_string(i);
    dt.speed = speeds[Uniform(rng, 0, 2)];
    dt.memory_capacity = kUnlimited / 4;
    t.types.push_back(dt);
  }
  const int nodes = Uniform(rng, 1, 2);
  for (int k = 0; k < nodes; ++k) t.node_names.push_back("n" + std::to_string(k));
  for (int d = 0; d < n; ++d) {
    t.device_type.push_back(Uniform(rng, 0, 1));
    t.device_node.push_back(Uniform(rng, 0, nodes - 1));
  }
  t.intra_node = Link{1000, 100'000'000'000};
  t.inter_node = Link{Uniform(rng, 10, 200) * 1000, Uniform(rng, 1, 4) * 1'000'000'000LL};
  pr.choices = {ScheduleChoice{"1f1b", 1, {}}};
  pr.given_placement.resize(static_cast<size_t>(n));
  std::iota(pr.given_placement.begin(), pr.given_placement.end(), 0);
  pr.search_placement = true;
  // Memory that binds: per type, between the least and the largest peak of
  // the given order's strategies.
  pr.cluster = ClusterFor(t, pr.given_placement);
  SearchProblem fixed = pr;
  fixed.search_placement = false;
  Bytes lo = kUnlimited, hi = 0;
  for (const Point& pt : Enumerate(fixed)) {
    lo = std::min(lo, pt.max_peak);
    hi = std::max(hi, pt.max_peak);
  }
  for (DeviceType& dt : t.types) dt.memory_capacity = lo + (hi - lo) * Uniform(rng, 1, 4) / 4;
  pr.cluster = ClusterFor(t, pr.given_placement);
  return pr;
}

TEST_CASE("search.target with the placement search: the brute force over every order of what "
          "the framework can deploy",
          "[search][target][placement]") {
  int proved = 0, runs = 0, found = 0, differ = 0;
  for (int i = 0; i < 10; ++i) {
    const std::uint64_t seed = 9700 + 31 * static_cast<std::uint64_t>(i);
    std::mt19937_64 rng(seed);
    const SearchProblem pr = RandomPlacement(rng, 3);
    INFO("seed " << seed << "\n" << Describe(pr));
    // Every order, every strategy: the best that fits, per target.
    std::vector<std::optional<Objective>> best(5);
    const std::vector<DeployTarget> targets = {DeployTarget::Any, DeployTarget::Megatron,
                                               DeployTarget::MindFormers, DeployTarget::Torchtitan,
                                               DeployTarget::DeepSpeed};
    Placement perm(3);
    std::iota(perm.begin(), perm.end(), 0);
    do {
      SearchProblem fixed = pr;
      fixed.search_placement = false;
      fixed.cluster = ClusterFor(pr.topology, perm);
      const std::vector<Bytes> caps = Capacities(fixed);
      for (const Point& pt : Enumerate(fixed)) {
        if (!Fits(pt, caps)) continue;
        for (size_t k = 0; k < targets.size(); ++k) {
          if (targets[k] != DeployTarget::Any && !PointDeployable(targets[k], fixed, pt)) continue;
          if (!best[k] || ObjectiveOf(pt) < *best[k]) best[k] = ObjectiveOf(pt);
        }
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
    for (size_t k = 0; k < targets.size(); ++k) {
      INFO("target " << TargetName(targets[k]));
      SearchOptions opt;
      opt.target = targets[k];
      opt.top_k = 3;
      Result<SearchResult> r = Search(pr, opt);
      REQUIRE(r.ok());
      ++runs;
      REQUIRE(r->found == best[k].has_value());
      if (!best[k]) {
        CHECK(r->proved_infeasible);
        continue;
      }
      ++found;
      CHECK(Deployable(targets[k], pr.layers, r->best.strategy, pr.p, 1, false));
      CHECK(ObjectiveOf(r->best) >= *best[k]);
      if (r->proved_optimal) {
        ++proved;
        CHECK(ObjectiveOf(r->best) == *best[k]);
      }
      differ += best[0] && *best[k] != *best[0];
      Result<Candidate> again = Evaluate(pr, r->best.choice, r->best.strategy, r->best.placement);
      REQUIRE(again.ok());
      CHECK(again->makespan == r->best.makespan);
    }
  }
  CHECK(found >= 30);
  CHECK(proved == found);  // small instances close
  CHECK(differ >= 4);      // the restriction often costs something
}

// Megatron's block settings are bounded and pruned: the same best as
// searching each setting alone (target any on a model whose only choices
// are that setting's), with fewer nodes than without pruning.
TEST_CASE("search.target megatron: settings searched best bound first, pruned by bound, same "
          "best as the brute force",
          "[search][target]") {
  int checked = 0;
  for (int i = 0; i < 12; ++i) {
    const std::uint64_t seed = 9900 + 7 * static_cast<std::uint64_t>(i);
    std::mt19937_64 rng(seed);
    // Six decoders: settings none, selective, uniform and block 1..5.
    SearchProblem pr = FixedProblem(Model(6, Uniform(rng, 1, 3) * kUs, Uniform(rng, 2, 4) * kMiB, true),
                                    2, 2 * Uniform(rng, 1, 2), kUnlimited);
    pr.choices = {ScheduleChoice{"1f1b", 1, {}}};
    const std::vector<Point> points = Enumerate(pr);
    std::vector<Bytes> peaks;
    for (const Point& pt : points) {
      if (PointDeployable(DeployTarget::Megatron, pr, pt)) peaks.push_back(pt.max_peak);
    }
    std::sort(peaks.begin(), peaks.end());
    const Bytes cap = peaks[static_cast<size_t>(Uniform(rng, 0, static_cast<int>(peaks.size()) - 1))];
    for (Device& d : pr.cluster.devices) d.memory_capacity = cap;
    INFO("seed " << seed << "\n" << Describe(pr));
    std::optional<Objective> optimum;
    for (const Point& pt : points) {
      if (!Fits(pt, Capacities(pr)) || !PointDeployable(DeployTarget::Megatron, pr, pt)) continue;
      if (!optimum || ObjectiveOf(pt) < *optimum) optimum = ObjectiveOf(pt);
    }
    REQUIRE(optimum);
    SearchOptions opt;
    opt.target = DeployTarget::Megatron;
    for (int top_k : {1, 5}) {
      opt.top_k = top_k;
      Result<SearchResult> r = Search(pr, opt);
      REQUIRE(r.ok());
      REQUIRE(r->found);
      CHECK(r->proved_optimal);
      CHECK(ObjectiveOf(r->best) == *optimum);
      CHECK(r->lower_bound == r->best.makespan);
      ++checked;
    }
  }
  CHECK(checked == 24);
}

// The report says why no capacity helps: Megatron runs looped-bfs with
// v = 2 as its interleaved schedule, whose default group p = 2 leaves a last
// group of 1 < p micro-batches when m = 3.
TEST_CASE("ppb-sim search --target megatron: why no capacity makes a strategy fit",
          "[search][target][cli]") {
  const auto dir = std::filesystem::temp_directory_path() / "ppb-test-search-target-limits";
  std::filesystem::create_directories(dir);
  const auto path = dir / "bfs.yaml";
  std::ofstream(path) << R"(model:
  name: bfs
  layers:
    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms}
    - name: decoder
      repeat: 4
      forward: 1ms
      backward: 2ms
      activation: 1GiB
      recompute:
        full: {activation: 0B, time: 1ms}
    - {name: head, kind: head, forward: 1ms, backward: 2ms}
cluster:
  devices: {memory: 80GiB}
pipeline:
  stages: 2
  microbatches: 3
  schedule: looped-bfs
  virtual_stages: 2
)";
  test::CliRun r = test::Cli({"search", "--config", path.string(), "--threads", "1", "--target",
                              "megatron"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("no strategy fits in memory (proved: the whole tree was searched).\n"
                   "  smallest per-device memory at which one fits: none: megatron can run no "
                   "strategy of this model at any capacity (looped-bfs: "
                   "--microbatch-group-size-per-virtual-pipeline-stage must satisfy p <= g <= m "
                   "and m mod g = 0 or >= p (Megatron-LM); got g=2, p=2, m=3)\n") !=
        std::string::npos);
  // MindFormers runs it: a strategy fits.
  test::CliRun mf = test::Cli({"search", "--config", path.string(), "--threads", "1", "--target",
                               "mindformers"});
  REQUIRE(mf.status == 0);
  CHECK(mf.out.find("PROVED OPTIMAL") != std::string::npos);
}

}  // namespace
}  // namespace ppb
