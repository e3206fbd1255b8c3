// MPI for `ppb-sim sweep` (built with the CMake option PPB_MPI; Open MPI's C
// API; search_mpi.h does `ppb-sim search`): under mpirun, rank 0
// coordinates — it hands out one point at a time to whichever rank asks
// (so long searches do not stall a static split),
// receives each finished row as its JSON line and writes the one results
// file — and ranks 1..N-1 evaluate points. Every rank reads the same config
// and grid (a shared file system, as clusters have). Without mpirun the
// same binary is one process and MPI is not initialized.
//
// Messages: a worker sends its last row's line (empty at first) with tag
// kRowTag; rank 0 answers with the next point index, or -1 to stop, with
// tag kPointTag.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.h"

namespace ppb {

struct MpiWorld {
  int rank = 0;
  int size = 1;
  bool started = false;  // MPI_Init was called (StopMpi finalizes)
  // Any thread may call MPI, one at a time (else only the main thread).
  bool serialized = false;
};

// The world of this process: size 1 without mpirun. Initializes MPI when
// started by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set) and
// built with PPB_MPI. Error when mpirun started several processes but MPI
// is not built in (each would run the whole sweep).
Result<MpiWorld> StartMpi();
void StopMpi(const MpiWorld& world);

// StartMpi for a subcommand: on error writes its message (and a newline) to
// `err` and returns nothing; the subcommand then exits with kExitBadInput.
std::optional<MpiWorld> StartMpiOrReport(std::ostream& err);

// Rank 0 of `world`: hands out the points of `todo` to ranks 1..size-1 and
// calls `done` with each returned line, until every rank is told to stop.
void MpiCoordinate(const MpiWorld& world, const std::vector<std::int64_t>& todo,
                   const std::function<void(const std::string&)>& done);

// Ranks > 0: asks rank 0 for points and returns `eval(point)`'s line for
// each, until told to stop.
void MpiWork(const std::function<std::string(std::int64_t)>& eval);

// Finalizes MPI (StopMpi) when it goes out of scope.
struct MpiStop {
  const MpiWorld& world;
  ~MpiStop() { StopMpi(world); }
};

// Waits for a message with `tag` from any rank and returns its source
// (without MPI: -1). It polls and sleeps 20 us up to 250 us between polls:
// MPI_Probe busy-polls a core that the other ranks on the machine need.
int MpiWaitAny(int tag);

// Ends every rank with `code` (a rank that cannot take part).
void MpiAbort(int code);

}  // namespace ppb
