// MPI for `ppb-sim search` (apps/commands/search_mpi.h). Without PPB_MPI
// the functions run the local part alone (never called: the world has one
// process).
#include "apps/commands/search_mpi.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#ifdef PPB_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ppb {

namespace {

#ifdef PPB_HAVE_MPI
constexpr int kAskTag = 11;
constexpr int kAnswerTag = 12;
constexpr int kPartTag = 13;
#endif

// What rank 0 keeps: the units granted and the least threshold (-1: none).
struct Grants {
  std::mutex mu;
  std::set<std::int64_t> granted;
  Nanos least = -1;

  bool Claim(std::int64_t unit) {
    std::lock_guard<std::mutex> lock(mu);
    return granted.insert(unit).second;
  }
  Nanos Exchange(Nanos threshold) {
    std::lock_guard<std::mutex> lock(mu);
    if (threshold >= 0 && (least < 0 || threshold < least)) least = threshold;
    return least;
  }
};

// The share of the search this process runs: rank 0 leads (runs what is
// done once); its claims and thresholds go through `claim` and `exchange`.
SearchShare ShareOf(const MpiWorld& world, std::function<bool(std::int64_t)> claim,
                    std::function<Nanos(Nanos)> exchange) {
  SearchShare share;
  share.processes = world.size;
  share.lead = world.rank == 0;
  share.claim = std::move(claim);
  share.exchange = std::move(exchange);
  return share;
}

}  // namespace

std::vector<std::string> MpiSearchLead(const MpiWorld& world,
                                       const std::function<void(const SearchShare&)>& local) {
  Grants grants;
  const SearchShare share =
      ShareOf(world, [&grants](std::int64_t u) { return grants.Claim(u); },
              [&grants](Nanos t) { return grants.Exchange(t); });
  std::thread own([&]() { local(share); });
  std::vector<std::string> parts(static_cast<size_t>(std::max(0, world.size - 1)));
#ifdef PPB_HAVE_MPI
  int running = world.size - 1;
  while (running > 0) {
    std::int64_t ask[2] = {0, 0};
    const int from = MpiWaitAny(kAskTag);
    MPI_Recv(ask, 2, MPI_INT64_T, from, kAskTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (ask[0] == 2) {
      MPI_Status part_status;
      MPI_Probe(from, kPartTag, MPI_COMM_WORLD, &part_status);
      int count = 0;
      MPI_Get_count(&part_status, MPI_CHAR, &count);
      std::string& text = parts[static_cast<size_t>(from - 1)];
      text.assign(static_cast<size_t>(count), '\0');
      MPI_Recv(text.data(), count, MPI_CHAR, from, kPartTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      --running;
      continue;
    }
    std::int64_t answer[2] = {0, 0};
    if (ask[0] == 0) {
      answer[0] = grants.Claim(ask[1]) ? 1 : 0;
      answer[1] = grants.Exchange(-1);
    } else {
      answer[1] = grants.Exchange(ask[1]);
    }
    MPI_Send(answer, 2, MPI_INT64_T, from, kAnswerTag, MPI_COMM_WORLD);
  }
#endif
  own.join();
  return parts;
}

void MpiSearchWork(const MpiWorld& world,
                   const std::function<std::string(const SearchShare&)>& local) {
  std::mutex mu;  // one request and its answer at a time
  auto ask = [&mu](std::int64_t kind, std::int64_t value) {
    std::int64_t answer[2] = {0, -1};
#ifdef PPB_HAVE_MPI
    std::lock_guard<std::mutex> lock(mu);
    std::int64_t request[2] = {kind, value};
    MPI_Send(request, 2, MPI_INT64_T, 0, kAskTag, MPI_COMM_WORLD);
    MPI_Recv(answer, 2, MPI_INT64_T, 0, kAnswerTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#else
    (void)mu;
    (void)kind;
    (void)value;
#endif
    return std::pair<std::int64_t, Nanos>{answer[0], answer[1]};
  };
  const SearchShare share =
      ShareOf(world, [&ask](std::int64_t u) { return ask(0, u).first == 1; },
              [&ask](Nanos t) { return ask(1, t).second; });
  const std::string part = local(share);
#ifdef PPB_HAVE_MPI
  std::int64_t done[2] = {2, 0};
  MPI_Send(done, 2, MPI_INT64_T, 0, kAskTag, MPI_COMM_WORLD);
  MPI_Send(part.data(), static_cast<int>(part.size()), MPI_CHAR, 0, kPartTag, MPI_COMM_WORLD);
#else
  (void)part;
#endif
}

}  // namespace ppb
