"""The Python module against the CLI: each call on a shipped config returns
what `ppb-sim ... --format json` prints; bad input raises ppb.Error with its
file, line and key. Run by CTest (`python`) with PYTHONPATH at the built
module, PPB_SIM the built ppb-sim and PPB_ROOT the source tree."""

import json
import os
import subprocess
import threading

import pytest

import ppb

ROOT = os.environ["PPB_ROOT"]
SIM = os.environ["PPB_SIM"]
CONFIGS = os.path.join(ROOT, "configs")

# The clock's figures differ between two runs of the same search or plan.
CLOCK = {"solve_time_s", "time_s", "first_answer_s", "frameworks_search_s", "bound_time_s"}


def cli(*args):
    r = subprocess.run([SIM, *args, "--format", "json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def unclocked(x):
    if isinstance(x, dict):
        return {k: unclocked(v) for k, v in x.items() if k not in CLOCK}
    if isinstance(x, list):
        return [unclocked(v) for v in x]
    return x


def config(name):
    return os.path.join(CONFIGS, name)


def test_simulate_equals_the_cli_on_shipped_configs():
    for name in ["example.yaml", "llama3-8b.yaml", "interleaved.yaml", "megatron-145b-a100.yaml"]:
        assert ppb.simulate(config(name)) == cli("--config", config(name)), name


def test_model_and_compare_equal_the_cli():
    assert ppb.model(config("llama3-8b.yaml")) == cli("model", "--config", config("llama3-8b.yaml"))
    got = ppb.compare(config("example.yaml"), schedules=["gpipe", "1f1b"])
    assert got == cli("compare", "--config", config("example.yaml"), "--schedules", "gpipe,1f1b")
    assert [r["schedule"] for r in got["rows"]][:2] == ["gpipe", "1f1b"]


def test_search_equals_the_cli():
    args = dict(node_limit=300, time_limit=0, threads=1)
    got = ppb.search(config("tight-memory.yaml"), **args)
    want = cli("search", "--config", config("tight-memory.yaml"), "--node-limit", "300",
               "--time-limit", "0", "--threads", "1")
    assert unclocked(got) == unclocked(want)
    assert got["best"]["iteration_time_ms"] > 0


def test_plan_equals_the_cli():
    name = config("plan-llama3-8b.yaml")
    got = ppb.plan(name, node_limit=300, time_limit=0, threads=1)
    want = cli("plan", "--config", name, "--node-limit", "300", "--time-limit", "0",
               "--threads", "1", "--quiet")
    assert unclocked(got) == unclocked(want)
    assert got["top"]


def test_a_yaml_string_and_a_dict_are_the_file():
    path = config("llama3-8b.yaml")
    with open(path) as f:
        text = f.read()
    want = cli("--config", path)
    # The text, read as if in configs/ (its hf_config is relative).
    got = ppb.simulate(text, base_dir=CONFIGS)
    assert got["config"] == os.path.join(CONFIGS, "<config>")
    got["config"] = want["config"]
    assert got == want
    # The same config as a dict.
    as_dict = {
        "model": {"name": "llama3-8b", "hf_config": "hf/llama3-8b.json"},
        "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128,
                     "dtype": "bf16", "tensor_parallel": 2, "sequence_parallel": True,
                     "data_parallel": 8, "distributed_optimizer": True},
        "hardware": {"gpu": "h100-sxm"},
        "pipeline": {"stages": 4, "schedule": "1f1b"},
        "strategy": {"recompute": {"selective": True}},
    }
    got = ppb.simulate(as_dict, base_dir=CONFIGS)
    got["config"] = want["config"]
    assert got == want
    # Flags override the config as on the command line.
    p2 = ppb.simulate(as_dict, base_dir=CONFIGS, stages=2)
    assert p2["iteration_time_ms"] != want["iteration_time_ms"]


def test_a_bad_key_raises_with_its_line():
    text = ("model:\n  name: x\n  hf_config: hf/llama3-8b.json\n"
            "training:\n  seq_length: 4096\n  micro_batch_siz: 1\n")
    with pytest.raises(ppb.Error) as e:
        ppb.simulate(text, base_dir=CONFIGS)
    assert e.value.line == 6
    assert e.value.key == "training.micro_batch_siz"
    assert e.value.message.startswith("unknown key; expected one of seq_length")
    assert e.value.file == os.path.join(CONFIGS, "<config>")
    assert e.value.status == 2
    # A dict: one key per line, so the line still points at the key.
    with pytest.raises(ppb.Error) as e:
        ppb.simulate({"model": {"name": "x", "hf_config": "hf/llama3-8b.json"},
                      "training": {"seq_length": 4096, "micro_batch_siz": 1}},
                     base_dir=CONFIGS)
    assert e.value.key == "training.micro_batch_siz"
    assert e.value.line > 1


def test_bad_flags_and_missing_files_raise():
    with pytest.raises(ppb.Error) as e:
        ppb.search(config("example.yaml"), threads="x")
    assert e.value.key == "--threads"
    assert e.value.message == "expected a positive integer; got 'x'"
    missing = os.path.join(CONFIGS, "no-such.yaml")
    with pytest.raises(ppb.Error) as e:
        ppb.simulate(missing + "\n")  # a string with a newline is YAML text
    with pytest.raises(ppb.Error) as e:
        import pathlib
        ppb.simulate(pathlib.Path(missing))
    assert e.value.message == "must be a readable config file; got No such file or directory"
    with pytest.raises(TypeError):
        ppb.simulate(42)


def test_calls_from_threads_agree():
    # The GIL is released while a command runs: two threads at once, each
    # with its own text at the same name, give what each gives alone.
    with open(config("example.yaml")) as f:
        texts = [f.read()]
    texts.append(texts[0].replace("microbatches: 16", "microbatches: 8"))
    assert texts[1] != texts[0]
    want = [ppb.simulate(t, base_dir=CONFIGS) for t in texts]
    assert want[0]["iteration_time_ms"] != want[1]["iteration_time_ms"]
    got = [None, None]

    def work(i):
        for _ in range(5):
            got[i] = ppb.simulate(texts[i], base_dir=CONFIGS)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


def test_plan_of_a_yaml_string():
    # The plan reads its config again (its own plan block): from the text.
    name = config("plan-llama3-8b.yaml")
    with open(name) as f:
        text = f.read()
    got = ppb.plan(text, base_dir=CONFIGS, node_limit=100, time_limit=0, threads=2)
    want = cli("plan", "--config", name, "--node-limit", "100", "--time-limit", "0",
               "--threads", "2", "--quiet")
    assert unclocked(got)["top"] == unclocked(want)["top"]
