// A distributed search's parts and their merge (search.h: EncodePart,
// DecodePart, MergeParts; SearchShare says how the units are shared).
//
// Contract: a part travels as text with the figures of its SearchResult and
// its top list as (choice, layers per stage, recompute, device order);
// DecodePart simulates each strategy again, so a merged result reports what
// the engine computes. MergeParts keeps one entry per (choice, split,
// engine-visible device order), the Better of equals, so the top list is
// that of one process when every part closed (the device order of two that
// simulate alike is the lesser, which one process may not have visited).
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "search/driver.h"
#include "search/search.h"

namespace ppb {

namespace {

constexpr const char* kPartSchema = "ppb.search-part/1";

template <typename T>
void PutList(std::ostringstream& os, const std::vector<T>& xs) {
  os << ' ' << xs.size();
  for (const T& x : xs) os << ' ' << static_cast<long long>(x);
}

template <typename T>
bool GetList(std::istringstream& is, std::vector<T>& xs) {
  long long n = -1;
  if (!(is >> n) || n < 0 || n > 10'000'000) return false;
  xs.resize(static_cast<size_t>(n));
  for (T& x : xs) {
    long long v = 0;
    if (!(is >> v)) return false;
    x = static_cast<T>(v);
  }
  return true;
}

}  // namespace

std::string EncodePart(const SearchResult& r) {
  std::ostringstream os;
  os << kPartSchema << '\n'
     << "state " << r.found << ' ' << r.proved_optimal << ' ' << r.proved_infeasible << ' '
     << r.part_bound << '\n'
     << "counts " << r.nodes << ' ' << r.evaluations << ' ' << r.placements_searched << ' '
     << r.placement_nodes << '\n'
     << "fast " << r.fast_sets << ' ' << r.fast_sets_bounded << ' ' << r.fast_sets_bound << '\n'
     << "reason " << r.stop_reason << '\n';
  for (const auto& [t, ns] : r.incumbents) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", t);
    os << "incumbent " << buf << ' ' << ns << '\n';
  }
  for (const Candidate& c : r.top) {
    os << "candidate " << c.choice;
    PutList(os, c.strategy.layers_per_stage);
    PutList(os, c.strategy.recompute);
    PutList(os, c.placement);
    os << '\n';
  }
  return os.str();
}

Result<SearchResult> DecodePart(const SearchProblem& problem, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  auto bad = [&](const std::string& what) {
    return Error{"search", "a search part from another process is malformed: " + what};
  };
  if (!std::getline(in, line) || line != kPartSchema) return bad("expected " + std::string(kPartSchema));
  SearchResult r;
  while (std::getline(in, line)) {
    std::istringstream is(line);
    std::string tag;
    is >> tag;
    bool ok = true;
    if (tag == "state") {
      ok = static_cast<bool>(is >> r.found >> r.proved_optimal >> r.proved_infeasible >> r.part_bound);
    } else if (tag == "counts") {
      ok = static_cast<bool>(is >> r.nodes >> r.evaluations >> r.placements_searched >> r.placement_nodes);
    } else if (tag == "fast") {
      ok = static_cast<bool>(is >> r.fast_sets >> r.fast_sets_bounded >> r.fast_sets_bound);
    } else if (tag == "reason") {
      r.stop_reason = line.size() > 7 ? line.substr(7) : std::string();
    } else if (tag == "incumbent") {
      double t = 0;
      Nanos ns = 0;
      ok = static_cast<bool>(is >> t >> ns);
      r.incumbents.emplace_back(t, ns);
    } else if (tag == "candidate") {
      int choice = 0;
      Strategy st;
      Placement pl;
      ok = static_cast<bool>(is >> choice) && GetList(is, st.layers_per_stage) &&
           GetList(is, st.recompute) && GetList(is, pl);
      if (ok) {
        Result<Candidate> c = Evaluate(problem, choice, st, pl);
        if (!c.ok()) return bad(c.error().message);
        r.top.push_back(std::move(c).value());
      }
    } else {
      ok = false;
    }
    if (!ok) return bad("line '" + line.substr(0, 80) + "'");
  }
  return r;
}

Result<SearchResult> MergeParts(const SearchProblem& problem, const SearchOptions& options,
                                const std::vector<SearchResult>& parts) {
  using search_detail::kInf;
  SearchResult res;
  bool all_closed = true;
  std::string reason;
  Nanos lb = kInf;
  std::vector<Candidate> all;
  std::vector<std::pair<double, Nanos>> events;
  for (const SearchResult& part : parts) {
    res.nodes += part.nodes;
    res.evaluations += part.evaluations;
    res.placements_searched += part.placements_searched;
    res.placement_nodes += part.placement_nodes;
    if (part.fast_sets > 0) {  // the lead's
      res.fast_sets = part.fast_sets;
      res.fast_sets_bounded = part.fast_sets_bounded;
      res.fast_sets_bound = part.fast_sets_bound;
    }
    const bool closed = part.proved_optimal || part.proved_infeasible;
    all_closed &= closed;
    if (!closed && reason.empty()) reason = part.stop_reason;
    if (part.part_bound >= 0) lb = std::min(lb, part.part_bound);
    all.insert(all.end(), part.top.begin(), part.top.end());
    events.insert(events.end(), part.incumbents.begin(), part.incumbents.end());
  }
  std::sort(events.begin(), events.end());
  for (const auto& e : events) {
    if (res.incumbents.empty() || e.second < res.incumbents.back().second) res.incumbents.push_back(e);
  }
  // One entry per (choice, split, what the engine sees of the order).
  bool ring = false;
  for (const ScheduleChoice& ch : problem.choices) ring |= ch.v > 1;
  std::sort(all.begin(), all.end(), Better);
  std::map<std::tuple<int, std::vector<int>, std::vector<std::int32_t>>, bool> kept;
  const size_t k = static_cast<size_t>(std::max(1, options.top_k));
  for (Candidate& c : all) {
    if (res.top.size() >= k) break;
    if (!c.feasible) continue;
    std::vector<std::int32_t> key;
    if (problem.search_placement && !c.placement.empty()) {
      key = PlacementKey(problem.topology, c.placement, ring);
    }
    if (!kept.emplace(std::make_tuple(c.choice, c.strategy.layers_per_stage, key), true).second) {
      continue;
    }
    res.top.push_back(std::move(c));
  }
  res.found = !res.top.empty();
  if (res.found) res.best = res.top.front();
  res.proved_optimal = res.found && all_closed;
  res.proved_infeasible = !res.found && all_closed;
  res.part_bound = lb >= kInf ? -1 : lb;
  if (problem.search_placement) {
    res.lower_bound = res.found ? std::min(lb, res.best.makespan) : 0;
    if (res.found && res.fast_sets_bound > 0 && res.fast_sets_bounded == res.fast_sets) {
      res.lower_bound = std::max(res.lower_bound, std::min(res.fast_sets_bound, res.best.makespan));
    }
  } else {
    res.lower_bound = lb >= kInf ? 0 : std::min(lb, res.found ? res.best.makespan : lb);
  }
  if (res.found && res.best.makespan > 0) {
    res.gap = static_cast<double>(res.best.makespan - res.lower_bound) /
              static_cast<double>(res.best.makespan);
  }
  // A part that evaluated nothing speaks for all only when none did.
  if (reason == search_detail::kNothingEvaluated && (res.found || res.evaluations > 0)) {
    reason = "time limit";
  }
  res.stop_reason = all_closed ? (res.found ? "proved optimal" : "proved infeasible") : reason;
  if (!res.found && !problem.search_placement && options.min_capacity) {
    bool cut = false;
    Result<std::vector<search_detail::ChoiceContext>> ctxs =
        search_detail::MakeContexts(problem, options, &cut);
    if (!ctxs.ok()) return ctxs.error();
    SearchOptions alone = options;
    alone.share = nullptr;
    search_detail::MinCapacity(problem, alone, *ctxs, res);
    if (cut) {  // choices left out may fit with less
      res.min_capacity_cut = true;
      res.binding_device = -1;
    }
    res.lower_bound = 0;
  }
  return res;
}

}  // namespace ppb
