// spade-envd: the environment sandbox zygote. Started by the host library (envsandbox/sandbox.h) with
// posix_spawn and the control channel on fd 3; not meant to be run by hand.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <pybind11/embed.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "envsandbox/envd_capture.h"
#include "envsandbox/envd_prelude.h"
#include "envsandbox/envd_zygote.h"
#include "envsandbox/frame.h"
#include "envsandbox/protocol.h"
#include "envsandbox/remove_tree.h"

namespace py = pybind11;
using namespace spade::envsandbox;

int main() {
  const int control = protocol::kControlFd;
  if (fcntl(control, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "spade-envd: no control channel on fd %d. This program is started by the spade host "
                 "library (envsandbox/sandbox.h, class EnvServer), not by hand.\n", control);
    return 2;
  }
  closefrom(control + 1);
  for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"})
    setenv(var, "1", 1);  // no BLAS thread pools: the zygote must stay single-threaded to fork safely
  fcntl(control, F_SETFD, FD_CLOEXEC);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of a child come back to us and are reaped/killed

  const char* tmp = std::getenv("TMPDIR");
  std::string root = std::string(tmp && *tmp ? tmp : "/tmp") + "/spade-envd-XXXXXX";
  if (mkdtemp(root.data()) == nullptr) {
    std::perror("spade-envd: mkdtemp");
    return 1;
  }

  // Isolated: no PYTHON* variables, no user site, no cwd on sys.path. program_name pins the standard
  // library to the interpreter we were built against (else the first python3 on PATH decides).
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.install_signal_handlers = 1;
  config.use_hash_seed = 1;  // fixed str hashing: set/dict-of-str order is the same in every child
  config.hash_seed = 0;
  PyConfig_SetBytesString(&config, &config.program_name, SPADE_PYTHON_EXECUTABLE);
  py::scoped_interpreter interpreter(&config, 0, nullptr, /*add_program_dir_to_path=*/false);
  try {
    envd::register_output_sink_type();
    envd::Prelude prelude = envd::load_prelude();
    py::module_::import("gc").attr("freeze")();  // keep preloaded objects out of the children's GC
    int status = envd::Zygote(control, prelude, root).run();
    std::fflush(nullptr);
    _exit(status);  // skip interpreter finalisation: nothing to flush, and it can be slow
  } catch (const std::exception& e) {
    nlohmann::json error{{"op", "error"}, {"message", std::string("spade-envd failed to start: ") + e.what()}};
    write_frame(control, error.dump(), deadline_after(5));
    remove_tree(root);
    _exit(1);
  }
}
