// Test helper for tests/trainer/test_distributed.cpp (not a test itself): one rank of a data-parallel
// GRPO run. Reads its place from the torchrun variables (no RANK: a single process), builds the random
// qwen3 fixture model (rank != 0 first scrambles its copy, so only the broadcast from rank 0 can make
// the replicas equal), takes its share of a fixed global batch of 12 samples (round robin by sample),
// runs 3 optimizer steps of trainer::grpo_update (AdamW) over Gloo, and writes JSON to argv[1]:
//   {"rank", "world_size", "initial": [...], "params": [...], "steps": [{stats}...]}
// where the parameter arrays are every parameter flattened in model->parameters() order.
// Usage: trainer_dp_worker OUT.json AGG_MODE [BUCKET_BYTES [SHARDING MODEL [STEPS SAVE_DIR LOAD_DIR [KL [PREFETCH]]]]]
// SHARDING (none | optimizer | gradients | full, trainer/sharding.h) picks the optimizer as the trainer does
// (trainer::make_optimizer), MODEL is qwen3 (the fixture) or qwen3_moe (4 experts, top-2); with them
// the JSON also has "total_numel", "state_bytes" (this rank's optimizer-state tensors: the shard's
// moments, or torch AdamW's exp_avg + exp_avg_sq), "grad_bytes" (the reduced gradient a sharded rank
// held after the last reduction), "grads_released" (no parameter keeps a .grad after the update), and
// for a sharded optimizer "param_bytes" (the parameters a rank keeps: its shard under full) and
// "peak_gathered_bytes" (full: the most gathered parameter bytes at once). Full turns on activation
// checkpointing, which it requires.
// STEPS optimizer steps instead of 3; a SAVE_DIR other than "-" receives each rank's optimizer shard
// (trainer/optimizer_shards.h) and rank 0's model.pt after them; a LOAD_DIR other than "-" restores
// both (re-sharding for this world size) before the steps. KL "kl" adds a KL penalty (loss.kl_coef 0.1,
// loss.kl_type's default) against a frozen reference (the same model family, init_weights(5, 0.3): other weights than the
// policy's), sharded over the ranks under full (trainer::shard_frozen_model); the JSON then also has
// "reference_bytes" (the reference's bytes this rank keeps: its shard under full, else all). PREFETCH
// "noprefetch" turns ZeRO-3's layer prefetch off; under full the JSON has "prefetched_gathers".
// With AGG_MODE "split" it instead runs the designer-phase exchanges of trainer/selfplay_dp.h
// (design_round_split over 5 requests, write_hints_split over 3 programs) with local functions that
// record which rank ran what with which seed, and writes {"rank","world_size","attempts","hints",
// "seed_used"} (attempts as design_attempt_to_json).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/testing/random_model.h"
#include "trainer/config_bridge.h"
#include "trainer/distributed.h"
#include "trainer/grpo_update.h"
#include "trainer/optimizer_shards.h"
#include "trainer/parameter_shards.h"
#include "trainer/sharded_optimizer.h"
#include "trainer/selfplay_dp.h"

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

// The whole parameters: under ZeRO-3 (sharding full) the model's own tensors are empty between steps,
// so they are all-gathered into a fresh copy (a collective: every rank calls this at the same point).
nlohmann::json whole_params(policy::Transformer& model, const torch::optim::Optimizer& opt) {
  const auto* sharded = dynamic_cast<const trainer::ShardedAdamW*>(&opt);
  if (!sharded || sharded->mode() != trainer::Sharding::Full) return flat_params(model);
  policy::Transformer copy(model->config());
  sharded->gather_parameters_into(copy->parameters());
  return flat_params(copy);
}

// A tiny qwen3_moe: 4 experts, top-2 (layer 0 dense, layer 1 sparse), so some experts get no token
// of a micro-batch and their gradients exist on some ranks only.
policy::Transformer moe_model() {
  at::set_num_threads(2);
  policy::ModelConfig c;
  c.model_type = "qwen3_moe";
  c.vocab_size = 37; c.hidden_size = 32; c.intermediate_size = 48; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 10000;
  c.qk_norm = true; c.tie_word_embeddings = true;
  c.num_experts = 4; c.num_experts_per_tok = 2; c.moe_intermediate_size = 24; c.mlp_only_layers = {0};
  policy::Transformer m(c);
  m->init_weights(11, 0.3);
  return m;
}

// The "split" mode: each local function tags its output with the rank and seed it ran with.
int run_split(const trainer::DistributedContext& dist, const std::string& out_path) {
  std::vector<rollout::DesignRequest> requests;
  for (int i = 0; i < 5; ++i) {
    rollout::DesignRequest r;
    r.slot = i;
    r.attempt = 1;
    r.skill = i % 2 ? "logic" : "math";
    r.doc_id = "doc" + std::to_string(10 + i);
    r.chat = {{"system", "s"}, {"user", "prompt " + std::to_string(i)}};
    requests.push_back(r);
  }
  nlohmann::json seeds = nlohmann::json::object();
  const auto local_round = [&](const std::vector<rollout::DesignRequest>& mine, uint64_t seed) {
    seeds["designer"] = seed;
    std::vector<rollout::DesignAttempt> out;
    for (const rollout::DesignRequest& r : mine) {
      rollout::DesignAttempt a;
      a.slot = r.slot;
      a.attempt = r.attempt;
      a.skill = r.skill;
      a.doc_id = r.doc_id;
      a.code = "class Game:  # by rank " + std::to_string(dist.rank()) + " from '" + r.chat[1].content + "'";
      a.report.admitted = r.slot % 2 == 0;
      a.report.reason = a.report.admitted ? "ok" : "no_env_class";
      a.report.gates.push_back({"load", a.report.admitted ? "pass" : "fail", a.report.reason, "detail", 0.125});
      a.sample.role = rollout::Role::Designer;
      a.sample.append_context({1, 2, 3});
      a.sample.append_sampled({4 + r.slot, 5}, {-0.1f * (r.slot + 1), -1.0f / 3.0f});  // non-dyadic floats
      out.push_back(std::move(a));
    }
    return out;
  };
  const auto local_hints = [&](const std::vector<std::string>& programs, uint64_t seed) {
    seeds["hints"] = seed;
    std::vector<std::string> out;
    for (const std::string& p : programs) out.push_back("hint for " + p + " by rank " + std::to_string(dist.rank()));
    return out;
  };
  nlohmann::json out;
  out["rank"] = dist.rank();
  out["world_size"] = dist.world_size();
  out["attempts"] = nlohmann::json::array();
  for (const rollout::DesignAttempt& a : trainer::design_round_split(dist, requests, 1234, local_round))
    out["attempts"].push_back(trainer::design_attempt_to_json(a));
  out["hints"] = trainer::write_hints_split(dist, {"p0", "p1", "p2"}, 99, local_hints);
  out["seed_used"] = seeds;
  std::ofstream(out_path) << out.dump();
  return 0;
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
    if (argc > 3 && std::stoll(argv[3]) > 0) dopt.bucket_bytes = std::stoll(argv[3]);
    trainer::DistributedContext dist(trainer::distributed_env_from_process(), dopt);
    if (std::string(argv[2]) == "split") return run_split(dist, argv[1]);

    const std::string sharding = argc > 4 ? argv[4] : "none";
    const std::string family = argc > 5 ? argv[5] : "qwen3";
    policy::Transformer model = family == "qwen3_moe" ? moe_model() : fixtures::random_model("qwen3");  // sets 2 intra-op threads
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
    trainer::OptimConfig oc;
    oc.lr = 1e-2;
    oc.weight_decay = 0.1;
    const int num_steps = argc > 6 ? std::stoi(argv[6]) : 3;
    const std::string save_dir = argc > 7 ? argv[7] : "-", load_dir = argc > 8 ? argv[8] : "-";
    const bool full = sharding == "full";
    int64_t reference_bytes = 0;
    if (argc > 9 && std::string(argv[9]) == "kl") {
      policy::Transformer reference = family == "qwen3_moe" ? moe_model() : fixtures::random_model("qwen3");
      at::set_num_threads(1);
      reference->init_weights(5, 0.3);
      for (torch::Tensor& p : reference->parameters()) {
        p.requires_grad_(false);
        reference_bytes += 4 * p.numel();
      }
      if (full) reference_bytes = trainer::shard_frozen_model(reference, dist)->shard_bytes();
      o.loss.kl_coef = 0.1;
      o.reference = reference;
    }
    // ZeRO-3 shards the weights when the optimizer is made: they are loaded first (the other modes load
    // after it, which moves ZeRO-2's gradient hooks onto the new accumulators).
    if (load_dir != "-" && full) torch::load(model, load_dir + "/model.pt");
    if (full) model->set_activation_checkpointing(true);  // required: layers recompute in backward
    const bool prefetch = !(argc > 10 && std::string(argv[10]) == "noprefetch");
    const std::unique_ptr<torch::optim::Optimizer> optimizer =
        trainer::make_optimizer(model, oc, sharding, dist, c10::nullopt, prefetch);
    torch::optim::Optimizer& opt = *optimizer;
    auto* sharded = dynamic_cast<trainer::ShardedAdamW*>(&opt);
    if ((save_dir != "-" || load_dir != "-") && !sharded) throw std::runtime_error("SAVE_DIR / LOAD_DIR need a sharding");
    if (load_dir != "-") {
      if (!full) torch::load(model, load_dir + "/model.pt");
      trainer::load_optimizer_shards(*sharded, load_dir);
    }

    nlohmann::json out;
    out["rank"] = dist.rank();
    out["world_size"] = dist.world_size();
    out["backend"] = dist.backend();
    out["initial"] = whole_params(model, opt);
    out["steps"] = nlohmann::json::array();
    for (int step = 0; step < num_steps; ++step) {
      const trainer::UpdateStats s = trainer::grpo_update(model, opt, mine, o, &dist);
      out["steps"].push_back({{"pg_loss", s.pg_loss}, {"grad_norm", s.grad_norm}, {"num_tokens", s.num_tokens},
                              {"num_samples", s.num_samples}, {"pg_clipfrac", s.pg_clipfrac},
                              {"tis_mean", s.tis_mean}, {"entropy", s.entropy}, {"kl", s.kl}});
    }
    out["params"] = whole_params(model, opt);
    if (save_dir != "-") {
      std::filesystem::create_directories(save_dir);
      trainer::save_optimizer_shard(*sharded, save_dir);
      policy::Transformer whole = model;
      if (full) {  // the weights are sharded: all-gathered into a copy (every rank takes part)
        whole = policy::Transformer(model->config());
        sharded->gather_parameters_into(whole->parameters());
      }
      if (dist.is_main()) torch::save(whole, save_dir + "/model.pt");
      dist.barrier();
    }
    int64_t total = 0, state_bytes = 0, grad_bytes = 0;
    bool released = true;
    for (const torch::Tensor& p : model->parameters()) {
      total += p.numel();
      released = released && !p.grad().defined();
    }
    state_bytes = trainer::adamw_state_bytes(opt);
    if (const auto* sharded = dynamic_cast<const trainer::ShardedAdamW*>(&opt)) {
      grad_bytes = sharded->gradient_bytes();
      total = sharded->total_numel();  // (under ZeRO-3 the model's own tensors are empty here)
      out["peak_full_grad_bytes"] = sharded->peak_full_gradient_bytes();
      out["param_bytes"] = sharded->parameter_bytes();
      out["peak_gathered_bytes"] = sharded->peak_gathered_parameter_bytes();
      if (full) out["prefetched_gathers"] = sharded->parameter_shards().prefetched_gathers();
    }
    out["total_numel"] = total;
    out["reference_bytes"] = reference_bytes;
    out["num_layers"] = model->config().num_hidden_layers;
    out["state_bytes"] = state_bytes;
    out["grad_bytes"] = grad_bytes;
    out["grads_released"] = released;
    std::ofstream(argv[1]) << out.dump();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dp_worker: %s\n", e.what());
    return 1;
  }
}
