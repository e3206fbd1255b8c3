// MPI for `ppb-sim sweep` (apps/commands/sweep_mpi.h). Without PPB_MPI only
// the detection of mpirun is compiled: one process, or an error.
#include "apps/commands/sweep_mpi.h"

#include <cstdlib>
#include <string>

#ifdef PPB_HAVE_MPI
// The C API only (Open MPI's and MPICH's C++ bindings are deprecated).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>
#endif

namespace ppb {

namespace {

// The number of processes mpirun (or srun) started, from its environment;
// 0 when not started by one.
int LauncherSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  if (std::getenv("PMIX_RANK") != nullptr) return 1;
  return 0;
}

#ifdef PPB_HAVE_MPI
constexpr int kRowTag = 1;
constexpr int kPointTag = 2;
#endif

}  // namespace

Result<MpiWorld> StartMpi() {
  MpiWorld world;
  const int launched = LauncherSize();
  if (launched == 0) return world;
#ifdef PPB_HAVE_MPI
  int provided = 0;
  // Serialized: a search's own threads may ask rank 0 (search_mpi.h), one
  // at a time.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  world.serialized = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  world.started = true;
  return world;
#else
  if (launched > 1) {
    return Error{"mpirun",
                 "ppb-sim: mpirun: expected a ppb-sim built with MPI (cmake "
                 "-DPPB_MPI=ON) to share a sweep across " +
                     std::to_string(launched) +
                     " processes; got one built without (each process would run "
                     "the whole sweep)"};
  }
  return world;
#endif
}

std::optional<MpiWorld> StartMpiOrReport(std::ostream& err) {
  Result<MpiWorld> started = StartMpi();
  if (!started.ok()) {
    err << started.error().message << "\n";
    return std::nullopt;
  }
  return *started;
}

void StopMpi(const MpiWorld& world) {
#ifdef PPB_HAVE_MPI
  if (world.started) MPI_Finalize();
#else
  (void)world;
#endif
}

void MpiCoordinate(const MpiWorld& world, const std::vector<std::int64_t>& todo,
                   const std::function<void(const std::string&)>& done) {
#ifdef PPB_HAVE_MPI
  size_t next = 0;
  int running = world.size - 1;
  std::string buffer;
  while (running > 0) {
    MPI_Status status;
    MPI_Probe(MpiWaitAny(kRowTag), kRowTag, MPI_COMM_WORLD, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    buffer.assign(static_cast<size_t>(count), '\0');
    MPI_Recv(buffer.data(), count, MPI_CHAR, status.MPI_SOURCE, kRowTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (count > 0) done(buffer);
    std::int64_t point = -1;
    if (next < todo.size()) {
      point = todo[next++];
    } else {
      --running;
    }
    MPI_Send(&point, 1, MPI_INT64_T, status.MPI_SOURCE, kPointTag, MPI_COMM_WORLD);
  }
#else
  (void)world;
  (void)todo;
  (void)done;
#endif
}

void MpiWork(const std::function<std::string(std::int64_t)>& eval) {
#ifdef PPB_HAVE_MPI
  std::string line;
  while (true) {
    MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, kRowTag, MPI_COMM_WORLD);
    std::int64_t point = -1;
    MPI_Recv(&point, 1, MPI_INT64_T, 0, kPointTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (point < 0) return;
    line = eval(point);
  }
#else
  (void)eval;
#endif
}

int MpiWaitAny(int tag) {
#ifdef PPB_HAVE_MPI
  MPI_Status status;
  int arrived = 0;
  for (auto pause = std::chrono::microseconds(20);;
       pause = std::min(pause * 2, std::chrono::microseconds(250))) {
    MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &arrived, &status);
    if (arrived) return status.MPI_SOURCE;
    std::this_thread::sleep_for(pause);
  }
#else
  (void)tag;
  return -1;
#endif
}

void MpiAbort(int code) {
#ifdef PPB_HAVE_MPI
  MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

}  // namespace ppb
