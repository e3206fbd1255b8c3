// cluster.*: p devices and p links, given per rank (devices, link, links
// with per-rank overrides) or as a heterogeneous topology (device_types,
// nodes, link_classes, placement; core/topology.h). Errors as every config
// error: "file:line: cluster.<key>: must be ...; got ...".
#include "apps/input/config_parser.h"

namespace ppb::config_detail {

// The devices and links of the cluster (p of each).
Status Parser::ParseCluster(const YAML::Node& node) {
  Result<Entries> er =
      Map(node, "cluster",
          {"devices", "link", "links", "device_types", "nodes",
           "link_classes", "placement"});
  if (!er.ok()) return er.error();
  const Entries& e = *er;
  const int p = cfg_.shape.p;
  if (Find(e, "nodes") != nullptr || Find(e, "device_types") != nullptr) {
    return ParseTopology(e);
  }
  for (const char* key : {"link_classes", "placement"}) {
    if (const Entry* x = Find(e, key)) {
      return Fail(x->path,
                  "is only read with cluster.nodes and cluster.device_types "
                  "(a heterogeneous cluster); got it without them");
    }
  }

  const Entry* devices = Find(e, "devices");
  if (devices == nullptr && hardware_memory_) {
    Device d;
    d.memory_capacity = *hardware_memory_;
    cfg_.cluster.devices.assign(static_cast<size_t>(p), d);
  } else if (devices == nullptr) {
    return Fail("cluster.devices",
                "must be given (a map, or a list of one device per rank, "
                "or hardware.memory); got nothing");
  } else if (devices->value.IsSequence()) {
    Result<std::vector<Entry>> items =
        List(devices->value, devices->path, "");
    if (!items.ok()) return items.error();
    if (static_cast<int>(items->size()) != p) {
      return Fail(devices->path, "must list one device per rank (" +
                                     StagesNote() + "); got " +
                                     std::to_string(items->size()));
    }
    for (const Entry& item : *items) {
      Device d;
      PPB_RETURN_IF_ERROR(ParseDevice(item.value, item.path, d));
      cfg_.cluster.devices.push_back(d);
    }
  } else if (devices->value.IsMap()) {
    Result<Entries> fields =
        Map(devices->value, devices->path, {"memory", "speed", "overrides"});
    if (!fields.ok()) return fields.error();
    Device d;
    PPB_RETURN_IF_ERROR(ParseDeviceFields(*fields, devices->path, true, d));
    cfg_.cluster.devices.assign(static_cast<size_t>(p), d);
    if (const Entry* o = Find(*fields, "overrides")) {
      PPB_RETURN_IF_ERROR(RankOverrides(
          *o, {"rank", "memory", "speed"},
          [&](const Entries& f, const std::string& path, int rank) {
            return ParseDeviceFields(f, path, false,
                                     cfg_.cluster.devices[rank]);
          }));
    }
  } else {
    return Fail(devices->path,
                "must be a map (every rank alike) or a list of one device "
                "per rank; got " +
                    Given(devices->value));
  }

  // Default: hardware.link, else the step model's links of the rank
  // layout, else free (no latency, infinite bandwidth).
  Link link = hardware_link_.value_or(Link{});
  const Entry* l = Find(e, "link");
  if (l != nullptr) {
    Result<Link> given = ParseLink(*l);
    if (!given.ok()) return given.error();
    link = *given;
  }
  cfg_.cluster.links.assign(static_cast<size_t>(p), link);
  if (l == nullptr && !hardware_link_ && step_links_ &&
      static_cast<int>(step_links_->size()) == p) {
    cfg_.cluster.links = *step_links_;
  }
  if (const Entry* ls = Find(e, "links")) {
    return RankOverrides(
        *ls, {"rank", "latency", "bandwidth"},
        [&](const Entries& fields, const std::string&, int rank) {
          return ParseLinkFields(fields, cfg_.cluster.links[rank]);
        });
  }
  return Status();
}

// A heterogeneous cluster (core/topology.h): device types, nodes listing
// their devices by type name, the intra- and inter-node link classes and
// the device of each rank (default: the devices in node order).
Status Parser::ParseTopology(const Entries& e) {
  const int p = cfg_.shape.p;
  for (const char* key : {"devices", "link", "links"}) {
    if (const Entry* x = Find(e, key)) {
      return Fail(x->path,
                  "must not be given with cluster.nodes (devices come from "
                  "cluster.device_types and cluster.nodes, links from "
                  "cluster.link_classes)");
    }
  }
  const Entry* types = Find(e, "device_types");
  const Entry* nodes = Find(e, "nodes");
  if (types == nullptr || nodes == nullptr) {
    return Fail(types == nullptr ? "cluster.device_types" : "cluster.nodes",
                "must be given with cluster." +
                    std::string(types == nullptr ? "nodes" : "device_types") +
                    "; got nothing");
  }
  Topology t;
  PPB_RETURN_IF_ERROR(ParseDeviceTypes(*types, t));
  PPB_RETURN_IF_ERROR(ParseNodes(*nodes, t));
  if (t.num_devices() != p) {
    return Fail("cluster.nodes", "must hold one device per rank (" + StagesNote() +
                                     "); got " + std::to_string(t.num_devices()) +
                                     " devices");
  }

  // Link classes; absent ones are free (or hardware.link).
  t.intra_node = t.inter_node = hardware_link_.value_or(Link{});
  if (const Entry* lc = Find(e, "link_classes")) {
    Result<Entries> f = Map(lc->value, lc->path, {"intra_node", "inter_node"});
    if (!f.ok()) return f.error();
    for (const Entry& cls : *f) {
      Result<Link> link = ParseLink(cls);
      if (!link.ok()) return link.error();
      (cls.key == "intra_node" ? t.intra_node : t.inter_node) = *link;
    }
  }

  Result<Placement> placement = ParsePlacement(e);
  if (!placement.ok()) return placement.error();
  cfg_.cluster = ClusterFor(t, *placement);
  cfg_.topology = std::move(t);
  cfg_.placement = std::move(*placement);
  return Status();
}

// cluster.device_types into t.types: a unique name, a relative speed or
// peak_tflops (relative to hardware.peak_tflops, else to the first type
// that gives it), and a memory (default hardware.memory).
Status Parser::ParseDeviceTypes(const Entry& types, Topology& t) {
  Result<std::vector<Entry>> titems =
      List(types.value, types.path, "a list of {name, speed or peak_tflops, memory}");
  if (!titems.ok()) return titems.error();
  if (titems->empty()) {
    return Fail(types.path, "must list at least one device type; got an empty list");
  }
  std::vector<std::optional<double>> tflops;
  for (const Entry& item : *titems) {
    Result<Entries> f = Map(item.value, item.path, {"name", "speed", "peak_tflops", "memory"});
    if (!f.ok()) return f.error();
    DeviceType dt;
    const Entry* name = Find(*f, "name");
    if (name == nullptr) return Fail(item.path + ".name", "must be given (a type name); got nothing");
    Result<std::string> n = String(name->value, name->path, "a type name");
    if (!n.ok()) return n.error();
    for (const DeviceType& other : t.types) {
      if (other.name == *n) return Fail(name->path, "must be unique; got '" + *n + "' again");
    }
    dt.name = *n;
    const Entry* speed = Find(*f, "speed");
    const Entry* peak = Find(*f, "peak_tflops");
    if ((speed == nullptr) == (peak == nullptr)) {
      return Fail(item.path + (speed ? ".peak_tflops" : ".speed"),
                  speed ? "must not be given with speed (give one)"
                        : "must be given (a relative speed), or peak_tflops; got neither");
    }
    if (speed != nullptr) {
      Result<double> x = Speed(speed->value, speed->path);
      if (!x.ok()) return x.error();
      dt.speed = *x;
      tflops.emplace_back();
    } else {
      Result<double> x = PositiveNumber(peak->value, peak->path);
      if (!x.ok()) return x.error();
      tflops.emplace_back(*x);
    }
    const Entry* mem = Find(*f, "memory");
    if (mem == nullptr && !hardware_memory_) {
      return Fail(item.path + ".memory", "must be given (a positive size, e.g. 80GiB); got nothing");
    }
    if (mem != nullptr) {
      Result<Bytes> b = Size(mem->value, mem->path, true);
      if (!b.ok()) return b.error();
      dt.memory_capacity = *b;
    } else {
      dt.memory_capacity = *hardware_memory_;
    }
    t.types.push_back(std::move(dt));
  }
  // peak_tflops is relative to the device the layer times are for:
  // hardware.peak_tflops with a cost model, else the first type that
  // gives peak_tflops (its layer times are then the model's).
  std::optional<double> ref = hardware_tflops_;
  for (size_t i = 0; i < tflops.size(); ++i) {
    if (!tflops[i]) continue;
    if (!ref) ref = tflops[i];
    t.types[i].speed = *tflops[i] / *ref;
    if (t.types[i].speed < kMinSpeed || t.types[i].speed > kMaxSpeed) {
      return Fail((*titems)[i].path + ".peak_tflops",
                  fmt::format("must give a relative speed (peak_tflops / {}) "
                              "in {}; got {} / {} = {}",
                              *ref, kSpeedRangeText, *tflops[i], *ref, t.types[i].speed));
    }
  }
  return Status();
}

// cluster.nodes into t: each node's name (unique; default nodeN) and its
// devices, a list of type names or a map {type: count}, numbered in node
// order.
Status Parser::ParseNodes(const Entry& nodes, Topology& t) {
  Result<std::vector<Entry>> nitems =
      List(nodes.value, nodes.path, "a list of {name, devices}");
  if (!nitems.ok()) return nitems.error();
  if (nitems->empty()) return Fail(nodes.path, "must list at least one node; got an empty list");
  auto type_of = [&](const YAML::Node& v, const std::string& path) -> Result<int> {
    Result<std::string> n = String(v, path, "a device type name");
    if (!n.ok()) return n.error();
    for (size_t i = 0; i < t.types.size(); ++i) {
      if (t.types[i].name == *n) return static_cast<int>(i);
    }
    std::vector<std::string> names;
    for (const DeviceType& dt : t.types) names.push_back(dt.name);
    return Fail(path, "must name a type of cluster.device_types (" + Join(names) +
                          "); got '" + *n + "'");
  };
  for (const Entry& item : *nitems) {
    const int node = static_cast<int>(t.node_names.size());
    Result<Entries> f = Map(item.value, item.path, {"name", "devices"});
    if (!f.ok()) return f.error();
    std::string name = "node" + std::to_string(node);
    if (const Entry* n = Find(*f, "name")) {
      Result<std::string> s2 = String(n->value, n->path, "a node name");
      if (!s2.ok()) return s2.error();
      for (const std::string& other : t.node_names) {
        if (other == *s2) return Fail(n->path, "must be unique; got '" + *s2 + "' again");
      }
      name = *s2;
    }
    t.node_names.push_back(name);
    const Entry* devs = Find(*f, "devices");
    if (devs == nullptr) {
      return Fail(item.path + ".devices",
                  "must be given (a list of type names, or {type: count}); got nothing");
    }
    const size_t before = t.device_type.size();
    if (devs->value.IsSequence()) {
      Result<std::vector<Entry>> ds = List(devs->value, devs->path, "a list of type names");
      if (!ds.ok()) return ds.error();
      for (const Entry& d : *ds) {
        Result<int> ti = type_of(d.value, d.path);
        if (!ti.ok()) return ti.error();
        t.device_type.push_back(*ti);
        t.device_node.push_back(node);
      }
    } else if (devs->value.IsMap()) {
      Result<Entries> counts = Map(devs->value, devs->path, {});
      if (!counts.ok()) return counts.error();
      for (const Entry& c : *counts) {
        Result<int> ti = type_of(YAML::Node(c.key), c.path);
        if (!ti.ok()) return ti.error();
        Result<int> k = PositiveInt(c.value, c.path);
        if (!k.ok()) return k.error();
        for (int i = 0; i < *k; ++i) {
          t.device_type.push_back(*ti);
          t.device_node.push_back(node);
        }
      }
    } else {
      return Fail(devs->path, "must be a list of type names or a map {type: count}; got " +
                                  Given(devs->value));
    }
    if (t.device_type.size() == before) {
      return Fail(devs->path, "must hold at least one device; got none");
    }
  }
  return Status();
}

// cluster.placement: the device of each rank, each device once (default:
// rank r on device r).
Result<Placement> Parser::ParsePlacement(const Entries& e) {
  const int p = cfg_.shape.p;
  Placement placement(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) placement[r] = r;
  if (const Entry* pl = Find(e, "placement")) {
    Result<std::vector<Entry>> items =
        List(pl->value, pl->path, "a list of device numbers, one per rank");
    if (!items.ok()) return items.error();
    if (static_cast<int>(items->size()) != p) {
      return Fail(pl->path, "must give one device per rank (" + StagesNote() + "); got " +
                                std::to_string(items->size()));
    }
    std::vector<int> rank_of(p, -1);
    for (int r = 0; r < p; ++r) {
      const Entry& item = (*items)[r];
      Result<std::int64_t> d = Integer(item.value, item.path, 0, p - 1,
                                       "a device number in [0, " + std::to_string(p - 1) +
                                           "] (devices are numbered in node order)");
      if (!d.ok()) return d.error();
      if (rank_of[*d] >= 0) {
        return Fail(item.path, "must name each device once; got device " +
                                   std::to_string(*d) + " again (rank " +
                                   std::to_string(rank_of[*d]) + ")");
      }
      rank_of[*d] = r;
      placement[r] = static_cast<int>(*d);
    }
  }
  return placement;
}

// A list of per-rank changes, each a map with `rank` (in [0, p), each rank
// once) and other keys of `allowed`; calls apply(fields, path, rank).
template <class Apply>
Status Parser::RankOverrides(const Entry& list,
                             std::initializer_list<std::string_view> allowed,
                             Apply apply) {
  Result<std::vector<Entry>> items =
      List(list.value, list.path, "a list of {" + Join(allowed) + "}");
  if (!items.ok()) return items.error();
  std::map<int, std::string> seen;
  for (const Entry& item : *items) {
    Result<Entries> fields = Map(item.value, item.path, allowed);
    if (!fields.ok()) return fields.error();
    Result<int> rank = Rank(*fields, item.path, seen);
    if (!rank.ok()) return rank.error();
    PPB_RETURN_IF_ERROR(apply(*fields, item.path, *rank));
  }
  return Status();
}

// `rank` of an override entry: in [0, p) and not given before.
Result<int> Parser::Rank(const Entries& fields, const std::string& path,
                         std::map<int, std::string>& seen) {
  const Entry* r = Find(fields, "rank");
  if (r == nullptr) {
    return Fail(path + ".rank", "must be given (0 .. " +
                                    std::to_string(cfg_.shape.p - 1) +
                                    "); got nothing");
  }
  Result<std::int64_t> rank =
      Integer(r->value, r->path, 0, cfg_.shape.p - 1,
              "a rank in 0 .. " + std::to_string(cfg_.shape.p - 1) + " (" +
                  StagesNote() + ")");
  if (!rank.ok()) return rank.error();
  const int k = static_cast<int>(*rank);
  auto [it, inserted] = seen.emplace(k, r->path);
  if (!inserted) {
    return Fail(r->path, "must name each rank once; got rank " +
                             std::to_string(k) + " again (also " +
                             it->second + ")");
  }
  return k;
}

// One entry of a devices list: memory required.
Status Parser::ParseDevice(const YAML::Node& node, const std::string& path,
                           Device& d) {
  Result<Entries> fields = Map(node, path, {"memory", "speed"});
  if (!fields.ok()) return fields.error();
  return ParseDeviceFields(*fields, path, true, d);
}

Status Parser::ParseDeviceFields(const Entries& fields, const std::string& path,
                                 bool memory_required, Device& d) {
  if (const Entry* m = Find(fields, "memory")) {
    Result<Bytes> b = Size(m->value, m->path, true);
    if (!b.ok()) return b.error();
    d.memory_capacity = *b;
  } else if (memory_required && hardware_memory_) {
    d.memory_capacity = *hardware_memory_;
  } else if (memory_required) {
    return Fail(path + ".memory",
                "must be given (a positive size, e.g. 80GiB); got nothing");
  }
  if (const Entry* s = Find(fields, "speed")) {
    Result<double> x = Speed(s->value, s->path);
    if (!x.ok()) return x.error();
    d.speed = *x;
  }
  return Status();
}

// A link map {latency (default `latency`), bandwidth (required)}.
Result<Link> Parser::ParseLink(const Entry& entry, Nanos latency) {
  Result<Entries> fields = Map(entry.value, entry.path, {"latency", "bandwidth"});
  if (!fields.ok()) return fields.error();
  if (Find(*fields, "bandwidth") == nullptr) {
    return Fail(entry.path + ".bandwidth",
                "must be given (a positive bandwidth); got nothing");
  }
  Link link;
  link.latency = latency;
  PPB_RETURN_IF_ERROR(ParseLinkFields(*fields, link));
  return link;
}

Status Parser::ParseLinkFields(const Entries& fields, Link& link) {
  if (const Entry* l = Find(fields, "latency")) {
    Result<Nanos> t = Duration(l->value, l->path, false);
    if (!t.ok()) return t.error();
    link.latency = *t;
  }
  if (const Entry* b = Find(fields, "bandwidth")) {
    Result<BytesPerSec> bw = Bandwidth(b->value, b->path);
    if (!bw.ok()) return bw.error();
    link.bandwidth = *bw;
  }
  return Status();
}

}  // namespace ppb::config_detail
