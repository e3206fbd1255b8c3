// The docs against what ppb prints and against themselves:
//   - docs/guide.md: every command it shows after a `<!-- snapshot: NAME -->`
//     marker is the command of that output snapshot (tests/data/snapshots/
//     NAME, run by scripts/snapshots.sh), up to the flags that only make a
//     search deterministic (--node-limit N, --time-limit 0, --threads 1),
//     and the output block after it is the snapshot's stdout, in pieces
//     separated by "..." lines, each piece a run of whole lines in order (a
//     figure the snapshot masks as "<masked>" may be any figure);
//   - every relative link in README.md and docs/*.md names a file that
//     exists and, with #anchor, a heading of that file (GitHub's anchors:
//     lower case, punctuation dropped, spaces to hyphens).
#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app_helpers.h"

namespace ppb {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(PPB_CONFIGS_DIR).parent_path();

using test::Lines;
using test::Slurp;

// Whether the guide's line shows the snapshot's line: equal, or equal where
// the snapshot has "<masked>" and the guide any run of non-blank characters.
bool LineShows(const std::string& guide, const std::string& snap) {
  const std::string mask = "<masked>";
  size_t gi = 0, si = 0;
  while (true) {
    const size_t m = snap.find(mask, si);
    const std::string fixed = snap.substr(si, m == std::string::npos ? std::string::npos : m - si);
    if (guide.compare(gi, fixed.size(), fixed) != 0) return false;
    gi += fixed.size();
    if (m == std::string::npos) return gi == guide.size();
    const size_t start = gi;
    while (gi < guide.size() && guide[gi] != ' ') ++gi;
    if (gi == start) return false;
    si = m + mask.size();
  }
}

struct GuideBlock {
  std::string snapshot;             // NAME of the marker
  std::string command;              // the sh block's line
  std::vector<std::string> output;  // the text block's lines
  int line = 0;                     // the marker's line in the guide
};

// The blocks of docs/guide.md: a marker, then a ```sh block, then a
// ```text block.
std::vector<GuideBlock> GuideBlocks(const std::string& text) {
  const std::vector<std::string> lines = Lines(text);
  std::vector<GuideBlock> out;
  const std::string open = "<!-- snapshot: ";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(open, 0) != 0) continue;
    GuideBlock b;
    b.line = static_cast<int>(i) + 1;
    b.snapshot = lines[i].substr(open.size(), lines[i].find(" -->") - open.size());
    size_t j = i + 1;
    while (j < lines.size() && lines[j] != "```sh") ++j;
    if (j + 1 < lines.size()) b.command = lines[j + 1];
    while (j < lines.size() && lines[j] != "```text") ++j;
    for (++j; j < lines.size() && lines[j] != "```"; ++j) b.output.push_back(lines[j]);
    out.push_back(std::move(b));
  }
  return out;
}

// GitHub's anchor of a heading: lower case; letters, digits, '-', '_' and
// spaces kept (non-ASCII letters of Latin and Greek too), spaces to '-'.
std::string Slug(const std::string& heading) {
  std::string out;
  for (size_t i = 0; i < heading.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(heading[i]);
    if (c < 0x80) {
      if (std::isalnum(c) != 0 || c == '-' || c == '_') {
        out += static_cast<char>(std::tolower(c));
      } else if (c == ' ') {
        out += '-';
      }
      continue;
    }
    // A multi-byte character: its code point.
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    unsigned cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (int k = 1; k < len && i + k < heading.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(heading[i + k]) & 0x3F);
    }
    const bool letter = (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) ||
                        (cp >= 0x370 && cp <= 0x3FF);
    if (letter) out += heading.substr(i, static_cast<size_t>(len));
    i += static_cast<size_t>(len - 1);
  }
  return out;
}

// Every anchor of a markdown file's headings (outside code blocks), with
// GitHub's -1, -2 for repeats.
std::set<std::string> Anchors(const std::string& text) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  bool code = false;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("```", 0) == 0) code = !code;
    if (code || line.empty() || line[0] != '#') continue;
    size_t k = 0;
    while (k < line.size() && line[k] == '#') ++k;
    if (k >= line.size() || line[k] != ' ') continue;
    const std::string slug = Slug(line.substr(k + 1));
    const int n = seen[slug]++;
    out.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
  }
  return out;
}

}  // namespace

TEST_CASE("the guide shows each command's real output", "[cli][docs]") {
  const std::string guide = Slurp(kRoot / "docs" / "guide.md");
  REQUIRE_FALSE(guide.empty());
  const std::vector<GuideBlock> blocks = GuideBlocks(guide);
  const std::set<std::string> deterministic = {"--node-limit", "--time-limit", "--threads"};
  std::set<std::string> sections;
  for (const GuideBlock& b : blocks) {
    INFO("docs/guide.md:" << b.line << " snapshot " << b.snapshot);
    const std::string snap = Slurp(kRoot / "tests" / "data" / "snapshots" / b.snapshot);
    REQUIRE_FALSE(snap.empty());
    // The command: the snapshot's, less its deterministic flags at the end.
    const std::string head = snap.substr(0, snap.find('\n'));
    REQUIRE(head.rfind("### ", 0) == 0);
    const std::string ran = head.substr(4);
    REQUIRE(b.command.rfind("ppb-sim", 0) == 0);
    REQUIRE(ran.rfind(b.command, 0) == 0);
    std::istringstream rest(ran.substr(b.command.size()));
    std::string flag, value;
    while (rest >> flag) {
      CHECK(deterministic.count(flag) == 1);
      CHECK(static_cast<bool>(rest >> value));
      if (flag == "--time-limit") CHECK(value == "0");
      if (flag == "--threads") CHECK(value == "1");
    }
    // The output: pieces of the snapshot's stdout, in order.
    const size_t a = snap.find("### stdout\n");
    const size_t z = snap.find("### stderr\n");
    REQUIRE(a != std::string::npos);
    REQUIRE(z != std::string::npos);
    const std::vector<std::string> out = Lines(snap.substr(a + 11, z - a - 11));
    REQUIRE_FALSE(b.output.empty());
    size_t at = 0;  // where the next piece may start in `out`
    std::vector<std::string> piece;
    auto place = [&]() {
      if (piece.empty()) return;
      bool found = false;
      for (size_t s = at; s + piece.size() <= out.size() && !found; ++s) {
        bool all = true;
        for (size_t k = 0; k < piece.size() && all; ++k) all = LineShows(piece[k], out[s + k]);
        if (all) {
          found = true;
          at = s + piece.size();
        }
      }
      INFO("piece starting: " << piece.front());
      CHECK(found);
      piece.clear();
    };
    for (const std::string& line : b.output) {
      if (line == "...") {
        place();
      } else {
        piece.push_back(line);
      }
    }
    place();
    sections.insert(b.snapshot.substr(0, b.snapshot.find('-', 6)));
  }
  // Each of the eight questions and section 10 (a Megatron-LM launch as
  // the input) shows at least one command (section 9 is Python), and every
  // output block of the guide is one of these (none unchecked).
  CHECK(sections.size() == 9);
  size_t text_blocks = 0;
  for (const std::string& line : Lines(guide)) text_blocks += line == "```text" ? 1 : 0;
  CHECK(text_blocks == blocks.size());
}

TEST_CASE("every relative link in the docs resolves", "[cli][docs]") {
  std::vector<fs::path> files = {kRoot / "README.md"};
  for (const auto& e : fs::directory_iterator(kRoot / "docs")) {
    if (e.path().extension() == ".md") files.push_back(e.path());
  }
  REQUIRE(files.size() > 10);
  std::map<fs::path, std::set<std::string>> anchors;
  auto anchors_of = [&](const fs::path& p) -> const std::set<std::string>& {
    auto it = anchors.find(p);
    if (it == anchors.end()) it = anchors.emplace(p, Anchors(Slurp(p))).first;
    return it->second;
  };
  int links = 0, with_anchor = 0;
  for (const fs::path& file : files) {
    const std::vector<std::string> lines = Lines(Slurp(file));
    bool code = false;
    for (size_t n = 0; n < lines.size(); ++n) {
      const std::string& line = lines[n];
      if (line.rfind("```", 0) == 0) code = !code;
      if (code) continue;
      for (size_t k = line.find("]("); k != std::string::npos; k = line.find("](", k + 2)) {
        const size_t end = line.find(')', k + 2);
        if (end == std::string::npos) break;
        const std::string target = line.substr(k + 2, end - k - 2);
        if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
        INFO(file.filename().string() << ":" << n + 1 << ": " << target);
        const size_t hash = target.find('#');
        const std::string path = target.substr(0, hash);
        const fs::path resolved =
            path.empty() ? file : (file.parent_path() / path).lexically_normal();
        ++links;
        CHECK(fs::exists(resolved));
        if (hash != std::string::npos && fs::exists(resolved) && resolved.extension() == ".md") {
          ++with_anchor;
          CHECK(anchors_of(resolved).count(target.substr(hash + 1)) == 1);
        }
      }
    }
  }
  CHECK(links > 50);
  CHECK(with_anchor > 10);
}

TEST_CASE("GitHub's heading anchors", "[cli][docs]") {
  CHECK(Slug("The whole training step (`hardware.gpu`)") == "the-whole-training-step-hardwaregpu");
  CHECK(Slug("Adaptive zero-bubble schedules (`zb-1p`, `zb-2p`, `zb-v`)") ==
        "adaptive-zero-bubble-schedules-zb-1p-zb-2p-zb-v");
  CHECK(Slug("On several machines: `mpirun ppb-sim search`") ==
        "on-several-machines-mpirun-ppb-sim-search");
  CHECK(Slug("TP × CP × EP") == "tp--cp--ep");
  const std::set<std::string> twice = Anchors("# A\n\n## A\n```\n# not a heading\n```\n");
  CHECK(twice == std::set<std::string>{"a", "a-1"});
}

}  // namespace ppb
