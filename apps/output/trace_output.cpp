// The Chrome trace and the critical-path reports of a simulation
// (apps/output/output.h): FormatChromeTrace, FormatCriticalPathSummary,
// FormatCriticalPath.
#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/json_text.h"
#include "apps/output/output.h"
#include "core/critical_path.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

// A time in µs as the trace writes it: ns / 1000 with exactly three
// decimals. Every time ppb simulates is a whole number of ns, so this text
// is exact; a double would carry float noise (16707.724000000002), and a
// slice written that way ends 2e-12 µs after the next one starts.
std::string ExactUs(Nanos t) {
  const bool negative = t < 0;
  const std::uint64_t a = negative ? 0 - static_cast<std::uint64_t>(t)
                                   : static_cast<std::uint64_t>(t);
  return fmt::format("{}{}.{:03}", negative ? "-" : "", a / 1000, a % 1000);
}

// One JSON object of the trace written member by member, in the order
// added: times as ExactUs text, other values as nlohmann writes them.
class TraceObject {
 public:
  TraceObject& Add(std::string_view key, const Json& value) {
    return Raw(key, JsonText(value, -1));
  }
  TraceObject& Time(std::string_view key, Nanos t) { return Raw(key, ExactUs(t)); }
  TraceObject& Object(std::string_view key, const TraceObject& value) {
    return Raw(key, value.Text());
  }
  std::string Text() const { return "{" + body_ + "}"; }

 private:
  TraceObject& Raw(std::string_view key, const std::string& value) {
    if (!body_.empty()) body_ += ',';
    body_ += JsonText(Json(std::string(key)), -1);
    body_ += ':';
    body_ += value;
    return *this;
  }
  std::string body_;
};

}  // namespace

std::string FormatChromeTrace(const RunConfig& config, const PreparedRun& run,
                              const SimResult& r) {
  const PipelineSpec& spec = run.spec;
  const Program& prog = run.program;
  // Each event is written as text (TraceObject): its times exact.
  std::vector<std::string> events;
  auto meta = [&](const char* name, int pid, std::optional<int> tid, const Json& args) {
    TraceObject e;
    e.Add("name", name).Add("ph", "M").Add("pid", pid);
    if (tid) e.Add("tid", *tid);
    events.push_back(e.Add("args", args).Text());
  };
  for (int d = 0; d < spec.p; ++d) {
    meta("process_name", d, std::nullopt, {{"name", fmt::format("rank {}", d)}});
    meta("process_sort_index", d, std::nullopt, {{"sort_index", d}});
    meta("thread_name", d, 0, {{"name", "compute"}});
    meta("thread_name", d, 1, {{"name", "communication"}});
  }
  // Each op's index on its rank, by (stage, micro-batch, kind): the flows
  // end on the op that consumes the message.
  std::map<std::tuple<int, int, int>, size_t> op_at;
  for (int d = 0; d < spec.p; ++d) {
    for (size_t k = 0; k < prog.ops[d].size(); ++k) {
      const Op& op = prog.ops[d][k];
      op_at[{op.stage.value, op.mb.value, static_cast<int>(op.kind)}] = k;
    }
  }
  for (int d = 0; d < spec.p; ++d) {
    for (size_t k = 0; k < prog.ops[d].size(); ++k) {
      const Op& op = prog.ops[d][k];
      const OpTiming& t = r.timings[d][k];
      TraceObject args;
      args.Add("stage", op.stage.value)
          .Add("microbatch", op.mb.value)
          .Add("chunk", op.stage.value / spec.p);
      if (t.recompute > 0) args.Time("recompute_us", t.recompute);
      // The two halves of an overlapped F+B (dualpipev): torch's action.
      if (op.paired && k + 1 < prog.ops[d].size()) {
        args.Add("overlapped_with", ActionString(prog.ops[d][k + 1]));
      } else if (k > 0 && prog.ops[d][k - 1].paired) {
        args.Add("overlapped_with", ActionString(prog.ops[d][k - 1]));
      }
      events.push_back(TraceObject()
                           .Add("name", ActionString(op))
                           .Add("cat", std::string(1, OpKindLetter(op.kind)))
                           .Add("ph", "X")
                           .Time("ts", t.start)
                           .Time("dur", t.end - t.start)
                           .Add("pid", d)
                           .Add("tid", 0)
                           .Object("args", args)
                           .Text());
    }
  }
  // A flow event's time inside the slice [start, end): 1 ns in, so the
  // "enclosing slice" binding finds it whatever the order of equal times.
  auto inside = [](Nanos start, Nanos end) { return end - start >= 2 ? start + 1 : start; };
  int flow_id = 0;
  for (const Transfer& t : r.transfers) {
    const bool fwd = t.producer.kind == OpKind::F;
    const std::string name =
        fmt::format("{}{}{}", t.producer.stage.value, fwd ? "SEND_F" : "SEND_B",
                    t.producer.mb.value);
    events.push_back(TraceObject()
                         .Add("name", name)
                         .Add("cat", "comm")
                         .Add("ph", "X")
                         .Time("ts", t.send)
                         .Time("dur", t.arrive - t.send)
                         .Add("pid", t.from.value)
                         .Add("tid", 1)
                         .Add("args", {{"to_rank", t.to.value}, {"bytes", t.bytes}})
                         .Text());
    // The consumer: the next stage's F of the micro-batch, or the previous
    // stage's B (I where the backward is split).
    const int to_stage = t.producer.stage.value + (fwd ? 1 : -1);
    std::optional<size_t> consumer;
    for (OpKind k : fwd ? std::vector<OpKind>{OpKind::F} : std::vector<OpKind>{OpKind::B, OpKind::I}) {
      auto it = op_at.find({to_stage, t.producer.mb.value, static_cast<int>(k)});
      if (it != op_at.end()) {
        consumer = it->second;
        break;
      }
    }
    if (!consumer) continue;  // no consumer (not a pipeline message): no arrow
    const OpTiming& c = r.timings[t.to.value][*consumer];
    events.push_back(TraceObject()
                         .Add("name", name)
                         .Add("cat", "comm")
                         .Add("ph", "s")
                         .Add("id", flow_id)
                         .Time("ts", inside(t.send, t.arrive))
                         .Add("pid", t.from.value)
                         .Add("tid", 1)
                         .Text());
    events.push_back(TraceObject()
                         .Add("name", name)
                         .Add("cat", "comm")
                         .Add("ph", "f")
                         .Add("bp", "e")
                         .Add("id", flow_id)
                         .Time("ts", inside(c.start, c.end))
                         .Add("pid", t.to.value)
                         .Add("tid", 0)
                         .Text());
    ++flow_id;
  }
  // Memory in two series: the static memory of the rank's stages (weights,
  // gradients, optimizer state) and the rest of the engine's sample, the
  // activations stashed plus the working set of the op running. Dividing by
  // 2^30 is exact, so the two add up to the total in GiB.
  for (int d = 0; d < static_cast<int>(r.memory.size()); ++d) {
    const Bytes fixed = r.devices[d].static_memory;
    for (const MemorySample& s : r.memory[d]) {
      events.push_back(
          TraceObject()
              .Add("name", "memory GiB")
              .Add("ph", "C")
              .Time("ts", s.time)
              .Add("pid", d)
              .Add("args",
                   {{"static", static_cast<double>(fixed) / (1 << 30)},
                    {"activations+workspace", static_cast<double>(s.bytes - fixed) / (1 << 30)}})
              .Text());
    }
  }
  std::string out = "{\"traceEvents\":[";
  for (size_t i = 0; i < events.size(); ++i) {
    if (i > 0) out += ',';
    out += events[i];
  }
  out += "],\"displayTimeUnit\":\"ms\",\"otherData\":";
  out += JsonText(Json{{"generator", "ppb-sim"}, {"config", config.path}}, -1);
  return out + "}\n";
}

std::string FormatCriticalPathSummary(const CriticalPathSummary& s) {
  if (s.span <= 0) return "";
  auto pct = [&](Nanos t) { return 100.0 * static_cast<double>(t) / static_cast<double>(s.span); };
  std::string out = fmt::format(
      "critical path summary: {:.3f} ms; ops of {} stage(s) {:.3f} ms ({:.1f} %), {} "
      "message(s) in flight {:.3f} ms ({:.1f} %), other waits {:.3f} ms ({:.1f} %)\n",
      ToMs(s.span), s.stages.size(), ToMs(s.compute), pct(s.compute), s.messages,
      ToMs(s.message_time), pct(s.message_time), ToMs(s.waits), pct(s.waits));
  out += "  stage  rank  chunk   ops    on path ms   share\n";
  for (const CriticalPathSummary::Stage& st : s.stages) {
    out += fmt::format("  {:>5}  {:>4}  {:>5}  {:>4}  {:>12.3f}  {:>5.1f} %\n", st.stage, st.rank,
                       st.chunk, st.ops, ToMs(st.time), pct(st.time));
  }
  return out;
}

std::string FormatCriticalPath(const std::vector<CriticalStep>& path) {
  std::string out = "critical path (the chain of ops and waits that sets the "
                    "iteration time):\n";
  for (const CriticalStep& s : path) {
    if (s.is_transfer) {
      out += fmt::format("  {:>12.3f} - {:>12.3f} ms  message from rank {} "
                         "({} output) in flight\n",
                         ToMs(s.start), ToMs(s.end), s.device, ActionString(s.op));
    } else {
      out += fmt::format("  {:>12.3f} - {:>12.3f} ms  rank {:<3} {}\n",
                         ToMs(s.start), ToMs(s.end), s.device, ActionString(s.op));
    }
  }
  return out;
}

}  // namespace ppb
