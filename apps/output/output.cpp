// Text and JSON reports of a simulation (apps/output/output.h); the
// trace and the critical path are written in trace_output.cpp.
#include "apps/output/output.h"

#include "apps/output/memory_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>
#include <nlohmann/json.hpp>

#include "apps/input/json_text.h"
#include "core/critical_path.h"
#include "core/step_metrics.h"

namespace ppb {
namespace {

// Low precision's share of one micro-batch's layer time (forward, I and
// W of every layer): its GEMMs (dgrad and wgrad as long as the forward's)
// and its quantize kernels.
struct LowShare {
  double gemm = 0, quantize = 0;
};
LowShare LowPrecisionShare(const RunConfig& config) {
  double total = 0, gemm = 0, quantize = 0;
  for (const DerivedLayer& d : config.derived) {
    total += static_cast<double>(d.layer.forward + d.layer.backward_input +
                                 d.layer.backward_weight);
    gemm += 3.0 * static_cast<double>(d.times.low_gemm_forward);
    quantize += static_cast<double>(d.times.quantize_forward +
                                    d.times.quantize_backward +
                                    d.times.quantize_wgrad);
  }
  if (total <= 0) return {};
  return {gemm / total, quantize / total};
}

using Json = nlohmann::ordered_json;

const char* FlavorName(Flavor f) {
  return f == Flavor::Megatron ? "megatron" : "pytorch";
}

// Micro-batches per second of simulated time.
// The step's figures of a derived model (core/step_metrics.h).
std::optional<StepMetrics> MetricsOf(const RunConfig& config, const SimResult& r) {
  return StepMetricsOf(config, config.strategy.recompute, config.shape.m, r.makespan);
}

double Throughput(const RunConfig& config, const SimResult& r) {
  if (r.makespan <= 0) return 0.0;
  return static_cast<double>(config.shape.m) * 1e9 /
         static_cast<double>(r.makespan);
}

int EffectiveGroup(const RunConfig& config) {
  return config.schedule_params.group > 0 ? config.schedule_params.group
                                          : config.shape.p;
}

// Layer ranges per global stage: [first, last] or {-1,-1} when empty.
std::vector<std::pair<int, int>> StageRanges(
    const std::vector<int>& layers_per_stage) {
  std::vector<std::pair<int, int>> out;
  int next = 0;
  for (int count : layers_per_stage) {
    out.emplace_back(count > 0 ? next : -1, count > 0 ? next + count - 1 : -1);
    next += count;
  }
  return out;
}

// part / whole, 0 when whole is not positive.
double Fraction(Nanos part, Nanos whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// "ideal 60.0 % + imbalance 0.0 % + ... + warm-up/drain 30.0 %".
std::string PartsPercent(const BubbleParts& parts, Nanos iteration) {
  std::string out;
  for (int t = 0; t < kNumBubbleTerms; ++t) {
    out += fmt::format("{}{} {:.1f} %", t == 0 ? "" : " + ",
                       BubbleTermLabel(static_cast<BubbleTerm>(t)),
                       100.0 * Fraction(parts.ns[t], iteration));
  }
  return out;
}

// The parts as {"ns": {...}, "fraction": {...}, "largest_loss": key}; the
// ns add up to the iteration time exactly.
Json PartsJson(const BubbleParts& parts, Nanos iteration) {
  Json ns = Json::object(), fraction = Json::object();
  for (int t = 0; t < kNumBubbleTerms; ++t) {
    const char* key = BubbleTermKey(static_cast<BubbleTerm>(t));
    ns[key] = parts.ns[t];
    fraction[key] = Fraction(parts.ns[t], iteration);
  }
  return Json{{"ns", ns},
              {"fraction", fraction},
              {"largest_loss", BubbleTermKey(parts.largest_loss())}};
}

}  // namespace

nlohmann::ordered_json StepPartsJson(const StepParts& x) {
  return {{"compute", ToMs(x.compute)},     {"collectives", ToMs(x.collectives)},
          {"recompute", ToMs(x.recompute)}, {"bubble", ToMs(x.bubble)},
          {"grad_sync", ToMs(x.grad_sync)}, {"optimizer", ToMs(x.optimizer)},
          {"waiting", ToMs(x.waiting)}};
}

std::string FormatBytes(Bytes b) {
  const double x = static_cast<double>(b);
  if (b >= (Bytes{1} << 30)) return fmt::format("{:.2f} GiB", x / (1 << 30));
  if (b >= (Bytes{1} << 20)) return fmt::format("{:.2f} MiB", x / (1 << 20));
  if (b >= (Bytes{1} << 10)) return fmt::format("{:.2f} KiB", x / (1 << 10));
  return fmt::format("{} B", b);
}

StagePlacement PlacementOf(const std::string& schedule, int v) {
  const ScheduleInfo* info = FindSchedule(schedule);
  return info != nullptr && info->placement == StagePlacement::V && v == 2
             ? StagePlacement::V
             : StagePlacement::Loop;
}

std::vector<std::vector<int>> ByChunkAndRank(const std::vector<int>& per_stage,
                                             int p, int v,
                                             StagePlacement placement) {
  std::vector<std::vector<int>> out(static_cast<size_t>(v));
  for (int c = 0; c < v; ++c) {
    for (int r = 0; r < p; ++r) {
      out[c].push_back(
          per_stage[static_cast<size_t>(StageOf(placement, p, c, r))]);
    }
  }
  return out;
}

std::vector<std::string> LayersHeld(const RunConfig& config, int p, int v) {
  return LayersHeld(config.strategy.layers_per_stage, p, v,
                    PlacementOf(config.schedule, v));
}

std::vector<std::string> LayersHeld(const std::vector<int>& layers_per_stage,
                                    int p, int v, StagePlacement placement) {
  const auto ranges = StageRanges(layers_per_stage);
  std::vector<std::string> out(p);
  for (int r = 0; r < p; ++r) {
    std::string s;
    for (int c = 0; c < v; ++c) {
      const auto [first, last] =
          ranges[static_cast<size_t>(StageOf(placement, p, c, r))];
      if (c > 0) s += ", ";
      if (v > 1) s += fmt::format("c{} ", c);
      s += first < 0 ? std::string("-")
                     : (first == last ? fmt::format("{}", first)
                                      : fmt::format("{}-{}", first, last));
    }
    out[r] = s;
  }
  return out;
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::Ok:
      return "ok";
    case Outcome::OutOfMemory:
      return "out_of_memory";
    case Outcome::Deadlock:
      return "deadlock";
    case Outcome::Interrupted:
      return "interrupted";
  }
  return "?";
}

std::string DescribeSchedule(const RunConfig& config) {
  std::string schedule = config.schedule;
  if (config.schedule == "interleaved") {
    schedule += fmt::format(" ({}, g={})", FlavorName(config.schedule_params.flavor),
                            EffectiveGroup(config));
  } else if (config.schedule == "gpipe" || config.schedule == "1f1b") {
    schedule += fmt::format(" ({})", FlavorName(config.schedule_params.flavor));
  } else if (config.schedule != "custom") {
    schedule += " (pytorch)";  // the zero-bubble schedules have no flavor
  }
  return schedule;
}

// "stage 15 (rank 7, chunk 1)".
std::string StageWhere(const PipelineSpec& spec, int s) {
  return fmt::format("stage {} (rank {}, chunk {})", s,
                     spec.stage_device[static_cast<size_t>(s)].value,
                     ChunkOnRank(spec.stage_device, s));
}

std::string ExplainBreakdown(const PipelineSpec& spec, const SimResult& r,
                             const Breakdown& b, const UnevenStages* uneven) {
  const BubbleTerm term = b.pipeline.largest_loss();
  if (term == BubbleTerm::Ideal || b.iteration <= 0) {
    return "no loss: the busiest rank computes for the whole iteration";
  }
  const int d = b.bottleneck;
  const DeviceStats& ds = r.devices[d];
  const int p = spec.p;
  std::string head = fmt::format(
      "{} is the largest loss ({:.1f} % of the iteration on rank {})", BubbleTermLabel(term),
      100.0 * static_cast<double>(b.pipeline[term]) / static_cast<double>(b.iteration), d);
  // Layers and recomputed layers held by each rank.
  std::vector<int> layers(p, 0), recomputed(p, 0);
  for (int s = 0; s < spec.num_stages(); ++s) {
    layers[spec.stage_device[s].value] += spec.stages[s].num_layers;
    recomputed[spec.stage_device[s].value] += spec.stages[s].num_recomputed;
  }
  switch (term) {
    case BubbleTerm::WarmupDrain: {
      int late = 0, early = 0;
      Nanos fill = 0, drain = 0;
      for (const DeviceStats& x : r.devices) {
        late += x.first_start > 0;
        early += x.last_end < r.makespan;
        fill = std::max(fill, x.first_start);
        drain = std::max(drain, r.makespan - x.last_end);
      }
      const Nanos wd = b.pipeline[BubbleTerm::WarmupDrain];
      const std::string fill_drain = fmt::format(
          "{} of {} ranks wait up to {:.3f} ms for their first op (fill) and {} finish up "
          "to {:.3f} ms early (drain); more micro-batches (m={} for p={}) or {} shrink it",
          late, p, ToMs(fill), early, ToMs(drain), spec.m, p,
          spec.v > 1 ? fmt::format("more chunks per rank (v={} now)", spec.v)
                     : std::string("interleaving (v > 1)"));
      if (uneven == nullptr || uneven->slowest < 0 || 100 * uneven->loss < b.iteration) {
        return head + ": " + fill_drain;
      }
      // At least 1 % of the iteration is the split's doing: name the
      // stages at fault (UnevenStages::at_fault), up to 3.
      const std::vector<int>& all = uneven->at_fault;
      const std::vector<int> fault(all.begin(), all.begin() + std::min<size_t>(all.size(), 3));
      const int more = static_cast<int>(all.size() - fault.size());
      std::string where;
      for (size_t k = 0; k < fault.size(); ++k) {
        if (k > 0) where += k + 1 == fault.size() && more == 0 ? " and " : ", ";
        const StageCost& c = spec.stages[static_cast<size_t>(fault[k])];
        where += fmt::format("{} with {} layers", StageWhere(spec, fault[k]), c.num_layers);
      }
      if (more > 0) where += fmt::format(" and {} more", more);
      return fmt::format(
          "{}: {:.3f} ms of it is the uneven split, not fill and drain: {} cost{} {:.3f} ms per "
          "micro-batch against the stages' mean {:.3f} ms, and moving layers off {} shrinks "
          "it; the other {:.3f} ms is fill and drain (equal stages leave {:.3f} ms on rank "
          "{}): {}",
          head, ToMs(uneven->loss), where, fault.size() + more == 1 ? "s" : "",
          ToMs(uneven->slowest_work), ToMs(uneven->mean_work),
          fault.size() + more == 1 ? "it" : "them", ToMs(wd - uneven->loss),
          ToMs(uneven->equal_warmup_drain), d, fill_drain);
    }
    case BubbleTerm::Imbalance: {
      int total = 0;
      for (int n : layers) total += n;
      return fmt::format(
          "{}: rank {} holds {} layers vs {:.2f} mean and computes {:.3f} ms vs {:.3f} ms "
          "mean; moving work off rank {} shrinks it",
          head, d, layers[d], static_cast<double>(total) / p, ToMs(ds.busy - ds.recompute),
          ToMs(b.mean_useful), d);
    }
    case BubbleTerm::Recompute:
      return fmt::format(
          "{}: rank {} re-runs forwards for {:.3f} ms ({} of its {} layers recompute); "
          "recomputing fewer layers shrinks it where memory allows",
          head, d, ToMs(ds.recompute), recomputed[d], layers[d]);
    case BubbleTerm::Communication:
      return fmt::format(
          "{}: rank {} waits {:.3f} ms on messages in flight and {:.3f} ms blocked on "
          "sends; {}faster links or smaller activations shrink it",
          head, d, ToMs(ds.comm_wait), ToMs(ds.comm_blocked),
          spec.comm == CommMode::Blocking ? "overlapped communication, " : "");
    case BubbleTerm::Ideal:
      break;
  }
  return head;
}

std::string FormatSimText(const RunConfig& config, const PreparedRun& run,
                          const SimResult& r) {
  const PipelineSpec& spec = run.spec;
  std::string out;
  const std::string schedule = DescribeSchedule(config);
  out += fmt::format("ppb-sim: {} | schedule {} | p={} v={} m={} | {} layers | "
                     "communication {}\n",
                     config.model_name.empty() ? config.path : config.model_name,
                     schedule, spec.p, spec.v, spec.m, config.layers.size(),
                     spec.comm == CommMode::Overlapped ? "overlapped" : "blocking");
  for (const std::string& n : config.input_notes) out += "input: " + n + "\n";
  if (spec.placement == StagePlacement::V) {
    out += fmt::format("placement V: rank r holds stages r and {}-r (c1 below)\n",
                       2 * spec.p - 1);
  }
  if (!run.program.origin.empty()) out += "order: " + run.program.origin + "\n";
  if (r.outcome == Outcome::Deadlock) {
    std::string stuck;
    for (const Op& op : r.stuck) {
      // Two appends, not " " + string: GCC 12 -O3 warns (-Wrestrict) on that.
      stuck += ' ';
      stuck += ActionString(op);
    }
    out += fmt::format("outcome: DEADLOCK; stuck at{}\n", stuck);
    return out;
  }
  int peak_rank = 0;
  for (int d = 0; d < spec.p; ++d) {
    if (r.devices[d].peak_memory > r.devices[peak_rank].peak_memory) peak_rank = d;
  }
  std::string oom_ranks;
  for (int d = 0; d < spec.p; ++d) {
    if (r.devices[d].oom) oom_ranks += fmt::format(" {}", d);
  }
  out += "\n";
  out += fmt::format("  iteration time    {:.3f} ms\n", ToMs(r.makespan));
  out += fmt::format("  throughput        {:.2f} micro-batches/s\n",
                     Throughput(config, r));
  if (const auto sm = MetricsOf(config, r)) {
    out += fmt::format("  tokens            {:.0f} tokens/s, {:.1f} per GPU ({} GPUs)\n",
                       sm->tokens_per_s, sm->tokens_per_s_per_gpu, sm->gpus);
    out += fmt::format(
        "  model FLOPs       {:.1f} TFLOP/s per GPU: MFU {:.1f} %, HFU {:.1f} % "
        "(Megatron's count; HFU with recompute)\n",
        sm->model_tflops_per_gpu, 100.0 * sm->mfu, 100.0 * sm->hfu);
    if (config.training.low.on()) {
      const LowShare share = LowPrecisionShare(config);
      out += fmt::format(
          "  low precision     {}: {:.1f} % of the layers' time in its GEMMs, "
          "{:.1f} % in its quantize kernels; MFU and HFU count against the "
          "dense BF16 peak ({:g} TFLOP/s), as Megatron and published tables "
          "do\n",
          RecipeName(config.training.low.recipe), 100.0 * share.gemm,
          100.0 * share.quantize, config.hardware.peak_tflops);
    }
  }
  if (spec.tail.enabled) {
    out += fmt::format(
        "  step tail         pipeline ends at {:.3f} ms; gradient sync {:.3f} ms "
        "more, then optimizer {:.3f} ms\n",
        ToMs(r.pipeline_end), ToMs(r.breakdown.grad_sync),
        ToMs(r.breakdown.optimizer));
  }
  out += fmt::format("  bubble fraction   {:.2f} %\n", 100.0 * r.bubble_fraction());
  out += fmt::format("  max peak memory   {} on rank {} (capacity {})\n",
                     FormatBytes(r.devices[peak_rank].peak_memory), peak_rank,
                     FormatBytes(r.devices[peak_rank].capacity));
  const MemoryReport mem = ReportMemory(config, r);
  out += FormatMemoryText(config, mem);
  std::string ok = "ok: every rank fits in memory";
  if (r.outcome == Outcome::Ok && mem.verdict == MemoryVerdict::AtRisk) {
    ok = "at risk: " + RanksWith(mem, MemoryVerdict::AtRisk) + " fit but keep less than the " +
         FormatBytes(mem.headroom) + " headroom free (search.memory_headroom)";
  }
  out += fmt::format("  outcome           {}\n",
                     r.outcome == Outcome::Ok ? ok : "OUT OF MEMORY on rank" + oom_ranks);
  const BubbleBreakdown& b = r.breakdown;
  const std::string tail_ms =
      spec.tail.enabled ? fmt::format(" + gradient sync {:.3f} + optimizer {:.3f}",
                                      ToMs(b.grad_sync), ToMs(b.optimizer))
                        : std::string();
  out += fmt::format(
      "  where time goes   ideal {:.3f} + imbalance {:.3f} + recompute {:.3f} + "
      "communication {:.3f} + warm-up/drain {:.3f}{} ms (busiest rank {})\n",
      ToMs(b.ideal), ToMs(b.imbalance), ToMs(b.recompute),
      ToMs(b.communication), ToMs(b.warmup_drain), tail_ms, b.bottleneck);
  const Breakdown breakdown = ComputeBreakdown(r);
  out += "                    " + PartsPercent(breakdown.pipeline, r.makespan);
  if (spec.tail.enabled) {
    out += fmt::format(" + gradient sync {:.1f} % + optimizer {:.1f} %",
                       Fraction(b.grad_sync, r.makespan) * 100.0,
                       Fraction(b.optimizer, r.makespan) * 100.0);
  }
  out += "\n";
  if (spec.tail.enabled) {
    const StepParts x = DeviceStepParts(r, b.bottleneck);
    out += fmt::format(
        "  where the step goes  compute {:.3f} + TP/CP/EP collectives {:.3f} + "
        "recompute {:.3f} + pipeline bubble {:.3f} + gradient sync {:.3f} + "
        "optimizer {:.3f} + waiting {:.3f} ms (rank {})\n",
        ToMs(x.compute), ToMs(x.collectives), ToMs(x.recompute), ToMs(x.bubble),
        ToMs(x.grad_sync), ToMs(x.optimizer), ToMs(x.waiting), b.bottleneck);
  }
  const UnevenStages uneven = UnevenStageLoss(spec, run.program, breakdown);
  out += "  largest loss      " + ExplainBreakdown(spec, r, breakdown, &uneven) + "\n";
  out += "\n";
  const auto held = LayersHeld(config, spec.p, spec.v);
  size_t held_width = 6;
  for (const auto& h : held) held_width = std::max(held_width, h.size());
  out += fmt::format("  {:>4}  {:<{}}  {:>11}  {:>11}  {:>8}  {:>11}  {:>23}  {}\n",
                     "rank", "layers", held_width, "busy ms", "bubble ms",
                     "bubble %", "recompute", "peak memory / capacity", "");
  for (int d = 0; d < spec.p; ++d) {
    const DeviceStats& ds = r.devices[d];
    const double frac =
        r.makespan > 0 ? 100.0 * static_cast<double>(ds.idle) /
                             static_cast<double>(r.makespan)
                       : 0.0;
    out += fmt::format(
        "  {:>4}  {:<{}}  {:>11.3f}  {:>11.3f}  {:>8.2f}  {:>8.3f} ms  {:>23}  {}\n",
        d, held[d], held_width, ToMs(ds.busy), ToMs(ds.idle), frac,
        ToMs(ds.recompute),
        FormatBytes(ds.peak_memory) + " / " + FormatBytes(ds.capacity),
        (ds.oom ? std::string("OOM ") : std::string()) +
            (config.topology && d < static_cast<int>(config.placement.size())
                 ? DeviceLabel(*config.topology, config.placement[d])
                 : std::string()));
  }
  out += "\n  bubble breakdown per rank, ms (% of the iteration); each row adds up to the "
         "iteration time:\n";
  out += fmt::format("  {:>4}", "rank");
  for (int t = 0; t < kNumBubbleTerms; ++t) {
    out += fmt::format("  {:>17}", BubbleTermLabel(static_cast<BubbleTerm>(t)));
  }
  out += "  largest loss\n";
  for (int d = 0; d < spec.p; ++d) {
    const BubbleParts& parts = breakdown.devices[d];
    out += fmt::format("  {:>4}", d);
    for (int t = 0; t < kNumBubbleTerms; ++t) {
      out += fmt::format("  {:>10.3f} ({:>4.1f}%)", ToMs(parts.ns[t]),
                         Fraction(parts.ns[t], r.makespan) * 100.0);
    }
    out += fmt::format("  {}\n", BubbleTermLabel(parts.largest_loss()));
  }
  if (spec.tail.enabled) {
    out += "\n  the step per rank, ms; each row adds up to the iteration time:\n";
    out += fmt::format("  {:>4}  {:>11}  {:>11}  {:>11}  {:>11}  {:>13}  {:>11}  {:>11}\n",
                       "rank", "compute", "collectives", "recompute", "bubble",
                       "gradient sync", "optimizer", "waiting");
    for (int d = 0; d < spec.p; ++d) {
      const StepParts x = DeviceStepParts(r, d);
      out += fmt::format(
          "  {:>4}  {:>11.3f}  {:>11.3f}  {:>11.3f}  {:>11.3f}  {:>13.3f}  {:>11.3f}  {:>11.3f}\n",
          d, ToMs(x.compute), ToMs(x.collectives), ToMs(x.recompute), ToMs(x.bubble),
          ToMs(x.grad_sync), ToMs(x.optimizer), ToMs(x.waiting));
    }
  }
  return out;
}

std::string FormatSimJson(const RunConfig& config, const PreparedRun& run,
                          const SimResult& r,
                          const std::vector<CriticalStep>* path) {
  const PipelineSpec& spec = run.spec;
  Json j;
  j["schema"] = "ppb.sim/1";
  j["config"] = config.path;
  j["model"] = config.model_name;
  if (!config.input_notes.empty()) j["input_notes"] = config.input_notes;
  j["schedule"] = config.schedule;
  j["flavor"] = FlavorName(config.schedule_params.flavor);
  j["stages"] = spec.p;
  j["virtual_stages"] = spec.v;
  j["microbatches"] = spec.m;
  if (!run.program.origin.empty()) j["order_origin"] = run.program.origin;
  if (config.schedule == "interleaved") j["microbatch_group"] = EffectiveGroup(config);
  j["communication"] = spec.comm == CommMode::Overlapped ? "overlapped" : "blocking";
  j["outcome"] = OutcomeName(r.outcome);
  j["iteration_time_ms"] = ToMs(r.makespan);
  j["iteration_time_ns"] = r.makespan;
  j["throughput_microbatches_per_s"] = Throughput(config, r);
  j["bubble_fraction"] = r.bubble_fraction();
  if (const auto sm = MetricsOf(config, r)) {
    j["gpus"] = sm->gpus;
    j["tokens_per_s"] = sm->tokens_per_s;
    j["tokens_per_s_per_gpu"] = sm->tokens_per_s_per_gpu;
    j["model_tflops_per_gpu"] = sm->model_tflops_per_gpu;
    j["mfu"] = sm->mfu;
    j["hfu"] = sm->hfu;
    if (config.training.low.on()) {
      const LowShare share = LowPrecisionShare(config);
      j["precision"] = {{"recipe", RecipeName(config.training.low.recipe)},
                        {"gemm_share", share.gemm},
                        {"quantize_share", share.quantize},
                        {"mfu_peak_tflops", config.hardware.peak_tflops}};
    }
  }
  if (spec.tail.enabled) {
    j["pipeline_end_ns"] = r.pipeline_end;
    j["step_tail_ms"] = {{"grad_sync", ToMs(r.breakdown.grad_sync)},
                         {"optimizer", ToMs(r.breakdown.optimizer)}};
    const StepParts x = DeviceStepParts(r, r.breakdown.bottleneck);
    j["step_breakdown_ms"] = StepPartsJson(x);
    j["step_breakdown_ms"]["rank"] = r.breakdown.bottleneck;
  }
  Bytes max_peak = 0;
  for (const auto& d : r.devices) max_peak = std::max(max_peak, d.peak_memory);
  j["max_peak_memory_bytes"] = max_peak;
  j["memory"] = MemoryJson(config, ReportMemory(config, r));
  j["breakdown_ms"] = {{"ideal", ToMs(r.breakdown.ideal)},
                       {"imbalance", ToMs(r.breakdown.imbalance)},
                       {"recompute", ToMs(r.breakdown.recompute)},
                       {"communication", ToMs(r.breakdown.communication)},
                       {"warmup_drain", ToMs(r.breakdown.warmup_drain)},
                       {"bottleneck_rank", r.breakdown.bottleneck}};
  const Breakdown breakdown = ComputeBreakdown(r);
  {
    Json bj = PartsJson(breakdown.pipeline, r.makespan);
    bj["bottleneck_rank"] = breakdown.bottleneck;
    bj["mean_useful_compute_ns"] = breakdown.mean_useful;
    const UnevenStages uneven = UnevenStageLoss(spec, run.program, breakdown);
    bj["explanation"] = ExplainBreakdown(spec, r, breakdown, &uneven);
    // Of warm-up/drain: the part unequal stages cause (UnevenStageLoss).
    bj["uneven_split"] = {{"of_warmup_drain_ms", ToMs(uneven.loss)},
                          {"equal_stages_warmup_drain_ms", ToMs(uneven.equal_warmup_drain)},
                          {"slowest_stage", uneven.slowest},
                          {"slowest_stage_ms_per_microbatch", ToMs(uneven.slowest_work)},
                          {"mean_stage_ms_per_microbatch", ToMs(uneven.mean_work)}};
    j["breakdown"] = bj;
  }
  // layers_per_chunk as [chunk][rank] counts, as Megatron/MindFormers think.
  j["layers_per_chunk"] =
      ByChunkAndRank(config.strategy.layers_per_stage, spec.p, spec.v,
                     spec.placement);
  if (spec.placement == StagePlacement::V) j["placement"] = "v";
  const auto ranges = StageRanges(config.strategy.layers_per_stage);
  Json devices = Json::array();
  for (int d = 0; d < spec.p; ++d) {
    const DeviceStats& ds = r.devices[d];
    Json dj;
    dj["rank"] = d;
    Json layers = Json::array();
    for (int c = 0; c < spec.v; ++c) {
      const auto [first, last] =
          ranges[static_cast<size_t>(StageOf(spec.placement, spec.p, c, d))];
      layers.push_back(first < 0 ? Json::array() : Json::array({first, last}));
    }
    dj["layers"] = layers;
    dj["busy_ms"] = ToMs(ds.busy);
    dj["idle_ms"] = ToMs(ds.idle);
    dj["bubble_fraction"] =
        r.makespan > 0 ? static_cast<double>(ds.idle) / static_cast<double>(r.makespan)
                       : 0.0;
    dj["recompute_ms"] = ToMs(ds.recompute);
    dj["comm_wait_ms"] = ToMs(ds.comm_wait);
    dj["comm_blocked_ms"] = ToMs(ds.comm_blocked);
    dj["static_memory_bytes"] = ds.static_memory;
    dj["peak_memory_bytes"] = ds.peak_memory;
    dj["peak_memory_time_ms"] = ToMs(ds.peak_time);
    dj["memory_capacity_bytes"] = ds.capacity;
    dj["peak_inflight_microbatches"] = ds.peak_inflight;
    dj["oom"] = ds.oom;
    if (spec.tail.enabled && !r.steps.empty()) {
      const StepParts x = DeviceStepParts(r, d);
      const RankStep& rs = r.steps[static_cast<size_t>(d)];
      dj["step_ms"] = StepPartsJson(x);
      dj["grad_sync_ms"] = ToMs(rs.grad_sync);
      dj["grad_sync_end_ms"] = ToMs(rs.grad_sync_end);
      dj["optimizer_ms"] = ToMs(rs.optimizer);
      dj["param_gather_ms"] = ToMs(rs.param_gather);
    }
    dj["first_start_ms"] = ToMs(ds.first_start);
    dj["last_end_ms"] = ToMs(ds.last_end);
    dj["breakdown"] = PartsJson(breakdown.devices[d], r.makespan);
    devices.push_back(dj);
  }
  j["devices"] = devices;
  if (!r.stuck.empty()) {
    Json stuck = Json::array();
    for (const Op& op : r.stuck) stuck.push_back(ActionString(op));
    j["stuck"] = stuck;
  }
  if (path != nullptr) {
    Json cp = Json::array();
    for (const CriticalStep& s : *path) {
      cp.push_back({{"rank", s.device},
                    {"op", ActionString(s.op)},
                    {"kind", s.is_transfer ? "transfer" : "compute"},
                    {"start_ms", ToMs(s.start)},
                    {"end_ms", ToMs(s.end)}});
    }
    j["critical_path"] = cp;
    const CriticalPathSummary sum = SummarizeCriticalPath(run.spec, *path);
    Json stages = Json::array();
    for (const CriticalPathSummary::Stage& st : sum.stages) {
      stages.push_back({{"stage", st.stage},
                        {"rank", st.rank},
                        {"chunk", st.chunk},
                        {"ops", st.ops},
                        {"on_path_ms", ToMs(st.time)}});
    }
    j["critical_path_summary"] = {{"span_ms", ToMs(sum.span)},
                                  {"ops_ms", ToMs(sum.compute)},
                                  {"messages", sum.messages},
                                  {"messages_ms", ToMs(sum.message_time)},
                                  {"other_waits_ms", ToMs(sum.waits)},
                                  {"stages", stages}};
  }
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
