// ForEachOnThreads: runs job(0), ..., job(n - 1), each exactly once, on up
// to `threads` threads, the calling thread among them; returns when all
// are done. Indices are handed out in increasing order from one atomic
// counter, so which thread runs which index is not fixed: a job that must
// give a deterministic result writes to its own slot (out[k]) and the
// caller combines the slots in index order. With threads <= 1 or n <= 1
// the jobs run in order on the calling thread.
//
// Shared by the search's layout-level searchers (search/search.cpp), the
// plan's rounds (search/plan/layout_search.cpp) and the sweep's points
// (apps/commands/sweep.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace ppb {

template <class Job>
void ForEachOnThreads(size_t n, int threads, Job&& job) {
  const size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t k = 0; k < n; ++k) job(k);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next.fetch_add(1); k < n; k = next.fetch_add(1)) job(k);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace ppb
