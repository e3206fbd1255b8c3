// The SVG picture of a simulation (apps/output/svg.h).
#include "apps/output/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "apps/output/output.h"
#include "core/breakdown.h"

namespace ppb {
namespace {

// ---- layout (px) ------------------------------------------------------------

constexpr double kWidth = 1200;
constexpr double kLeft = 70;  // row labels
constexpr double kTitlePx = 15;  // font size of .tb
constexpr double kRight = 20;
constexpr double kPlotW = kWidth - kLeft - kRight;
constexpr double kTimelineTop = 84;
// Below this mean op width the timeline draws busy intervals, not ops: a
// thinner op shows as a hairline whose border outweighs its colour.
constexpr double kMinOpPx = 3.0;
// A busy interval covers at most this width, so the mix of op kinds still
// changes along the row (fill, steady state, drain).
constexpr double kClusterPx = 6.0;
// Aggregated, an idle gap this wide or wider ends a busy interval (and
// shows); narrower gaps lower the interval's bar instead.
constexpr double kMinGapPx = 2.0;

// Op categories drawn on the timeline; also the order of the bands of a busy
// interval, top to bottom.
enum Cat { kF = 0, kB, kI, kW, kRecompute, kNumCats };
constexpr std::array<const char*, kNumCats> kCatClass = {"F", "B", "I", "W", "R"};

// Fixed formatting: coordinates with one decimal; "-0.0" never appears
// because every coordinate is >= 0.
std::string Px(double x) { return fmt::format("{:.1f}", x); }

// ---- units ------------------------------------------------------------------

// A tick step of 1, 2 or 5 times a power of ten, giving about `target` ticks.
Nanos NiceStep(Nanos span, int target) {
  const Nanos raw = std::max<Nanos>(1, span / target);
  Nanos pow10 = 1;
  while (pow10 <= raw / 10) pow10 *= 10;
  for (Nanos f : {1, 2, 5, 10}) {
    if (f * pow10 >= raw) return f * pow10;
  }
  return 10 * pow10;
}

// The unit ticks of step `step` are labelled in, and its size in ns.
std::pair<const char*, Nanos> TimeUnit(Nanos step) {
  if (step >= 1'000'000'000) return {"s", 1'000'000'000};
  if (step >= 1'000'000) return {"ms", 1'000'000};
  if (step >= 1'000) return {"us", 1'000};
  return {"ns", 1};
}

// `t` in `unit`, with as many decimals as the step needs (steps are 1, 2 or
// 5 times a power of ten, so at most 3 decimals below the unit).
std::string TimeLabel(Nanos t, Nanos step) {
  const auto [name, unit] = TimeUnit(step);
  int decimals = 0;
  for (Nanos scale = 1; decimals < 3 && (step * scale) % unit != 0; scale *= 10) {
    ++decimals;
  }
  return fmt::format("{:.{}f} {}", static_cast<double>(t) / static_cast<double>(unit), decimals,
                     name);
}

// "80 GiB", "1.5 GiB", "512 MiB": short byte labels for charts.
std::string ShortBytes(Bytes b) {
  const double x = static_cast<double>(b);
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = x;
  while (u < 4 && v >= 1024) {
    v /= 1024;
    ++u;
  }
  return v >= 100 || u == 0 ? fmt::format("{:.0f} {}", v, units[u])
                            : fmt::format("{:.1f} {}", v, units[u]);
}

// ---- drawing helpers --------------------------------------------------------

struct Canvas {
  std::string out;

  void Rect(double x, double y, double w, double h, std::string_view cls,
            std::string_view extra = "") {
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"{}\"{}/>\n",
                       Px(x), Px(y), Px(w), Px(h), cls, extra);
  }
  void Text(double x, double y, std::string_view cls, std::string_view text,
            std::string_view extra = "") {
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"{}\"{}>{}</text>\n", Px(x), Px(y), cls,
                       extra, EscapeXml(text));
  }
  void Line(double x1, double y1, double x2, double y2, std::string_view cls) {
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{}\"/>\n", Px(x1),
                       Px(y1), Px(x2), Px(y2), cls);
  }
};

// Every style in one sheet (class names are prefixed so that an SVG inlined
// in the HTML report does not restyle the page).
constexpr std::string_view kStyle = R"(<style>
.bg{fill:#ffffff}
.idle{fill:#ececec}
.grid{stroke:#d4d4d4;stroke-width:1}
.axis{stroke:#555555;stroke-width:1}
.F0{fill:#4e79a7}.F1{fill:#2c5282}
.B0{fill:#59a14f}.B1{fill:#2f7d32}
.I0{fill:#8cd17d}.I1{fill:#5bb450}
.W0{fill:#b07aa1}.W1{fill:#8a4f7d}
.R{fill:#f28e2b}
.C{fill:#e15759}
.t{font-family:sans-serif;font-size:11px;fill:#222222}
.tb{font-family:sans-serif;font-size:15px;font-weight:bold;fill:#222222}
.ts{font-family:sans-serif;font-size:10px;fill:#555555}
.tr{font-family:sans-serif;font-size:11px;fill:#c53030;font-weight:bold}
.mb{font-family:sans-serif;fill:#ffffff;text-anchor:middle}
.end{text-anchor:end}
.mid{text-anchor:middle}
.frame{fill:#fafafa;stroke:#cccccc;stroke-width:1}
.static{fill:#a0aec0}
.area{fill:#bee3f8;stroke:#2b6cb0;stroke-width:1}
.cap{stroke:#c53030;stroke-width:1.2;stroke-dasharray:5,3}
.peak{fill:#c53030}
.cl{font-family:sans-serif;font-size:10px;fill:#c53030;stroke:#ffffff;stroke-width:3px;paint-order:stroke;stroke-linejoin:round}
.pk{font-family:sans-serif;font-size:11px;fill:#c53030;font-weight:bold;stroke:#ffffff;stroke-width:3px;paint-order:stroke;stroke-linejoin:round}
</style>
)";

// The class of an op: its kind and the parity of its chunk (odd chunks are
// darker, so interleaved chunks can be told apart).
std::string OpClass(const Op& op, int p) {
  return fmt::format("{}{}", OpKindLetter(op.kind), (op.stage.value / p) % 2);
}

Cat OpCat(OpKind k) {
  switch (k) {
    case OpKind::F:
      return kF;
    case OpKind::B:
      return kB;
    case OpKind::I:
      return kI;
    case OpKind::W:
      return kW;
  }
  return kF;
}

struct Interval {
  double x0 = 0, x1 = 0;
};

// The union of intervals, sorted by start (only overlaps merge: closing
// small gaps would overstate the time on the link).
std::vector<Interval> Union(std::vector<Interval> xs) {
  std::sort(xs.begin(), xs.end(), [](const Interval& a, const Interval& b) {
    return a.x0 != b.x0 ? a.x0 < b.x0 : a.x1 < b.x1;
  });
  std::vector<Interval> out;
  for (const Interval& x : xs) {
    if (!out.empty() && x.x0 <= out.back().x1) {
      out.back().x1 = std::max(out.back().x1, x.x1);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// A busy interval of the aggregated timeline: its extent and the time of
// each category inside it.
struct Cluster {
  Nanos t0 = 0, t1 = 0;
  double x0 = 0, x1 = 0;
  std::array<Nanos, kNumCats> time{};
};

// Band heights of a cluster in tenths of a pixel (integers, so that two
// neighbours with the same bands merge exactly). The bands together are as
// high as the share of the interval (at least `min_span` long, the time of
// one pixel) that is busy, and split that height by the time of each kind:
// the area drawn is the time spent.
std::array<int, kNumCats> Bands(const Cluster& c, double height, Nanos min_span) {
  std::array<int, kNumCats> bands{};
  Nanos busy = 0;
  for (Nanos t : c.time) busy += t;
  const Nanos span = std::max(c.t1 - c.t0, min_span);
  if (busy <= 0 || span <= 0) return bands;
  const int full = static_cast<int>(std::lround(height * 10));
  const int tenths = std::min(
      full, static_cast<int>(std::lround(static_cast<double>(full) * static_cast<double>(busy) /
                                         static_cast<double>(span))));
  // Largest remainder, so the bands add up to `tenths` exactly.
  int used = 0;
  std::array<double, kNumCats> rem{};
  for (int k = 0; k < kNumCats; ++k) {
    const double exact =
        static_cast<double>(tenths) * static_cast<double>(c.time[k]) / static_cast<double>(busy);
    bands[k] = static_cast<int>(std::floor(exact));
    rem[k] = exact - bands[k];
    used += bands[k];
  }
  while (used < tenths) {
    int best = 0;
    for (int k = 1; k < kNumCats; ++k) {
      if (rem[k] > rem[best]) best = k;
    }
    ++bands[best];
    rem[best] = -1;
    ++used;
  }
  return bands;
}

struct Layout {
  int p = 1;
  Nanos span = 1;     // time drawn: [0, span]
  double row_h = 20;  // row pitch
  double op_h = 16;   // op bar height
  double comm_h = 3;  // communication strip height under the ops
  double X(Nanos t) const {
    return kLeft + kPlotW * static_cast<double>(t) / static_cast<double>(span);
  }
  double RowTop(int d) const { return kTimelineTop + row_h * d; }
};

void DrawLegend(Canvas& c, double y, bool interleaved, bool aggregated, bool oom) {
  struct Item {
    const char* cls;
    const char* label;
  };
  const Item items[] = {{"F0", "forward F"},    {"B0", "backward B"},
                        {"I0", "input grad I"}, {"W0", "weight grad W"},
                        {"R", "recompute"},     {"C", "send (on the sender's row)"},
                        {"idle", "idle"}};
  double x = kLeft;
  for (const Item& it : items) {
    c.Rect(x, y - 9, 12, 10, it.cls);
    c.Text(x + 16, y, "t", it.label);
    x += 26 + 6.4 * static_cast<double>(std::string_view(it.label).size());
  }
  std::string note;
  if (interleaved && !aggregated) note += "darker: odd chunks. ";
  if (oom) note += "red rank: out of memory. ";
  if (aggregated) {
    note +=
        "ops narrower than 3 px merged into busy intervals: bar height = share of the time busy, "
        "split by kind.";
  } else {
    note += "numbers: micro-batch.";
  }
  c.Text(kLeft, y + 15, "ts", note);
}

void DrawAxis(Canvas& c, const Layout& l, double top, double bottom) {
  const Nanos step = NiceStep(l.span, 10);
  c.Line(kLeft, bottom, kLeft + kPlotW, bottom, "axis");
  for (Nanos t = 0; t <= l.span; t += step) {
    const double x = l.X(t);
    c.Line(x, top, x, bottom, "grid");
    c.Line(x, bottom, x, bottom + 4, "axis");
    c.Text(x, bottom + 15, "t mid", TimeLabel(t, step));
  }
}

// Ops one by one, with the recompute part and the micro-batch number.
void DrawOps(Canvas& c, const Layout& l, const PipelineSpec& spec, const Program& prog,
             const SimResult& r, int d) {
  const double y = l.RowTop(d);
  const double font = std::min(10.0, l.op_h - 3);
  for (size_t k = 0; k < prog.ops[d].size(); ++k) {
    const Op& op = prog.ops[d][k];
    const OpTiming& t = r.timings[d][k];
    if (t.end <= t.start) continue;
    const double x0 = l.X(t.start), x1 = l.X(t.end);
    c.out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"{}\"><title>{} "
        "{:.3f}-{:.3f} ms</title></rect>\n",
        Px(x0), Px(y), Px(x1 - x0), Px(l.op_h), OpClass(op, spec.p), ActionString(op),
        ToMs(t.start), ToMs(t.end));
    if (t.recompute > 0) c.Rect(x0, y, l.X(t.start + t.recompute) - x0, l.op_h, "R");
    const std::string label = std::to_string(op.mb.value);
    const double need = 0.62 * font * static_cast<double>(label.size()) + 3;
    const double room = x1 - (t.recompute > 0 ? l.X(t.start + t.recompute) : x0);
    if (font >= 6 && room >= need) {
      const double cx = (x1 + x1 - room) / 2;
      c.out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"mb\" font-size=\"{}\">{}</text>\n",
                           Px(cx), Px(y + l.op_h / 2 + font * 0.35), Px(font), label);
    }
  }
}

// Busy intervals with bands per op kind (ops too narrow to draw one by one).
void DrawClusters(Canvas& c, const Layout& l, const Program& prog, const SimResult& r, int d) {
  std::vector<Cluster> clusters;
  for (size_t k = 0; k < prog.ops[d].size(); ++k) {
    const OpTiming& t = r.timings[d][k];
    if (t.end <= t.start) continue;
    const double x0 = l.X(t.start), x1 = l.X(t.end);
    if (clusters.empty() || x0 - clusters.back().x1 >= kMinGapPx ||
        x1 - clusters.back().x0 > kClusterPx) {
      clusters.push_back(Cluster{t.start, t.end, x0, x1, {}});
    }
    Cluster& cl = clusters.back();
    cl.t1 = std::max(cl.t1, t.end);
    cl.x1 = std::max(cl.x1, x1);
    cl.time[OpCat(prog.ops[d][k].kind)] += t.end - t.start - t.recompute;
    cl.time[kRecompute] += t.recompute;
  }
  // Neighbours that touch and look alike (no band differs by more than
  // `tolerance` from the group's so far) become one interval drawn with the
  // bands of their summed times: op boundaries falling differently into
  // successive intervals would otherwise make a steady state flicker and
  // cost a rect per interval.
  const Nanos pixel = std::max<Nanos>(1, static_cast<Nanos>(static_cast<double>(l.span) / kPlotW));
  const int tolerance = std::max(3, static_cast<int>(std::lround(l.op_h * 10 * 0.08)));
  std::vector<Cluster> groups;
  for (const Cluster& cl : clusters) {
    if (!groups.empty() && cl.x0 - groups.back().x1 < kMinGapPx) {
      Cluster& g = groups.back();
      const auto a = Bands(g, l.op_h, pixel), b = Bands(cl, l.op_h, pixel);
      bool alike = true;
      for (int k = 0; k < kNumCats; ++k) alike = alike && std::abs(a[k] - b[k]) <= tolerance;
      if (alike) {
        g.t1 = cl.t1;
        g.x1 = cl.x1;
        for (int k = 0; k < kNumCats; ++k) g.time[k] += cl.time[k];
        continue;
      }
    }
    groups.push_back(cl);
  }
  struct Drawn {
    double x0, x1;
    std::array<int, kNumCats> bands;
  };
  std::vector<Drawn> drawn;
  for (const Cluster& g : groups) drawn.push_back({g.x0, g.x1, Bands(g, l.op_h, pixel)});
  for (const Drawn& dr : drawn) {
    // An interval narrower than a pixel is drawn one pixel wide; its bands
    // were sized for one pixel (Bands' min_span).
    const double w = std::max(dr.x1 - dr.x0, 1.0);
    int total = 0;
    for (int b : dr.bands) total += b;
    // Bars stand on the row's base line, so lower ones read as less busy.
    double top = l.RowTop(d) + l.op_h - total / 10.0;
    for (int k = 0; k < kNumCats; ++k) {
      if (dr.bands[k] == 0) continue;
      const double h = dr.bands[k] / 10.0;
      c.Rect(dr.x0, top, w, h, k == kRecompute ? "R" : fmt::format("{}0", kCatClass[k]));
      top += h;
    }
  }
}

// The sends of device d as a strip under its ops. Aggregated, the strip is
// drawn per kClusterPx bucket with a height proportional to the share of the
// bucket a message is on the link (thousands of sub-pixel messages would
// otherwise each need a rect and overstate the time).
void DrawSends(Canvas& c, const Layout& l, int d, const std::vector<Interval>& sends,
               bool aggregated) {
  const double y = l.RowTop(d) + l.op_h;
  if (!aggregated) {
    for (const Interval& s : sends) c.Rect(s.x0, y, std::max(s.x1 - s.x0, 0.5), l.comm_h, "C");
    return;
  }
  const int buckets = static_cast<int>(std::ceil(kPlotW / kClusterPx));
  std::vector<double> covered(buckets, 0.0);
  for (const Interval& s : sends) {
    for (int k = std::max(0, static_cast<int>((s.x0 - kLeft) / kClusterPx));
         k < buckets && kLeft + k * kClusterPx < s.x1; ++k) {
      const double b0 = kLeft + k * kClusterPx;
      covered[k] += std::max(0.0, std::min(s.x1, b0 + kClusterPx) - std::max(s.x0, b0));
    }
  }
  // Runs of buckets with the same height (tenths of a pixel) are one rect.
  int run_start = 0, run_tenths = 0;
  for (int k = 0; k <= buckets; ++k) {
    const int tenths =
        k == buckets
            ? -1
            : static_cast<int>(std::lround(std::min(1.0, covered[k] / kClusterPx) * l.comm_h * 10));
    if (tenths == run_tenths) continue;
    if (run_tenths > 0) {
      const double x0 = kLeft + run_start * kClusterPx;
      const double x1 = std::min(kLeft + k * kClusterPx, kLeft + kPlotW);
      const double h = run_tenths / 10.0;
      c.Rect(x0, y + l.comm_h - h, x1 - x0, h, "C");
    }
    run_start = k;
    run_tenths = tenths;
  }
}

// " on h100@n0" for a rank of a heterogeneous cluster, "" otherwise.
std::string DeviceOf(const RunConfig& config, int rank) {
  if (!config.topology || rank >= static_cast<int>(config.placement.size())) return "";
  return " on " + DeviceLabel(*config.topology, config.placement[rank]);
}

void DrawTimeline(Canvas& c, const Layout& l, const RunConfig& config, const PreparedRun& run,
                  const SimResult& r, bool aggregated) {
  const PipelineSpec& spec = run.spec;
  const double label_font = std::min(11.0, l.row_h - 1);
  // Background (idle) first, then the grid, then the ops on top.
  for (int d = 0; d < spec.p; ++d) {
    c.Rect(kLeft, l.RowTop(d), kPlotW, l.op_h + l.comm_h, "idle");
  }
  const double bottom = l.RowTop(spec.p) + 2;
  DrawAxis(c, l, kTimelineTop - 2, bottom);
  std::vector<std::vector<Interval>> sends(spec.p);
  for (const Transfer& t : r.transfers) {
    if (t.arrive > t.send) sends[t.from.value].push_back({l.X(t.send), l.X(t.arrive)});
  }
  const auto held = LayersHeld(config, spec.p, spec.v);
  for (int d = 0; d < spec.p; ++d) {
    const DeviceStats& ds = r.devices[d];
    c.out += fmt::format("<g id=\"rank-{}\" class=\"{}\">\n", d, kSvgTimelineRowClass);
    c.out += fmt::format("<title>rank {}{}: layers {}; busy {:.3f} ms, idle {:.3f} ms</title>\n", d,
                         EscapeXml(DeviceOf(config, d)), EscapeXml(held[d]), ToMs(ds.busy),
                         ToMs(ds.idle));
    c.out +=
        fmt::format("<text x=\"{}\" y=\"{}\" class=\"{} end\" font-size=\"{}\">{}</text>\n",
                    Px(kLeft - 6), Px(l.RowTop(d) + (l.op_h + l.comm_h) / 2 + label_font * 0.35),
                    ds.oom ? "tr" : "t", Px(label_font), fmt::format("rank {}", d));
    if (aggregated) {
      DrawClusters(c, l, run.program, r, d);
    } else {
      DrawOps(c, l, spec, run.program, r, d);
    }
    DrawSends(c, l, d, Union(std::move(sends[d])), aggregated);
    c.out += "</g>\n";
  }
}

// The memory step chart of device d in the box (x, y, w, h), on the common
// scale [0, ymax].
void DrawMemory(Canvas& c, const SimResult& r, int d, const std::string& device, double x,
                double y, double w, double h, Bytes ymax, Nanos span, bool small) {
  const DeviceStats& ds = r.devices[d];
  auto X = [&](Nanos t) {
    return x + w * static_cast<double>(std::clamp<Nanos>(t, 0, span)) / static_cast<double>(span);
  };
  auto Y = [&](Bytes b) {
    return y + h - h * static_cast<double>(std::max<Bytes>(b, 0)) / static_cast<double>(ymax);
  };
  c.out += fmt::format("<g id=\"memory-{}\" class=\"{}\">\n", d, kSvgMemoryChartClass);
  c.Rect(x, y, w, h, "frame");
  c.Text(x, y - 4, ds.oom ? "tr" : "t",
         fmt::format("rank {}{}{}", d, device, ds.oom ? " OOM" : ""));
  c.Text(x - 3, y + h, "ts end", "0");
  c.Text(x - 3, y + 8, "ts end", ShortBytes(ymax));
  // The step function, one pixel column at a time: each column keeps the
  // value it starts with, its range and its last value, so peaks survive
  // however many samples fall into it.
  const std::vector<MemorySample>& samples = r.memory[d];
  std::string path = fmt::format("M{} {}", Px(x), Px(y + h));
  size_t i = 0;
  Bytes value = samples.empty() ? ds.static_memory : samples.front().bytes;
  path += fmt::format("V{}", Px(Y(value)));
  while (i < samples.size()) {
    const double col = std::floor(X(samples[i].time) - x);
    const double col_x = x + col;
    Bytes lo = value, hi = value;
    while (i < samples.size() && std::floor(X(samples[i].time) - x) == col) {
      value = samples[i].bytes;
      lo = std::min(lo, value);
      hi = std::max(hi, value);
      ++i;
    }
    path += fmt::format("H{}", Px(std::max(col_x, x)));
    if (hi != lo) path += fmt::format("V{}V{}", Px(Y(hi)), Px(Y(lo)));
    path += fmt::format("V{}", Px(Y(value)));
  }
  path += fmt::format("H{}V{}Z", Px(x + w), Px(y + h));
  c.out += fmt::format("<path d=\"{}\" class=\"area\"/>\n", path);
  // Static memory, constant for the whole run, over the area's lower part.
  c.Rect(x, Y(ds.static_memory), w, y + h - Y(ds.static_memory), "static");
  // Capacity: a dashed line when it is on the scale, else a note.
  if (ds.capacity <= ymax) {
    c.Line(x, Y(ds.capacity), x + w, Y(ds.capacity), "cap");
    if (!small) {
      const double ly = Y(ds.capacity) - y < 14 ? Y(ds.capacity) + 11 : Y(ds.capacity) - 3;
      c.Text(x + w - 2, ly, "cl end", "capacity " + ShortBytes(ds.capacity));
    }
  } else {
    c.Text(x + w - 2, y + 10, "ts end", "capacity " + ShortBytes(ds.capacity) + " (off scale)");
  }
  // The peak, where it first happens.
  const double px = X(ds.peak_time), py = Y(ds.peak_memory);
  c.out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" class=\"peak\"/>\n", Px(px), Px(py));
  const bool right = px < x + w * 0.6;
  // The label's baseline: above the dot, unless its glyphs (about 10 px
  // above the baseline to 3 below) would sit on the dashed capacity line,
  // then below the line (and below the capacity label when that is there).
  double ly = std::max(py - 4, y + 9);
  if (ds.capacity <= ymax) {
    const double cy = Y(ds.capacity);
    if (ly - 11 <= cy && cy <= ly + 4) {
      const bool cap_label_below = !small && cy - y < 14;
      ly = cy + 13 + (cap_label_below ? 11 : 0);
      if (ly > y + h - 2) ly = cy - 4 - (!small && !cap_label_below ? 11 : 0);
    }
  }
  c.Text(right ? px + 5 : px - 5, ly, right ? "pk" : "pk end",
         "peak " + ShortBytes(ds.peak_memory));
  c.out += "</g>\n";
}

}  // namespace

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string FormatSvg(const RunConfig& config, const PreparedRun& run, const SimResult& r,
                      const std::string& note) {
  const PipelineSpec& spec = run.spec;
  Layout l;
  l.p = spec.p;
  l.span = std::max<Nanos>(r.makespan, 1);
  l.row_h = std::clamp(std::floor(480.0 / spec.p), 9.0, 30.0);
  const double gap = l.row_h >= 16 ? 3 : 1;
  l.comm_h = std::max(2.0, std::floor(l.row_h / 6));
  l.op_h = l.row_h - gap - l.comm_h;

  // Aggregate when the mean op is too thin to draw (over all devices).
  size_t ops = 0;
  Nanos busy = 0;
  for (int d = 0; d < spec.p; ++d) {
    ops += run.program.ops[d].size();
    busy += r.devices[d].busy;
  }
  const double mean_op_px = ops == 0 ? kPlotW
                                     : kPlotW * static_cast<double>(busy) /
                                           static_cast<double>(ops) / static_cast<double>(l.span);
  const bool aggregated = mean_op_px < kMinOpPx;

  // Memory charts: a grid that keeps charts readable up to 64 devices.
  const int cols = spec.p <= 4 ? 1 : spec.p <= 8 ? 2 : spec.p <= 32 ? 4 : 8;
  const int rows = (spec.p + cols - 1) / cols;
  const double chart_h = cols == 1 ? 90 : cols == 2 ? 80 : 64;
  const double chart_pitch = chart_h + 30;
  const double timeline_bottom = l.RowTop(spec.p) + 2;
  const double mem_top = timeline_bottom + 60;
  const double height = mem_top + 24 + rows * chart_pitch + 10;

  Canvas c;
  c.out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\">\n",
      kWidth, height);
  c.out += kStyle;
  c.Rect(0, 0, kWidth, height, "bg");
  const Breakdown b = ComputeBreakdown(r);
  // The outcome leads the title, so a long title cannot hide it; a title
  // wider than the picture (estimated at 0.62 em a glyph, about the widest
  // average of a bold sans-serif) is squeezed to fit (SVG textLength)
  // instead of being clipped at the right edge.
  const std::string title = fmt::format(
      "{}{}{} | {} | p={} v={} m={} | iteration {:.3f} ms | bubble {:.1f} %",
      r.outcome == Outcome::OutOfMemory ? "OUT OF MEMORY | "
      : r.outcome == Outcome::Deadlock  ? "DEADLOCK | "
                                        : "",
      note.empty() ? "" : note + ": ", config.model_name.empty() ? config.path : config.model_name,
      DescribeSchedule(config), spec.p, spec.v, spec.m, ToMs(r.makespan),
      100.0 * r.bubble_fraction());
  const double title_room = kWidth - kLeft - 10;
  const bool squeeze = static_cast<double>(title.size()) * 0.62 * kTitlePx > title_room;
  c.Text(kLeft, 22, "tb", title,
         squeeze ? fmt::format(" textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\"",
                               Px(title_room))
                 : std::string());
  std::string parts;
  for (int t = 0; t < kNumBubbleTerms; ++t) {
    const auto term = static_cast<BubbleTerm>(t);
    parts +=
        fmt::format("{}{} {:.1f} %", t == 0 ? "" : " + ", BubbleTermLabel(term),
                    100.0 * static_cast<double>(b.pipeline[term]) / static_cast<double>(l.span));
  }
  c.Text(kLeft, 40, "ts", fmt::format("busiest rank {}: {}", b.bottleneck, parts));
  DrawLegend(c, 60, spec.v > 1, aggregated, r.outcome == Outcome::OutOfMemory);

  DrawTimeline(c, l, config, run, r, aggregated);

  // Memory over time.
  c.Text(kLeft, mem_top, "tb",
         "memory per rank (grey: static; blue: + activations and workspace; dashed: capacity; "
         "dot: peak)");
  // One scale for every chart, so ranks compare at a glance: the largest
  // peak and every capacity up to 4 times it (a larger one would flatten the
  // curves; it is named instead of drawn).
  Bytes peak_max = 1;
  for (const DeviceStats& ds : r.devices) peak_max = std::max(peak_max, ds.peak_memory);
  Bytes ymax = peak_max;
  for (const DeviceStats& ds : r.devices) {
    if (ds.capacity / 4 <= peak_max) ymax = std::max(ymax, ds.capacity);
  }
  ymax += ymax / 12;
  const double col_w = (kWidth - 20) / cols;
  for (int d = 0; d < spec.p; ++d) {
    const int row = d / cols, col = d % cols;
    const double x = cols == 1 ? kLeft : 10 + col * col_w + 46;
    const double w = cols == 1 ? kPlotW : col_w - 56;
    const double y = mem_top + 24 + row * chart_pitch + 14;
    if (d < static_cast<int>(r.memory.size())) {
      DrawMemory(c, r, d, DeviceOf(config, d), x, y, w, chart_h, ymax, l.span, cols >= 4);
    }
  }
  if (cols == 1) {
    // The charts share the timeline's x axis: label its ends.
    const double y = mem_top + 24 + rows * chart_pitch;
    c.Text(kLeft, y - 2, "ts", "0");
    c.Text(kLeft + kPlotW, y - 2, "ts end", TimeLabel(l.span, NiceStep(l.span, 10)));
  }
  c.out += "</svg>\n";
  return std::move(c.out);
}

}  // namespace ppb
