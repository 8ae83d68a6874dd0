// Test helper for tests/trainer/test_distributed.cpp (not a test itself): one rank of a data-parallel
// GRPO run. Reads its place from the torchrun variables (no RANK: a single process), builds the random
// qwen3 fixture model (rank != 0 first scrambles its copy, so only the broadcast from rank 0 can make
// the replicas equal), takes its share of a fixed global batch of 12 samples (round robin by sample),
// runs 3 optimizer steps of trainer::grpo_update (AdamW) over Gloo, and writes JSON to argv[1]:
//   {"rank", "world_size", "initial": [...], "params": [...], "steps": [{stats}...]}
// where the parameter arrays are every parameter flattened in model->parameters() order.
// Usage: trainer_dp_worker OUT.json AGG_MODE [BUCKET_BYTES]
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/testing/random_model.h"
#include "trainer/distributed.h"
#include "trainer/grpo_update.h"

using namespace spade;

namespace {

// The fixed global batch: lengths, prompt/response split, advantages and off-policy rollout logprobs
// all vary so the normaliser, TIS and PPO clipping all matter. No RNG: the same on every rank.
std::vector<rollout::Sample> global_batch(int64_t vocab) {
  std::vector<rollout::Sample> out;
  for (int i = 0; i < 12; ++i) {
    rollout::Sample s;
    const int prompt = 2 + i % 3, response = 3 + (5 * i) % 9;
    std::vector<int64_t> p, r;
    std::vector<float> lp;
    for (int k = 0; k < prompt; ++k) p.push_back((7 * i + 3 * k + 1) % vocab);
    for (int k = 0; k < response; ++k) {
      r.push_back((11 * i + 5 * k + 2) % vocab);
      lp.push_back(-2.5f - 0.25f * static_cast<float>((i + k) % 5));  // sampler logprobs near log(1/37)
    }
    s.append_context(p);
    s.append_sampled(r, lp);
    s.advantage = (i % 3 == 0) ? 1.5 : (i % 3 == 1 ? -1.0 : 0.25);
    s.temperature = (i % 4 == 0) ? 0.7 : 1.0;
    s.env_id = "env" + std::to_string(i / 2);
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json flat_params(policy::Transformer& model) {
  std::vector<double> all;
  for (const torch::Tensor& p : model->parameters()) {
    torch::Tensor f = p.detach().to(torch::kDouble).reshape({-1}).contiguous();
    all.insert(all.end(), f.data_ptr<double>(), f.data_ptr<double>() + f.numel());
  }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.json AGG_MODE [BUCKET_BYTES]\n", argv[0]);
    return 2;
  }
  try {
    trainer::DistributedOptions dopt;
    dopt.backend = "gloo";
    dopt.timeout_s = 120;
    if (argc > 3) dopt.bucket_bytes = std::stoll(argv[3]);
    trainer::DistributedContext dist(trainer::distributed_env_from_process(), dopt);

    policy::Transformer model = fixtures::random_model("qwen3");  // sets 2 intra-op threads
    at::set_num_threads(1);
    if (dist.rank() != 0) model->init_weights(99, 0.3);  // a wrong copy: the broadcast must fix it
    dist.broadcast_tensors(model->parameters(), 0);

    std::vector<rollout::Sample> all = global_batch(model->config().vocab_size);
    std::vector<rollout::Sample> mine;
    for (size_t i : trainer::owned_indices(all.size(), dist.rank(), dist.world_size())) mine.push_back(all[i]);

    trainer::UpdateOptions o;
    o.loss.agg_mode = trainer::parse_agg_mode(argv[2]);
    o.micro_batch_tokens = 40;  // several micro-batches per rank
    o.grad_clip = 0.5;          // active here (norms are ~1-5): a per-rank clip would differ
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));

    nlohmann::json out;
    out["rank"] = dist.rank();
    out["world_size"] = dist.world_size();
    out["backend"] = dist.backend();
    out["initial"] = flat_params(model);
    out["steps"] = nlohmann::json::array();
    for (int step = 0; step < 3; ++step) {
      const trainer::UpdateStats s = trainer::grpo_update(model, opt, mine, o, &dist);
      out["steps"].push_back({{"pg_loss", s.pg_loss}, {"grad_norm", s.grad_norm}, {"num_tokens", s.num_tokens},
                              {"num_samples", s.num_samples}, {"pg_clipfrac", s.pg_clipfrac},
                              {"tis_mean", s.tis_mean}, {"entropy", s.entropy}});
    }
    out["params"] = flat_params(model);
    std::ofstream(argv[1]) << out.dump();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dp_worker: %s\n", e.what());
    return 1;
  }
}
