#include "trainer/train.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/atomic_file.h"
#include "common/error.h"
#include "envsandbox/sandbox.h"
#include "policy/chat_formats.h"
#include "policy/checkpoint.h"
#include "rollout/prompts.h"
#include "trainer/checkpointing.h"
#include "trainer/config_bridge.h"
#include "trainer/config_checks.h"
#include "trainer/config_model.h"
#include "trainer/device.h"
#include "trainer/distributed.h"
#include "trainer/parameter_shards.h"
#include "trainer/run_open.h"
#include "trainer/selfplay.h"
#include "trainer/tb_writer.h"
#include "trainer/warm_start.h"

namespace fs = std::filesystem;

namespace spade::trainer {

namespace {

std::string fmt(const char* format, double a = 0, double b = 0, double c = 0, double d = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

nlohmann::json warm_start_json(const WarmStartStats& ws, const Config& config) {
  return {{"steps", ws.steps},
          {"seconds", ws.seconds},
          {"stopped_by", ws.stopped_by},
          {"max_steps", config.warm_start.max_steps},
          {"max_seconds", config.warm_start.max_seconds},
          {"first_loss", ws.first_loss},
          {"last_loss", ws.last_loss},
          {"tokens", ws.tokens},
          {"examples", {{"designer", ws.designer_examples}, {"agent", ws.agent_examples}, {"hint", ws.hint_examples}}}};
}

nlohmann::json selfplay_json(const SelfPlaySummary& s, const Config& config) {
  nlohmann::json by_reason = nlohmann::json::object();
  for (const auto& [reason, n] : s.rejected_by_reason) by_reason[reason] = n;
  return {{"steps", s.steps},
          {"of", config.selfplay.steps},
          {"seconds", s.seconds},
          {"attempts", s.attempts},
          {"admitted", s.admitted},
          {"rejected", s.rejected},
          {"valid_rate", s.attempts ? static_cast<double>(s.admitted) / s.attempts : 0.0},
          {"rejected_by_reason", by_reason},
          {"hint_success", s.hint_plays ? s.hint_success_sum / s.hint_plays : 0.0},
          {"hint_plays", s.hint_plays},
          {"nohint_success", s.nohint_plays ? s.nohint_success_sum / s.nohint_plays : 0.0},
          {"nohint_plays", s.nohint_plays}};
}

// The cold start's record in an existing summary.json (a resumed run keeps it); null when none.
nlohmann::json saved_warm_start(const RunDir& run) {
  if (!fs::exists(run.summary_path())) return nullptr;
  const nlohmann::json j = nlohmann::json::parse(read_file(run.summary_path()), nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("warm_start") ? j["warm_start"] : nlohmann::json(nullptr);
}

// Runs `f` on rank 0 first (it may write into the run directory), then on the other ranks.
template <class F>
auto main_rank_first(const DistributedContext& dist, F&& f) {
  if (!dist.is_main()) dist.barrier();
  auto result = f();
  if (dist.is_main()) dist.barrier();
  return result;
}

}  // namespace

Corpus prepare_corpus(const Config& config, const RunDir& run, const LogFn& log) {
  std::string path = config.corpus.path;
  if (path.empty()) {
    path = run.corpus_path();
    if (!fs::exists(path)) {
      // Games: docstrings of Python packages (their LICENSE.txt is no document). Tool use (SPADE §5.2:
      // a code corpus): Python source read whole, and the library reference when installed. Given
      // sources may be text too.
      const bool tool_use = rollout::parse_setting(config.selfplay.setting) == rollout::Setting::kToolUse;
      std::vector<std::string> from = config.corpus.build_from;
      if (from.empty()) from = tool_use ? default_tooluse_corpus_sources() : default_corpus_sources();
      if (from.empty())
        throw Error("corpus: no corpus.path given and no Python standard library found under /usr/lib "
                    "to build one from (install python3, or set corpus.build_from)");
      const CorpusInputs inputs = tool_use                             ? CorpusInputs::source_and_text
                                  : config.corpus.build_from.empty() ? CorpusInputs::python
                                                                     : CorpusInputs::python_and_text;
      CorpusBuildStats st = build_corpus(from, path, config.corpus.max_words, config.corpus.min_words, inputs);
      log(fmt("corpus: %.0f documents from %.0f files (%.0f skipped empty, %.0f unparseable)",
              st.documents, st.files_seen, st.skipped_empty, st.skipped_unparseable) + " -> " + path);
    }
  }
  Corpus corpus(path, config.corpus.max_words, config.corpus.sample_seed);
  log(fmt("corpus: %.0f documents loaded", corpus.size()) + " from " + path);
  return corpus;
}

OwnedPolicy prepare_policy(const Config& config, const RunDir& run, const Corpus& corpus,
                           const std::vector<SeedEnv>& seeds, const LogFn& log,
                           const std::string& resume_checkpoint) {
  OwnedPolicy p;
  std::string tok_path = config.tokenizer.path;
  if (tok_path.empty() && !config.model.init_checkpoint.empty()) {
    tok_path = policy::Tokenizer::file_in_dir(config.model.init_checkpoint);  // tokenizer.json, else .model
    if (tok_path.empty())
      throw Error("model.init_checkpoint " + config.model.init_checkpoint +
                  " has neither tokenizer.json nor tokenizer.model; set tokenizer.path");
  }
  if (tok_path.empty()) {
    tok_path = run.tokenizer_prefix() + ".model";
    if (!fs::exists(tok_path)) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::string> text;
      for (size_t i = 0; i < corpus.size(); ++i) text.push_back(corpus.at(i).text);
      // Seed programs and prompts weigh more: they are what the policy reads and writes most.
      for (int rep = 0; rep < 20; ++rep)
        for (const SeedEnv& s : seeds) text.push_back("```python\n" + s.code + "```");
      const rollout::Setting setting = rollout::parse_setting(config.selfplay.setting);
      const bool tool_use = setting == rollout::Setting::kToolUse;
      for (const rollout::Skill& skill : rollout::skills_of(setting))
        for (int rep = 0; rep < 20; ++rep) {
          text.push_back(tool_use ? rollout::designer_tool_user_prompt(skill, "", {}, config.selfplay.max_turns,
                                                                       rollout::tooluse_variants()[rep % 4].id)
                                  : rollout::designer_user_prompt(skill, "", {}, config.selfplay.max_turns));
          text.push_back((tool_use ? rollout::agent_tool_system_prompt() : rollout::agent_first_turn("", "")) +
                         rollout::designer_system_prompt(setting) + rollout::agent_system_prompt());
          text.push_back(rollout::hint_user_prompt("", tool_use));
          if (tool_use) text.push_back(rollout::self_validator_prompt(""));
        }
      // Tool use: the agent's opening lists the tools in the chat template's tools block (ChatML: Qwen's);
      // its boilerplate and the OpenAI function format weigh like the programs.
      if (tool_use) {
        const nlohmann::ordered_json tool = nlohmann::ordered_json::parse(
            R"({"type": "function", "function": {"name": "get_record", "description": "Look up a record by id.",
                "parameters": {"type": "object", "properties": {"record_id": {"type": "string", "description": "id"}},
                               "required": ["record_id"]}}})");
        for (int rep = 0; rep < 20; ++rep)
          text.push_back(policy::qwen_tools_system(rollout::agent_tool_system_prompt(), {tool, tool}));
      }
      policy::TokenizerTrainOptions opt;
      opt.sentences = std::move(text);
      opt.model_prefix = run.tokenizer_prefix();
      opt.vocab_size = config.tokenizer.vocab_size;
      policy::Tokenizer::train(opt);
      log(fmt("tokenizer: trained a %.0f-piece SentencePiece model in %.1f s", config.tokenizer.vocab_size,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + " -> " + tok_path);
    }
  }
  p.tokenizer = policy::Tokenizer::load(tok_path);
  p.chat = std::make_unique<policy::ChatTemplate>(  // format from the tokenizer's directory (ChatML default)
      policy::ChatTemplate::for_checkpoint(fs::path(tok_path).parent_path().string(), p.tokenizer));

  if (!resume_checkpoint.empty()) {
    p.model = load_training_policy(resume_checkpoint);
    log("policy: resumed from " + resume_checkpoint);
  } else if (!config.model.init_checkpoint.empty()) {
    p.model = policy::load_checkpoint(config.model.init_checkpoint);
    log("policy: loaded " + config.model.init_checkpoint);
  } else {
    p.model = policy::Transformer(
        model_config(config.model, p.tokenizer.vocab_size(), p.chat->eos_id(), p.tokenizer.bos_id()));
    p.model->init_weights(config.run.seed, config.model.init_std);
    log(fmt("policy: random Llama-style decoder, %.2fM parameters (hidden %.0f, layers %.0f, vocab %.0f)",
            p.model->config().num_parameters() / 1e6, config.model.hidden_size,
            config.model.num_hidden_layers, p.tokenizer.vocab_size()));
  }
  return p;
}

Config load_run_config(const std::string& run_dir, const std::vector<std::string>& overrides) {
  const fs::path dir = fs::absolute(fs::path(run_dir)).lexically_normal();
  const fs::path file = dir / "config.yaml";
  if (!fs::exists(file))
    throw Error("resume: " + file.string() + " does not exist (is " + run_dir + " a run directory?)");
  std::vector<std::string> all = overrides;
  const std::string name = dir.has_filename() ? dir.filename().string() : dir.parent_path().filename().string();
  const std::string parent = dir.has_filename() ? dir.parent_path().string() : dir.parent_path().parent_path().string();
  all.push_back("run.out_dir=" + parent);
  all.push_back("run.name=" + name);
  return load_config(file.string(), all);
}

std::string run_train(const Config& config, const TrainOptions& options, const LogFn& main_log) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string command = options.selfplay ? "train" : "sft";
  // A named model.shape needs its checkpoint (config_checks.h; the dry-run plans without it).
  check_trainable(config, command);
  if (options.resume && options.overwrite)
    throw Error(command + ": --resume continues a run and --overwrite replaces it; pass one of them");
  // The run directory, checked before anything is written and before the ranks of a data-parallel
  // job meet, so every rank sees it as it was (run_open.h).
  const RunDirPlan plan = plan_run_dir(
      config, options.resume ? RunMode::resume : options.overwrite ? RunMode::overwrite : RunMode::create, command,
      /*offer_resume=*/options.selfplay, options.inputs);
  // One rank of a data-parallel job when launched so (distributed.h); else world size 1, no group.
  const DistributedEnv env = distributed_env_from_process();
  if (config.distributed.world_size > 0 && env.world_size != config.distributed.world_size)
    throw Error(command + ": distributed.world_size = " + std::to_string(config.distributed.world_size) +
                " but this run was launched with " + std::to_string(env.world_size) +
                " rank(s) (WORLD_SIZE); launch that many (--nproc, torchrun --nproc-per-node, srun --ntasks) or "
                "set distributed.world_size to 0");
  // train.device, checked before anything is written: "cuda" on a machine without one fails here.
  const torch::Device device =
      resolve_train_device(config.train.device, env.local_rank, -1, env.local_world_size);
  make_current(device);
  DistributedOptions dist_options = distributed_options(config.distributed);
  if (dist_options.backend == "auto" && !device.is_cuda()) dist_options.backend = "gloo";  // CPU training: Gloo
  const DistributedContext dist(env, dist_options);
  const LogFn log = dist.is_main() ? main_log : LogFn([](const std::string&) {});
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = config.run.threads > 0 ? config.run.threads : std::max(1, cores / dist.env().local_world_size);
  if (config.run.deterministic) {
    // One intra-op thread: reductions (matmul, softmax, sums) then run in one fixed order, so a run
    // and its resumed twin compute bit-identical numbers. Deterministic algorithms: warn-only, since
    // the CPU kernels used here have no nondeterministic variants.
    threads = 1;
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  }
  at::set_num_threads(threads);
  torch::manual_seed(config.run.seed);

  const RunDir run =
      main_rank_first(dist, [&] { return dist.is_main() ? open_run_dir(plan, config, log) : RunDir{plan.root}; });
  if (dist.is_main() && options.on_run_open) options.on_run_open(run);
  if (dist.active())
    log("data parallel: " + std::to_string(dist.world_size()) + " ranks (" + dist.env().launcher + "), " +
        dist.backend() + ", " + std::to_string(threads) + " threads each");
  std::string resume_from;
  if (options.resume) {
    resume_from = latest_resumable_checkpoint(run);
    if (resume_from.empty())
      throw Error("resume: no checkpoint with trainer state under " + run.checkpoints_dir() +
                  " (the run stopped before its first checkpoint.every steps, or is a cold start of `spade sft`): "
                  "start a new run from its config with `spade train --config " + run.config_path() +
                  " --name NEW`");
  }
  if (dist.is_main()) write_file_atomic(run.config_path(), to_yaml(config));
  log("run directory: " + run.root);
  const auto attention = policy::parse_attention_backend(config.train.attention, "train.attention");
  // KL penalty (loss.kl_coef > 0): a frozen reference policy from disk, loaded only then, and before
  // the corpus and the cold start, so a bad loss.kl_reference fails in seconds, not after minutes.
  policy::Transformer kl_reference{nullptr};
  // ZeRO-3 keeps whole fp32 models in host memory until they are sharded: only the shards (and the
  // rollouts' inference copy) go to train.device, so the GPU never holds a whole fp32 model.
  const bool full = parse_sharding(config.distributed.sharding) == Sharding::Full;
  if (config.loss.kl_coef != 0.0 && options.selfplay) {
    const std::string path = config.loss.kl_reference.empty() ? config.model.init_checkpoint : config.loss.kl_reference;
    kl_reference = policy::load_checkpoint(path);
    kl_reference->set_attention_backend(attention);
    kl_reference->eval();
    for (torch::Tensor& p : kl_reference->parameters()) p.requires_grad_(false);
    // ZeRO-3 shards the reference like the policy (each rank keeps 4 P / N bytes of it on the device;
    // grpo_update gathers its layers one at a time for the reference forwards).
    if (full) shard_frozen_model(kl_reference, dist, device);
    else kl_reference->to(device);
    log("kl reference: " + path + " (loss.kl_coef " + std::to_string(config.loss.kl_coef) + ", " +
        config.loss.kl_type + (full ? ", sharded over the ranks (distributed.sharding full)" : "") + ")");
  }

  Corpus corpus = main_rank_first(dist, [&] { return prepare_corpus(config, run, log); });
  const std::vector<SeedEnv> seeds = load_seed_envs(config.seed_envs.dir);
  check_seed_setting(seeds, config.selfplay.setting, "seed_envs.dir");
  log(fmt("seed environments: %.0f", seeds.size()) + " from " + config.seed_envs.dir);
  OwnedPolicy policy =
      main_rank_first(dist, [&] { return prepare_policy(config, run, corpus, seeds, log, resume_from); });
  // The policy trains (and samples) on train.device, in fp32 master weights; bf16 autocast and
  // activation checkpointing apply to the training forward passes (grpo_update, warm start). ZeRO-3:
  // in host memory until sharded (below).
  if (!full) policy.model->to(device);
  policy.model->set_activation_checkpointing(config.train.activation_checkpointing);
  policy.model->set_attention_backend(attention);
  log("device: " + device.str() + " (train.device " + config.train.device + "), autocast " + config.train.autocast +
      ", activation checkpointing " + (config.train.activation_checkpointing ? "on" : "off") + ", attention " +
      config.train.attention);
  envsandbox::EnvServer server(sandbox_options(config.sandbox));

  // TensorBoard (rank 0): one events file for the run's process, the cold start's warm_start/* and
  // the self-play metrics.
  std::unique_ptr<TbWriter> tb;
  if (dist.is_main()) tb = std::make_unique<TbWriter>(run.tb_dir());
  // summary.json: the run so far, rewritten atomically after the cold start and at the end.
  nlohmann::json summary = {{"command", command}, {"run_dir", run.root}, {"finished", false}};
  auto write_summary = [&] {
    summary["wall_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dist.is_main()) write_file_atomic(run.summary_path(), summary.dump(2) + "\n");
  };

  // The cold start is time-boxed, so it runs on rank 0 alone; every rank then starts self-play from
  // rank 0's weights (also after a resume: one source of truth for the replicas).
  summary["warm_start"] = nullptr;
  if (config.warm_start.enabled && resume_from.empty() && dist.is_main()) {
    auto record_step = [&](const WarmStartStep& st) {
      append_line(run.warm_start_path(), nlohmann::json{{"step", st.step}, {"loss", st.loss}, {"lr", st.lr},
                                                        {"tokens", st.tokens}, {"seconds", st.seconds}}.dump());
      tb->add_scalars(st.step, {{"warm_start/loss", st.loss}, {"warm_start/lr", st.lr},
                                {"warm_start/tokens", static_cast<double>(st.tokens)}});
    };
    if (full) policy.model->to(device);  // the cold start trains the whole model on rank 0
    const WarmStartStats ws = run_warm_start(policy.ref(), server, seeds, corpus, config, log, record_step);
    if (full) policy.model->to(torch::kCPU);
    log(fmt("warm start: %.0f steps in %.0f s, loss %.3f -> %.3f", ws.steps, ws.seconds, ws.first_loss,
            ws.last_loss) + "; stopped by " +
        (ws.stopped_by == "max_steps" ? fmt("the step cap (warm_start.max_steps %.0f)", config.warm_start.max_steps)
                                      : fmt("the time box (warm_start.max_seconds %.0f)", config.warm_start.max_seconds)) +
        "; per step: " + run.warm_start_path());
    summary["warm_start"] = warm_start_json(ws, config);
  } else if (!resume_from.empty() && dist.is_main()) {
    summary["warm_start"] = saved_warm_start(run);  // the cold start of the run being continued
  }
  write_summary();
  dist.broadcast_tensors(policy.model->parameters(), 0);
  std::string final_dir;
  if (!options.selfplay) {
    final_dir = run.checkpoint_dir(0);
    if (dist.is_main()) save_training_checkpoint(run, 0, policy.ref(), config.checkpoint.dtype);
    log("checkpoint: " + final_dir);
    summary["final_checkpoint"] = final_dir;
    summary["finished"] = true;
    write_summary();
    log("summary: " + run.summary_path());
    dist.barrier();
    return final_dir;
  }

  // AdamW, or its ZeRO-1 / 2 / 3 sharded form over the ranks (distributed.sharding). ZeRO-3 shards the
  // model's parameters themselves (from host memory onto train.device), so the rollouts sample from a
  // whole copy (the inference copy, in distributed.inference_dtype, on train.device, all-gathered from
  // the shards now and after every update; trainer/parameter_shards.h), and the policy the run samples
  // and evaluates is that copy; its checkpoints are written from the master shards
  // (SelfPlay::checkpoint_on_schedule).
  policy::Transformer trained = policy.model;
  const std::unique_ptr<torch::optim::Optimizer> optimizer =
      make_optimizer(trained, config.optim, config.distributed.sharding, dist, device);
  if (full) {
    policy::Transformer copy(trained->config());
    copy->to(device, config.distributed.inference_dtype == "bf16" ? torch::kBFloat16 : torch::kFloat);
    copy->set_attention_backend(attention);
    for (const torch::Tensor& p : copy->parameters()) p.requires_grad_(false);
    dynamic_cast<const ShardedAdamW&>(*optimizer).gather_parameters_into(copy->parameters());
    policy.model = copy;
  }
  SelfPlay selfplay(config, run, policy.ref(), server, corpus, seeds, *optimizer, log, &dist, kl_reference,
                    tb.get());
  int64_t first = 0;
  if (!resume_from.empty()) {
    first = selfplay.resume(resume_from);
    if (dist.is_main()) run.truncate_metrics(first + 1);  // steps first + 1, ... (step numbers) are redone
    log(fmt("resume: continuing at step %.0f", first + 1) + " from " + resume_from);
  }
  const SelfPlaySummary s = selfplay.run(first);
  final_dir = run.checkpoint_dir(std::max<int64_t>(first, config.selfplay.steps));
  dist.barrier();  // rank 0 has written the final checkpoint

  log("---- summary ----");
  log(fmt("steps: %.0f   self-play time: %.0f s   total wall time: %.0f s", s.steps, s.seconds,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  log(fmt("environments: %.0f attempts, %.0f admitted, %.0f rejected (valid rate %.2f)", s.attempts,
          s.admitted, s.rejected, s.attempts ? static_cast<double>(s.admitted) / s.attempts : 0.0));
  for (const auto& [reason, n] : s.rejected_by_reason) log(fmt("  rejected %5.0f  ", n) + reason);
  log(fmt("agent success at regeneration steps: with hint %.3f (%.0f plays), without hint %.3f (%.0f plays)",
          s.hint_plays ? s.hint_success_sum / s.hint_plays : 0.0, s.hint_plays,
          s.nohint_plays ? s.nohint_success_sum / s.nohint_plays : 0.0, s.nohint_plays));
  log("metrics: " + run.metrics_path());
  summary["selfplay"] = selfplay_json(s, config);
  summary["final_checkpoint"] = final_dir;
  summary["finished"] = true;
  write_summary();
  log("summary: " + run.summary_path());
  log("final checkpoint: " + final_dir + "  (try: spade generate --checkpoint " + final_dir + " --prompt ...)");
  return final_dir;
}

}  // namespace spade::trainer
