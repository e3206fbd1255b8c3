// --from torchtitan on current main (issue 47): config functions of a
// config_registry.py read as data (apps/input/python_config.h: the
// returned Trainer.Config flattened with its lines, helpers' arguments
// bound as Python binds them, refusals at their line), and main's own
// llama3 functions simulated as the same runs written by hand.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/python_config.h"
#include "apps/input/text_lines.h"
#include "apps/input/torchtitan_models.h"
#include "tests/launch_helpers.h"

namespace ppb {

using test::H100;

// torchtitan main's config functions read as data (apps/input/python_config.h).
TEST_CASE("python config: a function's returned object, flattened with lines") {
  const std::string text =
      "from torchtitan.trainer import Trainer\n"                                   // 1
      "from torchtitan.distributed.activation_checkpoint import FullAC\n"          // 2
      "SEQ = 4 * 1024\n"                                                           // 3
      "\n"                                                                         // 4
      "def base() -> Trainer.Config:\n"                                            // 5
      "    \"\"\"A docstring\n"                                                    // 6
      "    over two lines.\"\"\"\n"                                                // 7
      "    spec = model_registry(\"8B\", converters=[\n"                           // 8
      "        Float8LinearConverter.Config(emulate=x and y),\n"                   // 9
      "    ])\n"                                                                   // 10
      "    return Trainer.Config(\n"                                               // 11
      "        model_spec=spec,\n"                                                 // 12
      "        training=TrainingConfig(max_context_length=SEQ, steps=10 ** 3),\n"  // 13
      "        dataloader=Loader.Config(filter=lambda s: s is not None),\n"        // 14
      "        activation_checkpoint=None,\n"                                      // 15
      "        lr=-3e-4 + 0,\n"                                                    // 16
      "        name='a' 'b',\n"                                                    // 17
      "    )\n"                                                                    // 18
      "\n"                                                                         // 19
      "def derived() -> Trainer.Config:\n"                                         // 20
      "    config = base()\n"                                                      // 21
      "    assert config.model_spec is not None\n"                                 // 22
      "    config.parallelism.pipeline_parallel_degree = 2 * (3 - 1)\n"            // 23
      "    config.activation_checkpoint = FullAC.Config()\n"                       // 24
      "    n = len(config.model_spec.model.layers)\n"                              // 25
      "    config.training.steps = n\n"                                            // 26
      "    return config\n";                                                       // 27
  Result<PythonConfig> b = EvaluateConfigFunction("r.py", text, "base");
  if (!b.ok()) FAIL(b.error().message);
  const auto& v = b->values.values;
  CHECK(b->type == "Trainer.Config");
  CHECK(v.at("model_spec").s == "model_registry");
  CHECK(v.at("model_spec.flavor").s == "8B");
  CHECK(v.at("model_spec.flavor").line == 8);
  CHECK(v.at("model_spec.converters").items.at(0).s == "Float8LinearConverter.Config");
  CHECK(b->unknown.at("model_spec.converters.0.emulate").line == 9);
  CHECK(v.at("training.max_context_length").i == 4096);
  CHECK(v.at("training.steps").i == 1000);
  CHECK(v.at("training.steps").line == 13);
  CHECK(b->unknown.at("dataloader.filter").expression == "a lambda");
  CHECK(v.at("activation_checkpoint").s == "None");
  CHECK(v.at("lr").f == -3e-4);
  CHECK(v.at("name").s == "ab");
  Result<PythonConfig> d = EvaluateConfigFunction("r.py", text, "derived");
  if (!d.ok()) FAIL(d.error().message);
  const auto& w = d->values.values;
  CHECK(w.at("parallelism.pipeline_parallel_degree").i == 4);
  CHECK(w.at("parallelism.pipeline_parallel_degree").line == 23);
  CHECK(w.at("activation_checkpoint").s == "FullAC.Config");
  CHECK(d->unknown.at("training.steps").expression == "len(...)");
  CHECK(w.at("model_spec.flavor").s == "8B");
  CHECK(d->return_line == 27);
  Result<std::vector<std::string>> fns = ConfigFunctions("r.py", text);
  REQUIRE(fns.ok());
  CHECK(*fns == std::vector<std::string>{"base", "derived"});
}

TEST_CASE("python config: what is not straight-line data is refused at its line") {
  auto error = [](const std::string& text, const std::string& fn = "f") {
    Result<PythonConfig> r = EvaluateConfigFunction("r.py", text, fn);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(error("def f():\n    x = 1\n    if x:\n        x = 2\n    return x\n") ==
        "r.py:3: expected a straight-line statement (an assignment or return: ppb reads "
        "config functions as data, not as programs); got 'if'");
  CHECK(error("def f():\n    return g()\ndef g():\n    return f()\n") ==
        "r.py:4: f: expected at most 32 nested calls of the file's functions; got more "
        "(recursion?)");
  CHECK(error("def f():\n    return X.Config(**kw)\n") ==
        "r.py:2: expected named or positional arguments (ppb does not expand * or **); "
        "got '**'");
  CHECK(error("def f():\n    return 1\n") ==
        "r.py:2: f: must return a Trainer.Config(...) ppb can read; got another value");
  CHECK(error("def f():\n    return 1\n", "g") ==
        "r.py: g: must be a function of the file that takes no arguments (f); got none by "
        "that name");
  CHECK(error("def f():\n    x = 'open\n") ==
        "r.py:2: expected the string to be closed on its line; got the end of the line");
  CHECK(error("def f():\n    c = X.Config()\n    c.a.b = 1\n    c.a.b.d = 2\n") ==
        "r.py:4: expected c.a.b to be an object ppb built; got a plain value");
}

TEST_CASE("python config: a call statement is not run, and said so") {
  // torchtitan main's deepseek_v3 registry: enable_fused_swiglu(config)
  // appends kernel overrides in a for loop.
  const std::string helper =
      "def enable_fused_swiglu(config) -> None:\n"
      "    for o in (\"a\", \"b\"):\n"
      "        config.override.imports.append(o)\n";
  const std::string text = helper +
                           "def f():\n"                                       // 4
                           "    c = Trainer.Config(steps=3)\n"               // 5
                           "    enable_fused_swiglu(\n"                       // 6
                           "        c)\n"                                     // 7
                           "    c.steps = 4\n"                                // 8
                           "    return c\n";                                  // 9
  Result<PythonConfig> r = EvaluateConfigFunction("r.py", text, "f");
  if (!r.ok()) FAIL(r.error().message);
  CHECK(r->values.values.at("steps").i == 4);
  REQUIRE(r->not_run.size() == 1);
  CHECK(r->not_run[0].line == 6);
  CHECK(r->not_run[0].expression == "enable_fused_swiglu(...)");
  // The torchtitan reader says so among its notes.
  std::string registry = test::ReadAll(test::TorchtitanData("main/llama3/config_registry.py"));
  registry += "\n\n" + helper +
              "def ppb_run() -> Trainer.Config:\n    config = llama3_8b()\n"
              "    enable_fused_swiglu(config)\n    return config\n";
  Result<commands::LaunchConfig> run = commands::ReadLaunchConfig(
      "torchtitan", test::TorchtitanData("main/llama3/config_registry.py") + ":ppb_run",
      registry, H100(64));
  if (!run.ok()) FAIL(run.error().message);
  const auto note = std::find_if(run->notes.begin(), run->notes.end(), [](const std::string& n) {
    return n.find("enable_fused_swiglu(...) is not run (ppb reads config functions as data, "
                  "not as programs): what it changes is not read") != std::string::npos;
  });
  CHECK(note != run->notes.end());
}

TEST_CASE("python config: a helper's arguments bind as Python binds them") {
  const std::string helper =
      "def _h(flavor: str, backend: str = \"varlen\", n: int = 2 * 3):\n"
      "    return Trainer.Config(model_spec=model_registry(flavor, attn_backend=backend), "
      "steps=n)\n";
  auto run = [&](const std::string& call) {
    Result<PythonConfig> r =
        EvaluateConfigFunction("r.py", helper + "def f():\n    return " + call + "\n", "f");
    if (!r.ok()) FAIL(r.error().message);
    return *r;
  };
  // Positional, then by keyword, then the defaults (evaluated at the call).
  PythonConfig c = run("_h(\"8B\")");
  CHECK(c.values.values.at("model_spec.flavor").s == "8B");
  CHECK(c.values.values.at("model_spec.attn_backend").s == "varlen");
  CHECK(c.values.values.at("steps").i == 6);
  c = run("_h(\"70B\", n=4, backend=\"flex\")");
  CHECK(c.values.values.at("model_spec.flavor").s == "70B");
  CHECK(c.values.values.at("model_spec.attn_backend").s == "flex");
  CHECK(c.values.values.at("steps").i == 4);
  auto error = [&](const std::string& call) {
    Result<PythonConfig> r =
        EvaluateConfigFunction("r.py", helper + "def f():\n    return " + call + "\n", "f");
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(error("_h()") == "r.py:4: _h: expected the argument flavor; got none");
  CHECK(error("_h(\"8B\", colour=1)") ==
        "r.py:4: _h: expected arguments it takes; got the argument colour");
  CHECK(error("_h(\"8B\", flavor=\"70B\")") ==
        "r.py:4: _h: expected each argument once; got the argument flavor");
  CHECK(error("_h(1, 2, 3, 4)") == "r.py:4: _h: expected at most 3 positional arguments; got 4");
}

TEST_CASE("torchtitan main's llama3 config functions simulate as the same runs") {
  const std::string registry = test::TorchtitanData("main/llama3/config_registry.py");
  auto from = [&](const std::string& fn, int gpus) {
    return test::LaunchJson("torchtitan", registry + ":" + fn, H100(gpus));
  };
  SECTION("llama3_8b() is v0.2.2's llama3_8b.toml: the same run") {
    CHECK(from("llama3_8b", 64) == test::TorchtitanConfigJson("llama3_8b_64.yaml"));
  }
  SECTION("llama3_70b() is v0.2.2's llama3_70b.toml: 8 x 8,192 tokens, TP 8, full AC") {
    CHECK(from("llama3_70b", 128) ==
          test::LaunchJson("torchtitan", test::TorchtitanData("llama3_70b.toml"), H100(128)));
  }
  SECTION("llama3_405b(): Float8 rowwise (main's default) as blockwise, async TP") {
    Result<commands::LaunchConfig> r = commands::ReadLaunchConfig(
        "torchtitan", registry + ":llama3_405b", test::ReadAll(registry), H100(512));
    if (!r.ok()) FAIL(r.error().message);
    for (const char* line :
         {"  micro_batch_size: 2\n", "  global_batch_size: 128\n", "  tensor_parallel: 8\n",
          "  tp_comm_overlap: true\n", "  data_parallel: 64\n", "  fp8: {recipe: blockwise}\n",
          "    hidden_size: 16384\n", "    ffn_hidden_size: 53248\n"}) {
      CHECK(r->yaml.find(line) != std::string::npos);
    }
  }
  SECTION("qwen3's registry: qwen3_14b()'s shape, as main's qwen3_configs gives it") {
    const std::string qwen = test::TorchtitanData("main/qwen3/config_registry.py");
    Result<commands::LaunchConfig> r =
        commands::ReadLaunchConfig("torchtitan", qwen + ":qwen3_14b", test::ReadAll(qwen), H100(8));
    if (!r.ok()) FAIL(r.error().message);
    for (const char* line :
         {"    hidden_size: 5120\n", "    num_layers: 40\n", "    num_attention_heads: 40\n",
          "    num_key_value_heads: 8\n", "    head_dim: 128\n", "    ffn_hidden_size: 17408\n",
          "    vocab_size: 151936\n", "    tie_embeddings: false\n", "    qk_norm: true\n"}) {
      CHECK(r->yaml.find(line) != std::string::npos);
    }
  }
  SECTION("refusals: a function named alone, Blackwell's NVFP4 on an H100, LoRA") {
    Result<commands::LaunchConfig> alone =
        commands::ReadLaunchConfig("torchtitan", registry, test::ReadAll(registry), H100(8));
    REQUIRE_FALSE(alone.ok());
    CHECK(alone.error().message.find(": the config function: must be named as FILE:FUNCTION "
                                     "(a Python registry holds many: llama3_debugmodel, ") !=
          std::string::npos);
    Result<commands::LaunchConfig> lora = commands::ReadLaunchConfig(
        "torchtitan", registry + ":llama3_debugmodel_float8_emulate_lora", test::ReadAll(registry),
        H100(8));
    REQUIRE_FALSE(lora.ok());
    CHECK(lora.error().message.find(": model_spec.converters.1: must be one of torchtitan main "
                                    "at b5bcd76c's precision converters (Float8LinearConverter, "
                                    "MXFP8LinearConverter, NVFP4LinearConverter); got "
                                    "LoRAConverter.Config") != std::string::npos);
  }
}

TEST_CASE("torchtitan main: the token counts and Trainer.Config's checks") {
  const std::string head =
      "def f():\n"
      "    return Trainer.Config(\n"
      "        model_spec=model_registry(\"8B\"),\n";
  auto read = [&](const std::string& rest, int gpus) {
    return commands::ReadLaunchConfig("torchtitan", "models/llama3/r.py:f", head + rest + "    )\n",
                                      H100(gpus));
  };
  // 4 micro-batches of 2 x 4,096 tokens a pipeline step, a step of
  // 2 rounds on 2 data-parallel ranks: global 2 x 4 x 2 x 2 = 32 sequences.
  Result<commands::LaunchConfig> pp = read(
      "        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=2 * 4096,\n"
      "            max_context_length=4096, num_tokens_per_train_step=32 * 4096,\n"
      "            disable_cuda_graphs=True),\n"
      "        parallelism=ParallelismConfig(pipeline_parallel_degree=2, num_pp_microbatches=4,\n"
      "            pipeline_parallel_schedule=\"GPipe\"),\n"
      "        activation_checkpoint=None,\n",
      4);
  if (!pp.ok()) FAIL(pp.error().message);
  CHECK(pp->yaml.find("  micro_batch_size: 2\n  global_batch_size: 32\n") != std::string::npos);
  CHECK(pp->yaml.find("  data_parallel: 2\n") != std::string::npos);
  CHECK(pp->yaml.find("  layers_per_chunk: [17, 17]\n") != std::string::npos);
  CHECK(pp->yaml.find("recompute") == std::string::npos);
  REQUIRE(!pp->notes.empty());
  CHECK(pp->notes[1] ==
        "2 gradient-accumulation steps each run the pipeline on 4 micro-batches; ppb simulates "
        "one pipeline of 8 micro-batches, with one fill and drain");
  // None is the field's default (pipeline_llm's 2 stages a rank); a value
  // ppb does not evaluate is refused where it is read, never dropped.
  Result<commands::LaunchConfig> none = read(
      "        training=TrainingConfig(disable_cuda_graphs=True),\n"
      "        parallelism=ParallelismConfig(pipeline_parallel_degree=2,\n"
      "            pipeline_parallel_layers_per_stage=None,\n"
      "            pipeline_parallel_schedule=\"Interleaved1F1B\", num_pp_microbatches=2),\n",
      4);
  if (!none.ok()) FAIL(none.error().message);
  CHECK(none->yaml.find("  layers_per_chunk: [9, 9, 8, 8]\n") != std::string::npos);
  Result<commands::LaunchConfig> computed = read(
      "        training=TrainingConfig(disable_cuda_graphs=True),\n"
      "        parallelism=ParallelismConfig(pipeline_parallel_degree=2,\n"
      "            pipeline_parallel_layers_per_stage=len(x),\n"
      "            pipeline_parallel_schedule=\"Interleaved1F1B\"),\n",
      4);
  REQUIRE_FALSE(computed.ok());
  CHECK(computed.error().message ==
        "models/llama3/r.py:6: parallelism.pipeline_parallel_layers_per_stage: must be a value "
        "ppb reads without running Python (a literal, a name bound to one, arithmetic); got "
        "len(...)");
  Result<commands::LaunchConfig> graphs =
      read("        parallelism=ParallelismConfig(pipeline_parallel_degree=2),\n", 4);
  REQUIRE_FALSE(graphs.ok());
  CHECK(graphs.error().message ==
        "models/llama3/r.py:4: parallelism.pipeline_parallel_degree 2: CUDA graphs do not "
        "support pipeline parallelism yet. Set --training.disable_cuda_graphs (torchtitan's "
        "Trainer.Config); got training.disable_cuda_graphs False");
  Result<commands::LaunchConfig> tokens =
      read("        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=3000),\n", 4);
  REQUIRE_FALSE(tokens.ok());
  CHECK(tokens.error().message ==
        "models/llama3/r.py:4: training.num_tokens_per_microbatch_per_dp_rank: must be a "
        "multiple of training.max_context_length (2048): ppb simulates whole sequences, the "
        "packed dataloader's; got 3000");
  // torchtitan main's vision-language and diffusion models are named as
  // such before their config is read.
  Result<commands::LaunchConfig> vlm = commands::ReadLaunchConfig(
      "torchtitan", "models/qwen3_5/config_registry.py:qwen35_27b", head + "    )\n", H100(8));
  REQUIRE_FALSE(vlm.ok());
  CHECK(vlm.error().message ==
        "models/qwen3_5/config_registry.py: the model: must be a decoder-only language model "
        "(ppb simulates those, not encoders beside them); got torchtitan's qwen3_5, a "
        "vision-language model (Qwen3.5: a vision encoder and patch merger beside its hybrid "
        "decoder, trained on image-text data)");
  Result<commands::LaunchConfig> typo =
      read("        parallelism=ParallelismConfig(tensor_parallel=2),\n", 4);
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().message.rfind("models/llama3/r.py:4: parallelism.tensor_parallel: must be a "
                                   "field of torchtitan main at b5bcd76c's [parallelism]",
                                   0) == 0);
}

}  // namespace ppb
