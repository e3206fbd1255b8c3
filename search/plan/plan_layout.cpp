#include "search/plan/plan_layout.h"

#include <string>

namespace ppb {

std::string DescribeLayout(const PlanLayout& l) {
  using std::to_string;
  std::string o = "t" + to_string(l.t) + " cp" + to_string(l.cp) + " ep" + to_string(l.ep) +
                  " p" + to_string(l.p) + " d" + to_string(l.d) + " mbs" + to_string(l.mbs) +
                  " m" + to_string(l.m) + " " + l.schedule + " v" + to_string(l.v) + " " +
                  l.recompute;
  if (l.sp) o += " sp";
  if (!l.sharding.empty()) {
    o += " " + l.sharding;
  } else if (l.dist_opt) {
    o += " dist-opt";
  }
  if (!l.precision.empty()) o += " " + l.precision;
  if (!l.offload.empty()) o += " offload " + l.offload;
  if (!l.moe.empty()) o += " moe " + l.moe;
  return o;
}

bool PlanTiePreference(const PlanLayout& a, const PlanLayout& b) {
  const long long ma = 1LL * a.t * a.cp * a.ep * a.p, mb = 1LL * b.t * b.cp * b.ep * b.p;
  if (ma != mb) return ma < mb;
  if (a.v != b.v) return a.v < b.v;
  return a.mbs < b.mbs;
}

std::optional<RecomputeSetting> LayoutRecomputeSetting(const PlanLayout& l, DeployTarget target) {
  if (l.recompute == "search") return std::nullopt;
  RecomputeSetting s;
  s.target = target;
  s.kind = RecomputeSetting::Kind::Every;
  s.mode = l.recompute == "none" ? "" : l.recompute;
  return s;
}

std::string FreeRecomputeKey(PlanLayout l) {
  l.recompute = "search";
  l.yours = false;
  return DescribeLayout(l);
}

}  // namespace ppb
