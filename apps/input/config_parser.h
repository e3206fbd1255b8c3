// The run config's parser, one member per section read, defined in the
// file of its section (listed below); each reads its keys with the shared
// ConfigReader (apps/input/config_reader.h), so every error it returns is
// already "file:line: key: must be ...; got ...". Internal to apps/input.
#pragma once

#include <functional>

#include "apps/input/candidates.h"
#include "apps/input/config.h"
#include "apps/input/config_reader.h"
#include "apps/input/hf_config.h"
#include "apps/input/sapp.h"

namespace ppb::config_detail {

// Per-global-stage integers read from a [chunk][rank] list, a flat list by
// global stage, or one scalar for every stage; with the key path of each.
struct StageInts {
  std::vector<int> values;
  std::vector<std::string> paths;
};

// Parses one config. Holds the RunConfig under construction so that errors
// can be placed with the key lines recorded so far.
class Parser : public ConfigReader {
 public:
  Parser(std::string_view filename, const CliOverrides& cli);
  // Candidates mode: the model, cluster and pipeline of `base`; errors are
  // placed in `filename`.
  Parser(std::string_view filename, const CliOverrides& cli,
         const RunConfig& base);

  Result<RunConfig> Parse(std::string_view text);
  // The config of an already loaded YAML document (its marks give lines).
  Result<RunConfig> ParseNode(const YAML::Node& root);
  Result<std::vector<RankCandidate>> Candidates(std::string_view text);

 private:
  // config.cpp: the document and its sections in order
  Status ParseRoot(const YAML::Node& root);

  // config_pipeline.cpp: pipeline.* and the schedule
  std::string StagesNote() const;
  Result<int> PipelineInt(const Entries& entries, std::string_view name,
                          std::optional<int> from_cli,
                          std::optional<int> default_value);
  Status ParsePipeline(const Entry* section);
  Status ParseScheduleChoice(const Entries& e);
  // Refuses p ranks x v chunks x m micro-batches when one simulation would
  // run more ops than the limit (--max-ops), before a program is generated;
  // the error goes to `key`, showing `given`.
  Status CheckOps(const std::string& key, int p, int v, int m,
                  const std::string& given) const;
  Status ParseActivationLimit(const Entry& entry);
  static std::vector<std::string> ScheduleNames(bool with_custom);
  static std::string NormalizeSchedule(const std::string& given,
                                       bool with_custom);

  // config_model.cpp: model.* (layers, derived layers, SAPP layers)
  Status ParseModel(const YAML::Node& node, const Entry* training,
                    const Entry* hardware);
  Status ParseDerivedModel(const Entry& source, const Entry* training,
                           const Entry* hardware);
  Status ParseSappModel(const Entries& e);
  Status ParseLayer(const Entry& item,
                    std::map<std::string, std::string>& defined_by);
  Status ParseBackward(const Entries& e, const std::string& path,
                       Layer& layer);
  Status ParseLayerRecompute(const Entry& rc, const Entry* activation,
                             Layer& layer);

  // config_training.cpp: model.architecture, training.*;
  // config_hardware.cpp: hardware.*
  Result<std::int64_t> ArchInt(const Entries& e, std::string_view key,
                               const std::string& parent, std::int64_t min,
                               std::optional<std::int64_t> fallback);
  Result<bool> ArchBool(const Entries& e, std::string_view key,
                        bool fallback);
  Result<Architecture> ParseArchitecture(const Entry& section);
  Status ParseLayerTypes(const Entries& e, const std::string& path,
                         Architecture& a);
  // config_hybrid.cpp: hybrid_layer_pattern and mamba.
  Result<Entries> ShapeEntries(const Entry* x, std::initializer_list<std::string_view> keys);
  // `layers` describes the model's layers for the error when `deltanet`
  // is given and no layer is a DeltaNet.
  Status ParseDeltaNet(const Entry* deltanet, bool used, const std::string& layers,
                       const std::string& path, Architecture& a);
  Status ParseHybridPattern(const Entries& e, const std::string& path,
                            Architecture& a);
  Result<Entries> TrainingEntries(const Entry& section);
  Result<Training> ParseTraining(const Entry& section);
  Status ParseLowPrecision(const Entries& e, Training& t);
  // config_sharding.cpp: data-parallel sharding and offload.
  Status ParseSharding(const Entries& e, Training& t);
  Status ParseOffload(const Entry& x, Training& t);
  // config_moe.cpp: training.moe and its measured loads; the rules that
  // need the model.
  Status ParseMoe(const Entry& x, Training& t);
  // training.moe's keys, and its dispatcher's name (set in `dispatcher`
  // when given and not null), as ParseMoe and plan.moe read them.
  Result<Entries> MoeEntries(const Entry& x, Dispatcher* dispatcher);
  Status ParseExpertLoads(const Entry& x, ExpertLoads& out);
  Status CheckMoe(const Architecture& a, const Training& t);
  Result<double> Fraction(const YAML::Node& node, const std::string& path, double lo,
                          double hi, const std::string& what);
  // config_hardware.cpp
  Result<Hardware> ParseHardware(const Entry& section);
  // The micro-batches training.global_batch_size gives (before the
  // pipeline section is read).
  Status PeekGlobalBatch(const Entry* training);
  // With hardware.gpu: the job's checks (TP against the heads and the
  // node), FlashAttention, the pipeline links of its rank layout and the
  // step's tail (PipelineShape::tail).
  Status ApplyStepModel(const Architecture& a, Training& t, const Hardware& h);

  // config_cluster.cpp: cluster.* (per-rank devices and links, or a topology)
  Status ParseCluster(const YAML::Node& node);
  Status ApplyStageConstant();
  Status ApplyMemoryReserve();
  template <class Refuse>
  Status TakeOffCapacity(Bytes amount, Refuse refuse);
  Status ParseTopology(const Entries& e);
  Status ParseDeviceTypes(const Entry& types, Topology& t);
  Status ParseNodes(const Entry& nodes, Topology& t);
  Result<Placement> ParsePlacement(const Entries& e);
  template <class Apply>
  Status RankOverrides(const Entry& list,
                       std::initializer_list<std::string_view> allowed,
                       Apply apply);
  Result<int> Rank(const Entries& fields, const std::string& path,
                   std::map<int, std::string>& seen);
  Status ParseDevice(const YAML::Node& node, const std::string& path,
                     Device& d);
  Status ParseDeviceFields(const Entries& fields, const std::string& path,
                           bool memory_required, Device& d);
  // A link map; `latency` where the map gives none.
  Result<Link> ParseLink(const Entry& entry, Nanos latency = 0);
  Status ParseLinkFields(const Entries& fields, Link& link);

  // config_strategy.cpp: strategy.* (the split and the recompute)
  Result<StageInts> ReadStageInts(const Entry& entry, std::int64_t min,
                                  bool allow_scalar);
  Status ParseStrategy(const Entry* section);
  Status ParseStrategyEntries(const Entries& e, const std::string& even_key);
  Status EvenSplit(const std::string& key);
  Status LayersPerChunk(const Entry& entry);
  Status Layout(const Entry& entry);
  Status Offset(const Entry& entry);
  Status ParseRecompute(const Entry& rc);

  // config_search.cpp: search.*
  Status ParseSearch(const Entry* section);
  Status ParsePlan(const Entry* section);
  Result<DeployTarget> Target(const Entry& x);
  Result<Nanos> TimeLimit(const Entry& x);
  Result<MemoryHeadroom> Headroom(const Entry& x);
  Status PlanIntList(const Entries& e, std::string_view name, std::vector<int>& out);
  Status PlanBoolList(const Entries& e, std::string_view name, std::vector<bool>& out);
  // plan.<name>: "none" or maps, each read by `check` (its errors at their
  // lines) and kept as flow YAML text, each once; `keys` names the map's
  // keys and `noun` an item in the errors.
  Status PlanMaps(const Entries& e, std::string_view name, const std::string& keys,
                  const std::string& noun, const std::function<Status(const Entry&)>& check,
                  std::vector<std::string>& out);
  // The items of plan.<name>: a list, or one scalar as a list of one.
  Result<std::vector<Entry>> PlanItems(const Entries& e, std::string_view name);
  template <class T, class Read>
  Status SearchValue(const Entries& e, std::string_view name,
                     const std::optional<T>& cli, T& out, Read read);
  Status SearchSchedules(const Entries& e);
  Status SearchIntList(const Entries& e, std::string_view name,
                       const std::optional<std::vector<int>>& cli,
                       std::int64_t max, const std::string& item_want,
                       std::vector<int>& out);

  // candidates.cpp: a candidates file (ppb-sim rank)
  Result<std::vector<RankCandidate>> ParseCandidates(const YAML::Node& root);
  Result<RankCandidate> ParseCandidate(const Entry& item, const RunConfig& base,
                                       size_t index);

  const CliOverrides& cli_;
  // Where strategy keys live, for messages: "strategy", or
  // "candidates[i]" when parsing a candidates file.
  std::string strategy_path_ = "strategy";
  // The key that set the v in use when it is not pipeline.virtual_stages
  // (a candidate's virtual_stages); empty otherwise.
  std::string v_key_;
  // hardware.memory and hardware.link: the defaults of
  // cluster.devices.memory and cluster.link when those are absent.
  std::optional<Bytes> hardware_memory_;
  std::optional<Link> hardware_link_;
  std::optional<double> hardware_tflops_;  // for device_types' peak_tflops
  bool communication_given_ = false;  // pipeline.communication in the file
  // With the step model: the pipeline links of the job's rank layout
  // (core/rank_layout.h), the default of cluster.link.
  std::optional<std::vector<Link>> step_links_;
  // training.global_batch_size: the micro-batches it gives (pipeline.
  // microbatches' default; both given is an error).
  std::optional<int> global_microbatches_;
  std::int64_t global_batch_ = 0;  // training.global_batch_size as given
  bool moe_given_ = false;         // training.moe in the file
};

}  // namespace ppb::config_detail
