// The grid file of `ppb-sim sweep`: its shape (apps/input/grid.h).
#include "apps/input/grid.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "apps/input/units.h"

namespace ppb {

const char* SweepRunName(SweepRun run) {
  switch (run) {
    case SweepRun::Simulate:
      return "simulate";
    case SweepRun::Search:
      return "search";
    case SweepRun::Compare:
      return "compare";
  }
  return "simulate";
}

std::int64_t Grid::points() const {
  std::int64_t n = static_cast<std::int64_t>(runs.size());
  for (const GridAxis& a : axes) n *= static_cast<std::int64_t>(a.values.size());
  return n;
}

namespace {

int Line(const YAML::Node& node) { return node.Mark().line + 1; }

// How a node appears after "; got".
std::string Shape(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  return "'" + Abbreviate(node.Scalar()) + "'";
}

struct Reader {
  std::string file;
  Error Err(int line, const std::string& key, const std::string& expected,
            const std::string& given) const {
    return Error{key,
                 fmt::format("{}:{}: {}: expected {}; got {}", file, line, key, expected, given)};
  }
};

std::optional<SweepRun> RunOf(const std::string& s) {
  if (s == "simulate") return SweepRun::Simulate;
  if (s == "search") return SweepRun::Search;
  if (s == "compare") return SweepRun::Compare;
  return std::nullopt;
}

// The scalars of `node` (a scalar or a list of scalars).
Result<std::vector<YAML::Node>> Scalars(const Reader& r, const YAML::Node& node,
                                        const std::string& key, const std::string& what) {
  std::vector<YAML::Node> out;
  if (node.IsScalar()) {
    out.push_back(node);
    return out;
  }
  if (!node.IsSequence() || node.size() == 0) {
    return r.Err(Line(node), key, "a list of " + what + " (or one value)",
                 node.IsSequence() ? "an empty list" : Shape(node));
  }
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) {
      return r.Err(Line(item), key, "a list of " + what + " (scalars)", Shape(item));
    }
    out.push_back(item);
  }
  return out;
}

Status ReadSearch(const Reader& r, const YAML::Node& node, Grid& grid) {
  if (!node.IsMap())
    return r.Err(Line(node), "search", "a map of time_limit, node_limit, threads, seed",
                 Shape(node));
  for (const auto& kv : node) {
    const std::string k = kv.first.Scalar();
    const std::string key = "search." + k;
    const YAML::Node& v = kv.second;
    const int line = Line(kv.first);
    if (!v.IsScalar()) return r.Err(line, key, "a scalar", Shape(v));
    const std::string s = v.Scalar();
    std::int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    const bool whole = !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
    if (k == "time_limit") {
      if (whole && n >= 0) {
        grid.time_limit = n * 1'000'000'000LL;
        if (n > 1'000'000) return r.Err(line, key, "at most 1000000 seconds", "'" + s + "'");
        continue;
      }
      Result<Nanos> d = ParseDuration(s);
      if (!d.ok() || *d < 0) {
        return r.Err(line, key, "a duration like 10s or 500ms (0: no limit)", "'" + s + "'");
      }
      grid.time_limit = *d;
    } else if (k == "node_limit") {
      if (!whole || n < 1) return r.Err(line, key, "a positive integer", "'" + s + "'");
      grid.node_limit = n;
    } else if (k == "threads") {
      if (!whole || n < 1 || n > 1024) {
        return r.Err(line, key, "an integer in [1, 1024]", "'" + s + "'");
      }
      grid.search_threads = static_cast<int>(n);
    } else if (k == "seed") {
      std::uint64_t u = 0;
      const auto [p2, e2] = std::from_chars(s.data(), s.data() + s.size(), u);
      if (s.empty() || e2 != std::errc() || p2 != s.data() + s.size()) {
        return r.Err(line, key, "a non-negative integer", "'" + s + "'");
      }
      grid.seed = u;
    } else {
      return r.Err(line, key, "one of time_limit, node_limit, threads, seed", "'" + k + "'");
    }
  }
  return Status();
}

}  // namespace

Result<Grid> ParseGrid(std::string_view text, std::string_view filename) {
  Reader r{std::string(filename)};
  Grid grid;
  grid.path = std::string(filename);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error{"", fmt::format("{}:{}: expected a YAML grid file; got a syntax error: {}",
                                 filename, e.mark.line + 1, e.msg)};
  }
  if (!root.IsMap()) {
    return r.Err(1, "grid", "a map with vary, run, search, compare, group_by", Shape(root));
  }
  std::set<std::string> seen;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) return r.Err(Line(kv.first), "grid", "scalar keys", Shape(kv.first));
    const std::string k = kv.first.Scalar();
    if (!seen.insert(k).second) return r.Err(Line(kv.first), k, "each key once", "it twice");
    const YAML::Node& v = kv.second;
    if (k == "vary") {
      if (!v.IsMap()) {
        return r.Err(Line(kv.first), "vary", "a map of dotted config keys to lists of values",
                     Shape(v));
      }
      for (const auto& axis : v) {
        GridAxis a;
        a.key = axis.first.Scalar();
        a.line = Line(axis.first);
        const std::string key = "vary." + a.key;
        for (const GridAxis& b : grid.axes) {
          if (b.key == a.key) return r.Err(a.line, key, "each key once", "it twice");
        }
        if (a.key == "run") {
          return r.Err(a.line, key, "a config key (list the runs under run:)", "'run'");
        }
        Result<std::vector<YAML::Node>> values = Scalars(r, axis.second, key, "values");
        if (!values.ok()) return values.error();
        for (const YAML::Node& n : *values) {
          if (std::find(a.values.begin(), a.values.end(), n.Scalar()) != a.values.end()) {
            return r.Err(Line(n), key, "each value once", "'" + n.Scalar() + "' twice");
          }
          a.values.push_back(n.Scalar());
          a.value_lines.push_back(Line(n));
        }
        grid.axes.push_back(std::move(a));
      }
    } else if (k == "run") {
      grid.run_line = Line(kv.first);
      Result<std::vector<YAML::Node>> values = Scalars(r, v, "run", "simulate, search, compare");
      if (!values.ok()) return values.error();
      for (const YAML::Node& n : *values) {
        std::optional<SweepRun> run = RunOf(n.Scalar());
        if (!run) return r.Err(Line(n), "run", "simulate, search or compare", Shape(n));
        if (std::find(grid.runs.begin(), grid.runs.end(), *run) != grid.runs.end()) {
          return r.Err(Line(n), "run", "each run once", Shape(n) + " twice");
        }
        grid.runs.push_back(*run);
      }
    } else if (k == "search") {
      if (Status s = ReadSearch(r, v, grid); !s.ok()) return s.error();
    } else if (k == "compare") {
      if (!v.IsMap()) return r.Err(Line(kv.first), "compare", "a map with schedules", Shape(v));
      for (const auto& c : v) {
        if (c.first.Scalar() != "schedules") {
          return r.Err(Line(c.first), "compare." + c.first.Scalar(), "schedules",
                       "'" + c.first.Scalar() + "'");
        }
        Result<std::vector<YAML::Node>> values =
            Scalars(r, c.second, "compare.schedules", "schedule names");
        if (!values.ok()) return values.error();
        for (const YAML::Node& n : *values) grid.compare_schedules.push_back(n.Scalar());
      }
    } else if (k == "group_by") {
      grid.group_by_line = Line(kv.first);
      Result<std::vector<YAML::Node>> values = Scalars(r, v, "group_by", "vary keys");
      if (!values.ok()) return values.error();
      for (const YAML::Node& n : *values) grid.group_by.push_back(n.Scalar());
    } else {
      return r.Err(Line(kv.first), k, "one of vary, run, search, compare, group_by", "'" + k + "'");
    }
  }
  if (grid.runs.empty()) grid.runs.push_back(SweepRun::Simulate);
  for (const std::string& g : grid.group_by) {
    const bool known = g == "run" || std::any_of(grid.axes.begin(), grid.axes.end(),
                                                 [&](const GridAxis& a) { return a.key == g; });
    if (!known) {
      std::vector<std::string> keys;
      for (const GridAxis& a : grid.axes) keys.push_back(a.key);
      keys.push_back("run");
      return r.Err(grid.group_by_line, "group_by",
                   fmt::format("keys of vary ({})", fmt::join(keys, ", ")), "'" + g + "'");
    }
  }
  // The product, checked step by step (it cannot overflow: each step is
  // bounded before the next multiplication).
  std::int64_t n = static_cast<std::int64_t>(grid.runs.size());
  for (const GridAxis& a : grid.axes) {
    n *= static_cast<std::int64_t>(a.values.size());
    if (n > kMaxGridPoints) {
      return r.Err(a.line, "vary", fmt::format("at most {} points", kMaxGridPoints),
                   fmt::format("more (at vary.{})", a.key));
    }
  }
  return grid;
}

Result<Grid> LoadGrid(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in) {
    return Error{"--grid",
                 path + ": must be a readable grid file; got " + std::string(std::strerror(errno))};
  }
  return ParseGrid(text.str(), path);
}

std::string RunSettings(const Grid& grid, SweepRun run) {
  std::vector<std::string> parts;
  if (run == SweepRun::Search) {
    if (grid.time_limit) parts.push_back(fmt::format("time_limit={}ns", *grid.time_limit));
    if (grid.node_limit) parts.push_back(fmt::format("node_limit={}", *grid.node_limit));
    parts.push_back(fmt::format("threads={}", grid.search_threads));
    if (grid.seed) parts.push_back(fmt::format("seed={}", *grid.seed));
  } else if (run == SweepRun::Compare && !grid.compare_schedules.empty()) {
    parts.push_back(fmt::format("schedules={}", fmt::join(grid.compare_schedules, ",")));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace ppb
