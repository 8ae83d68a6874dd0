#include "trainer/distributed.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>  // ReduceOp, *Options: not only through a ProcessGroup header
#ifdef SPADE_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "common/error.h"
#include "policy/torch_compat.h"

namespace spade::trainer {

namespace {

// ---- environment ------------------------------------------------------------------------------

int env_int(const EnvLookup& getenv, const std::string& name, std::optional<int> fallback) {
  const std::optional<std::string> v = getenv(name);
  if (!v || v->empty()) {
    if (fallback) return *fallback;
    throw Error("distributed: environment variable " + name +
                " is not set (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; "
                "under SLURM export MASTER_ADDR and MASTER_PORT, see scripts/launch/slurm.sbatch)");
  }
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v->size() || x < 0 || x > (1 << 30))
    throw Error("distributed: environment variable " + name + "='" + *v + "' is not a non-negative integer");
  return static_cast<int>(x);
}

std::string env_string(const EnvLookup& getenv, const std::string& name) {
  const std::optional<std::string> v = getenv(name);
  if (!v || v->empty())
    throw Error("distributed: environment variable " + name + " is not set but WORLD_SIZE > 1 needs it " +
                "(the TCPStore rendezvous address; torchrun sets it, under SLURM export it in the batch " +
                "script, see scripts/launch/slurm.sbatch)");
  return *v;
}

// ---- process groups -------------------------------------------------------------------------

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace

/// The collectives of one backend, over one tensor at a time (blocking).
struct DistributedContext::Impl {
  virtual ~Impl() = default;
  virtual std::string name() const = 0;
  virtual at::Device device() const = 0;
  virtual void allreduce(at::Tensor& t, c10d::ReduceOp op) = 0;
  virtual void broadcast(at::Tensor& t, int root) = 0;
  virtual void allgather(std::vector<at::Tensor>& out, at::Tensor& in) = 0;
  // Issues the allgather into `out` (tensors shaped like `in`) and returns its wait.
  virtual std::function<void()> allgather_start(std::vector<at::Tensor>& out, at::Tensor& in) = 0;
  virtual void reduce(at::Tensor& t, int root) = 0;
  // out = sum over ranks of in[rank]; in: world_size tensors shaped like out
  virtual void reduce_scatter(at::Tensor& out, std::vector<at::Tensor>& in) = 0;
  virtual void barrier() = 0;
};

void check_backend_name(const std::string& name) {
  if (name != "auto" && name != "gloo" && name != "nccl")
    throw Error("distributed backend must be auto, gloo or nccl, not '" + name + "'");
}

namespace {

// Written against the concrete group type, so the same code serves LibTorch 1.13 (groups derive from
// c10d::ProcessGroup) and 2.x (they derive from c10d::Backend) without naming the base class.
template <class Group>
struct GroupImpl : DistributedContext::Impl {
  c10::intrusive_ptr<c10d::Store> store;  // kept alive for the group's lifetime
  c10::intrusive_ptr<Group> group;
  std::string backend;
  at::Device dev;
  GroupImpl(c10::intrusive_ptr<c10d::Store> s, c10::intrusive_ptr<Group> g, std::string b, at::Device d)
      : store(std::move(s)), group(std::move(g)), backend(std::move(b)), dev(d) {}
  std::string name() const override { return backend; }
  at::Device device() const override { return dev; }
  void allreduce(at::Tensor& t, c10d::ReduceOp op) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = op;
    group->allreduce(v, o)->wait();
  }
  void broadcast(at::Tensor& t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.rootTensor = 0;
    group->broadcast(v, o)->wait();
  }
  void allgather(std::vector<at::Tensor>& out, at::Tensor& in) override {
    std::vector<std::vector<at::Tensor>> outputs{out};
    std::vector<at::Tensor> inputs{in};
    group->allgather(outputs, inputs)->wait();
    out = outputs[0];
  }
  std::function<void()> allgather_start(std::vector<at::Tensor>& out, at::Tensor& in) override {
    auto outputs = std::make_shared<std::vector<std::vector<at::Tensor>>>(std::vector<std::vector<at::Tensor>>{out});
    auto inputs = std::make_shared<std::vector<at::Tensor>>(std::vector<at::Tensor>{in});
    auto work = group->allgather(*outputs, *inputs);  // writes into out's tensors (the same storages)
    return [work, outputs, inputs] { work->wait(); };
  }
  void reduce(at::Tensor& t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::ReduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    o.rootRank = root;
    o.rootTensor = 0;
    group->reduce(v, o)->wait();
  }
  void reduce_scatter(at::Tensor& out, std::vector<at::Tensor>& in) override {
    if (backend == "nccl") {
      std::vector<at::Tensor> outputs{out};
      std::vector<std::vector<at::Tensor>> inputs{in};
      group->reduce_scatter(outputs, inputs)->wait();
      return;
    }
    // Gloo in LibTorch 1.13 throws "ProcessGroupGloo does not support reduce_scatter": one reduce
    // per owner instead (the same bytes on the wire as a ring reduce-scatter's, W - 1 more rounds).
    for (size_t r = 0; r < in.size(); ++r) {
      std::vector<at::Tensor> v{in[r]};
      c10d::ReduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      o.rootRank = static_cast<int64_t>(r);
      o.rootTensor = 0;
      group->reduce(v, o)->wait();
      if (static_cast<int>(r) == group->getRank()) out.copy_(v[0]);
    }
  }
  void barrier() override { group->barrier()->wait(); }
};

std::string resolve_backend(const std::string& requested) {
  check_backend_name(requested);
  std::string b = requested;
  if (b == "auto") {
#ifdef USE_C10D_NCCL
    b = torch::cuda::is_available() ? "nccl" : "gloo";
#else
    b = "gloo";
#endif
  }
#ifndef SPADE_WITH_GLOO
  if (b == "gloo")
    throw Error("distributed: this spade was built without Gloo (install libgloo-dev and rebuild: "
                "gloo's headers are looked for at configure time)");
#endif
#ifndef USE_C10D_NCCL
  if (b == "nccl")
    throw Error("distributed: this spade was built without NCCL (a CUDA LibTorch build enables it); "
                "use backend gloo");
#endif
  return b;
}

}  // namespace

DistributedEnv parse_distributed_env(const EnvLookup& getenv) {
  DistributedEnv e;
  if (getenv("RANK")) {
    e.launcher = "torchrun";
    e.rank = env_int(getenv, "RANK", std::nullopt);
    e.world_size = env_int(getenv, "WORLD_SIZE", std::nullopt);
    e.local_rank = env_int(getenv, "LOCAL_RANK", 0);
    e.local_world_size = env_int(getenv, "LOCAL_WORLD_SIZE", 1);
    const std::optional<std::string> agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    e.agent_store = agent && *agent == "True";
    if (e.agent_store) {
      const std::optional<std::string> attempt = getenv("TORCHELASTIC_RESTART_COUNT");
      e.store_prefix = "/worker/attempt_" + (attempt && !attempt->empty() ? *attempt : std::string("0"));
    }
  } else if (getenv("SLURM_PROCID")) {
    e.launcher = "slurm";
    e.rank = env_int(getenv, "SLURM_PROCID", std::nullopt);
    e.world_size = env_int(getenv, "SLURM_NTASKS", std::nullopt);
    e.local_rank = env_int(getenv, "SLURM_LOCALID", 0);
    e.local_world_size = 1;  // SLURM_TASKS_PER_NODE is a list like "2(x3)": not needed here
  } else if (getenv("WORLD_SIZE") && env_int(getenv, "WORLD_SIZE", 1) > 1) {
    throw Error("distributed: WORLD_SIZE is " + *getenv("WORLD_SIZE") +
                " but RANK is not set (launch with torchrun, srun, or `spade train --nproc N`)");
  }
  if (e.world_size < 1)
    throw Error("distributed: " + std::string(e.launcher == "slurm" ? "SLURM_NTASKS" : "WORLD_SIZE") +
                " must be >= 1, got 0");
  if (e.rank >= e.world_size)
    throw Error("distributed: " + std::string(e.launcher == "slurm" ? "SLURM_PROCID" : "RANK") + "=" +
                std::to_string(e.rank) + " is not below " +
                std::string(e.launcher == "slurm" ? "SLURM_NTASKS" : "WORLD_SIZE") + "=" +
                std::to_string(e.world_size));
  if (e.local_world_size < 1) throw Error("distributed: LOCAL_WORLD_SIZE must be >= 1, got 0");
  if (e.launcher == "torchrun" && e.local_rank >= e.local_world_size && getenv("LOCAL_WORLD_SIZE"))
    throw Error("distributed: LOCAL_RANK=" + std::to_string(e.local_rank) + " is not below LOCAL_WORLD_SIZE=" +
                std::to_string(e.local_world_size));
  if (e.world_size > 1) {
    e.master_addr = env_string(getenv, "MASTER_ADDR");
    e.master_port = env_int(getenv, "MASTER_PORT", std::nullopt);
    if (e.master_port < 1 || e.master_port > 65535)
      throw Error("distributed: MASTER_PORT=" + std::to_string(e.master_port) + " is not a port (1..65535)");
  }
  return e;
}

DistributedEnv distributed_env_from_process() {
  return parse_distributed_env([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
}

DistributedContext::DistributedContext() = default;
DistributedContext::~DistributedContext() = default;

DistributedContext::DistributedContext(const DistributedEnv& env, const DistributedOptions& options)
    : env_(env), options_(options) {
  if (options.bucket_bytes <= 0) throw Error("distributed: bucket_bytes must be > 0");
  if (env.world_size <= 1 && !options.group_at_world_size_1) return;
  const std::string backend = resolve_backend(options.backend);
  const bool in_process = env.world_size == 1 && env.master_addr.empty();
  const std::string where = in_process ? "an in-process HashStore" : env.master_addr + ":" + std::to_string(env.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  if (in_process) store = c10::make_intrusive<c10d::HashStore>();
  else try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = !env.agent_store && env.rank == 0;
    so.numWorkers = env.world_size;
    so.waitWorkers = true;
    so.timeout = to_ms(options.timeout_s);
    so.multiTenant = true;  // as torch's env:// rendezvous does for the rank-0 store
    compat::use_classic_tcpstore(so);
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    store = tcp;
    if (env.agent_store) store = c10::make_intrusive<c10d::PrefixStore>(env.store_prefix, tcp);
  } catch (const std::exception& e) {
    throw Error("distributed: rank " + std::to_string(env.rank) + " could not join the TCPStore at " + where +
                (env.agent_store ? " (hosted by torchrun's agent)" : env.rank == 0 ? " (hosting it)" : "") +
                " within " + std::to_string(static_cast<int>(options.timeout_s)) + " s: " + e.what());
  }
  try {
    if (backend == "gloo") {
#ifdef SPADE_WITH_GLOO
      // As torch.distributed does: GLOO_SOCKET_IFNAME (comma-separated) picks interfaces, else the
      // address this host name resolves to, falling back to loopback.
      auto o = c10d::ProcessGroupGloo::Options::create(to_ms(options.timeout_s));
      if (const char* ifs = std::getenv("GLOO_SOCKET_IFNAME"); ifs && *ifs) {
        std::stringstream ss(ifs);
        for (std::string name; std::getline(ss, name, ',');)
          if (!name.empty()) o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
      } else {
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      o->threads = static_cast<int>(o->devices.size()) * 2;
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, o);
      impl_ = std::make_unique<GroupImpl<c10d::ProcessGroupGloo>>(store, group, "gloo", at::Device(at::kCPU));
#endif
    } else {
#ifdef USE_C10D_NCCL
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = to_ms(options.timeout_s);
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, o);
      impl_ = std::make_unique<GroupImpl<c10d::ProcessGroupNCCL>>(
          store, group, "nccl", at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank)));
#endif
    }
  } catch (const std::exception& e) {
    throw Error("distributed: rank " + std::to_string(env.rank) + " could not create the " + backend +
                " process group over the store at " + where + ": " + e.what());
  }
  barrier();  // every rank is in before anyone starts work
}

std::string DistributedContext::backend() const { return impl_ ? impl_->name() : "none"; }

std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes) {
  if (bucket_bytes <= 0) throw Error("plan_buckets: bucket_bytes must be > 0");
  std::vector<std::vector<size_t>> buckets;
  std::map<std::string, std::pair<size_t, int64_t>> open;  // dtype/device -> (bucket index, bytes)
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const std::string key = std::string(c10::toString(t.scalar_type())) + "/" + t.device().str();
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    auto it = open.find(key);
    if (it != open.end() && it->second.second + bytes <= bucket_bytes) {
      buckets[it->second.first].push_back(i);
      it->second.second += bytes;
      continue;
    }
    buckets.push_back({i});
    open[key] = {buckets.size() - 1, bytes};
  }
  return buckets;
}

std::vector<size_t> owned_indices(size_t n, int rank, int world_size) {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(rank); i < n; i += static_cast<size_t>(std::max(1, world_size)))
    out.push_back(i);
  return out;
}

void DistributedContext::all_reduce_gradients(const std::vector<at::Tensor>& params) const {
  if (!impl_) return;
  at::NoGradGuard no_grad;
  // Agree on which parameters have a gradient (a rank may have had no trainable sample).
  std::vector<double> has(params.size());
  for (size_t i = 0; i < params.size(); ++i) has[i] = params[i].grad().defined() ? 1.0 : 0.0;
  has = all_reduce_max(has);
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    if (has[i] == 0.0) continue;
    at::Tensor p = params[i];
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    grads.push_back(p.grad());
  }
  const bool gloo = impl_->name() == "gloo";
  for (const std::vector<size_t>& bucket : plan_buckets(grads, options_.bucket_bytes)) {
    std::vector<at::Tensor> flat_parts;
    for (size_t i : bucket) flat_parts.push_back(grads[i].reshape({-1}));
    at::Tensor flat = bucket.size() == 1 ? flat_parts[0].contiguous().clone() : at::cat(flat_parts);
    const at::ScalarType dtype = flat.scalar_type();
    if (gloo && dtype == at::kBFloat16) flat = flat.to(at::kFloat);
    at::Tensor comm = flat.device() == impl_->device() ? flat : flat.to(impl_->device());
    impl_->allreduce(comm, c10d::ReduceOp::SUM);
    at::Tensor back = comm.to(grads[bucket[0]].device(), dtype);
    int64_t offset = 0;
    for (size_t i : bucket) {
      const int64_t n = grads[i].numel();
      grads[i].copy_(back.narrow(0, offset, n).view_as(grads[i]));
      offset += n;
    }
  }
}

namespace {
std::vector<double> reduce_doubles(DistributedContext::Impl* impl, const std::vector<double>& values,
                                   c10d::ReduceOp op) {
  if (!impl || values.empty()) return values;
  at::Tensor t = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(impl->device());
  impl->allreduce(t, op);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}
}  // namespace

std::vector<double> DistributedContext::all_reduce_sum(const std::vector<double>& values) const {
  return reduce_doubles(impl_.get(), values, c10d::ReduceOp::SUM);
}

std::vector<double> DistributedContext::all_reduce_max(const std::vector<double>& values) const {
  return reduce_doubles(impl_.get(), values, c10d::ReduceOp::MAX);
}

void DistributedContext::broadcast_tensors(const std::vector<at::Tensor>& tensors, int root) const {
  if (!impl_) return;
  at::NoGradGuard no_grad;
  for (const at::Tensor& t : tensors) {
    at::Tensor data = t.detach();
    const bool in_place = data.is_contiguous() && data.device() == impl_->device();
    at::Tensor comm = in_place ? data : data.contiguous().to(impl_->device());
    impl_->broadcast(comm, root);
    if (!in_place) data.copy_(comm);
  }
}

std::string DistributedContext::broadcast_string(const std::string& text, int root) const {
  if (!impl_) return text;
  const auto u8 = at::TensorOptions().dtype(at::kByte);
  at::Tensor len = at::tensor({static_cast<int64_t>(text.size())}, at::TensorOptions().dtype(at::kLong))
                       .to(impl_->device());
  impl_->broadcast(len, root);
  const int64_t n = len.cpu().item<int64_t>();
  at::Tensor buf = at::empty({std::max<int64_t>(n, 1)}, u8);
  if (rank() == root) std::memcpy(buf.data_ptr<uint8_t>(), text.data(), text.size());
  buf = buf.to(impl_->device());
  impl_->broadcast(buf, root);
  buf = buf.cpu();
  return std::string(reinterpret_cast<const char*>(buf.data_ptr<uint8_t>()), static_cast<size_t>(n));
}

std::vector<std::string> DistributedContext::all_gather_strings(const std::string& text) const {
  if (!impl_) return {text};
  const int W = world_size();
  const auto i64 = at::TensorOptions().dtype(at::kLong);
  at::Tensor len = at::tensor({static_cast<int64_t>(text.size())}, i64).to(impl_->device());
  std::vector<at::Tensor> lens;
  for (int r = 0; r < W; ++r) lens.push_back(at::empty({1}, i64).to(impl_->device()));
  impl_->allgather(lens, len);
  std::vector<int64_t> sizes;
  int64_t longest = 1;
  for (const at::Tensor& l : lens) {
    sizes.push_back(l.cpu().item<int64_t>());
    longest = std::max(longest, sizes.back());
  }
  const auto u8 = at::TensorOptions().dtype(at::kByte);
  at::Tensor mine = at::zeros({longest}, u8);
  std::memcpy(mine.data_ptr<uint8_t>(), text.data(), text.size());
  mine = mine.to(impl_->device());
  std::vector<at::Tensor> all;
  for (int r = 0; r < W; ++r) all.push_back(at::empty({longest}, u8).to(impl_->device()));
  impl_->allgather(all, mine);
  std::vector<std::string> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor b = all[r].cpu();
    out.emplace_back(reinterpret_cast<const char*>(b.data_ptr<uint8_t>()), static_cast<size_t>(sizes[r]));
  }
  return out;
}

std::vector<at::Tensor> DistributedContext::all_gather_tensors(const at::Tensor& tensor) const {
  return all_gather_start(tensor).wait();
}

DistributedContext::PendingGather DistributedContext::all_gather_start(const at::Tensor& tensor) const {
  PendingGather p;
  p.valid_ = true;
  if (!impl_) {
    p.out_ = {tensor};
    return p;
  }
  at::Tensor in = tensor.contiguous().to(impl_->device());
  for (int r = 0; r < world_size(); ++r) p.out_.push_back(at::empty_like(in));
  p.wait_ = impl_->allgather_start(p.out_, in);
  p.back_ = tensor.device();
  return p;
}

std::vector<at::Tensor> DistributedContext::PendingGather::wait() {
  if (!valid_) throw Error("PendingGather::wait: nothing pending (waited already, or never started)");
  if (wait_) wait_();
  wait_ = nullptr;
  valid_ = false;
  std::vector<at::Tensor> out = std::move(out_);
  if (back_)
    for (at::Tensor& t : out) t = t.to(*back_);
  return out;
}

DistributedContext::PendingGather::PendingGather(PendingGather&& other) noexcept
    : wait_(std::move(other.wait_)), out_(std::move(other.out_)), back_(other.back_), valid_(other.valid_) {
  other.wait_ = nullptr;
  other.valid_ = false;
}

DistributedContext::PendingGather& DistributedContext::PendingGather::operator=(PendingGather&& other) noexcept {
  if (this == &other) return *this;
  finish();  // an unwaited collective finishes before its buffers are replaced
  wait_ = std::move(other.wait_);
  out_ = std::move(other.out_);
  back_ = other.back_;
  valid_ = other.valid_;
  other.wait_ = nullptr;
  other.valid_ = false;
  return *this;
}

DistributedContext::PendingGather::~PendingGather() { finish(); }

void DistributedContext::PendingGather::finish() noexcept {
  if (!wait_) return;
  try {
    wait_();  // an in-flight collective must finish before its buffers go
  } catch (...) {
  }
  wait_ = nullptr;
  valid_ = false;
}

at::Tensor DistributedContext::reduce_scatter(const std::vector<at::Tensor>& chunks) const {
  if (static_cast<int>(chunks.size()) != world_size())
    throw Error("reduce_scatter: " + std::to_string(chunks.size()) + " chunks for world size " +
                std::to_string(world_size()));
  if (!impl_) return chunks[0];
  std::vector<at::Tensor> in;
  for (const at::Tensor& c : chunks) in.push_back(c.contiguous().to(impl_->device()).clone());
  at::Tensor out = at::empty_like(in[0]);
  impl_->reduce_scatter(out, in);
  return out.to(chunks[0].device());
}

void DistributedContext::reduce(at::Tensor& tensor, int root) const {
  if (root < 0 || root >= world_size())
    throw Error("reduce: root " + std::to_string(root) + " outside [0, " + std::to_string(world_size()) + ")");
  if (!impl_) return;
  if (tensor.is_contiguous() && tensor.device() == impl_->device()) {
    impl_->reduce(tensor, root);
    return;
  }
  at::Tensor t = tensor.contiguous().to(impl_->device());
  impl_->reduce(t, root);
  if (rank() == root) tensor.copy_(t);
}

void DistributedContext::barrier() const {
  if (impl_) impl_->barrier();
}

}  // namespace spade::trainer
