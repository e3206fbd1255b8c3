// Memory a process really uses (core/process_memory.h, issue 45): the
// closed forms by hand, the NCCL peers of a placed job, the capacity the
// loader leaves for tensors, the search's headroom, and the simulate
// verdict (fits / at risk / OOM) on one layout.
#include <catch2/catch.hpp>
#include <string>

#include "apps/input/config.h"
#include "apps/input/search_problem.h"
#include "apps/output/memory_report.h"
#include "apps/output/search_output.h"
#include "core/engine.h"
#include "core/process_memory.h"
#include "core/rank_layout.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

constexpr Bytes kMiB = 1LL << 20;
constexpr Bytes kGiB = 1LL << 30;

TEST_CASE("process memory: the closed forms by hand", "[memory]") {
  ProcessMemory m;  // 15 %, 448 MiB per peer, 512 MiB context, 128 MiB workspace
  const NcclPeers peers{6, 0};
  const Bytes fixed = FixedProcessBytes(m, peers);
  CHECK(fixed == 512 * kMiB + 128 * kMiB + 6 * 448 * kMiB);  // 3,328 MiB
  // 51 GiB of tensors: 51 / 0.85 = 60 GiB reserved, + 3.25 GiB.
  CHECK(ProcessBytes(m, 51 * kGiB, fixed) == 60 * kGiB + fixed);
  // An 80 GiB GPU leaves (80 GiB - 3.25 GiB) x 0.85 = 65.2375 GiB for tensors.
  const Bytes a = AllocatableBytes(m, 80 * kGiB, fixed);
  CHECK(a == static_cast<Bytes>(static_cast<double>(80 * kGiB - fixed) * 0.85));
  CHECK(ProcessBytes(m, a, fixed) <= 80 * kGiB);
  CHECK(ProcessBytes(m, a + 1024, fixed) > 80 * kGiB - 1024);
  CHECK(AllocatableBytes(m, fixed, fixed) == 0);
  // Network peers at 24 MiB.
  CHECK(FixedProcessBytes(m, NcclPeers{0, 10}) == 640 * kMiB + 240 * kMiB);
  // Verdicts: at the lines.
  CHECK(Verdict(10, 10, 20) == MemoryVerdict::Fits);
  CHECK(Verdict(11, 10, 20) == MemoryVerdict::AtRisk);
  CHECK(Verdict(20, 10, 20) == MemoryVerdict::AtRisk);
  CHECK(Verdict(21, 10, 20) == MemoryVerdict::OutOfMemory);
}

TEST_CASE("process memory: NCCL peers of a placed job", "[memory]") {
  Gpu gpu = *FindGpu("h100-sxm");
  Training t;
  t.seq = 4096;
  t.tp = 8;
  t.pp = 4;
  t.dp = 4;
  // TP ring 2 + DP ring 2 + pipeline neighbours 2.
  NcclPeers n = CountNcclPeers(t, PlaceJob(t, gpu));
  CHECK(n.peers == 6);
  CHECK(n.net_peers == 0);
  t.tp = 2;
  t.pp = 2;
  t.dp = 2;
  n = CountNcclPeers(t, PlaceJob(t, gpu));
  CHECK(n.peers == 3);  // a ring of 2 has one peer each
  // EP 32 all-to-all over 4 nodes of 8 (tp 1, dp 32): 7 peers in the node,
  // 24 over the network; the expert data-parallel group is 1.
  t.tp = 1;
  t.pp = 1;
  t.dp = 32;
  t.ep = 32;
  t.moe.expert_tp = 1;
  n = CountNcclPeers(t, PlaceJob(t, gpu));
  CHECK(n.peers == 2 + 7);
  CHECK(n.net_peers == 24);
}

const char* kJob = R"(model:
  name: tiny
  architecture:
    hidden_size: 2048
    num_layers: 8
    num_attention_heads: 16
    ffn_hidden_size: 8192
    vocab_size: 32000
training:
  seq_length: 4096
  micro_batch_size: 1
  global_batch_size: 64
  tensor_parallel: 2
  data_parallel: 4
pipeline:
  stages: 2
  schedule: 1f1b
hardware:
  gpu: h100-sxm
)";

TEST_CASE("process memory: the loader's capacity and the search's headroom", "[memory]") {
  Result<RunConfig> c = test::Parse(kJob);
  REQUIRE(c.ok());
  const Hardware& h = c->hardware;
  // TP 2 (1 peer), DP 4 (2), PP 2 (1).
  CHECK(h.nccl_peers.peers == 4);
  const ProcessMemory& pm = h.gpu.process_memory;
  const Bytes fixed = FixedProcessBytes(pm, h.nccl_peers);
  const Bytes cap = AllocatableBytes(pm, h.gpu.memory, fixed);
  for (const Device& d : c->cluster.devices) CHECK(d.memory_capacity == cap);
  // The search keeps 5 % of 80 GiB free: 4 GiB, of which 85 % is tensors.
  CHECK(HeadroomBytes(*c, c->search.memory_headroom) == 4 * kGiB);
  const Bytes keep = HeadroomTensorBytes(*c, c->search.memory_headroom);
  CHECK(keep == static_cast<Bytes>(4.0 * kGiB * 0.85));
  Result<SearchProblem> p = BuildSearchProblem(*c);
  REQUIRE(p.ok());
  for (const Device& d : p->cluster.devices) CHECK(d.memory_capacity == cap - keep);
  CHECK(p->headroom == keep);
  // A candidate over the search's capacity by less than the headroom fits
  // the GPU: the search's tables call it at risk, not OOM.
  Candidate x;
  x.devices.resize(2);
  for (DeviceStats& s : x.devices) s.capacity = cap - keep;
  x.devices[1].peak_memory = cap - keep / 2;
  x.devices[1].oom = true;
  CHECK(Fits(x, p->headroom) == "at risk on rank 1 (inside the memory headroom)");
  x.devices[1].peak_memory = cap + 1;
  CHECK(Fits(x, p->headroom) == "OOM on rank 1");
  CHECK(Fits(x) == "OOM on rank 1");
  // Given as a size, and the coefficients as keys.
  Result<RunConfig> g = test::Parse(std::string(kJob) +
                                    "  memory_fragmentation: 0.1\n"
                                    "  memory_context: 1GiB\n"
                                    "search:\n  memory_headroom: 6GiB\n");
  REQUIRE(g.ok());
  CHECK(g->hardware.gpu.process_memory.fragmentation == 0.1);
  CHECK(HeadroomBytes(*g, g->search.memory_headroom) == 6 * kGiB);
  CHECK(HeadroomTensorBytes(*g, g->search.memory_headroom) ==
        static_cast<Bytes>(6.0 * kGiB * 0.9));
}

TEST_CASE("process memory: simulate calls a rank inside the headroom at risk", "[memory]") {
  Result<RunConfig> c = test::Parse(kJob);
  REQUIRE(c.ok());
  Result<PreparedRun> run = Prepare(*c);
  REQUIRE(run.ok());
  Engine engine;
  SimResult r = engine.Run(run->spec, run->program);
  const Bytes cap = r.devices[0].capacity;
  const Bytes keep = HeadroomTensorBytes(*c, c->search.memory_headroom);
  // The real peaks fit with room to spare.
  MemoryReport m = ReportMemory(*c, r);
  CHECK(m.verdict == MemoryVerdict::Fits);
  // A peak inside the headroom: at risk; past the capacity: OOM.
  r.devices[1].peak_memory = cap - keep / 2;
  m = ReportMemory(*c, r);
  CHECK(m.verdict == MemoryVerdict::AtRisk);
  CHECK(m.tightest == 1);
  CHECK(RanksWith(m, MemoryVerdict::AtRisk) == "rank 1");
  const RankMemory& x = m.ranks[1];
  CHECK(x.process == ProcessBytes(c->hardware.gpu.process_memory, x.tensors, m.fixed));
  CHECK(x.free == x.gpu - x.process);
  CHECK(x.free > 0);
  CHECK(x.free < m.headroom);
  r.devices[0].peak_memory = cap + 1;
  m = ReportMemory(*c, r);
  CHECK(m.verdict == MemoryVerdict::OutOfMemory);
}

TEST_CASE("process memory: bad values are refused at their key", "[memory]") {
  CHECK(test::ParseError(std::string(kJob) + "  memory_fragmentation: 1.5\n") ==
        "run.yaml:20: hardware.memory_fragmentation: must be a share of reserved memory "
        "in [0, 0.9]; got 1.5");
  CHECK(test::ParseError(std::string(kJob) + "search:\n  memory_headroom: 60%\n") ==
        "run.yaml:21: search.memory_headroom: must be a size (e.g. 4GiB) or a share of "
        "the GPU's memory in [0%, 50%] (e.g. 5%); got 60%");
  CHECK(test::ParseError(std::string(kJob) + "  memory_context: 90GiB\n") ==
        "run.yaml:20: hardware.memory_context: must be less than the device's memory "
        "(85899345920 B); got 90GiB");
  CHECK(test::ParseError(std::string(kJob) + "  memory_workspace: 79GiB\n") ==
        "run.yaml:18: hardware.memory_context: with the workspace and NCCL's buffers (4 "
        "peers) must leave room for tensors in the device's 85899345920 B; they take "
        "87241523200 B");  // 512 MiB + 79 GiB + 4 x 448 MiB
}

}  // namespace
}  // namespace ppb
