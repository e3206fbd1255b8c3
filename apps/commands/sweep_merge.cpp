// ppb-sim sweep merge FILE... --output FILE: the results files of a sweep's
// shards (or of interrupted runs) as one file, rows in point order, each
// point once. Reports on stderr the rows read, the duplicates (the same
// point in several files: identical rows are kept once; rows that differ,
// e.g. searches stopped by a time limit, keep the first and are listed)
// and the points missing from 0 .. points-1. Rows of another sweep (another
// config hash or grid size) are an error. Exit 0 when every point is there,
// 2 when points are missing (the merged file is written all the same, so a
// rerun of the missing shards and another merge completes it) or an input
// is bad, 1 when the output cannot be written.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "apps/commands/commands.h"
#include "apps/commands/common.h"
#include "apps/commands/sweep_results.h"

namespace ppb::commands {

namespace {

// "3, 7-9, 12" of sorted indices; at most `limit` ranges, then "...".
std::string Ranges(const std::vector<std::int64_t>& xs, size_t limit = 20) {
  std::string out;
  size_t shown = 0;
  for (size_t i = 0; i < xs.size();) {
    size_t j = i;
    while (j + 1 < xs.size() && xs[j + 1] == xs[j] + 1) ++j;
    if (shown == limit) return out + ", ...";
    out += (out.empty() ? "" : ", ") +
           (i == j ? std::to_string(xs[i]) : fmt::format("{}-{}", xs[i], xs[j]));
    ++shown;
    i = j + 1;
  }
  return out;
}

}  // namespace

int RunSweepMerge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts("sweep merge options");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("output,o", po::value<std::string>(), "the merged results file (written whole); required")
      ("files", po::value<std::vector<std::string>>(), "results files to merge");
  // clang-format on
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "ppb-sim: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (vm.count("help")) {
    out << "usage: ppb-sim sweep merge FILE... --output FILE\n\n" << opts;
    return kExitOk;
  }
  if (!vm.count("output") || !vm.count("files")) {
    err << "ppb-sim: sweep merge: expected FILE... --output FILE; got "
        << (vm.count("files") ? "no --output" : "no FILE") << "\n";
    return kExitBadInput;
  }
  struct Seen {
    SweepRow row;
    std::string line;
    std::string place;
  };
  std::map<std::int64_t, Seen> by_point;
  std::string hash;
  std::int64_t points = -1;
  std::string first_place;
  std::int64_t read = 0, identical = 0;
  std::vector<std::string> conflicts;
  for (const std::string& path : vm["files"].as<std::vector<std::string>>()) {
    Result<ResultsFile> file = ReadResults(path);
    if (!file.ok()) {
      err << "ppb-sim: " << file.error().message << "\n";
      return kExitBadInput;
    }
    if (!file->trailing.empty()) {
      err << "sweep merge: " << path << ":" << file->trailing_line
          << ": the last line is not a complete row (" << file->trailing
          << "); left out, its point counts as missing\n";
    }
    if (file->rows.empty() && file->trailing.empty()) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        err << "ppb-sim: " << path << ": must be a readable results file; got no such file\n";
        return kExitBadInput;
      }
    }
    for (size_t i = 0; i < file->rows.size(); ++i) {
      SweepRow& r = file->rows[i];
      const std::string place = path + ":" + std::to_string(file->lines[i]);
      ++read;
      if (points < 0) {
        hash = r.config_hash;
        points = r.points;
        first_place = place;
      } else if (r.config_hash != hash || r.points != points) {
        err << "ppb-sim: " << place << ": expected a row of the sweep of " << first_place
            << " (config " << hash << ", " << points << " points); got config " << r.config_hash
            << ", " << r.points << " points\n";
        return kExitBadInput;
      }
      const std::string line = SweepLine(r);
      auto it = by_point.find(r.point);
      if (it == by_point.end()) {
        by_point.emplace(r.point, Seen{std::move(r), line, place});
        continue;
      }
      if (SweepKey(it->second.row) != SweepKey(r)) {
        err << "ppb-sim: " << place << ": expected point " << r.point << " to be the point of "
            << it->second.place << "; got other values (rows of another grid)\n";
        return kExitBadInput;
      }
      if (it->second.line == line) {
        ++identical;
      } else {
        conflicts.push_back(fmt::format("point {}: {} and {} differ; kept {}", r.point,
                                        it->second.place, place, it->second.place));
      }
    }
  }
  std::string merged;
  for (const auto& [point, seen] : by_point) merged += seen.line;
  std::vector<std::int64_t> missing;
  for (std::int64_t i = 0; i < std::max<std::int64_t>(points, 0); ++i) {
    if (!by_point.count(i)) missing.push_back(i);
  }
  const std::string output = vm["output"].as<std::string>();
  if (!WriteFile(output, merged, err)) return kExitIo;
  err << fmt::format("sweep merge: {} rows read, {} points of {} written to {}; {} duplicate(s)",
                     read, by_point.size(), std::max<std::int64_t>(points, 0), output,
                     identical + static_cast<std::int64_t>(conflicts.size()));
  err << (conflicts.empty() ? "" : fmt::format(" ({} differing)", conflicts.size()));
  err << fmt::format(", {} missing{}\n", missing.size(),
                     missing.empty() ? "" : ": points " + Ranges(missing));
  for (const std::string& c : conflicts) err << "sweep merge: duplicate " << c << "\n";
  if (points < 0) {
    err << "ppb-sim: sweep merge: expected at least one row; got none\n";
    return kExitBadInput;
  }
  return missing.empty() ? kExitOk : kExitBadInput;
}

}  // namespace ppb::commands
