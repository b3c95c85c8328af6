// commtrace-mpi: `commtrace report` over MPI (mpirun -np K commtrace-mpi report RUN ..., or
// srun): process r of K reads shard r of the run (load/shard_window.h), process 0 merges
// the K states and writes the report, as `commtrace merge` would from their files. The
// options are report's; the output is process 0's.
#include <malloc.h>
#include <mpi.h>
#include <sched.h>

#include <iostream>
#include <string>
#include <thread>

#include "tools/cli_command.h"
#include "tools/mpi/mpi_exchange.h"

namespace {

// mpirun binds each process to a core by default (Open MPI with two processes or fewer): the
// report's loader threads and root-cause walk then share one CPU, and take half again as long.
void sayWhenBoundToOneCpu(const commtrace::tools::StateExchange& exchange) {
  cpu_set_t cpus;
  const unsigned cores = std::thread::hardware_concurrency();
  if (exchange.rank() != 0 || sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) != 1 || cores < 2) return;
  std::cerr << "commtrace-mpi: each process may use 1 CPU of this machine's " << cores
            << " (mpirun bound it to a core): the report's threads share it. Give each process several "
               "(Open MPI: mpirun --bind-to none, or --map-by slot:PE=4; Slurm: srun --cpus-per-task=4)\n";
}

int run(int argc, char** argv, commtrace::tools::StateExchange& exchange) {
  using namespace commtrace::tools;
  CLI::App app{"commtrace-mpi: commtrace report over MPI, one shard of the run per process, merged on the first"};
  app.set_version_flag("--version", std::string(COMMTRACE_VERSION));
  app.require_subcommand(1);
  const Command report = addReportCommand(app, &exchange);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every process parses the same line; the first speaks for them.
    if (exchange.rank() != 0) return e.get_exit_code() == 0 ? 0 : 2;
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "commtrace-mpi: " << e.what() << "\nRun 'commtrace-mpi report --help' for usage.\n";
    return 2;
  }
  sayWhenBoundToOneCpu(exchange);
  return report.run();
}

}  // namespace

int main(int argc, char** argv) {
  mallopt(M_ARENA_MAX, 2);  // as commtrace's main: the loader's threads
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    commtrace::tools::MpiExchange exchange;
    status = run(argc, argv, exchange);
  }
  MPI_Finalize();
  return status;
}
