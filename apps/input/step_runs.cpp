#include "apps/input/step_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "apps/input/config.h"
#include "apps/input/megatron_launch.h"
#include "apps/input/config_reader.h"
#include "core/engine.h"

namespace ppb {

const char* StepCoefficientName(StepCoefficient c) {
  switch (c) {
    case StepCoefficient::MatmulEfficiency:
      return "matmul_efficiency";
    case StepCoefficient::AttentionEfficiency:
      return "attention_efficiency";
    case StepCoefficient::HbmEfficiency:
      return "hbm_efficiency";
    case StepCoefficient::CollectiveEfficiency:
      return "collective_efficiency";
    case StepCoefficient::IntraNodeBandwidth:
      return "intra_node.bandwidth";
    case StepCoefficient::InterNodeBandwidth:
      return "inter_node.bandwidth";
    case StepCoefficient::Fp8MatmulEfficiency:
      return "fp8_matmul_efficiency";
    case StepCoefficient::Fp4MatmulEfficiency:
      return "fp4_matmul_efficiency";
    case StepCoefficient::LaunchOverhead:
      return "launch_overhead";
    case StepCoefficient::LayerOverhead:
      return "layer_overhead";
    case StepCoefficient::MicrobatchOverhead:
      return "microbatch_overhead";
  }
  return "?";
}

bool IsDuration(StepCoefficient c) {
  return c == StepCoefficient::LaunchOverhead || c == StepCoefficient::LayerOverhead ||
         c == StepCoefficient::MicrobatchOverhead;
}

// The config's own limits (config_hardware.cpp): 1 ms and 1 s.
double DurationCeiling(StepCoefficient c) {
  return c == StepCoefficient::LaunchOverhead ? 1e6 : 1e9;
}

bool IsBandwidth(StepCoefficient c) {
  return c == StepCoefficient::IntraNodeBandwidth || c == StepCoefficient::InterNodeBandwidth;
}

namespace config_detail {
namespace {

class StepRunsParser : public ConfigReader {
 public:
  explicit StepRunsParser(const std::string& path)
      : ConfigReader(path, RunConfig()), path_(path) {}

  Result<StepRuns> Parse(std::string_view text) {
    return WithYaml<StepRuns>(text, [&](const YAML::Node& root) { return Read(root); });
  }

 private:
  // A run given as its Megatron-LM log: the measured step is the median of
  // the logged iterations after the first `warmup` (default 2: the first
  // iterations of a job allocate memory and compile kernels). The config is
  // read from the log by the command (StepRun::log_cluster).
  Status ReadLogRun(const Entries& f, const Entry& log, const std::string& item,
                    const std::filesystem::path& dir, StepRun& run) {
    for (const char* key : {"config", "iteration_time"}) {
      if (const Entry* x = Find(f, key)) {
        return Fail(x->path, "must not be given with log (the log gives the run and its "
                             "times); got both");
      }
    }
    Result<std::string> name = String(log.value, log.path, "a file name");
    if (!name.ok()) return name.error();
    run.config = *name;
    run.path = (dir / *name).string();
    run.line = log.value.Mark().line >= 0 ? log.value.Mark().line + 1 : 0;
    run.from_log = true;
    const Entry* cluster = Find(f, "cluster");
    if (cluster == nullptr) {
      return Fail(item + ".cluster", "must be given with log (a YAML file with the hardware: "
                                     "block the run used); got nothing");
    }
    Result<std::string> c = String(cluster->value, cluster->path, "a file name");
    if (!c.ok()) return c.error();
    run.log_cluster = (dir / *c).string();
    if (const Entry* g = Find(f, "gpus")) {
      Result<int> n = PositiveInt(g->value, g->path);
      if (!n.ok()) return n.error();
      run.log_gpus = *n;
    }
    int warmup = 2;
    if (const Entry* w = Find(f, "warmup")) {
      Result<std::int64_t> n = Integer(w->value, w->path, 0, 1'000'000'000,
                                       "a non-negative integer (iterations skipped)");
      if (!n.ok()) return n.error();
      warmup = static_cast<int>(*n);
    }
    std::string text;
    if (!ReadFile(run.path, text)) {
      return Fail(log.path, "must name a readable Megatron-LM log; got " + run.path);
    }
    Result<std::vector<LoggedIteration>> its = ReadMegatronIterations(run.path, text);
    if (!its.ok()) return its.error();
    std::vector<double> ms;
    for (const LoggedIteration& it : *its) {
      if (it.iteration > warmup) ms.push_back(it.ms);
    }
    if (ms.empty()) {
      return Fail(log.path, fmt::format("must log an iteration after the first {} (warmup); got "
                                        "{} iteration lines in {}",
                                        warmup, its->size(), run.path));
    }
    std::sort(ms.begin(), ms.end());
    const size_t n = ms.size();
    const double median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    run.measured = static_cast<Nanos>(std::llround(median * 1e6));
    run.log_iterations = static_cast<int>(n);
    // The memory report: the device's total when logged, else the
    // allocator's max reserved (the fit adds NCCL, context and workspaces).
    if (const std::optional<LoggedMemory> mem = ReadMegatronMemory(text)) {
      const double mb = mem->device_used_mb.value_or(mem->max_reserved_mb);
      run.peak_memory = static_cast<Bytes>(std::llround(mb * 1024 * 1024));
      run.peak_reserved = !mem->device_used_mb.has_value();
    }
    return Status();
  }

  Result<StepRuns> Read(const YAML::Node& root) {
    Result<Entries> top = Map(root, "", {"runs", "fit"});
    if (!top.ok()) return top.error();
    StepRuns out;
    out.path = path_;
    Result<std::vector<Entry>> runs = RequiredList(*top, "runs", "runs", "measured runs");
    if (!runs.ok()) return runs.error();
    const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    for (const Entry& item : *runs) {
      Result<Entries> f = Map(item.value, item.path,
                              {"config", "iteration_time", "peak_memory", "log", "cluster",
                               "gpus", "warmup"});
      if (!f.ok()) return f.error();
      StepRun run;
      if (const Entry* log = Find(*f, "log")) {
        PPB_RETURN_IF_ERROR(ReadLogRun(*f, *log, item.path, dir, run));
      } else {
        for (const char* key : {"cluster", "gpus", "warmup"}) {
          if (const Entry* x = Find(*f, key)) {
            return Fail(x->path, "must go with log (a Megatron-LM training log); got it with "
                                 "config");
          }
        }
        const Entry* c = Find(*f, "config");
        const Entry* t = Find(*f, "iteration_time");
        if (c == nullptr || t == nullptr) {
          return Fail(item.path + (c == nullptr ? ".config" : ".iteration_time"),
                      c == nullptr
                          ? "must be given (the run's config file, or log: its Megatron-LM "
                            "log); got nothing"
                          : "must be given (the measured step time, e.g. 21.3s); got nothing");
        }
        Result<std::string> name = String(c->value, c->path, "a file name");
        if (!name.ok()) return name.error();
        run.config = *name;
        run.path = (dir / *name).string();
        run.line = c->value.Mark().line >= 0 ? c->value.Mark().line + 1 : 0;
        std::string text;
        if (!ReadFile(run.path, text)) {
          return Fail(c->path, "must name a readable config file; got " + run.path);
        }
        try {
          run.document = YAML::Load(text);
        } catch (const YAML::Exception& e) {
          return Fail(c->path, "must name a YAML config; " + run.path + ":" +
                                   std::to_string(e.mark.line + 1) + ": " + e.msg);
        }
        Result<Nanos> ns = Duration(t->value, t->path, true);
        if (!ns.ok()) return ns.error();
        run.measured = *ns;
      }
      if (const Entry* m = Find(*f, "peak_memory")) {
        run.peak_reserved = false;  // given: the process's, as for a config
        Result<Bytes> b = Size(m->value, m->path, true);
        if (!b.ok()) return b.error();
        run.peak_memory = *b;
      }
      out.runs.push_back(std::move(run));
    }
    // Distinct configs: a config listed twice measures the same thing.
    std::vector<std::string> seen;
    for (const StepRun& run : out.runs) {
      std::error_code ec;
      std::string key = std::filesystem::weakly_canonical(run.path, ec).string();
      if (ec) key = run.path;
      if (std::find(seen.begin(), seen.end(), key) == seen.end()) seen.push_back(key);
    }
    out.distinct = seen.size();
    const size_t n = out.distinct;
    if (const Entry* fit = Find(*top, "fit")) {
      out.fit_given = true;
      Result<std::vector<Entry>> items = List(fit->value, fit->path, "a list of coefficient names");
      if (!items.ok()) return items.error();
      // The names and their order: AllStepCoefficients, one list.
      const std::vector<StepCoefficient> all = AllStepCoefficients();
      std::vector<std::string> names;
      for (StepCoefficient c : all) names.emplace_back(StepCoefficientName(c));
      for (const Entry& it : *items) {
        Result<size_t> i = Choice(it.value, it.path, names);
        if (!i.ok()) return i.error();
        if (std::find(out.fit.begin(), out.fit.end(), all[*i]) != out.fit.end()) {
          return Fail(it.path, "must name each coefficient once; got " +
                                   it.value.Scalar() + " twice");
        }
        out.fit.push_back(all[*i]);
      }
      if (out.fit.empty() || out.fit.size() > n) {
        return Fail(fit->path,
                    fmt::format("must name 1 to {} coefficients (at most one per distinct "
                                "measured config{}); got {}",
                                n,
                                n < out.runs.size()
                                    ? fmt::format(": {} runs name {} configs", out.runs.size(), n)
                                    : std::string(),
                                out.fit.size()));
      }
    } else {
      const StepCoefficient defaults[] = {StepCoefficient::MatmulEfficiency,
                                          StepCoefficient::CollectiveEfficiency,
                                          StepCoefficient::InterNodeBandwidth};
      for (size_t i = 0; i < std::min<size_t>(n, 3); ++i) out.fit.push_back(defaults[i]);
    }
    return out;
  }

  std::string path_;
};

}  // namespace
}  // namespace config_detail

Result<StepRuns> LoadStepRuns(const std::string& path) {
  std::string text;
  if (!config_detail::ReadFile(path, text)) {
    return Error{"", path + ": must be a readable runs file; got " + std::strerror(errno)};
  }
  config_detail::StepRunsParser parser(path);
  return parser.Parse(text);
}

std::vector<StepCoefficient> AllStepCoefficients() {
  return {StepCoefficient::MatmulEfficiency,    StepCoefficient::AttentionEfficiency,
          StepCoefficient::HbmEfficiency,       StepCoefficient::CollectiveEfficiency,
          StepCoefficient::IntraNodeBandwidth,  StepCoefficient::InterNodeBandwidth,
          StepCoefficient::Fp8MatmulEfficiency, StepCoefficient::Fp4MatmulEfficiency,
          StepCoefficient::LaunchOverhead,      StepCoefficient::LayerOverhead,
          StepCoefficient::MicrobatchOverhead};
}

double StepCoefficientValue(StepCoefficient c, const Hardware& h) {
  switch (c) {
    case StepCoefficient::MatmulEfficiency:
      return h.gpu.compute.matmul;
    case StepCoefficient::AttentionEfficiency:
      return h.gpu.compute.attention;
    case StepCoefficient::HbmEfficiency:
      return h.gpu.compute.hbm;
    case StepCoefficient::CollectiveEfficiency:
      return h.gpu.network.collective;
    case StepCoefficient::IntraNodeBandwidth:
      return h.gpu.nvlink_bytes_per_s;
    case StepCoefficient::InterNodeBandwidth:
      return h.gpu.nic_bytes_per_s;
    case StepCoefficient::Fp8MatmulEfficiency:
      return h.gpu.compute.fp8_matmul;
    case StepCoefficient::Fp4MatmulEfficiency:
      return h.gpu.compute.fp4_matmul;
    case StepCoefficient::LaunchOverhead:
      return static_cast<double>(h.gpu.compute.launch_overhead);
    case StepCoefficient::LayerOverhead:
      return static_cast<double>(h.gpu.compute.layer_overhead);
    case StepCoefficient::MicrobatchOverhead:
      return static_cast<double>(h.gpu.compute.microbatch_overhead);
  }
  return 0;
}

void ApplyStepCoefficient(YAML::Node& root, StepCoefficient c, double value) {
  YAML::Node hw = root["hardware"];
  if (IsBandwidth(c)) {
    const char* key = c == StepCoefficient::IntraNodeBandwidth ? "intra_node" : "inter_node";
    if (!hw[key].IsMap()) hw[key] = YAML::Node(YAML::NodeType::Map);
    hw[key]["bandwidth"] = fmt::format("{:.0f}B/s", value);
    return;
  }
  if (IsDuration(c)) {
    hw[StepCoefficientName(c)] = fmt::format("{:.0f}ns", std::max(0.0, value));
    return;
  }
  hw[StepCoefficientName(c)] = fmt::format("{:.6f}", value);
}

namespace {

constexpr int kMaxSweeps = 60;

struct Sim {
  Nanos time = 0;
  Bytes peak = 0;
  bool fits = true;
  Bytes fixed = 0;  // the process's context, workspaces and NCCL buffers
};

Result<Sim> Simulate(const StepRun& run, const std::vector<StepCoefficient>& fit,
                     const std::vector<double>& values) {
  YAML::Node doc = YAML::Clone(run.document);
  for (size_t i = 0; i < fit.size(); ++i) ApplyStepCoefficient(doc, fit[i], values[i]);
  Result<RunConfig> cfg = ParseConfigYaml(doc, run.path, {});
  if (!cfg.ok()) return cfg.error();
  Result<PreparedRun> prepared = Prepare(*cfg);
  if (!prepared.ok()) return prepared.error();
  Engine engine;
  SimOptions opt;
  opt.record_ops = false;
  const SimResult r = engine.Run(prepared->spec, prepared->program, opt);
  if (r.outcome == Outcome::Deadlock || r.outcome == Outcome::Interrupted) {
    return Error{"", run.path + ": the schedule does not run to its end"};
  }
  Sim s;
  s.time = r.makespan;
  s.fits = r.outcome == Outcome::Ok;
  s.fixed = FixedProcessBytes(cfg->hardware.gpu.process_memory, cfg->hardware.nccl_peers);
  for (const DeviceStats& d : r.devices) s.peak = std::max(s.peak, d.peak_memory);
  return s;
}

double LogError(Nanos predicted, Nanos measured) {
  const double x = std::log(static_cast<double>(predicted) / static_cast<double>(measured));
  return x * x;
}

}  // namespace

Result<StepFit> FitStepRuns(const StepRuns& runs) {
  StepFit out;
  // The starting values: the first run's config.
  Result<RunConfig> first = ParseConfigYaml(runs.runs.front().document, runs.runs.front().path, {});
  if (!first.ok()) return first.error();
  bool fp8 = false, fp4 = false;
  for (const StepRun& run : runs.runs) {
    Result<RunConfig> cfg = ParseConfigYaml(run.document, run.path, {});
    if (!cfg.ok()) return cfg.error();
    if (!cfg->hardware.step_model) {
      return Error{"", run.path + ": hardware.gpu: must be given (calibrate --runs fits the "
                                  "step model's coefficients); got nothing"};
    }
    if (cfg->hardware.gpu.name != first->hardware.gpu.name) {
      return Error{"", fmt::format("{}:{}: runs[{}].config: must run on the first run's GPU "
                                   "({}; calibrate fits one machine: give each GPU its own "
                                   "runs file); got {}",
                                   runs.path, run.line, &run - runs.runs.data(),
                                   first->hardware.gpu.name, cfg->hardware.gpu.name)};
    }
    const Recipe r = cfg->training.low.recipe;
    fp4 |= IsFp4(r);
    fp8 |= r != Recipe::None && !IsFp4(r);
  }
  // A low-precision share no run uses would be fitted to nothing.
  for (StepCoefficient c : runs.fit) {
    if ((c == StepCoefficient::Fp8MatmulEfficiency && !fp8) ||
        (c == StepCoefficient::Fp4MatmulEfficiency && !fp4)) {
      return Error{"fit", runs.path + ": fit: " + StepCoefficientName(c) +
                              " must be fitted to runs that train in " +
                              (c == StepCoefficient::Fp8MatmulEfficiency ? "FP8" : "FP4") +
                              " (training.fp8 / training.fp4); got none"};
    }
  }
  out.gpu = first->hardware.gpu.name;
  out.fit = runs.fit;
  out.fragmentation_before = first->hardware.gpu.process_memory.fragmentation;
  std::vector<double> start;
  for (StepCoefficient c : out.fit) start.push_back(StepCoefficientValue(c, first->hardware));
  std::vector<size_t> all(runs.runs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  // The cost over the runs `idx` (the sum of squared log time ratios).
  auto cost = [&](const std::vector<StepCoefficient>& fit, const std::vector<size_t>& idx,
                  const std::vector<double>& values, std::vector<Sim>* sims) -> Result<double> {
    double total = 0;
    for (size_t i : idx) {
      const StepRun& run = runs.runs[i];
      Result<Sim> s = Simulate(run, fit, values);
      if (!s.ok()) return s.error();
      ++out.simulations;
      total += LogError(s->time, run.measured);
      if (sims != nullptr) sims->push_back(*s);
    }
    return total;
  };

  // Which coefficients the runs determine: the sensitivity of each run's
  // log time to each coefficient's log (a 10 % step), columns taken in
  // order and kept when they add a direction (Gram-Schmidt).
  {
    std::vector<Sim> base;
    Result<double> c = cost(out.fit, all, start, &base);
    if (!c.ok()) return c.error();
    std::vector<std::vector<double>> kept;  // orthonormal columns
    std::vector<StepCoefficient> fit;
    std::vector<double> values;
    for (size_t k = 0; k < out.fit.size(); ++k) {
      std::vector<double> y = start;
      y[k] = IsBandwidth(out.fit[k]) || IsDuration(out.fit[k]) ? start[k] * 1.1
                                                             : std::min(1.0, start[k] * 1.1);
      if (y[k] == start[k]) y[k] = start[k] / 1.1;
      // A host time at 0 moves to a twentieth of its ceiling (its
      // sensitivity is then per that step, not per 10 %).
      const bool from_zero = IsDuration(out.fit[k]) && start[k] <= 0;
      if (from_zero) y[k] = DurationCeiling(out.fit[k]) / 20;
      std::vector<Sim> moved;
      Result<double> m = cost(out.fit, all, y, &moved);
      if (!m.ok()) return m.error();
      std::vector<double> col(all.size());
      double norm = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        col[i] = std::log(static_cast<double>(moved[i].time) / static_cast<double>(base[i].time)) /
                 (from_zero ? 1.0 : std::log(y[k] / start[k]));
        norm += col[i] * col[i];
      }
      norm = std::sqrt(norm);
      std::string why;
      if (norm < 1e-4) {
        why = "no run's step time depends on it";
      } else {
        std::vector<double> r = col;
        for (const std::vector<double>& q : kept) {
          double dot = 0;
          for (size_t i = 0; i < r.size(); ++i) dot += q[i] * col[i];
          for (size_t i = 0; i < r.size(); ++i) r[i] -= dot * q[i];
        }
        double rn = 0;
        for (double v : r) rn += v * v;
        rn = std::sqrt(rn);
        if (rn < 1e-3 * norm) {
          std::string names;
          for (StepCoefficient f : fit) names += (names.empty() ? "" : ", ") + std::string(StepCoefficientName(f));
          why = "the runs move as it moves exactly as they do with " + names +
                ": they cannot tell it apart";
        } else {
          for (double& v : r) v /= rn;
          kept.push_back(std::move(r));
          fit.push_back(out.fit[k]);
          values.push_back(start[k]);
          continue;
        }
      }
      if (runs.fit_given) {
        return Error{"fit", fmt::format("{}: fit: {} cannot be determined by these runs: {}; "
                                        "fit it with runs that differ in it, or leave it out",
                                        runs.path, StepCoefficientName(out.fit[k]), why)};
      }
      out.warnings.push_back(fmt::format("{} not fitted: {}", StepCoefficientName(out.fit[k]), why));
    }
    if (fit.empty()) {
      return Error{"fit", runs.path + ": fit: the runs determine none of the coefficients "
                                      "(no run's step time moves with them)"};
    }
    out.fit = fit;
    start = values;
  }
  out.before = start;
  const std::vector<StepCoefficient>& F = out.fit;

  // Coordinate descent from `x0` over the runs `idx`: golden-section search
  // of each coefficient in its bounds (efficiencies (0.02, 1], bandwidths
  // 1/20 to 4x the start, host times 0 to the config's ceiling), in log
  // space for bandwidths, a step kept only
  // when it lowers the cost; sweeps until one changes nothing (at most
  // kMaxSweeps).
  auto descend = [&](const std::vector<size_t>& idx,
                     std::vector<double> x) -> Result<std::vector<double>> {
    Result<double> c0 = cost(F, idx, x, nullptr);
    if (!c0.ok()) return c0.error();
    constexpr double kGolden = 0.6180339887498949;
    double best = *c0, last = *c0;
    // Coefficients in search space: bandwidths in log.
    auto to_u = [&](size_t k, double v) { return IsBandwidth(F[k]) ? std::log(v) : v; };
    auto from_u = [&](size_t k, double u) {
      if (IsBandwidth(F[k])) {
        return std::clamp(std::exp(u), out.before[k] / 20, out.before[k] * 4);
      }
      if (IsDuration(F[k])) return std::clamp(u, 0.0, DurationCeiling(F[k]));
      return std::clamp(u, 0.02, 1.0);
    };
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      const std::vector<double> begin = x;
      for (size_t k = 0; k < x.size(); ++k) {
        const bool bw = IsBandwidth(F[k]);
        const bool dur = IsDuration(F[k]);
        double lo = bw ? std::log(out.before[k] / 20) : dur ? 0.0 : 0.02;
        double hi = bw ? std::log(out.before[k] * 4) : dur ? DurationCeiling(F[k]) : 1.0;
        auto at = [&](double u) -> Result<double> {
          std::vector<double> y = x;
          y[k] = bw ? std::exp(u) : u;
          return cost(F, idx, y, nullptr);
        };
        double a = hi - kGolden * (hi - lo), b = lo + kGolden * (hi - lo);
        Result<double> fa = at(a), fb = at(b);
        if (!fa.ok()) return fa.error();
        if (!fb.ok()) return fb.error();
        for (int it = 0; it < 24; ++it) {
          if (*fa <= *fb) {
            hi = b;
            b = a;
            fb = fa;
            a = hi - kGolden * (hi - lo);
            fa = at(a);
            if (!fa.ok()) return fa.error();
          } else {
            lo = a;
            a = b;
            fa = fb;
            b = lo + kGolden * (hi - lo);
            fb = at(b);
            if (!fb.ok()) return fb.error();
          }
        }
        const double u = (lo + hi) / 2;
        std::vector<double> y = x;
        y[k] = bw ? std::exp(u) : u;
        Result<double> fy = cost(F, idx, y, nullptr);
        if (!fy.ok()) return fy.error();
        if (*fy < best) {  // never worse than where the sweep started
          best = *fy;
          x = y;
        }
      }
      // Then along the sweep's whole move, up to eight times as far (the
      // coefficients are coupled: one at a time zigzags).
      if (x.size() > 1 && x != begin) {
        auto along = [&](double t) -> Result<double> {
          std::vector<double> y = x;
          for (size_t k = 0; k < x.size(); ++k) {
            const double u0 = to_u(k, begin[k]);
            y[k] = from_u(k, u0 + t * (to_u(k, x[k]) - u0));
          }
          return cost(F, idx, y, nullptr);
        };
        double lo = 1, hi = 8;
        double a = hi - kGolden * (hi - lo), b = lo + kGolden * (hi - lo);
        Result<double> fa = along(a), fb = along(b);
        if (!fa.ok()) return fa.error();
        if (!fb.ok()) return fb.error();
        for (int it = 0; it < 20; ++it) {
          if (*fa <= *fb) {
            hi = b, b = a, fb = fa, a = hi - kGolden * (hi - lo);
            fa = along(a);
            if (!fa.ok()) return fa.error();
          } else {
            lo = a, a = b, fa = fb, b = lo + kGolden * (hi - lo);
            fb = along(b);
            if (!fb.ok()) return fb.error();
          }
        }
        const double t = (lo + hi) / 2;
        std::vector<double> y = x;
        for (size_t k = 0; k < x.size(); ++k) {
          const double u0 = to_u(k, begin[k]);
          y[k] = from_u(k, u0 + t * (to_u(k, x[k]) - u0));
        }
        Result<double> fy = cost(F, idx, y, nullptr);
        if (!fy.ok()) return fy.error();
        if (*fy < best) {
          best = *fy;
          x = y;
        }
      }
      // Stop when a sweep gains under a millionth, or every run is within
      // about 0.01 % (the sum of squared log ratios under 1e-8 per run).
      if (best < 1e-8 * static_cast<double>(idx.size())) break;
      if (best <= last * (1 - 1e-6)) {
        last = best;
      } else {
        break;  // a whole sweep without improvement
      }
    }
    return x;
  };

  std::vector<Sim> before;
  Result<double> c0 = cost(F, all, out.before, &before);
  if (!c0.ok()) return c0.error();
  Result<std::vector<double>> fitted = descend(all, out.before);
  if (!fitted.ok()) return fitted.error();
  out.after = *fitted;
  std::vector<Sim> after;
  Result<double> c1 = cost(F, all, out.after, &after);
  if (!c1.ok()) return c1.error();
  double sb = 0, sa = 0;
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    StepRunResult r;
    r.before = before[i].time;
    r.after = after[i].time;
    r.peak_before = before[i].peak;
    r.peak_after = after[i].peak;
    r.fits_after = after[i].fits;
    const double m = static_cast<double>(runs.runs[i].measured);
    sb += std::pow((static_cast<double>(r.before) - m) / m, 2);
    sa += std::pow((static_cast<double>(r.after) - m) / m, 2);
    out.runs.push_back(r);
  }
  out.rms_before = std::sqrt(sb / static_cast<double>(runs.runs.size()));
  out.rms_after = std::sqrt(sa / static_cast<double>(runs.runs.size()));

  // Leave-one-out: fit to the other runs (from the full fit, so the same
  // optimum is reached in few sweeps), then predict the one left out. Only
  // with at least as many other runs as coefficients.
  out.loo.assign(runs.runs.size(), 0);
  double sl = 0;
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    if (!runs.leave_one_out || runs.runs.size() - 1 < F.size()) break;
    std::vector<size_t> others;
    for (size_t j = 0; j < runs.runs.size(); ++j) {
      if (j != i) others.push_back(j);
    }
    Result<std::vector<double>> x = descend(others, out.after);
    if (!x.ok()) return x.error();
    Result<Sim> s = Simulate(runs.runs[i], F, *x);
    if (!s.ok()) return s.error();
    ++out.simulations;
    out.loo[i] = s->time;
    const double m = static_cast<double>(runs.runs[i].measured);
    sl += std::pow((static_cast<double>(s->time) - m) / m, 2);
    ++out.loo_runs;
  }
  if (out.loo_runs > 0) out.rms_loo = std::sqrt(sl / out.loo_runs);

  // The allocator's fragmentation from measured peaks: a process holds
  // tensors / (1 - f) + its fixed bytes, so over the runs with a peak,
  // f = 1 - sum(tensors) / sum(measured - fixed).
  double tensors = 0, rest = 0;
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    if (!runs.runs[i].peak_memory) continue;
    ++out.peak_runs;
    tensors += static_cast<double>(after[i].peak);
    // A reserved peak holds no fixed bytes to take off.
    rest += static_cast<double>(*runs.runs[i].peak_memory -
                                (runs.runs[i].peak_reserved ? 0 : after[i].fixed));
  }
  if (out.peak_runs > 0) {
    const double f = rest > 0 ? 1.0 - tensors / rest : -1.0;
    if (f >= 0 && f <= 0.5) {
      out.fragmentation_after = f;
    } else {
      out.memory_note = fmt::format(
          "memory_fragmentation not fitted: the measured peaks ask for {:.2f} (outside [0, "
          "0.5]): the model's tensors, not the allocator, differ from the runs",
          f);
    }
  }
  // What the fit cannot vouch for.
  for (size_t k = 0; k < out.after.size(); ++k) {
    const bool bw = IsBandwidth(F[k]);
    const double v = out.after[k];
    if (IsDuration(F[k])) {
      // No host time (0) is a machine ppb expresses; its ceiling is not.
      if (v >= DurationCeiling(F[k]) * (1 - 1e-6)) {
        out.warnings.push_back(fmt::format(
            "{} ended at the bound of its search ({:g} ns): the runs ask for a machine ppb "
            "cannot express; check their measured times and configs",
            StepCoefficientName(F[k]), DurationCeiling(F[k])));
      }
      continue;
    }
    const double lo = bw ? out.before[k] / 20 : 0.02, hi = bw ? out.before[k] * 4 : 1.0;
    if (v <= lo * (1 + 1e-6) || v >= hi * (1 - 1e-6)) {
      out.warnings.push_back(fmt::format(
          "{} ended at the bound of its search ({}): the runs ask for a machine ppb "
          "cannot express; check their measured times and configs",
          StepCoefficientName(F[k]),
          bw ? fmt::format("{:.3f} GB/s", (v <= lo * (1 + 1e-6) ? lo : hi) / 1e9)
             : fmt::format("{:g}", v <= lo * (1 + 1e-6) ? lo : hi)));
    }
  }
  if (out.rms_after > 0.10) {
    out.warnings.push_back(fmt::format(
        "the fit leaves {:.1f} % rms error: these coefficients do not explain the runs",
        100 * out.rms_after));
  }
  if (runs.distinct < runs.runs.size()) {
    out.warnings.push_back(fmt::format(
        "{} runs name {} distinct configs: repeated configs add no information on the "
        "coefficients",
        runs.runs.size(), runs.distinct));
  }
  return out;
}

}  // namespace ppb
