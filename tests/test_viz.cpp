// Pictures and reports (the bubble breakdown's own tests are
// test_breakdown.cpp): the SVG is well-formed XML with one timeline row and one memory chart per device and
// stays small when it aggregates, the HTML report's tags balance, the trace's
// memory series add up to the engine's samples, and the CLI writes the files.
#include <unistd.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <catch2/catch.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "apps/output/output.h"
#include "apps/output/report.h"
#include "apps/output/svg.h"
#include "core/breakdown.h"
#include "core/critical_path.h"
#include "core/engine.h"
#include "schedules/schedule.h"
#include "tests/app_helpers.h"
#include "tests/viz_helpers.h"

namespace ppb {
namespace {

using namespace viz_test;  // NOLINT: the shared helpers
using test::Cli;
using test::CliRun;
using test::Slurp;

using Tree = boost::property_tree::ptree;

// Parses `xml`; fails the test if it is not well-formed.
Tree ParseXml(const std::string& xml) {
  std::istringstream in(xml);
  Tree tree;
  try {
    boost::property_tree::read_xml(in, tree);
  } catch (const std::exception& e) {
    FAIL("not well-formed XML: " << e.what());
  }
  return tree;
}

// Calls fn(name, node) for every element below `tree`.
void ForEachElement(const Tree& tree,
                    const std::function<void(const std::string&, const Tree&)>& fn) {
  for (const auto& [name, child] : tree) {
    if (name == "<xmlattr>" || name == "<xmlcomment>") continue;
    fn(name, child);
    ForEachElement(child, fn);
  }
}

std::string Attr(const Tree& node, const std::string& key) {
  return node.get<std::string>("<xmlattr>." + key, "");
}

// Elements `name` whose class attribute is `cls`.
std::vector<const Tree*> FindByClass(const Tree& root, const std::string& name,
                                     const std::string& cls) {
  std::vector<const Tree*> out;
  ForEachElement(root, [&](const std::string& n, const Tree& node) {
    if (n == name && Attr(node, "class") == cls) out.push_back(&node);
  });
  return out;
}

int CountElements(const Tree& root, const std::string& name, const std::string& cls = "") {
  int n = 0;
  ForEachElement(root, [&](const std::string& e, const Tree& node) {
    if (e == name && (cls.empty() || Attr(node, "class") == cls)) ++n;
  });
  return n;
}

// A structural check of the HTML we emit: every element is closed in order
// (void elements excepted), and the page has one html, head and body.
// Returns an empty string when fine, else what is wrong.
std::string CheckTags(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "br"};
  std::vector<std::string> stack;
  size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 2, "<!") == 0) {
      i = html.find('>', i);
      continue;
    }
    const size_t end = html.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = html.substr(i + 1, end - i - 1);
    i = end + 1;
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (closing) tag.erase(0, 1);
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (closing) {
      if (stack.empty() || stack.back() != name) {
        return "</" + name + "> closes <" + (stack.empty() ? "nothing" : stack.back()) + ">";
      }
      stack.pop_back();
    } else if (!self_closing && !kVoid.count(name)) {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return "<" + stack.back() + "> is never closed";
  return "";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t i = text.find(what); i != std::string::npos; i = text.find(what, i + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("svg: well-formed, one row and one memory chart per device", "[viz][svg]") {
  for (const char* name : {"example.yaml", "interleaved.yaml", "tight-memory.yaml",
                           "heterogeneous.yaml", "custom.yaml"}) {
    INFO(name);
    const Simulated s = SimulateFile(name);
    const std::string svg = FormatSvg(s.config, s.run, s.result);
    const Tree tree = ParseXml(svg);
    REQUIRE(tree.count("svg") == 1);
    const int p = s.run.spec.p;
    const auto rows = FindByClass(tree, "g", kSvgTimelineRowClass);
    const auto charts = FindByClass(tree, "g", kSvgMemoryChartClass);
    REQUIRE(static_cast<int>(rows.size()) == p);
    REQUIRE(static_cast<int>(charts.size()) == p);
    for (int d = 0; d < p; ++d) {
      CHECK(Attr(*rows[d], "id") == "rank-" + std::to_string(d));
      CHECK(Attr(*charts[d], "id") == "memory-" + std::to_string(d));
      // The capacity line (these configs' capacities are on the scale) and
      // the peak with its value.
      CHECK(CountElements(*charts[d], "line", "cap") == 1);
      CHECK(CountElements(*charts[d], "circle", "peak") == 1);
      CHECK(CountElements(*charts[d], "path", "area") == 1);
    }
    // Small cases draw op by op: one titled rect per op.
    int ops = 0;
    for (const Tree* row : rows) {
      for (const auto& [n, child] : *row) {
        if (n == "rect" && child.count("title") == 1) ++ops;
      }
    }
    CHECK(ops == static_cast<int>(s.run.program.total_ops()));
    CHECK(CountElements(tree, "text", "mb") > 0);        // micro-batch numbers
    CHECK(svg == FormatSvg(s.config, s.run, s.result));  // deterministic
  }
}

TEST_CASE("svg: recompute and sends have their colours", "[viz][svg]") {
  const Simulated s = SimulateFile("tight-memory.yaml");
  const Tree tree = ParseXml(FormatSvg(s.config, s.run, s.result));
  CHECK(CountElements(tree, "rect", "R") > 0);
  CHECK(CountElements(tree, "rect", "C") > 0);
  CHECK(CountElements(tree, "rect", "F0") > 0);
  CHECK(CountElements(tree, "rect", "B0") > 0);
}

TEST_CASE("svg: 64 devices and 512 micro-batches aggregate and stay small", "[viz][svg]") {
  const Simulated s = Simulate(test::Parse(UniformYaml(128, 64, 512, "1f1b")));
  const std::string svg = FormatSvg(s.config, s.run, s.result);
  INFO("size " << svg.size());
  CHECK(svg.size() < 2'000'000);
  const Tree tree = ParseXml(svg);
  CHECK(FindByClass(tree, "g", kSvgTimelineRowClass).size() == 64);
  CHECK(FindByClass(tree, "g", kSvgMemoryChartClass).size() == 64);
  // Busy intervals, not 65536 ops: no per-op titles, no labels.
  CHECK(Count(svg, "<title>") == 64);  // one per row
  CHECK(CountElements(tree, "text", "mb") == 0);
  CHECK(svg.find("merged into busy intervals") != std::string::npos);
  // Interleaved too.
  const Simulated i = Simulate(test::Parse(UniformYaml(128, 64, 512, "interleaved", 2)));
  const std::string svg2 = FormatSvg(i.config, i.run, i.result);
  INFO("interleaved size " << svg2.size());
  CHECK(svg2.size() < 2'000'000);
  CHECK(FindByClass(ParseXml(svg2), "g", kSvgTimelineRowClass).size() == 64);
}

TEST_CASE("svg and html: text is escaped", "[viz][svg][html]") {
  const Simulated s = Simulate(test::Parse(UniformYaml(4, 2, 4, "1f1b", 1, "a<b>&\"c\"")));
  const std::string svg = FormatSvg(s.config, s.run, s.result, "note <&>");
  ParseXml(svg);
  CHECK(svg.find("a&lt;b&gt;&amp;&quot;c&quot;") != std::string::npos);
  CHECK(svg.find("note &lt;&amp;&gt;") != std::string::npos);
  const std::string html = FormatSimReport(s.view());
  CHECK(CheckTags(html).empty());
  CHECK(html.find("a<b>") == std::string::npos);
  CHECK(EscapeXml("<a href='x'>&</a>") == "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;");
}

// ---- the HTML report --------------------------------------------------------

TEST_CASE("html: a simulation's report", "[viz][html]") {
  const Simulated s = SimulateFile("interleaved.yaml");
  const std::string html = FormatSimReport(s.view());
  INFO(CheckTags(html));
  CHECK(CheckTags(html).empty());
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // Self-contained: no scripts, no links to elsewhere.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  for (const char* id : {"summary", "breakdown", "devices", "timeline"}) {
    INFO(id);
    CHECK(html.find(std::string("<section id=\"") + id + "\">") != std::string::npos);
  }
  // One device row in the device table and one in the breakdown table per
  // rank, plus the pipeline's breakdown row.
  CHECK(Count(html, "<tr class=\"device\">") == 2 * 4);
  CHECK(Count(html, "<tr class=\"pipeline\">") == 1);
  CHECK(Count(html, "class=\"ppb-row\"") == 4);
  CHECK(html.find("is the largest loss") != std::string::npos);
  CHECK(html == FormatSimReport(s.view()));
}

// A title wider than the picture is squeezed to the width left of the
// right edge (SVG textLength) and leads with the outcome, so Chromium shows
// "OUT OF MEMORY" instead of clipping it; a short title is left as it is.
TEST_CASE("svg: a long title fits and leads with the outcome", "[viz][svg]") {
  // 40 layers of 1 GiB static on 2 ranks: 20 GiB each, over their 8 GiB.
  std::string yaml = UniformYaml(40, 2, 4, "1f1b", 1, std::string(150, 'x'));
  yaml.replace(yaml.find("memory: 80GiB"), 13, "memory: 8GiB ");
  const Simulated s = Simulate(test::Parse(yaml));
  REQUIRE(s.result.outcome == Outcome::OutOfMemory);
  const Tree tree = ParseXml(FormatSvg(s.config, s.run, s.result));
  const auto titles = FindByClass(tree, "text", "tb");
  REQUIRE(!titles.empty());
  const Tree& title = *titles.front();
  CHECK(title.get_value<std::string>().rfind("OUT OF MEMORY | ", 0) == 0);
  const double x = std::stod(Attr(title, "x"));
  const double len = std::stod(Attr(title, "textLength"));
  CHECK(Attr(title, "lengthAdjust") == "spacingAndGlyphs");
  CHECK(x + len <= 1200);
  const Simulated small = SimulateFile("example.yaml");
  const Tree small_tree = ParseXml(FormatSvg(small.config, small.run, small.result));
  const auto short_titles = FindByClass(small_tree, "text", "tb");
  REQUIRE(!short_titles.empty());
  CHECK(Attr(*short_titles.front(), "textLength").empty());
}

// With the peak just under the capacity the peak label would sit on the
// dashed capacity line: its glyphs (from 11 px above the baseline to 4
// below) must clear the line.
TEST_CASE("svg: the peak label clears the capacity line", "[viz][svg]") {
  const Simulated roomy = Simulate(test::Parse(UniformYaml(8, 2, 4, "1f1b")));
  Bytes peak = 0;
  for (const DeviceStats& ds : roomy.result.devices) peak = std::max(peak, ds.peak_memory);
  std::string yaml = UniformYaml(8, 2, 4, "1f1b");
  yaml.replace(yaml.find("memory: 80GiB"), 13, "memory: " + std::to_string(peak + (1 << 20)) + "B");
  const Simulated s = Simulate(test::Parse(yaml));
  REQUIRE(s.result.outcome == Outcome::Ok);
  const Tree tree = ParseXml(FormatSvg(s.config, s.run, s.result));
  int checked = 0;
  for (const Tree* chart : FindByClass(tree, "g", kSvgMemoryChartClass)) {
    double cap_y = -1, label_y = -1;
    ForEachElement(*chart, [&](const std::string& n, const Tree& node) {
      if (n == "line" && Attr(node, "class") == "cap") cap_y = std::stod(Attr(node, "y1"));
      const std::string cls = Attr(node, "class");
      if (n == "text" && (cls == "pk" || cls == "pk end")) label_y = std::stod(Attr(node, "y"));
    });
    REQUIRE(cap_y >= 0);
    REQUIRE(label_y >= 0);
    INFO("capacity line at y " << cap_y << ", peak label baseline at y " << label_y);
    CHECK((cap_y < label_y - 11 || cap_y > label_y + 4));
    ++checked;
  }
  CHECK(checked == 2);
}

// ---- the trace --------------------------------------------------------------

TEST_CASE("trace: memory counters split into static and activations", "[viz][trace]") {
  const Simulated s = SimulateFile("custom.yaml");
  const auto t = nlohmann::json::parse(FormatChromeTrace(s.config, s.run, s.result));
  std::vector<size_t> next(s.run.spec.p, 0);
  int counters = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "C") continue;
    ++counters;
    const int d = e["pid"];
    REQUIRE(next[d] < s.result.memory[d].size());
    const MemorySample& sample = s.result.memory[d][next[d]++];
    const double fixed = e["args"]["static"];
    const double act = e["args"]["activations+workspace"];
    CHECK(fixed == static_cast<double>(s.result.devices[d].static_memory) / (1 << 30));
    CHECK(act >= 0);
    // Exactly the old single total.
    CHECK(fixed + act == static_cast<double>(sample.bytes) / (1 << 30));
    // Read back as Perfetto does (µs x 1000 to the nearest ns): the
    // sample's ns.
    CHECK(std::llround(e["ts"].get<double>() * 1000.0) == sample.time);
  }
  CHECK(counters == 2 + 2 * 16);
}

// A viewer's JSON import: a time in µs, parsed as the double nearest the
// text, becomes int64 ns by x 1000 rounded to the nearest ns. The trace
// writes ns / 1000 with three decimals, so this gives the simulated ns.
// (An importer that truncates instead can land 1 ns early on such a double:
// 133226.338 x 1000 = 133226337.99999999.)
Nanos PerfettoNs(const nlohmann::json& us) {
  return std::llround(us.get<double>() * 1000.0);
}

// Every flow arrow binds: its start inside a send slice of the sender's
// communication thread, its end ("bp": "e", the enclosing slice) inside the
// op that consumes the message on the receiver's compute thread (the next
// stage's F, or the previous stage's B/I), one arrow per transfer; and no
// two slices of a thread overlap once Perfetto has turned µs into ns.
TEST_CASE("trace: flows end on the consuming op, slices do not overlap", "[viz][trace]") {
  for (const char* name : {"custom.yaml", "interleaved.yaml", "llama3.1-405b.yaml",
                           "heterogeneous.yaml"}) {
    INFO(name);
    const Simulated s = SimulateFile(name);
    const auto t = nlohmann::json::parse(FormatChromeTrace(s.config, s.run, s.result));
    struct Slice {
      Nanos start, end;
      std::string name;
    };
    std::map<std::pair<int, int>, std::vector<Slice>> threads;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const Nanos start = PerfettoNs(e["ts"]);
      threads[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {start, start + PerfettoNs(e["dur"]), e["name"].get<std::string>()});
    }
    int overlaps = 0;
    for (auto& [thread, slices] : threads) {
      std::sort(slices.begin(), slices.end(),
                [](const Slice& a, const Slice& b) { return a.start < b.start; });
      for (size_t i = 1; i < slices.size(); ++i) {
        if (slices[i].start < slices[i - 1].end) {
          ++overlaps;
          INFO("rank " << thread.first << " thread " << thread.second << ": "
                       << slices[i - 1].name << " ends at " << slices[i - 1].end << " ns, "
                       << slices[i].name << " starts at " << slices[i].start << " ns");
          CHECK(overlaps == 0);
        }
      }
    }
    // The slice of thread (pid, tid) enclosing time `at`, or nullptr.
    auto enclosing = [&](int pid, int tid, Nanos at) -> const Slice* {
      for (const Slice& sl : threads[{pid, tid}]) {
        if (sl.start <= at && at < sl.end) return &sl;
      }
      return nullptr;
    };
    size_t starts = 0, ends = 0;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] != "s" && e["ph"] != "f") continue;
      const std::string msg = e["name"];
      INFO(msg << " " << e.dump());
      const Slice* sl = enclosing(e["pid"], e["tid"], PerfettoNs(e["ts"]));
      REQUIRE(sl != nullptr);
      // "3SEND_F5": stage 3 sent micro-batch 5's activation.
      const size_t at = msg.find("SEND_");
      const int stage = std::stoi(msg.substr(0, at));
      const bool fwd = msg[at + 5] == 'F';
      const std::string mb = msg.substr(at + 6);
      if (e["ph"] == "s") {
        ++starts;
        CHECK(e["tid"] == 1);
        CHECK(sl->name == msg);
      } else {
        ++ends;
        CHECK(e["tid"] == 0);
        CHECK(e["bp"] == "e");
        const std::string want = std::to_string(stage + (fwd ? 1 : -1)) + (fwd ? "F" : "B") + mb;
        const std::string want_i = std::to_string(stage - 1) + "I" + mb;
        CHECK((sl->name == want || (!fwd && sl->name == want_i)));
      }
    }
    CHECK(starts == s.result.transfers.size());
    CHECK(ends == s.result.transfers.size());
  }
}

// The trace's events as written: each member's value as its JSON text (a
// number exactly as the file spells it, not as a double reads it back),
// through nlohmann's SAX interface, which hands over a float's own text
// (an integer comes as its value: a time written "0" would fail WrittenNs).
struct WrittenEvent {
  std::map<std::string, std::string> text;  // member -> JSON text of a scalar
};
class WrittenEvents : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<WrittenEvent> events;
  bool null() override { return Scalar("null"); }
  bool boolean(bool b) override { return Scalar(b ? "true" : "false"); }
  bool number_integer(number_integer_t i) override { return Scalar(std::to_string(i)); }
  bool number_unsigned(number_unsigned_t u) override { return Scalar(std::to_string(u)); }
  bool number_float(number_float_t, const std::string& s) override { return Scalar(s); }
  bool string(string_t& s) override { return Scalar(s); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override {
    ++depth_;
    if (in_events_ && depth_ == 2) events.emplace_back();
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && key_ == "traceEvents") in_events_ = true;
    return true;
  }
  bool end_array() override {
    if (depth_ == 1) in_events_ = false;
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    FAIL(e.what());
    return false;
  }

 private:
  bool Scalar(const std::string& s) {
    // Members of an event (depth 2) and of its args (depth 3, "args.").
    if (in_events_ && depth_ == 2) events.back().text[key_] = s;
    if (in_events_ && depth_ == 3) events.back().text["args." + key_] = s;
    return true;
  }
  int depth_ = 0;
  bool in_events_ = false;
  std::string key_;
};

// A written time in µs as ns: digits, '.', exactly three digits.
Nanos WrittenNs(const std::string& text) {
  INFO("written time " << text);
  const size_t dot = text.find('.');
  REQUIRE(dot != std::string::npos);
  REQUIRE(text.size() == dot + 4);
  REQUIRE(dot > 0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (i != dot) REQUIRE(std::isdigit(static_cast<unsigned char>(text[i])));
  }
  return std::stoll(text.substr(0, dot)) * 1000 + std::stoll(text.substr(dot + 1));
}

// Every time is written exactly (issue 36): each op's ts and dur are its
// simulated start and length in ns / 1000 with three decimals, each
// transfer's likewise, so where the simulator starts an op as the previous
// one ends, the written ts + dur of the one equals the written ts of the
// next. Under the old doubles, llama3.1-405b's trace had 30 such pairs that
// overlapped by 2e-12 µs as written and heterogeneous.yaml's one.
TEST_CASE("trace: times are written exactly, back-to-back slices meet as written",
          "[viz][trace]") {
  size_t all_adjacent = 0;
  for (const char* name : {"llama3.1-405b.yaml", "heterogeneous.yaml", "interleaved.yaml",
                           "custom.yaml"}) {
    INFO(name);
    const Simulated s = SimulateFile(name);
    WrittenEvents w;
    REQUIRE(nlohmann::json::sax_parse(FormatChromeTrace(s.config, s.run, s.result), &w));
    std::map<int, size_t> next_op;  // rank -> index of its next op in the program
    size_t transfers = 0, adjacent = 0, samples = 0;
    std::map<int, Nanos> end_on_rank;  // written end of the rank's previous op
    std::map<int, Nanos> sim_end;      // simulated end of the same op
    for (const WrittenEvent& e : w.events) {
      const std::string ph = e.text.at("ph");
      if (ph == "M") continue;
      const Nanos ts = WrittenNs(e.text.at("ts"));
      if (ph == "C") {
        ++samples;
        continue;
      }
      if (ph != "X") continue;
      const Nanos dur = WrittenNs(e.text.at("dur"));
      const int pid = std::stoi(e.text.at("pid"));
      if (e.text.at("tid") == "1") {
        const Transfer& t = s.result.transfers.at(transfers++);
        CHECK(ts == t.send);
        CHECK(ts + dur == t.arrive);
        continue;
      }
      const size_t k = next_op[pid]++;
      const OpTiming& t = s.result.timings.at(pid).at(k);
      CHECK(ts == t.start);
      CHECK(ts + dur == t.end);
      if (t.recompute > 0) CHECK(WrittenNs(e.text.at("args.recompute_us")) == t.recompute);
      if (k > 0 && sim_end[pid] == t.start) {
        ++adjacent;
        CHECK(end_on_rank[pid] == ts);
      }
      end_on_rank[pid] = ts + dur;
      sim_end[pid] = t.end;
    }
    CHECK(transfers == s.result.transfers.size());
    for (int d = 0; d < s.run.spec.p; ++d) CHECK(next_op[d] == s.result.timings[d].size());
    CHECK(samples > 0);
    // Not vacuous: each of these runs has ops that start as the previous ends.
    CHECK(adjacent > 0);
    all_adjacent += adjacent;
  }
  CHECK(all_adjacent > 100);
  // The text itself: 16707724 ns is "16707.724", not 16707.724000000002.
  WrittenEvents w;
  REQUIRE(nlohmann::json::sax_parse(
      std::string(R"({"traceEvents":[{"ph":"X","ts":16707.724,"dur":0.001}]})"), &w));
  CHECK(WrittenNs(w.events.at(0).text.at("ts")) == 16707724);
  CHECK(WrittenNs(w.events.at(0).text.at("dur")) == 1);
}

// The critical path's summary (issue 32): on configs/example.yaml (1F1B,
// p = 4, m = 16) the path is rank 0..2's first forward and last backward
// and all 32 ops of stage 3 (its 16 F and 16 B: 1171.2 ms, rank 3's whole
// busy time); its parts add up to its span, which is the iteration.
TEST_CASE("critical path summary: the stages the path spends its time on", "[viz][path]") {
  const Simulated s = SimulateFile("example.yaml");
  const std::vector<CriticalStep> path = CriticalPath(s.run.spec, s.run.program, s.result);
  const CriticalPathSummary sum = SummarizeCriticalPath(s.run.spec, path);
  CHECK(sum.span == s.result.makespan);
  CHECK(sum.compute + sum.message_time + sum.waits == sum.span);
  Nanos stages = 0;
  for (const CriticalPathSummary::Stage& st : sum.stages) stages += st.time;
  CHECK(stages == sum.compute);
  REQUIRE(sum.stages.size() == 4);
  CHECK(sum.stages[0].stage == 3);
  CHECK(sum.stages[0].rank == 3);
  CHECK(sum.stages[0].chunk == 0);
  CHECK(sum.stages[0].ops == 32);
  CHECK(sum.stages[0].time == 1'171'200'000);
  CHECK(sum.stages[0].time == s.result.devices[3].busy);
  for (size_t k = 1; k < 4; ++k) CHECK(sum.stages[k].ops == 2);
  const std::string text = FormatCriticalPathSummary(sum);
  CHECK(text.rfind("critical path summary: 1394.453 ms; ops of 4 stage(s) ", 0) == 0);
  CHECK(text.find("      3     3      0    32      1171.200   84.0 %\n") != std::string::npos);
  // V placement (dualpipev, v = 2): rank 0 holds stages 0 and 7 (chunks 0, 1).
  CliOverrides dualpipev;
  dualpipev.schedule = "dualpipev";
  dualpipev.virtual_stages = 2;
  const Simulated v = SimulateFile("example.yaml", dualpipev);
  const CriticalPathSummary vs =
      SummarizeCriticalPath(v.run.spec, CriticalPath(v.run.spec, v.run.program, v.result));
  CHECK(vs.compute + vs.message_time + vs.waits == vs.span);
  for (const CriticalPathSummary::Stage& st : vs.stages) {
    if (st.stage == 7) {
      CHECK(st.rank == 0);
      CHECK(st.chunk == 1);
    }
    if (st.stage == 0) CHECK(st.chunk == 0);
  }
}

// ---- the command line -------------------------------------------------------

TEST_CASE("cli: --svg and --report write their files", "[viz][cli]") {
  const std::string svg = TempPath("t.svg"), html = TempPath("t.html");
  const CliRun r = Cli({"--config", Config("example.yaml"), "--svg", svg, "--report", html});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string svg_text = Slurp(svg);
  CHECK(FindByClass(ParseXml(svg_text), "g", kSvgTimelineRowClass).size() == 4);
  const std::string html_text = Slurp(html);
  CHECK(CheckTags(html_text).empty());
  CHECK(html_text.find(svg_text) != std::string::npos);  // the same picture inline

  SECTION("unwritable paths exit 1 and say which") {
    for (const char* flag : {"--svg", "--report"}) {
      // Under a file, no folder can be made (root makes any other).
      const CliRun bad = Cli({"--config", Config("example.yaml"), flag, "/dev/null/x"});
      CHECK(bad.status == 1);
      CHECK(bad.err ==
            "ppb-sim: cannot write /dev/null/x: cannot create the folder /dev/null: Not a "
            "directory\n");
    }
  }
}

TEST_CASE("cli: search --svg and --report draw the recommendation", "[viz][cli][search]") {
  const std::string config = TempPath("tiny.yaml");
  std::ofstream(config) << test::kTinySearchConfig;
  const std::string svg = TempPath("s.svg"), html = TempPath("s.html");
  const CliRun r = Cli({"search", "--config", config, "--threads", "1", "--time-limit", "20",
                        "--svg", svg, "--report", html});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string svg_text = Slurp(svg);
  const Tree tree = ParseXml(svg_text);
  CHECK(FindByClass(tree, "g", kSvgTimelineRowClass).size() == 2);
  CHECK(svg_text.find("search recommendation: tiny-4l") != std::string::npos);
  CHECK(svg_text.find("iteration 30.000 ms") != std::string::npos);
  const std::string page = Slurp(html);
  INFO(CheckTags(page));
  CHECK(CheckTags(page).empty());
  for (const char* id :
       {"recommendation", "search", "top", "baselines", "summary", "breakdown", "devices"}) {
    INFO(id);
    CHECK(page.find(std::string("<section id=\"") + id + "\">") != std::string::npos);
  }
  CHECK(page.find("PROVED OPTIMAL") != std::string::npos);
  CHECK(page.find("even split, no recompute") != std::string::npos);
  CHECK(page.find(">seed</td><td class=\"l\">1<") != std::string::npos);
  CHECK(Count(page, "<tr class=\"device\">") == 2 * 2);

  SECTION("nothing fits: a baseline is drawn and the report says so") {
    std::string text = Slurp(config);
    text.replace(text.find("memory: 7GiB"), 12, "memory: 2GiB");
    const std::string small = TempPath("tiny-2gib.yaml");
    std::ofstream(small) << text;
    const CliRun n = Cli({"search", "--config", small, "--threads", "1", "--time-limit", "20",
                          "--svg", svg, "--report", html});
    INFO(n.err);
    REQUIRE(n.status == 0);
    // The first baseline is the config's own strategy ("your config").
    CHECK(Slurp(svg).find("nothing fits; shown: baseline your config") != std::string::npos);
    const std::string p2 = Slurp(html);
    CHECK(CheckTags(p2).empty());
    CHECK(p2.find("fits in memory") != std::string::npos);
  }
  SECTION("unwritable path exits 1") {
    const CliRun bad = Cli({"search", "--config", config, "--threads", "1", "--time-limit", "20",
                            "--report", "/dev/null/r.html"});
    CHECK(bad.status == 1);
    CHECK(bad.err ==
          "ppb-sim: cannot write /dev/null/r.html: cannot create the folder /dev/null: Not a "
          "directory\n");
  }
}

}  // namespace ppb
