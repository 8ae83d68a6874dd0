// spade-envd: the environment sandbox zygote. Started by the host library (envsandbox/sandbox.h) with
// posix_spawn and the control channel on fd 3; not meant to be run by hand. Three modes:
//   spade-envd [--child-namespaces]  the zygote (serves the control channel on fd 3); with the flag
//                                    (inside bubblewrap) every child gets its own pid, IPC and mount
//                                    namespaces (envd_namespaces.h), or the ready message says why not
//   spade-envd --probe               exits 0 at once if the interpreter is visible (used to test that
//                                    bubblewrap can start us before relying on it)
//   spade-envd --launch [--cgroup PROCS_FILE]... [--uid N --gid N] -- PROGRAM ARGS...
//                                    the launcher: joins each cgroup (writes 0 to its cgroup.procs),
//                                    drops to uid/gid N (no supplementary groups), then execs PROGRAM
//                                    (bwrap, or spade-envd itself). Runs no Python.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <pybind11/embed.h>

#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "envsandbox/envd_capture.h"
#include "envsandbox/envd_namespaces.h"
#include "envsandbox/envd_prelude.h"
#include "envsandbox/envd_zygote.h"
#include "envsandbox/frame.h"
#include "envsandbox/protocol.h"
#include "envsandbox/remove_tree.h"

namespace py = pybind11;
using namespace spade::envsandbox;

namespace {

// The launcher (see the top of this file). Returns only on failure, with the exit status.
int launch(int argc, char** argv) {
  long uid = -1, gid = -1;
  int i = 2;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) break;
    if (a == "--cgroup") {
      const char* procs = argv[++i];
      int fd = open(procs, O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, "0\n", 2) != 2) {
        std::fprintf(stderr, "spade-envd --launch: cannot join cgroup %s: %s\n", procs, std::strerror(errno));
        return 3;
      }
      close(fd);
    } else if (a == "--uid") {
      uid = std::atol(argv[++i]);
    } else if (a == "--gid") {
      gid = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "spade-envd --launch: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "spade-envd --launch: nothing to run after --\n");
    return 2;
  }
  if (uid >= 0 && gid >= 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0 ||
        geteuid() != static_cast<uid_t>(uid) || getegid() != static_cast<gid_t>(gid)) {
      std::fprintf(stderr, "spade-envd --launch: cannot drop to uid %ld gid %ld: %s\n", uid, gid,
                   std::strerror(errno));
      return 3;
    }
  }
  execv(argv[i], argv + i);
  std::fprintf(stderr, "spade-envd --launch: cannot execute %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--probe") return access(SPADE_PYTHON_EXECUTABLE, X_OK) == 0 ? 0 : 1;
  if (argc >= 2 && std::string(argv[1]) == "--launch") return launch(argc, argv);
  const int control = protocol::kControlFd;
  if (fcntl(control, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "spade-envd: no control channel on fd %d. This program is started by the spade host "
                 "library (envsandbox/sandbox.h, class EnvServer), not by hand.\n", control);
    return 2;
  }
  closefrom(control + 1);
  // Per-child namespaces first, while this is one small process without an interpreter: on success we
  // continue in a new process, pid 1 of a pid namespace of our own (envd_namespaces.h).
  const bool want_namespaces = argc >= 2 && std::string(argv[1]) == "--child-namespaces";
  std::string namespaces_error = want_namespaces ? envd::enter_zygote_namespace()
                                                 : "not requested (the zygote does not run in bubblewrap)";
  envd::ChildNamespaces namespaces;
  if (namespaces_error.empty()) namespaces = envd::ChildNamespaces::open(int64_t{1} << 20, &namespaces_error);
  for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"})
    setenv(var, "1", 1);  // no BLAS thread pools: the zygote must stay single-threaded to fork safely
  fcntl(control, F_SETFD, FD_CLOEXEC);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of a child come back to us and are reaped/killed
  // Non-dumpable: an environment (same uid) cannot open our /proc/PID/mem to inject code into the
  // process that holds the host's trusted control channel, nor ptrace us, nor read our descriptors.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) {
    std::perror("spade-envd: PR_SET_DUMPABLE");
    return 1;
  }

  // Without per-child namespaces the children's work dirs live in one private directory.
  std::string root;
  if (!namespaces.active()) {
    const char* tmp = std::getenv("TMPDIR");
    root = std::string(tmp && *tmp ? tmp : "/tmp") + "/spade-envd-XXXXXX";
    if (mkdtemp(root.data()) == nullptr) {
      std::perror("spade-envd: mkdtemp");
      return 1;
    }
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
    int status = envd::Zygote(control, prelude, root, std::move(namespaces), namespaces_error).run();
    std::fflush(nullptr);
    _exit(status);  // skip interpreter finalisation: nothing to flush, and it can be slow
  } catch (const std::exception& e) {
    nlohmann::json error{{"op", "error"}, {"message", std::string("spade-envd failed to start: ") + e.what()}};
    write_frame(control, error.dump(), deadline_after(5));
    remove_tree(root);
    _exit(1);
  }
}
