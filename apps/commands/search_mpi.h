// MPI for `ppb-sim search` (built with PPB_MPI; Open MPI's C API): under
// mpirun every rank runs the search over the units it is granted
// (SearchShare in search/search.h). Rank 0 grants each unit to the first
// rank that asks for it and keeps the least pruning threshold of all; it
// does so in its main thread while its own share of the search runs on a
// second thread, then receives every other rank's part and returns them
// for MergeParts. Ranks 1..N-1 ask rank 0 (one message and its answer per
// claim or threshold, serialized by a mutex, so the search's own threads
// may ask), then send their part.
//
// Messages: a request (kind, value) with tag kAskTag — kind 0 claims unit
// `value`, kind 1 publishes threshold `value`, kind 2 says the part
// follows (tag kPartTag, the EncodePart text) — and an answer (granted,
// least threshold) with tag kAnswerTag to kinds 0 and 1.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apps/commands/sweep_mpi.h"
#include "search/search.h"

namespace ppb {

// Rank 0 of `world` (size > 1): runs local(share) on a thread while
// answering the other ranks; returns their parts' texts in rank order
// (1..N-1) once each has sent one.
std::vector<std::string> MpiSearchLead(const MpiWorld& world,
                                       const std::function<void(const SearchShare&)>& local);

// Ranks > 0: runs local(share), whose claims and thresholds ask rank 0,
// and sends rank 0 the text it returns.
void MpiSearchWork(const MpiWorld& world,
                   const std::function<std::string(const SearchShare&)>& local);

}  // namespace ppb
