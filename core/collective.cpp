#include "core/collective.h"

#include <cmath>

namespace ppb {

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all-reduce";
    case Collective::ReduceScatter:
      return "reduce-scatter";
    case Collective::AllGather:
      return "all-gather";
    case Collective::AllToAll:
      return "all-to-all";
    case Collective::SendRecv:
      return "send/recv";
  }
  return "?";
}

double EffectiveBandwidth(const GroupLink& link, Bytes bytes,
                          const CollectiveEfficiency& eff) {
  const double s = static_cast<double>(bytes);
  const double half = static_cast<double>(eff.collective_half_size);
  return link.bytes_per_s * eff.collective * (s / (s + half));
}

Nanos CollectiveTime(Collective c, int n, Bytes bytes, const GroupLink& link,
                     const CollectiveEfficiency& eff) {
  if (bytes <= 0 || (n <= 1 && c != Collective::SendRecv)) return 0;
  double steps = 0, share = 0;
  switch (c) {
    case Collective::AllReduce:
      steps = 2.0 * (n - 1);
      share = 2.0 * (n - 1) / n;
      break;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll:
      steps = n - 1;
      share = static_cast<double>(n - 1) / n;
      break;
    case Collective::SendRecv:
      steps = 1;
      share = 1;
      break;
  }
  double seconds = 0;
  if (link.bytes_per_s > 0) {
    seconds = share * static_cast<double>(bytes) /
              EffectiveBandwidth(link, bytes, eff);
  }
  return static_cast<Nanos>(
      std::llround(steps * static_cast<double>(link.latency) + seconds * 1e9));
}

}  // namespace ppb
