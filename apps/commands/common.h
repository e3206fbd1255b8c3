// Helpers shared by the ppb-sim commands (apps/commands/*.cpp): the usage
// text and exit statuses, flag values (integers, lists, durations), the
// options every command takes, loading the config with its overrides,
// --emit, and writing output files. Every bad flag is reported on `err` as
// "ppb-sim: --flag: expected ...; got '...'" (exit 2); a file that cannot be
// written as "ppb-sim: cannot write FILE: <system's reason>" (exit 1).
#pragma once

#include <boost/program_options.hpp>
#include <charconv>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/uncertainty.h"
#include "apps/output/emit.h"
#include "apps/output/report.h"
#include "core/result.h"

namespace ppb::commands {

namespace po = boost::program_options;


inline constexpr int kExitOk = 0;
inline constexpr int kExitIo = 1;
inline constexpr int kExitBadInput = 2;

// The usage of all commands, printed with a command-line error: each
// command's lines, then each summary.
const std::string& Usage();
// The head of `ppb-sim NAME --help`: the command's usage lines and summary,
// then the names the config accepts, read from the registries (every
// pipeline.schedule, every hardware.gpu preset), so the help never lists
// fewer than the loader takes.
std::string CommandHelp(std::string_view name);


// An integer option value in [min, max] (max: the type's largest), or an
// error naming the flag and `expected`.
template <class T>
Result<T> IntFlag(const std::string& flag, const std::string& text, T min,
                  std::string_view expected, T max = std::numeric_limits<T>::max()) {
  T value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return Error{flag,
                 "expected " + std::string(expected) + "; got '" + text + "'"};
  }
  return value;
}

Result<int> PositiveInt(const std::string& flag, const std::string& text);

// --uncertainty SPREAD, --uncertainty-samples N (default 32, 2 to 4096)
// and --uncertainty-seed S (default 1): apps/input/uncertainty.h. The
// request's spread is 0 when --uncertainty is absent; nullopt (the error
// written) on a bad value or a sample/seed flag without --uncertainty.
void AddUncertaintyOptions(po::options_description& opts);
std::optional<UncertaintyRequest> UncertaintyFlags(const po::variables_map& vm,
                                                   std::ostream& err);

// A comma-separated list of positive integers ("1,2,4").
Result<std::vector<int>> PositiveIntList(const std::string& flag,
                                         const std::string& text);

// A --target value (any, megatron, mindformers, torchtitan, deepspeed);
// nullopt after reporting a bad one on `err`.
std::optional<DeployTarget> TargetFlag(const std::string& text, std::ostream& err);

// A comma-separated list of names ("1f1b,interleaved"); names are checked
// by the config loader.
Result<std::vector<std::string>> NameList(const std::string& flag,
                                          const std::string& text);

// "30s", "500ms" or plain seconds ("30", "1.5"); 0 means no limit.
Result<Nanos> TimeLimitFlag(const std::string& flag, const std::string& text);

// Writes `text` to `path`, checked after the file is closed (so a full
// device is seen); false after "ppb-sim: cannot write PATH: <reason>".
bool WriteFile(const std::string& path, const std::string& text,
               std::ostream& err);

// strerror(errno) after a failed write, or "the write failed" when the
// system gave no reason.
std::string SystemReason();

// Options every command takes: the config and the pipeline overrides.
void AddRunOptions(po::options_description& opts);

// --svg and --report, taken by simulate and search.
void AddPictureOptions(po::options_description& opts);

// Writes the --svg and --report files of `vm` for the simulation `sim`
// (`report_html` is the page, built by the caller); false (reported) when
// one cannot be written.
bool WritePictures(const po::variables_map& vm, const SimulatedRun& sim,
                   const std::string& note, const std::string& report_html,
                   std::ostream& err);

// Parses `args` into `vm`. Returns an exit status when the command is done
// (help printed, or bad input reported), nullopt to go on.
std::optional<int> ParseArgs(std::string_view command, const std::vector<std::string>& args,
                             const po::options_description& opts,
                             po::variables_map& vm, std::ostream& out,
                             std::ostream& err, bool csv = false);

// ---- --emit (apps/emit.h) --------------------------------------------------

// What --emit asked for, and what was emitted.
struct EmitRequest {
  std::vector<Framework> frameworks;  // empty: no --emit
  std::string file;                   // --emit-file; empty: with the report
  std::vector<Emission> emissions;
};

void AddEmitOptions(po::options_description& opts);

// The --emit flags; nullopt after reporting a bad one.
std::optional<EmitRequest> ReadEmitFlags(const po::variables_map& vm,
                                         std::ostream& err);

// Emits `config` for every framework asked; false after reporting a refusal.
bool RunEmit(EmitRequest& req, const RunConfig& config, const Program& program,
             std::ostream& err);

// `config` prepared and emitted for framework `f` alone; nullopt after
// reporting a refusal (or a config that does not prepare) on `err`.
std::optional<Emission> EmitOne(Framework f, const RunConfig& config, std::ostream& err);

// The JSON report with an "emit" object when the output goes with it.
std::string EmitJson(const std::string& json, const EmitRequest& req);

// The text that follows a text report ("" when there is none to print).
std::string EmitText(const EmitRequest& req);

// The pipeline overrides of AddRunOptions (and --schedule-csv when given).
std::optional<CliOverrides> RunOverrides(const po::variables_map& vm,
                                         std::ostream& err);

// The config with `ov` applied; prints the error and returns nullopt when it
// does not load.
std::optional<RunConfig> Load(const po::variables_map& vm,
                              const CliOverrides& ov, std::ostream& err);

// Reports a bad flag value; returns false when `r` is an error.
template <class T>
bool Check(const Result<T>& r, std::ostream& err) {
  if (r.ok()) return true;
  err << "ppb-sim: " << r.error().key << ": " << r.error().message << "\n";
  return false;
}

}  // namespace ppb::commands
