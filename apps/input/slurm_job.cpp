// JobOptions and ReadJobSize (apps/input/slurm_job.h).
#include "apps/input/slurm_job.h"

#include <charconv>
#include <string_view>

namespace ppb {

std::optional<std::int64_t> JobOption::Count() const {
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (unknown || value.empty() || ec != std::errc() || p != value.data() + value.size() ||
      n < 1 || n > 1'000'000) {
    return std::nullopt;
  }
  return n;
}

namespace {

// The long and short spellings of each sizing option.
struct Spelling {
  const char* key;
  const char* long_name;
  const char* short_name;  // "" when none
};
constexpr Spelling kSpellings[] = {
    {"nodes", "--nodes", "-N"},
    {"ntasks", "--ntasks", "-n"},
    {"ntasks-per-node", "--ntasks-per-node", ""},
    {"gpus-per-node", "--gpus-per-node", ""},
    {"gpus", "--gpus", "-G"},
    {"gres", "--gres", ""},
};

// The GPU count of a --gres list ("gpu:8", "gpu:h100:8,nic:1"), or "" when
// it names no GPU.
std::string GresGpus(std::string_view v) {
  while (!v.empty()) {
    const size_t comma = v.find(',');
    const std::string_view item = v.substr(0, comma);
    if (item.substr(0, 4) == "gpu:" || item == "gpu") {
      const size_t colon = item.find_last_of(':');
      return item == "gpu" ? "1" : std::string(item.substr(colon + 1));
    }
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return "";
}

}  // namespace

std::vector<JobOption> JobOptions(const std::vector<LaunchWord>& words,
                                  const std::string& program) {
  std::vector<JobOption> out;
  const std::string_view kDirective = "#SBATCH ";
  for (size_t k = 0; k < words.size(); ++k) {
    std::string_view w = words[k].text;
    const bool directive = w.substr(0, kDirective.size()) == kDirective;
    if (directive) w.remove_prefix(kDirective.size());
    if (w.size() < 2 || w[0] != '-') {
      if (directive) continue;
      break;  // srun's command
    }
    const Spelling* hit = nullptr;
    std::string value;
    bool has_value = false;
    std::string_view written = w;
    for (const Spelling& s : kSpellings) {
      const std::string_view l = s.long_name, sh = s.short_name;
      if (w == l || (!sh.empty() && w == sh)) {
        hit = &s;
      } else if (w.size() > l.size() && w.substr(0, l.size()) == l && w[l.size()] == '=') {
        hit = &s;
        value = std::string(w.substr(l.size() + 1));
        has_value = true;
        written = l;
      } else if (!sh.empty() && w.size() > 2 && w.substr(0, 2) == sh) {
        hit = &s;
        value = std::string(w.substr(2));
        has_value = true;
        written = sh;
      }
      if (hit != nullptr) break;
    }
    if (hit == nullptr) continue;
    bool unknown = words[k].unknown;
    if (!has_value && k + 1 < words.size()) {
      std::string_view next = words[k + 1].text;
      if (next.substr(0, kDirective.size()) == kDirective) next.remove_prefix(kDirective.size());
      value = std::string(next);
      unknown = unknown || words[k + 1].unknown;
      ++k;
    }
    JobOption o;
    o.key = hit->key;
    o.option = (directive ? std::string("#SBATCH ") : program + " ") + std::string(written);
    o.value = value;
    o.line = words[k].line;
    o.unknown = unknown;
    if (o.key == "gres") {
      o.value = GresGpus(value);
      if (o.value.empty()) continue;
      o.key = "gpus-per-node";
    } else if (o.key == "gpus-per-node" || o.key == "gpus") {
      const size_t colon = o.value.find_last_of(':');  // TYPE:N
      if (colon != std::string::npos) o.value = o.value.substr(colon + 1);
    }
    out.push_back(std::move(o));
  }
  return out;
}

JobSize ReadJobSize(const std::vector<JobOption>& options) {
  JobSize s;
  for (const JobOption& o : options) {
    const std::optional<std::int64_t> n = o.Count();
    if (!n) continue;
    if (o.key == "nodes") s.nodes = n;
    if (o.key == "ntasks") s.tasks = n;
    if (o.key == "ntasks-per-node") s.tasks_per_node = n;
    if (o.key == "gpus-per-node") s.gpus_per_node = n;
    if (o.key == "gpus") s.gpus = n;
  }
  if (!s.tasks && s.nodes && s.tasks_per_node) s.tasks = *s.nodes * *s.tasks_per_node;
  return s;
}

}  // namespace ppb
