// The readers of apps/input/megatron_arguments.h (the world size, a
// command's arguments, a log's block), and the iteration and memory lines
// of a log (apps/input/megatron_launch.h).
#include "apps/input/megatron_arguments.h"

#include "apps/input/megatron_launch.h"
#include "apps/input/slurm_job.h"
#include "apps/input/text_lines.h"

namespace ppb {
namespace megatron_detail {

World WorldSize(Args& args, const LaunchCommand* launch, const std::string& path,
                const LaunchInputs& in, std::vector<std::string>& notes) {
  World w;
  std::optional<World> from_file;
  if (args.log()) {
    if (auto ws = args.Int("world_size", 1)) {
      from_file = World{*ws, args.Where("world_size"), fmt::format("world_size {}", *ws)};
    }
  } else if (launch != nullptr && launch->script.empty()) {
    // An arguments file: no torchrun line.
    if (!in.gpus) {
      Fail(fmt::format("{}: the world size: must be given with --gpus N (an arguments file "
                       "has no torchrun line); got nothing",
                       path));
    }
  } else if (launch != nullptr) {
    std::optional<std::int64_t> per_node;
    std::int64_t nodes = 1;
    std::string where = fmt::format("{}:{}", path, launch->line);
    bool torchrun = false;
    for (size_t k = 0; k < launch->launcher.size(); ++k) {
      const LaunchWord& x = launch->launcher[k];
      const std::string& t = x.text;
      if (t == "torchrun" || t == "torch.distributed.run" || t == "torch.distributed.launch" ||
          (t.size() >= 9 && t.compare(t.size() - 9, 9, "/torchrun") == 0)) {
        torchrun = true;
      }
      std::string name = t;
      std::string value;
      const size_t eq = t.find('=');
      if (eq != std::string::npos) {
        name = t.substr(0, eq);
        value = t.substr(eq + 1);
      } else if (k + 1 < launch->launcher.size()) {
        value = launch->launcher[k + 1].text;
      }
      const bool nproc = name == "--nproc_per_node" || name == "--nproc-per-node";
      if (!nproc && name != "--nnodes") continue;
      std::int64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size() || n < 1 ||
          n > 1'000'000 || x.unknown) {
        if (in.gpus) continue;
        Fail(fmt::format("{}:{}: torchrun {}: must be a positive integer, or give --gpus N "
                         "(the world size); got '{}'",
                         path, x.line, name, Abbreviate(value)));
      }
      where = fmt::format("{}:{}", path, x.line);
      if (nproc) {
        per_node = n;
      } else {
        nodes = n;
      }
    }
    // srun starting the ranks itself (no torchrun): one rank a task, the
    // tasks from srun's options over the job's (#SBATCH, sbatch's).
    std::vector<LaunchWord> srun;
    bool by_srun = false;
    for (size_t k = 0; k < launch->launcher.size() && !torchrun; ++k) {
      const std::string& t = launch->launcher[k].text;
      if (t == "srun" || (t.size() > 5 && t.compare(t.size() - 5, 5, "/srun") == 0)) {
        srun.assign(launch->launcher.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                    launch->launcher.end());
        by_srun = true;
        break;
      }
    }
    if (by_srun) {
      std::vector<JobOption> opts = JobOptions(launch->scheduler, "sbatch");
      for (JobOption& o : JobOptions(srun, "srun")) opts.push_back(std::move(o));
      // Each value the tasks are counted from must be a number.
      const JobOption* last[3] = {nullptr, nullptr, nullptr};  // ntasks, nodes, per node
      for (const JobOption& o : opts) {
        if (o.key == "ntasks") last[0] = &o;
        if (o.key == "nodes") last[1] = &o;
        if (o.key == "ntasks-per-node") last[2] = &o;
      }
      const JobOption* used[2] = {last[0], nullptr};
      if (last[0] == nullptr) {
        used[0] = last[1];
        used[1] = last[2];
      }
      bool ok = true;
      for (const JobOption* o : used) {
        if (o == nullptr || o->Count()) continue;
        ok = false;
        if (in.gpus) continue;
        Fail(fmt::format("{}:{}: {}: must be a positive integer (the ranks srun starts), or "
                         "give --gpus N (the world size); got '{}'",
                         path, o->line, o->option, Abbreviate(o->value)));
      }
      const JobSize size = ReadJobSize(opts);
      if (ok && last[0] != nullptr) {
        from_file = World{*size.tasks, fmt::format("{}:{}: {}", path, last[0]->line,
                                                   last[0]->option),
                          fmt::format("{} {} = {} GPUs", last[0]->option, *size.tasks,
                                      *size.tasks)};
      } else if (ok && last[2] != nullptr) {
        const std::int64_t job_nodes = size.nodes.value_or(1);
        from_file = World{job_nodes * *size.tasks_per_node,
                          fmt::format("{}:{}: {}", path, last[2]->line, last[2]->option),
                          fmt::format("{} {} x {} {} = {} GPUs",
                                      last[1] ? last[1]->option : std::string("nodes"),
                                      job_nodes,
                                      last[2]->option, *size.tasks_per_node,
                                      job_nodes * *size.tasks_per_node)};
      } else if (ok && !in.gpus) {
        Fail(fmt::format("{}:{}: srun: must give its tasks (-n/--ntasks or --ntasks-per-node, "
                         "on its line or by #SBATCH), or give --gpus N (the world size); got "
                         "neither",
                         path, launch->line));
      }
    } else if (torchrun && per_node) {
      from_file = World{*per_node * nodes, where + ": torchrun --nproc_per_node x --nnodes",
                        fmt::format("torchrun --nproc_per_node {} x --nnodes {} = {} GPUs",
                                    *per_node, nodes, *per_node * nodes)};
    } else if (!torchrun) {
      from_file = World{1, where, "one process (no torchrun)"};
    } else if (!in.gpus) {
      Fail(fmt::format("{}:{}: torchrun: must give --nproc_per_node, or give --gpus N (the "
                       "world size); got neither",
                       path, launch->line));
    }
  }
  if (in.gpus) {
    w = World{*in.gpus, "--gpus", fmt::format("--gpus {}", *in.gpus)};
    if (from_file && from_file->gpus != *in.gpus) {
      notes.push_back(fmt::format("world size {} from --gpus (the file says {})", *in.gpus,
                                  from_file->text));
    }
    return w;
  }
  if (!from_file) {
    Fail(fmt::format("{}: the world size: must be given by world_size or --gpus N; got "
                     "neither",
                     path));
  }
  return *from_file;
}

// A launch command's arguments: "--flag v1 v2" or "--flag=v"; a flag given
// twice keeps its last value (argparse).
void ReadCommandArgs(const std::string& path, const std::vector<LaunchWord>& words, Args& args) {
  for (size_t k = 0; k < words.size();) {
    const LaunchWord& w = words[k];
    if (w.text.size() < 3 || w.text.compare(0, 2, "--") != 0) {
      Fail(fmt::format("{}:{}: '{}': must be a --flag or its value; got a word after no flag",
                       path, w.line, Abbreviate(w.text)));
    }
    Arg a;
    a.where = fmt::format("{}:{}", path, w.line);
    std::string flag = w.text;
    const size_t eq = flag.find('=');
    std::vector<std::string> values;
    bool unknown = w.unknown;
    if (eq != std::string::npos) {
      values.push_back(flag.substr(eq + 1));
      flag = flag.substr(0, eq);
    }
    ++k;
    while (k < words.size() && words[k].text.compare(0, 2, "--") != 0) {
      values.push_back(words[k].text);
      unknown = unknown || words[k].unknown;
      ++k;
    }
    a.flag = flag;
    a.unknown = unknown;
    if (values.empty()) {
      a.value = "True";
    } else {
      for (size_t v = 0; v < values.size(); ++v) a.value += (v > 0 ? " " : "") + values[v];
    }
    args.Set(DestOf(flag.substr(2)), std::move(a));
  }
}

// The first arguments block of a log. Lines are "  NAME DOTS VALUE" with
// 48 - len(NAME) dots (none past 48), after whatever prefix the launcher
// put before the block's title line.
bool ReadLogArgs(const std::string& path, std::string_view text, Args& args) {
  bool in = false;
  bool ended = false;
  std::string prefix;
  ForEachLine(text, [&](std::string_view l, int line) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!in) {
      const size_t h = l.find(kArgsHeader);
      if (h == std::string_view::npos) return true;
      prefix = std::string(l.substr(0, h));
      in = true;
      return true;
    }
    if (l.find(kArgsFooter) != std::string_view::npos) {
      ended = true;
      return false;
    }
    if (l.compare(0, prefix.size(), prefix) == 0) l.remove_prefix(prefix.size());
    if (l.size() < 3 || l.compare(0, 2, "  ") != 0) {
      Fail(fmt::format("{}:{}: the arguments block: must hold \"  NAME ... VALUE\" lines "
                       "until its end line; got '{}'",
                       path, line, Abbreviate(l)));
    }
    l.remove_prefix(2);
    const size_t sp = l.find(' ');
    if (sp == std::string_view::npos) {
      Fail(fmt::format("{}:{}: the arguments block: must give NAME and VALUE; got '{}'", path,
                       line, Abbreviate(l)));
    }
    const std::string name(l.substr(0, sp));
    const size_t dots = name.size() < 48 ? 48 - name.size() : 0;
    std::string_view rest = l.substr(sp + 1);
    if (rest.size() < dots + 1 || rest.substr(0, dots) != std::string(dots, '.') ||
        rest[dots] != ' ') {
      Fail(fmt::format("{}:{}: {}: must be followed by {} dots and its value (Megatron-LM's "
                       "_print_args); got '{}'",
                       path, line, name, dots, Abbreviate(rest)));
    }
    Arg a;
    a.flag = name;
    a.value = std::string(rest.substr(dots + 1));
    a.where = fmt::format("{}:{}", path, line);
    args.Set(name, std::move(a));
    return true;
  });
  if (ended) return true;
  if (in) {
    Fail(fmt::format("{}: the arguments block: must end with its \"end of arguments\" line; "
                     "got the end of the file",
                     path));
  }
  return false;
}

std::string EmittedSection(std::string_view text) {
  constexpr std::string_view kHeader = "==== ppb emit: ";
  if (text.find(kHeader) == std::string_view::npos) return "";
  std::string out;
  bool in = false;
  ForEachLine(text, [&](std::string_view l, int) {
    if (l.compare(0, kHeader.size(), kHeader) == 0) {
      in = l == "==== ppb emit: megatron ====";
      out += "#\n";
    } else {
      out += in ? std::string(l) + "\n" : "#\n";
    }
    return true;
  });
  return out;
}

namespace {

class Pattern {
 public:
  Pattern(std::string_view s, std::string where) : s_(s), where_(std::move(where)) {}
  std::vector<int> Run() {
    std::vector<int> v = Sum(0);
    Skip();
    if (i_ != s_.size()) Bad();
    return v;
  }

 private:
  [[noreturn]] void Bad() {
    Fail(fmt::format("{}: must be an integer or a list pattern such as ([0]*3+[1]*58) "
                     "(Megatron-LM's moe_freq_type); got '{}'",
                     where_, Abbreviate(s_)));
  }
  void Skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  std::vector<int> Sum(int depth) {
    if (depth > 32) Bad();
    std::vector<int> v = Product(depth);
    Skip();
    while (i_ < s_.size() && s_[i_] == '+') {
      ++i_;
      std::vector<int> w = Product(depth);
      v.insert(v.end(), w.begin(), w.end());
      if (v.size() > 100000) Bad();
      Skip();
    }
    return v;
  }
  std::vector<int> Product(int depth) {
    std::vector<int> v = Atom(depth);
    Skip();
    while (i_ < s_.size() && s_[i_] == '*') {
      ++i_;
      Skip();
      const std::int64_t n = Integer();
      if (n < 0 || static_cast<std::int64_t>(v.size()) * n > 100000) Bad();
      std::vector<int> w;
      for (std::int64_t k = 0; k < n; ++k) w.insert(w.end(), v.begin(), v.end());
      v = std::move(w);
      Skip();
    }
    return v;
  }
  std::vector<int> Atom(int depth) {
    Skip();
    if (i_ >= s_.size()) Bad();
    if (s_[i_] == '(') {
      ++i_;
      std::vector<int> v = Sum(depth + 1);
      Skip();
      if (i_ >= s_.size() || s_[i_] != ')') Bad();
      ++i_;
      return v;
    }
    if (s_[i_] != '[') Bad();
    ++i_;
    std::vector<int> v;
    Skip();
    while (i_ < s_.size() && s_[i_] != ']') {
      v.push_back(static_cast<int>(Integer()));
      if (v.back() != 0 && v.back() != 1) Bad();
      Skip();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
      Skip();
    }
    if (i_ >= s_.size()) Bad();
    ++i_;
    return v;
  }
  std::int64_t Integer() {
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), x);
    if (ec != std::errc()) Bad();
    i_ = static_cast<size_t>(p - s_.data());
    return x;
  }
  std::string_view s_;
  std::string where_;
  size_t i_ = 0;
};

}  // namespace

std::vector<int> MoeLayerPattern(std::string_view text, const std::string& where) {
  return Pattern(text, where).Run();
}

}  // namespace megatron_detail

Result<std::vector<LoggedIteration>> ReadMegatronIterations(const std::string& path,
                                                             std::string_view text) {
  constexpr std::string_view kIteration = " iteration ";
  constexpr std::string_view kElapsed = "elapsed time per iteration (ms): ";
  std::vector<LoggedIteration> out;
  std::optional<Error> bad;
  ForEachLine(text, [&](std::string_view l, int line) {
    const size_t e = l.find(kElapsed);
    const size_t it = l.find(kIteration);
    if (e == std::string_view::npos || it == std::string_view::npos || it > e) return true;
    auto number = [&](size_t at, auto& x) {
      while (at < l.size() && l[at] == ' ') ++at;
      auto [p, ec] = std::from_chars(l.data() + at, l.data() + l.size(), x);
      return ec == std::errc() && p != l.data() + at;
    };
    LoggedIteration li;
    li.line = line;
    if (!number(it + kIteration.size(), li.iteration) || !number(e + kElapsed.size(), li.ms) ||
        li.iteration < 1 || !(li.ms > 0 && li.ms < 1e9)) {
      bad = Error{"", fmt::format("{}:{}: an iteration line: must give \"iteration N/ M\" and "
                                  "\"elapsed time per iteration (ms): T\" with N >= 1 and T > 0 "
                                  "(Megatron-LM's training_log); got '{}'",
                                  path, line, Abbreviate(l))};
      return false;
    }
    out.push_back(li);
    return true;
  });
  if (bad) return *bad;
  return out;
}

std::optional<LoggedMemory> ReadMegatronMemory(std::string_view text) {
  std::optional<LoggedMemory> out;
  auto value = [](std::string_view l, std::string_view key) -> std::optional<double> {
    const size_t at = l.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    double x = 0;
    const char* b = l.data() + at + key.size();
    auto [p, ec] = std::from_chars(b, l.data() + l.size(), x);
    if (ec != std::errc() || p == b || !(x >= 0 && x < 1e12)) return std::nullopt;
    return x;
  };
  ForEachLine(text, [&](std::string_view l, int) {
    if (l.find(" memory (MB) | ") == std::string_view::npos) return true;
    const std::optional<double> reserved = value(l, "| max reserved: ");
    if (!reserved) return true;
    if (!out) out = LoggedMemory{};
    out->max_reserved_mb = std::max(out->max_reserved_mb, *reserved);
    if (const std::optional<double> used = value(l, "| total device memory used: ")) {
      out->device_used_mb = std::max(out->device_used_mb.value_or(0), *used);
    }
    return true;
  });
  return out;
}

}  // namespace ppb
