// ReadLaunchScript (apps/input/launch_script.h): the grammar of the bash
// subset over the tokens of apps/input/bash_lexer.h, run once: what a
// taken branch holds is run (assignments, tests, the launch), the rest only
// parsed. Variables and expansions are apps/input/bash_shell.h's.
#include "apps/input/launch_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/input/bash_lexer.h"
#include "apps/input/bash_shell.h"
#include "apps/input/bash_test.h"
#include "apps/input/slurm_job.h"
#include "apps/input/sourced_file.h"
#include "apps/input/text_lines.h"

namespace ppb {
namespace {

using namespace bash_detail;  // NOLINT: the subset's tokens and shell

class Interpreter {
 public:
  Interpreter(std::string_view path, std::vector<Token> toks)
      : t_(std::move(toks)), shell_(std::string(path)), path_(path) {
    // ${BASH_SOURCE[0]}: the file being read (the script, or what it
    // sources).
    shell_.Define("BASH_SOURCE", path_, 0);
  }

  // An arguments file: words and newlines only.
  LaunchCommand Arguments() {
    LaunchCommand c;
    for (const Token& t : t_) {
      if (t.kind == Tok::Newline || t.kind == Tok::End) continue;
      if (t.kind != Tok::Word) {
        Refuse(t.line, fmt::format("'{}': must be a --flag or its value in an arguments file",
                                   t.text));
      }
      for (char ch : t.text) {
        if (ch == '$' || ch == '`') {
          Refuse(t.line, fmt::format("'{}': must not expand anything in an arguments file",
                                     Abbreviate(t.text)));
        }
      }
      shell_.Expand(RawWord{t.text, t.line}, false, c.args);
    }
    if (!c.args.empty()) c.line = c.args.front().line;
    return c;
  }

  LaunchCommand Run(std::string_view text) {
    // A script sbatch runs: its #SBATCH lines set the job's size.
    Directives(text, {1}, {});
    List(true, {});
    if (Peek().kind != Tok::End) {
      Refuse(Peek().line, fmt::format("'{}': must not appear here", Peek().text));
    }
    if (!launch_ && other_) {
      Refuse(other_->line,
             fmt::format("the launch: must run a training script (torchrun ... pretrain_*.py "
                         "ARGS); got {} (ppb simulates Megatron-LM's pretrain_gpt.py, "
                         "pretrain_hybrid.py and pretrain_mamba.py)",
                         Abbreviate(other_->text)));
    }
    if (!launch_) {
      Refuse(t_.back().line,
             "the launch: must run a training script (torchrun ... pretrain_*.py ARGS); got "
             "no such command" +
                 std::string(exited_ ? " before the script exits at line " +
                                           std::to_string(exit_line_)
                                     : ""));
    }
    launch_->environment = shell_.Environment();
    return std::move(*launch_);
  }

 private:
  // ---- token access ------------------------------------------------------
  const Token& Peek() const { return t_[std::min(i_, t_.size() - 1)]; }
  bool IsWord(std::string_view w) const { return Peek().kind == Tok::Word && Peek().text == w; }
  bool IsOp(std::string_view o) const { return Peek().kind == Tok::Op && Peek().text == o; }
  void Expect(std::string_view w, std::string_view what) {
    if (!IsWord(w)) {
      Refuse(Peek().line, fmt::format("{}: must be followed by '{}'; got {}", what, w,
                                      Peek().kind == Tok::End ? "the end of the file"
                                                              : "'" + Peek().text + "'"));
    }
    ++i_;
  }
  void SkipNewlines() {
    while (Peek().kind == Tok::Newline) ++i_;
  }

  struct Depth {
    explicit Depth(Interpreter& in) : d_(in.shell_, in.Peek().line) {}
    Shell::Deeper d_;
  };

  // ---- grammar -----------------------------------------------------------

  // Commands until a word of `stop` in command position, ";;" or the end.
  // Returns the status of the last command run (0 when none ran).
  int List(bool active, std::initializer_list<std::string_view> stop) {
    Depth d(*this);
    int status = 0;
    while (true) {
      while (Peek().kind == Tok::Newline || IsOp(";") || IsOp("&")) ++i_;
      const Token& t = Peek();
      if (t.kind == Tok::End || IsOp(";;") || IsOp(")")) return status;
      if (t.kind == Tok::Word && std::find(stop.begin(), stop.end(), t.text) != stop.end()) {
        return status;
      }
      status = AndOr(active);
    }
  }

  int AndOr(bool active) {
    int status = Pipeline(active);
    while (IsOp("&&") || IsOp("||")) {
      const bool and_op = Peek().text == "&&";
      ++i_;
      SkipNewlines();
      const bool run = Live(active) && (and_op ? status == 0 : status != 0);
      const int next = Pipeline(run);
      if (run) status = next;
    }
    return status;
  }

  int Pipeline(bool active) {
    bool bang = false;
    if (IsWord("!")) {
      bang = true;
      ++i_;
    }
    int status = Command(active);
    while (IsOp("|")) {
      ++i_;
      SkipNewlines();
      status = Command(active);
    }
    return bang ? (status == 0 ? 1 : 0) : status;
  }

  bool Live(bool active) const { return active && !exited_; }

  int Command(bool active) {
    Depth d(*this);
    const Token& t = Peek();
    if (t.kind == Tok::Word) {
      if (t.text == "if") return If(active);
      if (t.text == "while" || t.text == "until") return While(active);
      if (t.text == "for") return For(active);
      if (t.text == "case") return Case(active);
      if (t.text == "[[") return DoubleBracket(active);
      if (t.text == "{") {
        ++i_;
        const int s = List(active, {"}"});
        Expect("}", "a group");
        return s;
      }
      if (t.text == "function" ||
          (i_ + 1 < t_.size() && t_[i_ + 1].kind == Tok::Op && t_[i_ + 1].text == "(")) {
        Refuse(t.line, "a function definition: must not be used in a launch ppb reads");
      }
    }
    if (t.kind == Tok::Op && t.text == "(") {
      if (i_ + 1 < t_.size() && t_[i_ + 1].kind == Tok::Op && t_[i_ + 1].text == "(") {
        Refuse(t.line, "((...)): must not be used in a launch ppb reads (use $((...)))");
      }
      if (Live(active)) Refuse(t.line, "a subshell ( ... ): must not be used in a launch ppb reads");
      ++i_;
      List(false, {});
      if (!IsOp(")")) Refuse(Peek().line, "a subshell: must be closed with ')'");
      ++i_;
      return 0;
    }
    if (t.kind == Tok::Array) {
      ++i_;
      if (Live(active)) shell_.AssignArray(t);
      return Simple(active, /*after_assignment=*/true);
    }
    if (t.kind != Tok::Word) {
      Refuse(t.line, fmt::format("'{}': must start a command", t.text));
    }
    return Simple(active, false);
  }

  int If(bool active) {
    const int line = Peek().line;
    ++i_;
    bool taken = false;
    int status = 0;
    const bool live = Live(active);
    int cond = List(live, {"then"});
    Expect("then", "if");
    bool run = live && cond == 0;
    int body = List(run, {"elif", "else", "fi"});
    if (run) {
      taken = true;
      status = body;
    }
    while (IsWord("elif")) {
      ++i_;
      cond = List(live && !taken, {"then"});
      Expect("then", "elif");
      run = live && !taken && cond == 0;
      body = List(run, {"elif", "else", "fi"});
      if (run) {
        taken = true;
        status = body;
      }
    }
    if (IsWord("else")) {
      ++i_;
      run = live && !taken;
      body = List(run, {"fi"});
      if (run) status = body;
    }
    if (!IsWord("fi")) {
      Refuse(line, "if: must end with 'fi'; got " +
                       (Peek().kind == Tok::End ? std::string("the end of the file")
                                                : "'" + Peek().text + "'"));
    }
    ++i_;
    return status;
  }

  int While(bool active) {
    const Token& t = Peek();
    const int line = t.line;
    const bool until = t.text == "until";
    ++i_;
    const int cond = List(Live(active), {"do"});
    Expect("do", t.text);
    if (Live(active) && ((cond == 0) != until)) {
      Refuse(line, "a loop: must not run its body in a launch ppb reads; got a condition "
                   "that holds on the first pass");
    }
    List(false, {"done"});
    Expect("done", "a loop");
    return 0;
  }

  int For(bool active) {
    const int line = Peek().line;
    if (Live(active)) Refuse(line, "a for loop: must not be used in a launch ppb reads");
    ++i_;
    while (Peek().kind != Tok::End && !IsWord("do")) ++i_;
    Expect("do", "for");
    List(false, {"done"});
    Expect("done", "a loop");
    return 0;
  }

  int Case(bool active) {
    const int line = Peek().line;
    ++i_;
    if (Peek().kind != Tok::Word) Refuse(line, "case: must name a word");
    const bool live = Live(active);
    std::string subject;
    if (live) subject = shell_.Scalar(RawWord{Peek().text, Peek().line}, "case");
    ++i_;
    SkipNewlines();
    Expect("in", "case WORD");
    bool taken = false;
    while (true) {
      SkipNewlines();
      if (IsWord("esac")) break;
      if (IsOp("(")) ++i_;
      bool match = false;
      while (true) {
        if (Peek().kind != Tok::Word) Refuse(Peek().line, "case: must list patterns before ')'");
        if (live && !taken) {
          match = match || GlobMatch(shell_.Scalar(RawWord{Peek().text, Peek().line}, "case"), subject);
        }
        ++i_;
        if (IsOp("|")) {
          ++i_;
          continue;
        }
        break;
      }
      if (!IsOp(")")) Refuse(Peek().line, "case: must close its patterns with ')'");
      ++i_;
      const bool run = live && !taken && match;
      List(run, {"esac"});
      if (run) taken = true;
      if (IsOp(";;")) ++i_;
    }
    ++i_;
    return 0;
  }

  // [[ expression ]]
  int DoubleBracket(bool active) {
    const int line = Peek().line;
    ++i_;
    std::vector<TestItem> items;
    while (!IsWord("]]")) {
      const Token& t = Peek();
      if (t.kind == Tok::End || t.kind == Tok::Newline) {
        Refuse(line, "[[: must end with ']]' on its line");
      }
      items.push_back(TestItem{t.text, t.kind == Tok::Op, line, {}});
      ++i_;
    }
    ++i_;
    if (!Live(active)) return 0;
    for (TestItem& it : items) {
      if (!it.op) it.value = shell_.Scalar(RawWord{it.text, line}, "a test");
    }
    size_t pos = 0;
    const bool r = EvalTest(items, pos, true, shell_);
    if (pos != items.size()) Refuse(line, "[[: must hold one expression; got more");
    return r ? 0 : 1;
  }

  // ---- simple commands ---------------------------------------------------

  int Simple(bool active, bool after_assignment) {
    const int line = Peek().line;
    std::optional<Token> here;  // the command's here-document
    std::vector<RawWord> words;
    std::vector<RawWord> assigns;
    std::vector<Token> arrays;
    while (true) {
      const Token& t = Peek();
      if (t.kind == Tok::Word) {
        if (words.empty() && (t.text == "then" || t.text == "do" || t.text == "fi" ||
                              t.text == "done" || t.text == "esac" || t.text == "elif" ||
                              t.text == "else" || t.text == "}")) {
          if (words.empty() && assigns.empty() && !after_assignment) {
            Refuse(t.line, fmt::format("'{}': must not appear here", t.text));
          }
          break;
        }
        size_t eq = 0;
        if (words.empty() && Shell::IsAssignment(t.text, eq)) {
          assigns.push_back(RawWord{t.text, t.line});
        } else {
          words.push_back(RawWord{t.text, t.line});
        }
        ++i_;
      } else if (t.kind == Tok::Array) {
        if (!words.empty()) Refuse(t.line, "an array: must be assigned before a command");
        arrays.push_back(t);
        ++i_;
      } else if (t.kind == Tok::Op && (t.text == "<" || t.text == ">" || t.text == ">>" ||
                                       t.text == ">&" || t.text == "<&" || t.text == "&>" ||
                                       t.text == "&>>" || t.text == "<<<")) {
        ++i_;
        if (Peek().kind != Tok::Word) Refuse(t.line, "a redirection: must name its target");
        ++i_;
      } else if (t.kind == Tok::HereDoc) {
        here = t;
        ++i_;
      } else {
        break;
      }
    }
    if (!Live(active)) return 0;
    if (words.empty()) {
      for (const RawWord& a : assigns) shell_.Assign(a);
      for (const Token& a : arrays) shell_.AssignArray(a);
      return 0;
    }
    return Run(words, line, here);
  }

  int Run(const std::vector<RawWord>& words, int line, const std::optional<Token>& here) {
    const std::string& name = words.front().text;
    if (name == "export" || name == "local" || name == "readonly" || name == "declare" ||
        name == "typeset") {
      for (size_t k = 1; k < words.size(); ++k) {
        size_t eq = 0;
        if (Shell::IsAssignment(words[k].text, eq)) shell_.Assign(words[k]);
      }
      return 0;
    }
    if (name == "unset") {
      for (size_t k = 1; k < words.size(); ++k) {
        if (!words[k].text.empty() && words[k].text[0] == '-') continue;
        shell_.Unset(words[k].text);
      }
      return 0;
    }
    if (name == "exec" && words.size() > 1) {
      // exec CMD: the shell becomes CMD, which is read as any command.
      return Run(std::vector<RawWord>(words.begin() + 1, words.end()), line, here);
    }
    if ((name == "source" || name == ".") && words.size() > 1) {
      std::vector<LaunchWord> file;
      for (size_t k = 1; k < words.size(); ++k) shell_.Expand(words[k], true, file);
      if (file.size() != 1) {
        Refuse(line, fmt::format("{}: must be given one file (ppb passes a sourced file no "
                                 "arguments); got {} words",
                                 name, file.size()));
      }
      if (file[0].unknown) {
        Refuse(line, fmt::format("{}: must name a file the script sets; got the output of a "
                                 "command ppb does not run",
                                 name));
      }
      Source(name, file[0].text, line);
      return 0;
    }
    if (!sourced_.empty() && name == "return") {
      Refuse(line, "return: must not end a sourced file early in a launch ppb reads");
    }
    if (name == "source" || name == "." || name == "eval" || name == "exec" ||
        name == "read" || name == "mapfile" || name == "readarray" || name == "shopt" ||
        name == "alias" || name == "let") {
      Refuse(line, fmt::format("{}: must not be run in a launch ppb reads (ppb runs nothing)",
                               name));
    }
    if (name == "exit") {
      exited_ = true;
      exit_line_ = sourced_.empty() ? line : source_line_;  // the script's own line
      return 0;
    }
    if (name == "true" || name == ":") return 0;
    if (name == "false") return 1;
    std::vector<LaunchWord> fields;
    for (const RawWord& w : words) shell_.Expand(w, true, fields);
    if (name == "[" || name == "test") {
      if (name == "[") {
        if (fields.empty() || fields.back().text != "]") Refuse(line, "[: must end with ']'");
        fields.pop_back();
      }
      std::vector<TestItem> items;
      for (size_t k = 1; k < fields.size(); ++k) {
        if (fields[k].unknown) {
          Refuse(line, "a test: must compare values the script sets; got the output of a "
                       "command ppb does not run");
        }
        items.push_back(TestItem{fields[k].text, false, line, fields[k].text});
      }
      if (items.empty()) return 1;
      size_t pos = 0;
      const bool r = EvalTest(items, pos, false, shell_);
      if (pos != items.size()) Refuse(line, fmt::format("{}: must hold one expression", name));
      return r ? 0 : 1;
    }
    const std::string command = fields.empty() ? std::string() : Base(fields[0].text);
    if (here && (command == "sbatch" || command == "bash" || command == "sh")) {
      // A script fed on standard input: sbatch's job script, or a shell's.
      std::vector<int> lines;
      std::string body;
      if (here->quoted) {
        body = here->text;
        const auto n = static_cast<int>(std::count(body.begin(), body.end(), '\n'));
        for (int k = 0; k <= n; ++k) lines.push_back(here->body_line + k);
      } else {
        body = shell_.HereDocument(here->text, here->body_line, lines);
      }
      std::vector<LaunchWord> options;
      if (command == "sbatch") options.assign(fields.begin() + 1, fields.end());
      Nested(body, lines, {}, command == "sbatch", options);
      return 0;
    }
    // bash -c STRING (under srun, say): STRING is the script run, on each
    // rank the words before `bash` start.
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string b = Base(fields[k].text);
      if (b != "bash" && b != "sh") continue;
      for (size_t j = k + 1; j < fields.size(); ++j) {
        const std::string& o = fields[j].text;
        if (o.size() < 2 || o[0] != '-' || o[1] == '-') break;
        if (o.find('c') == std::string::npos) continue;
        if (j + 1 >= fields.size()) Refuse(line, fmt::format("{} -c: must be given a string", b));
        const LaunchWord& cmd = fields[j + 1];
        if (cmd.unknown) {
          Refuse(cmd.line, fmt::format("{} -c: must run a string the script sets; got the "
                                       "output of a command ppb does not run",
                                       b));
        }
        const auto n = static_cast<int>(std::count(cmd.text.begin(), cmd.text.end(), '\n'));
        std::vector<LaunchWord> prefix(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(k));
        Nested(cmd.text, std::vector<int>(static_cast<size_t>(n) + 1, cmd.line), prefix, false, {});
        return 0;
      }
      break;
    }
    // A launcher running another Python script (Megatron-LM's multimodal
    // examples/mimo/train.py), named if no launch is found.
    static const std::set<std::string> kLaunchers = {"torchrun", "python", "python3", "srun",
                                                     "deepspeed", "accelerate"};
    if (!other_ && sourced_.empty() && kLaunchers.count(command) != 0) {
      for (const LaunchWord& w : fields) {
        if (w.text.size() > 3 && w.text.compare(w.text.size() - 3, 3, ".py") == 0) {
          other_ = LaunchWord{command + " ... " + w.text, line, false};
          break;
        }
      }
    }
    // The launch: the first word naming a pretrain_*.py script.
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string& w = fields[k].text;
      if (!GlobMatch("pretrain_*.py", Base(w))) continue;
      if (!sourced_.empty()) {
        Refuse(line, "the launch: must be in the script ppb reads, not in a file it sources");
      }
      if (launch_) {
        Refuse(line, fmt::format("the launch: must be one command; got a second at line {} "
                                 "(the first at line {})",
                                 line, launch_->line));
      }
      LaunchCommand c;
      c.line = line;
      c.launcher = prefix_;
      c.launcher.insert(c.launcher.end(), fields.begin(),
                        fields.begin() + static_cast<std::ptrdiff_t>(k));
      c.scheduler = scheduler_;
      c.script = w;
      c.args.assign(fields.begin() + static_cast<std::ptrdiff_t>(k) + 1, fields.end());
      launch_ = std::move(c);
      break;
    }
    return 0;
  }

  // ---- nested scripts ----------------------------------------------------

  // `source FILE` at `line`: FILE's commands run in this shell (its
  // assignments and exports stay); a refusal inside it is placed at the
  // source command and names FILE's line. The words an array keeps are
  // placed at the source command, the script's line they came in by.
  void Source(const std::string& name, const std::string& file, int line) {
    constexpr size_t kMaxSources = 8;
    if (sourced_.size() >= kMaxSources) {
      Refuse(line, fmt::format("{}: must be nested at most {} deep; got a file sourced at "
                               "depth {} (does a file source itself?)",
                               name, kMaxSources, sourced_.size() + 1));
    }
    Result<SourcedFile> f = ReadSourcedFile(path_, file);
    if (!f.ok()) Refuse(line, name + ": " + f.error().message);
    Depth d(*this);
    std::vector<Token> toks;
    const size_t saved_i = i_;
    if (sourced_.empty()) source_line_ = line;
    sourced_.push_back(f->path);
    shell_.Define("BASH_SOURCE", f->path, line);
    try {
      toks = Tokenize(f->text);
      for (Token& t : toks) {
        for (RawWord& e : t.elements) e.line = line;
      }
      std::swap(t_, toks);
      i_ = 0;
      List(true, {});
      if (Peek().kind != Tok::End) {
        Refuse(Peek().line, fmt::format("'{}': must not appear here", Peek().text));
      }
    } catch (const Refusal& r) {
      // Placed once: at the innermost file's line, then at the script's.
      if (source_where_.empty()) source_where_ = f->path + ":" + std::to_string(r.line);
      sourced_.pop_back();
      if (!sourced_.empty()) throw;
      throw Refusal{line, fmt::format("{} {}: {}: {}", name, file, source_where_, r.message)};
    }
    std::swap(t_, toks);
    i_ = saved_i;
    sourced_.pop_back();
    shell_.Define("BASH_SOURCE", sourced_.empty() ? path_ : sourced_.back(), line);
  }

  static std::string Base(const std::string& w) {
    const size_t slash = w.find_last_of('/');
    return slash == std::string::npos ? w : w.substr(slash + 1);
  }

  // `text` run as a script in this shell: its line n is line lines[n-1] of
  // the file. `prefix` starts each of its commands (srun's words before
  // bash -c); a job script (sbatch) reads its #SBATCH lines and `options`.
  void Nested(const std::string& text, const std::vector<int>& lines,
              const std::vector<LaunchWord>& prefix, bool job,
              const std::vector<LaunchWord>& options) {
    Depth d(*this);
    auto map = [&](int n) {
      if (n < 1) return lines.front();
      return lines[std::min(static_cast<size_t>(n), lines.size()) - 1];
    };
    std::vector<Token> toks;
    try {
      toks = Tokenize(text);
    } catch (Refusal& r) {
      r.line = map(r.line);
      throw;
    }
    for (Token& t : toks) {
      t.line = map(t.line);
      if (t.kind == Tok::HereDoc) t.body_line = map(t.body_line);
      for (RawWord& e : t.elements) e.line = map(e.line);
    }
    const std::vector<LaunchWord> saved_scheduler = scheduler_;
    if (job) Directives(text, lines, options);
    std::swap(t_, toks);
    const size_t saved_i = i_;
    i_ = 0;
    const std::vector<LaunchWord> saved_prefix = prefix_;
    prefix_.insert(prefix_.end(), prefix.begin(), prefix.end());
    const bool saved_exit = exited_;
    List(true, {});
    if (Peek().kind != Tok::End) {
      Refuse(Peek().line, fmt::format("'{}': must not appear here", Peek().text));
    }
    exited_ = saved_exit;
    prefix_ = saved_prefix;
    i_ = saved_i;
    std::swap(t_, toks);
    scheduler_ = saved_scheduler;
  }

  // The #SBATCH lines that open a job script (sbatch reads them up to the
  // first command), then the options on sbatch's own line, which override
  // them; with the job's size, the variables SLURM sets in the job.
  void Directives(std::string_view text, const std::vector<int>& lines,
                  const std::vector<LaunchWord>& options) {
    std::vector<LaunchWord> found;
    ForEachLine(text, [&](std::string_view l, int n) {
      const size_t first = l.find_first_not_of(" \t\r");
      if (first == std::string_view::npos) return true;
      l.remove_prefix(first);
      if (l[0] != '#') return false;
      if (l.compare(0, 7, "#SBATCH") != 0) return true;
      l.remove_prefix(7);
      const int at = lines[std::min(static_cast<size_t>(n), lines.size()) - 1];
      size_t k = 0;
      while (k < l.size()) {
        while (k < l.size() && (l[k] == ' ' || l[k] == '\t' || l[k] == '\r')) ++k;
        if (k >= l.size() || l[k] == '#') break;
        const size_t end = std::min(l.find_first_of(" \t\r", k), l.size());
        found.push_back(LaunchWord{"#SBATCH " + std::string(l.substr(k, end - k)), at, false});
        k = end;
      }
      return true;
    });
    for (const LaunchWord& o : options) found.push_back(o);
    if (found.empty()) return;
    scheduler_ = found;
    const JobSize size = ReadJobSize(JobOptions(found, "sbatch"));
    auto define = [&](const char* name, std::optional<std::int64_t> v) {
      if (v) shell_.Define(name, std::to_string(*v), found.front().line);
    };
    define("SLURM_NNODES", size.nodes);
    define("SLURM_JOB_NUM_NODES", size.nodes);
    define("SLURM_NTASKS_PER_NODE", size.tasks_per_node);
    define("SLURM_NTASKS", size.tasks);
    define("SLURM_GPUS_ON_NODE", size.gpus_per_node);
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  Shell shell_;
  std::optional<LaunchCommand> launch_;
  std::optional<LaunchWord> other_;    // the first launcher of another script
  std::vector<LaunchWord> prefix_;     // the words that start a nested script's commands
  std::vector<LaunchWord> scheduler_;  // the job's #SBATCH lines and sbatch options
  bool exited_ = false;
  int exit_line_ = 0;
  std::string path_;  // the script's, which a relative sourced path is from
  std::string source_where_;  // "FILE:LINE" of a refusal in a sourced file
  std::vector<std::string> sourced_;  // the files being sourced, innermost last
  int source_line_ = 0;  // the script's line of the outermost source being run
};

}  // namespace

bool IsArgumentsFile(std::string_view text) {
  bool flags = false;
  ForEachLine(text, [&](std::string_view l, int) {
    const size_t first = l.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || l[first] == '#') return true;
    flags = l.compare(first, 2, "--") == 0;
    return false;
  });
  return flags;
}

Result<LaunchCommand> ReadArgumentsFile(std::string_view path, std::string_view text) {
  try {
    Interpreter in(path, Tokenize(text));
    return in.Arguments();
  } catch (const Refusal& r) {
    return Error{"", fmt::format("{}:{}: {}", path, r.line, r.message)};
  }
}

Result<LaunchCommand> ReadLaunchScript(std::string_view path, std::string_view text) {
  try {
    Interpreter in(path, Tokenize(text));
    return in.Run(text);
  } catch (const Refusal& r) {
    return Error{"", fmt::format("{}:{}: {}", path, r.line, r.message)};
  }
}

}  // namespace ppb
