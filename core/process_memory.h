// Process memory: what a training process holds on a GPU besides the
// tensors ppb counts. The engine's peak is what tensors allocate; a real
// process also holds the caching allocator's reserved-but-unallocated
// blocks (fragmentation), NCCL's buffers for every peer of every
// communicator it uses, the CUDA context, and the cuBLAS / Transformer
// Engine workspaces. A layout that fills the GPU with tensors runs out of
// memory on the cluster.
//
// Contract: ProcessBytes(a) = ceil(a / (1 - fragmentation)) + fixed, with
// fixed = context + workspace + NCCL's buffers per peer; AllocatableBytes is
// its inverse (the most tensor bytes whose process fits a capacity,
// rounded down), so AllocatableBytes(ProcessBytes(a)) >= a. Verdict: a
// rank fits when its process leaves the headroom free, is "at risk" when
// its process fits the GPU but eats into the headroom, and is out of
// memory past the GPU's capacity. Pure functions of values; no I/O.
//
// Every coefficient is a `hardware.*` key (docs/model.md "Memory a
// process really uses"), shown by `ppb-sim model` with its source, and
// fitted by `ppb-sim calibrate --runs` from measured peaks.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace ppb {

struct JobGroups;  // core/rank_layout.h
struct Training;   // core/architecture.h

// search.memory_headroom / plan.memory_headroom: memory every device keeps
// free beyond what its process holds, as bytes or as a share of the GPU's
// memory. An answer that needs it is "at risk". Default: 5 % of the GPU's
// memory with the step model, none without it (docs/model.md "Memory a
// process really uses" says why 5 %).
struct MemoryHeadroom {
  bool given = false;
  Bytes bytes = -1;    // >= 0: these bytes
  double share = 0.05; // else this share of the GPU's memory
};

struct ProcessMemory {
  // The caching allocator's reserved-but-unallocated share of reserved
  // memory at the peak. GMLake (Guo et al., ASPLOS 2024, A100-80GB, eight
  // LLMs trained with recompute, ZeRO, offload): stitching removes 15 %
  // fragmentation on average (up to 33 %) of PyTorch's caching allocator.
  double fragmentation = 0.15;
  // Device memory NCCL holds per connected peer of a communicator (all
  // channels, every protocol's FIFO). NVIDIA/nccl issue #1685: a first
  // all-to-all among 8 H100s raised NCCL's memory from 1.06 GB to 4.34 GB
  // per GPU, 3.28 GB over 7 peers (32 channels per pair, 10 MiB + 2 MiB
  // buffers each): 448 MiB per peer. A ring collective connects 2 peers
  // (sjeaugey, NVIDIA/nccl #864/#986: "Ring uses a limited amount of
  // memory as it only has 2 connections regardless of the scale").
  Bytes nccl_per_peer = 448LL << 20;
  // An all-to-all's peers in other NVLink domains run on the network
  // transport with NCCL_NCHANNELS_PER_NET_PEER = 2 channels each (NCCL's
  // environment documentation, default 2) of the same 12 MiB: 24 MiB.
  Bytes nccl_per_net_peer = 24LL << 20;
  // The CUDA context and the loaded kernels (CUDA 12 lazy loading): a
  // guess to calibrate.
  Bytes context = 512LL << 20;
  // cuBLAS(Lt) and Transformer Engine workspaces: 32 MiB each on Hopper
  // and later (torch's CUBLAS_WORKSPACE_CONFIG default for sm90, TE's
  // get_workspace()), on about four streams.
  Bytes workspace = 128LL << 20;
};

// The peers one rank's NCCL connects to for a communicator of n ranks:
// ring collectives 2 (1 when n = 2, none when n = 1); all-to-all n - 1.
int RingPeers(int n);
int AllToAllPeers(int n);

// The peers one rank connects to over all the communicators a job of these
// groups uses: TP, CP (its ring of K/V blocks), the data-parallel shard
// and replicate groups, the pipeline's neighbours, and with experts the
// dispatcher's group (all-to-all, or the allgather's etp x ep ring), the
// expert TP and the expert data-parallel groups.
struct NcclPeers {
  int peers = 0;      // at nccl_per_peer
  int net_peers = 0;  // an all-to-all's peers in other domains
};
NcclPeers CountNcclPeers(const Training& t, const JobGroups& g);

// context + workspace + nccl_per_peer x peers + nccl_per_net_peer x
// net_peers.
Bytes FixedProcessBytes(const ProcessMemory& m, const NcclPeers& peers);
// ceil(allocated / (1 - fragmentation)) + fixed.
Bytes ProcessBytes(const ProcessMemory& m, Bytes allocated, Bytes fixed);
// floor((capacity - fixed) x (1 - fragmentation)); 0 when fixed >= capacity.
Bytes AllocatableBytes(const ProcessMemory& m, Bytes capacity, Bytes fixed);

enum class MemoryVerdict { Fits, AtRisk, OutOfMemory };
const char* MemoryVerdictName(MemoryVerdict v);  // "fits", "at risk", "OOM"

// `allocated` against the allocatable bytes with the headroom kept free
// (`keep_free_line`) and without it (`oom_line`).
MemoryVerdict Verdict(Bytes allocated, Bytes keep_free_line, Bytes oom_line);

}  // namespace ppb
