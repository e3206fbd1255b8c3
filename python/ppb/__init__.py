"""ppb from Python: the ppb-sim commands in this process, as plain dicts.

Each call takes a config as a dict (the YAML's structure), a YAML string, or
a path (str or os.PathLike), runs the command as `ppb-sim COMMAND --config
... --format json` would, and returns the JSON report as a dict with the
same keys (docs/python.md). Keyword options are the command's flags:
``time_limit=30`` is ``--time-limit 30``, ``schedules=["1f1b", "zb-v"]`` is
``--schedules 1f1b,zb-v``, ``quiet=True`` is ``--quiet``; None or False
leaves a flag out. Bad input raises ppb.Error with the file, line, key and
message ppb-sim prints. The command runs with the GIL released.

A dict or a YAML string is never written to disk: it is read as a file
named ``<config>`` in ``base_dir`` (default: the current folder), against
which its relative paths (``model.hf_config``, ``pipeline.schedule_csv``)
resolve.
"""

import json
import os
import re

from . import _ppb

__all__ = ["Error", "simulate", "search", "plan", "model", "compare", "rank", "run"]


class Error(Exception):
    """Bad input (exit 2) or an output that could not be written (exit 1).

    file, line: where in the config, when ppb-sim names a place (line 0:
    none); key: the config key or flag ('' when none); message: what was
    expected and what was given; status: ppb-sim's exit status; text: all
    it printed on standard error.
    """

    def __init__(self, status, text):
        self.status = status
        self.text = text
        first = text.strip().split("\n")[0] if text.strip() else "ppb-sim failed"
        self.file, self.line, self.key, self.message = "", 0, "", first
        m = re.match(r"^(.*?):(\d+): ([A-Za-z_][\w.\[\]-]*): (.*)$", first)
        if m:
            self.file, self.line = m.group(1), int(m.group(2))
            self.key, self.message = m.group(3), m.group(4)
        else:
            m = re.match(r"^ppb-sim(?: \w+)?: (--[\w-]+): (.*)$", first)
            if m:
                self.key, self.message = m.group(1), m.group(2)
            else:
                m = re.match(r"^(.*?): (.*)$", first)
                if m:
                    self.file, self.message = m.group(1), m.group(2)
        super().__init__(first)


def _config_source(config, base_dir):
    """(path, text): the path ppb-sim reads, and the text it gets there
    (None: the file itself)."""
    if isinstance(config, os.PathLike):
        return os.fspath(config), None
    if isinstance(config, dict):
        text = json.dumps(config, indent=1)  # JSON is YAML; one key per line
    elif isinstance(config, str):
        if "\n" not in config and os.path.isfile(config):
            return config, None
        text = config
    else:
        raise TypeError("config: expected a dict, a YAML string or a path; got "
                        + type(config).__name__)
    return os.path.join(os.path.abspath(base_dir or os.getcwd()), "<config>"), text


def _flags(options):
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def run(command, config, base_dir=None, **options):
    """Runs `ppb-sim COMMAND --config CONFIG --format json [flags]` and
    returns its report as a dict."""
    path, text = _config_source(config, base_dir)
    args = [command, "--config", path, "--format", "json"] + _flags(options)
    status, out, err = _ppb.run(args, path, text)
    if status != 0:
        raise Error(status, err)
    return json.loads(out)


def simulate(config, **options):
    """One training iteration: the report of `ppb-sim --format json`."""
    return run("simulate", config, **options)


def search(config, time_limit=None, threads=None, node_limit=None, **options):
    """The best split and recompute: `ppb-sim search --format json`."""
    return run("search", config, time_limit=time_limit, threads=threads,
               node_limit=node_limit, **options)


def plan(config, time_limit=None, threads=None, node_limit=None, **options):
    """The best layout on the job's GPUs: `ppb-sim plan --format json`
    (progress is not printed)."""
    options.setdefault("quiet", True)
    return run("plan", config, time_limit=time_limit, threads=threads,
               node_limit=node_limit, **options)


def model(config, **options):
    """Per-layer costs with their sources: `ppb-sim model --format json`."""
    return run("model", config, **options)


def compare(config, **options):
    """One row per schedule and --vary point: `ppb-sim compare --format json`."""
    return run("compare", config, **options)


def rank(config, candidates, **options):
    """The strategies of a candidates file, ranked: `ppb-sim rank --format json`."""
    return run("rank", config, candidates=os.fspath(candidates), **options)
