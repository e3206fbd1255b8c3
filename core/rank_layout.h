// Where a job's ranks sit, and so which link each parallel group runs on.
// Megatron-LM numbers ranks in the order tp-cp-ep-dp-pp by default
// (megatron/core/parallel_state.py, initialize_model_parallel `order`,
// core 0.20): tensor-parallel ranks vary fastest, then context, data and
// pipeline. Experts use the expert rank generator (etp-ep-edp-pp, with the
// expert tensor-parallel size = t here). NVLink domains hold nvlink_domain
// consecutive ranks: a node of 8 on HGX/DGX, a rack of 72 on NVL72.
//
// A group instance of `size` ranks `stride` apart stays on NVLink when all
// its members sit in one domain. A domain that the group's blocks do not
// divide (72 against powers of two) leaves some instances straddling two
// domains: every instance is looked at (by its start modulo the domain),
// and the slowest sets the group's pace. A crossing ring runs NCCL's
// channels through every member's NIC in a domain at once, so it moves
// min(NVLink, k x NIC) with k the fewest members of a domain (SimAI
// astra-sim/system/calbusbw.cc; nccl-tests doc/PERFORMANCE.md), at the
// inter-node latency. Megatron-Bridge's performance guide advises TP x DP
// choices that divide 72 for this reason.
#pragma once

#include <string>
#include <vector>

#include "core/architecture.h"
#include "core/collective.h"
#include "core/gpu.h"
#include "core/model.h"

namespace ppb {

struct GroupPlacement {
  int size = 1;
  int stride = 1;
  int per_node = 1;           // members in one domain (the fewest, crossing)
  bool crosses_nodes = false; // some instance leaves its NVLink domain
  bool domain_is_node = true; // the NVLink domain is one node (HGX/DGX)
  GroupLink link;             // the ring collectives' link
  // All-to-all is not a ring: across nodes each rank's share for the other
  // nodes, (n - k)/n of its data, leaves through its own NIC. This link
  // prices (n - 1)/n S / B as that: B = NIC x (n - 1)/(n - k). Inside a
  // node it is `link`.
  GroupLink a2a_link;
};
// `world`: the job's ranks (t x cp x dp x p); 0 looks at one block.
GroupPlacement PlaceGroup(int size, int stride, const Gpu& gpu,
                          long long world = 0);

// Every group of a job (sizes from `t`, links from `gpu`).
struct JobGroups {
  GroupPlacement tp;         // stride 1
  GroupPlacement cp;         // stride t
  GroupPlacement ep;         // stride etp (expert generator; etp = t by default)
  GroupPlacement etp;        // expert tensor parallel, stride 1
  GroupPlacement etp_ep;     // the allgather dispatcher's etp x ep, stride 1
  GroupPlacement dp_cp;      // dense gradients: dp x cp ranks, stride t
  GroupPlacement expert_dp;  // expert gradients: dp x cp / ep, stride t x ep
  GroupPlacement tp_dp_cp;   // one pipeline stage's ranks (amax reduction)
  // Sharded data parallelism (core/sharding.h): the groups a shard of the
  // state spans, dense (data_parallel_shard x cp, stride t) and expert
  // (the expert-data-parallel group over the replicas), and the HSDP
  // replicate groups above them (size 1 without HSDP).
  GroupPlacement dp_shard, dp_replicate, expert_shard, expert_replicate;
  int pp_stride = 1;         // t x cp x dp
};
JobGroups PlaceJob(const Training& t, const Gpu& gpu);

// The p pipeline links (links[r] joins ranks r and r + 1 mod p): NVLink
// where both ranks' GPUs share an NVLink domain (of pipeline rank 0's data-parallel
// replica 0), else one NIC.
std::vector<Link> PipelineLinks(const Training& t, const Gpu& gpu);

// "tp 4 on NVLink (1 node)", "dp x cp 16 across nodes (2 per node)".
std::string GroupText(const std::string& name, const GroupPlacement& g);

}  // namespace ppb
