// _ppb: the C++ side of the Python module `ppb` (python/ppb/__init__.py).
// One function, run(args, path, text): runs a ppb-sim command in this
// process (RunCli, apps/cli.h) with its standard output and errors captured,
// and returns (exit status, stdout, stderr). With `text`, the config at
// `path` is that text (ScopedConfigText, apps/input/config.h): a dict or a
// YAML string is never written to disk, and its relative paths resolve
// against the folder of `path`. The GIL is released while the command runs,
// so other Python threads go on (a search or plan may take its whole time
// limit).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "apps/cli.h"
#include "apps/input/config.h"

namespace py = pybind11;

namespace {

std::tuple<int, std::string, std::string> Run(const std::vector<std::string>& args,
                                              const std::string& path,
                                              const std::optional<std::string>& text) {
  std::ostringstream out, err;
  int status = 0;
  {
    py::gil_scoped_release release;
    std::optional<ppb::ScopedConfigText> given;
    if (text) given.emplace(path, *text);
    std::vector<const char*> argv{"ppb-sim"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    status = ppb::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  }
  return {status, out.str(), err.str()};
}

}  // namespace

PYBIND11_MODULE(_ppb, m) {
  m.doc() = "ppb's engine: ppb-sim commands run in this process (use the ppb package)";
  m.def("run", &Run, py::arg("args"), py::arg("path"), py::arg("text") = py::none(),
        "Runs `ppb-sim ARGS...` here; returns (exit status, stdout, stderr). With `text`, "
        "the config file `path` reads as that text.");
}
