// Data parallelism over c10d process groups (docs/design.md, Distributed; issue 5): Gloo on CPU, NCCL on
// CUDA (CUDA builds only), rendezvous through a c10d::TCPStore described by the torchrun environment
// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK) or, when RANK is absent, by SLURM's
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; MASTER_ADDR / MASTER_PORT exported by the batch script).
//
// A DistributedContext of world size 1 has no process group at all: every collective is the identity,
// so single-process code paths pay nothing. Collectives are blocking, issued in the same order on every
// rank (like torch.distributed): a rank that skips one deadlocks the others until the timeout.
// A context is not thread-safe; use it from the training thread only.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spade::trainer {

/// Where this process sits in the job, as read from the environment.
struct DistributedEnv {
  int rank = 0;              // global rank in [0, world_size)
  int world_size = 1;
  int local_rank = 0;        // rank on this node (selects the GPU under NCCL)
  int local_world_size = 1;  // ranks on this node (LOCAL_WORLD_SIZE; 1 when unknown)
  std::string master_addr;   // host of the TCPStore (world_size > 1 only)
  int master_port = 0;
  // torchrun with its default static rendezvous hosts the TCPStore in its agent and says so with
  // TORCHELASTIC_USE_AGENT_STORE=True: every rank is then a client, under the key prefix
  // "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>" (torch/distributed/rendezvous.py,
  // _create_c10d_store). Otherwise rank 0 hosts the store.
  bool agent_store = false;
  std::string store_prefix;
  std::string launcher = "single";  // "torchrun" (RANK set), "slurm" (SLURM_PROCID), "single"
};

/// Looks one environment variable up: its value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// Reads the job layout through `getenv`. RANK present: torchrun variables (WORLD_SIZE, MASTER_ADDR,
/// MASTER_PORT required; LOCAL_RANK, LOCAL_WORLD_SIZE default 0 / 1). Else SLURM_PROCID present:
/// rank = SLURM_PROCID, world = SLURM_NTASKS, local rank = SLURM_LOCALID. Else world size 1.
/// MASTER_ADDR / MASTER_PORT are required only when world_size > 1.
/// Throws spade::Error naming the variable for a missing required one, a non-integer, RANK >=
/// WORLD_SIZE, a negative value, WORLD_SIZE < 1, LOCAL_RANK >= LOCAL_WORLD_SIZE, or a port outside
/// 1..65535.
DistributedEnv parse_distributed_env(const EnvLookup& getenv);

/// parse_distributed_env over this process's environment (std::getenv).
DistributedEnv distributed_env_from_process();

/// Checks a backend name (distributed.backend, DistributedOptions::backend): "auto", "gloo" or "nccl".
/// Throws spade::Error naming `name` and the three names otherwise. Whether this build has the named
/// backend is checked when the group is created.
void check_backend_name(const std::string& name);

struct DistributedOptions {
  std::string backend = "auto";        // "gloo" | "nccl" | "auto" (nccl when built with it and CUDA
                                       // is available, else gloo)
  int64_t bucket_bytes = 25ll << 20;   // gradient bucket size: torch DDP's bucket_cap_mb default, 25 MiB
  double timeout_s = 1800;             // store and collective timeout: torch's default_pg_timeout
                                       // (30 min); rank 0 alone runs the cold start meanwhile
  bool group_at_world_size_1 = false;  // create the process group even for a single rank (over an
                                       // in-process c10d::HashStore when MASTER_ADDR is unset): the GPU
                                       // check exercises NCCL this way (scripts/gpu/); active() is then true
};

/// One process's membership in a data-parallel job. Not copyable; not thread-safe.
class DistributedContext {
 public:
  /// World size 1, no process group: every collective returns its input.
  DistributedContext();
  /// Joins the job described by `env`: a TCPStore rendezvous (rank 0 hosts unless env.agent_store),
  /// then a Gloo or NCCL process group. For env.world_size == 1 this is the single-process context,
  /// unless options.group_at_world_size_1 (then a group of one rank, active()).
  /// Throws spade::Error when the backend is unknown or not compiled in, or the rendezvous fails
  /// (the message names MASTER_ADDR:MASTER_PORT and the timeout).
  DistributedContext(const DistributedEnv& env, const DistributedOptions& options = {});
  ~DistributedContext();
  DistributedContext(const DistributedContext&) = delete;
  DistributedContext& operator=(const DistributedContext&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  const DistributedEnv& env() const { return env_; }
  bool is_main() const { return env_.rank == 0; }  // the rank that writes logs, files, checkpoints
  bool active() const { return env_.world_size > 1 || impl_ != nullptr; }
  std::string backend() const;                      // "gloo", "nccl", or "none"
  int64_t bucket_bytes() const { return options_.bucket_bytes; }

  /// Sums the gradients of `params` over all ranks, in place. Gradients are flattened into buckets of
  /// at most bucket_bytes (a larger tensor forms its own bucket), one dtype and device per bucket, one
  /// all-reduce per bucket (torch DDP's bucketing). Under Gloo a bfloat16 bucket is reduced in float32
  /// (Gloo 2022 lacks a bfloat16 sum) and cast back. Agreement on which parameters have a gradient: a
  /// parameter whose grad is undefined here but defined on another rank gets a zero gradient first, so
  /// every rank ends with the same set (the one a single process on the whole batch would have).
  void all_reduce_gradients(const std::vector<at::Tensor>& params) const;

  /// Element-wise sum / max of `values` over all ranks (float64, so integer counts below 2^53 are exact).
  std::vector<double> all_reduce_sum(const std::vector<double>& values) const;
  std::vector<double> all_reduce_max(const std::vector<double>& values) const;

  /// Copies rank `root`'s values of `tensors` (e.g. the parameters) into every rank's, in place.
  void broadcast_tensors(const std::vector<at::Tensor>& tensors, int root = 0) const;

  /// Rank `root`'s `text` on every rank.
  std::string broadcast_string(const std::string& text, int root = 0) const;

  /// Every rank's `text`, indexed by rank, on every rank.
  std::vector<std::string> all_gather_strings(const std::string& text) const;

  /// Every rank's `tensor`, indexed by rank, on every rank (c10d allgather). `tensor` must have the
  /// same shape and dtype on every rank (pad a shorter one); the results live on its device.
  /// World size 1: {tensor}. = all_gather_start(tensor).wait().
  std::vector<at::Tensor> all_gather_tensors(const at::Tensor& tensor) const;

  /// An all-gather issued by all_gather_start and not yet waited for: it runs (Gloo: on the group's
  /// worker threads; NCCL: on its stream) while the caller computes. wait() (once) blocks until it is
  /// done and returns what all_gather_tensors returns. Dropping it unwaited waits first.
  class PendingGather {
   public:
    PendingGather() = default;
    PendingGather(PendingGather&& other) noexcept;
    PendingGather& operator=(PendingGather&& other) noexcept;  // waits for this one's collective first
    ~PendingGather();
    std::vector<at::Tensor> wait();
    bool valid() const { return valid_; }

   private:
    friend class DistributedContext;
    void finish() noexcept;       // waits for an unwaited collective (errors dropped)
    std::function<void()> wait_;  // the collective's wait (empty at world size 1)
    std::vector<at::Tensor> out_;
    c10::optional<at::Device> back_;  // where the results go (the input's device)
    bool valid_ = false;
  };
  /// Issues the all-gather of `tensor` now, in this rank's collective order (every rank must issue the
  /// same collectives in the same order, started ones included), without waiting for it.
  PendingGather all_gather_start(const at::Tensor& tensor) const;

  /// Reduce-scatter (SUM): `chunks` holds world_size tensors of one shape and dtype, chunk r meant
  /// for rank r; returns the sum over all ranks of their chunk[rank()] (on the chunks' device).
  /// NCCL: one reduce_scatter. Gloo (LibTorch 1.13's ProcessGroupGloo has no reduce_scatter): one
  /// reduce per chunk, rooted at its owner, so a rank keeps only its own chunk's sum as well.
  /// World size 1: chunks[0]. Throws spade::Error when chunks.size() != world_size().
  at::Tensor reduce_scatter(const std::vector<at::Tensor>& chunks) const;

  /// Sums `tensor` (one shape and dtype on every rank) over all ranks into rank `root`'s `tensor`, in
  /// place (c10d reduce, SUM); on the other ranks its values afterwards are unspecified (scratch).
  /// World size 1: nothing to do. Throws spade::Error for a root outside [0, world_size).
  void reduce(at::Tensor& tensor, int root) const;

  /// Returns once every rank has called it.
  void barrier() const;

  struct Impl;  // the process group (distributed.cpp)

 private:
  DistributedEnv env_;
  DistributedOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// Groups tensor indices into all-reduce buckets: consecutive tensors of one dtype and device, each
/// bucket at most `bucket_bytes` unless a single tensor is larger (then it is alone). Tensors keep
/// their relative order within a dtype. Throws spade::Error when bucket_bytes <= 0.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes);

/// The indices [0, n) this rank owns when n items are dealt round robin over world_size ranks
/// (i mod world_size == rank): the split of whole groups (environments) and of designer samples.
std::vector<size_t> owned_indices(size_t n, int rank, int world_size);

}  // namespace spade::trainer
