// `spade bench trainer`: optimizer-step throughput of trainer::grpo_update (forward, PPO-clip loss,
// backward, global-norm clip, AdamW) vs the same model, batch, loss and optimizer in
// PyTorch-in-Python (bench/trainer_reference.py), run side by side in one invocation (issue 5,
// target >= 1.2x). Both sides load the same safetensors written here, train on the same synthetic
// GRPO batch (written as JSON), use the same number of intra-op threads, and are timed the same way
// (wall time of whole steps after warm-up). The first step's loss, entropy and gradient norm of both
// sides are compared as an equivalence check. Results are recorded in bench/RESULTS.md.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <time.h>

#include "apps/bench_work_dir.h"
#include "apps/commands.h"
#include "apps/error_text.h"
#include "apps/shape_options.h"
#include "common/process_stats.h"
#include "trainer/step_bench.h"
#include "apps/json_io.h"
#include "common/error.h"
#include "embedded_config.h"
#include "policy/checkpoint.h"
#include "trainer/config.h"
#include "trainer/config_bridge.h"
#include "trainer/grpo_update.h"

namespace spade::apps {

namespace {

namespace fs = std::filesystem;

struct Shape {  // explicit values override the preset; 0 = keep the preset's
  ShapeOverrides model;
  int batch = 0, seq = 0;
};

/// The benchmark's models, llama family as `spade train` builds it (trainer/train.cpp model_config:
/// head_dim = hidden / heads, tied embeddings). "tiny" is the run config's own model (by default
/// configs/games-tiny.yaml: vocab 6000, hidden 192, 2 layers, 4/2 heads, ffn 512, 1.96M parameters);
/// "medium" is 33.6M parameters (vocab 16384, hidden 512, 8 layers, 8/4 heads, ffn 1536).
/// Batch defaults: tiny 16 x 512 tokens = one 8192-token micro-batch (the config's
/// optim.micro_batch_tokens); medium 4 x 512 (a step takes seconds, not minutes, on 2 cores).
std::pair<policy::ModelConfig, std::pair<int, int>> bench_model(const std::string& name, const trainer::Config& cfg,
                                                                const Shape& s) {
  policy::ModelConfig c;
  c.model_type = "llama";
  c.rope_theta = cfg.model.rope_theta;
  c.rms_norm_eps = cfg.model.rms_norm_eps;
  c.tie_word_embeddings = true;
  c.max_position_embeddings = cfg.model.max_position_embeddings;
  int batch = 16, seq = 512;
  if (name == "tiny") {
    c.vocab_size = cfg.tokenizer.vocab_size;
    c.hidden_size = cfg.model.hidden_size;
    c.intermediate_size = cfg.model.intermediate_size;
    c.num_hidden_layers = cfg.model.num_hidden_layers;
    c.num_attention_heads = cfg.model.num_attention_heads;
    c.num_key_value_heads = cfg.model.num_key_value_heads;
  } else if (name == "medium") {
    c.vocab_size = 16384; c.hidden_size = 512; c.intermediate_size = 1536; c.num_hidden_layers = 8;
    c.num_attention_heads = 8; c.num_key_value_heads = 4;
    batch = 4;
  } else {
    throw spade::Error("bench trainer: unknown model '" + name + "' in --models (valid: tiny, medium)");
  }
  c.head_dim = 0;  // hidden / heads unless --head-dim says otherwise
  s.model.apply(c);
  if (s.batch > 0) batch = s.batch;
  if (s.seq > 0) seq = s.seq;
  if (c.head_dim == 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  c.max_position_embeddings = std::max<int64_t>(c.max_position_embeddings, seq + 1);
  c.validate("bench trainer --models " + name);
  return {c, {batch, seq}};
}

void write_batch(const std::string& path, const std::vector<rollout::Sample>& samples) {
  nlohmann::json j;
  j["samples"] = nlohmann::json::array();
  for (const rollout::Sample& s : samples)
    j["samples"].push_back({{"tokens", s.tokens}, {"loss_mask", s.loss_mask}, {"rollout_logprobs", s.rollout_logprobs},
                            {"advantage", s.advantage}, {"temperature", s.temperature}});
  std::ofstream f(path);
  if (!(f << j.dump())) throw spade::Error("bench trainer: cannot write the batch file " + path);
}

/// VmHWM of this process in MiB (peak resident set since the last reset_peak_rss()).
double peak_rss_mb() { return static_cast<double>(peak_rss_bytes()) / (1 << 20); }

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// CPU time (user + system, all threads) of this process in seconds.
double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Our side: a fresh model from `ckpt` and a fresh AdamW, `warmup` untimed then `steps` timed
/// grpo_update calls. Returns {"step_s": [...], "first": {...}, "peak_rss_mb"}.
nlohmann::json run_ours(const std::string& ckpt, const std::vector<rollout::Sample>& samples,
                        const trainer::UpdateOptions& update, const trainer::OptimConfig& optim, int warmup, int steps) {
  policy::Transformer model = policy::load_checkpoint(ckpt);
  torch::optim::AdamW optimizer = trainer::make_optimizer(model, optim);
  reset_peak_rss();
  nlohmann::json out;
  std::vector<double> step_s, step_cpu_s;
  for (int i = 0; i < warmup + steps; ++i) {
    const double t0 = now_s(), c0 = cpu_s();
    const trainer::UpdateStats st = trainer::grpo_update(model, optimizer, samples, update);
    const double dt = now_s() - t0, dc = cpu_s() - c0;
    if (i == 0)
      out["first"] = {{"pg_loss", st.pg_loss}, {"entropy", st.entropy}, {"grad_norm", st.grad_norm},
                      {"num_tokens", st.num_tokens}, {"micro_batches", st.num_micro_batches}};
    if (i >= warmup) {
      step_s.push_back(dt);
      step_cpu_s.push_back(dc);
    }
  }
  out["step_s"] = step_s;
  out["step_cpu_s"] = step_cpu_s;
  out["peak_rss_mb"] = peak_rss_mb();
  return out;
}

/// Our side, phase by phase: the calls grpo_update makes (trainer/grpo_update.cpp), in its order,
/// with a timer between them. Used by --phases to say where the step's time goes; returns the mean
/// seconds per timed step of each phase.
nlohmann::json profile_ours(const std::string& ckpt, const std::vector<rollout::Sample>& samples,
                            const trainer::UpdateOptions& update, const trainer::OptimConfig& optim, int warmup,
                            int steps) {
  policy::Transformer model = policy::load_checkpoint(ckpt);
  torch::optim::AdamW optimizer = trainer::make_optimizer(model, optim);
  std::vector<const rollout::Sample*> trainable;
  for (const rollout::Sample& s : samples)  // grpo_update's filter
    if (s.tokens.size() >= 2 && s.num_trainable() > 0) trainable.push_back(&s);
  std::map<std::string, double> total;
  for (int i = 0; i < warmup + steps; ++i) {
    std::map<std::string, double> ph;
    double t = now_s();
    auto lap = [&](const char* name) {
      const double n = now_s();
      ph[name] += n - t;
      t = n;
    };
    std::vector<trainer::PackedBatch> batches = trainer::pack_micro_batches(trainable, update.micro_batch_tokens);
    std::vector<torch::Tensor> masks;
    for (const auto& b : batches) masks.push_back(b.loss_mask);
    const double normaliser = trainer::global_normaliser(update.loss.agg_mode, masks, update.loss.max_len);
    model->train();
    optimizer.zero_grad();
    lap("pack");
    for (const auto& b : batches) {
      auto [logp, entropy] = trainer::sequence_logprobs(model, b, true, update.loss.entropy_coef != 0.0);
      lap("forward");
      trainer::PolicyLossTerms terms = trainer::compute_policy_loss(logp, logp.detach(), b.rollout_logp, b.advantages,
                                                                    b.loss_mask, normaliser, update.loss, entropy);
      lap("loss");
      terms.loss.backward();
      lap("backward");
    }
    std::vector<torch::Tensor> params;
    for (auto& p : model->parameters())
      if (p.grad().defined()) params.push_back(p);
    torch::nn::utils::clip_grad_norm_(params, update.grad_clip > 0 ? update.grad_clip : 1e30);
    lap("clip");
    optimizer.step();
    optimizer.zero_grad();
    lap("optimizer");
    if (i >= warmup)
      for (auto& [k, v] : ph) total[k] += v / steps;
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto& [k, v] : total) out[k] = v;
  return out;
}

std::string fmt_double(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

/// apps/main.cpp's mallopt(M_MMAP_THRESHOLD, 1 GiB) and mallopt(M_TRIM_THRESHOLD, -1) (never trim) as
/// glibc tunables (the trim threshold at SIZE_MAX), so a Python process can run with the same allocator
/// behaviour (--same-malloc).
constexpr const char* kOurMallocTunables =
    "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=18446744073709551615";

/// The Python side: one process (environment prefix `env`, e.g. kOurMallocTunables), same checkpoint, batch and hyper-parameters; parses its JSON line.
nlohmann::json run_reference(const std::string& env, const std::string& python, const std::string& script, const std::string& ckpt,
                             const std::string& batch_file, int warmup, int steps, int threads,
                             const trainer::UpdateOptions& u, const trainer::OptimConfig& o) {
  const std::string cmd =
      env + (env.empty() ? "" : " ") + "OMP_WAIT_POLICY=PASSIVE " + python + " " + script + " --checkpoint " + ckpt + " --batch-file " + batch_file +
      " --steps " + std::to_string(steps) + " --warmup " + std::to_string(warmup) + " --threads " +
      std::to_string(threads) + " --lr " + fmt_double(o.lr) + " --beta1 " + fmt_double(o.beta1) + " --beta2 " +
      fmt_double(o.beta2) + " --adam-eps " + fmt_double(o.adam_eps) + " --weight-decay " + fmt_double(o.weight_decay) +
      " --grad-clip " + fmt_double(u.grad_clip) + " --eps-low " + fmt_double(u.loss.eps_low) + " --eps-high " +
      fmt_double(u.loss.eps_high) + " --tis-cap " + fmt_double(u.loss.tis_cap) + " --tis-low " +
      fmt_double(u.loss.tis_low) + " --log-ratio-clamp " + fmt_double(u.loss.log_ratio_clamp) + " --agg-mode " +
      trainer::to_string(u.loss.agg_mode) + " --micro-batch-tokens " + std::to_string(u.micro_batch_tokens) + " 2>&1";
  return last_json_line_of(cmd, "bench trainer");
}

/// |a - b| <= abs_tol + rel_tol * |b|.
bool close(double a, double b, double abs_tol, double rel_tol) { return std::abs(a - b) <= abs_tol + rel_tol * std::abs(b); }

}  // namespace

void add_bench_trainer_command(CLI::App& app) {
  struct Args {
    std::string models = "tiny,medium", work_dir = "/tmp/spade_bench_trainer", config;
    std::string reference = std::string(SPADE_SOURCE_DIR) + "/bench/trainer_reference.py";
    std::string python = "/usr/bin/python3";
    Shape shape;
    int steps = 5, warmup = 1, repeats = 2, threads = 0;
    uint64_t seed = 1234;
    bool json = false, no_reference = false, phases = false, same_malloc = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* bench = bench_command(app);
  CLI::App* cmd = bench->add_subcommand(
      "trainer", "optimizer-step tokens/s of trainer::grpo_update vs the same step in PyTorch-in-Python");
  cmd->add_option("--models", args->models, "comma-separated: tiny (the run config's model), medium (~34M)");
  cmd->add_option("--config", args->config, "run config for the tiny model, optimizer and loss (default: embedded games-tiny)");
  args->shape.model.add_to(cmd);
  cmd->add_option("--batch", args->shape.batch, "override: sequences per step (0: tiny 16, medium 4)");
  cmd->add_option("--seq", args->shape.seq, "override: trained positions per sequence (0: 512)");
  cmd->add_option("--steps", args->steps, "timed optimizer steps per repeat");
  cmd->add_option("--warmup", args->warmup, "untimed steps before them");
  cmd->add_option("--repeats", args->repeats, "alternating repeats of ours and the reference (order flips each time)");
  cmd->add_option("--threads", args->threads, "intra-op threads for both sides (0 = all cores)");
  cmd->add_option("--seed", args->seed, "seed of the synthetic batch and the random weights");
  cmd->add_option("--reference", args->reference, "the Python baseline script");
  cmd->add_option("--python", args->python, "interpreter with torch (Debian's python3-torch)");
  cmd->add_option("--work-dir", args->work_dir,
                  "where the checkpoints and batch files are written, as WORK/<model>/ (its parent must exist; only "
                  "those entries are replaced, and only when they are earlier checkpoints)");
  cmd->add_flag("--json", args->json, "print the full report as JSON (default: a table)");
  cmd->add_flag("--no-reference", args->no_reference, "measure our trainer only");
  cmd->add_flag("--same-malloc", args->same_malloc,
                "also run the reference with the glibc malloc settings spade runs with (mallopt), via GLIBC_TUNABLES");
  cmd->add_flag("--phases", args->phases, "also time our step phase by phase (pack, forward, loss, backward, clip, optimizer)");
  cmd->callback([args] {
    auto where = std::make_shared<std::string>();  // the model being run, for an allocation failure
    set_action(reporting_allocation_failures("bench trainer", where, [args, where] {
      if (args->steps < 1 || args->warmup < 0 || args->repeats < 1)
        throw spade::Error("bench trainer: need --steps >= 1, --warmup >= 0, --repeats >= 1");
      const trainer::Config cfg = args->config.empty() ? trainer::parse_config(kDefaultConfig, kDefaultConfigName)
                                                       : trainer::load_config(args->config);
      const trainer::UpdateOptions update = trainer::update_options(cfg);
      if (!args->no_reference && (update.loss.dual_clip_c || update.loss.kl_coef != 0.0 ||
                                  update.loss.entropy_coef != 0.0 || !update.loss.tis))
        throw spade::Error("bench trainer: the Python reference implements the default loss only (no dual clip, "
                           "KL or entropy bonus, TIS on); set loss.* back or pass --no-reference");
      const int threads = args->threads > 0 ? args->threads
                                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      at::set_num_threads(threads);
      {
        std::vector<std::string> names;
        std::stringstream list(args->models);
        for (std::string name; std::getline(list, name, ',');) names.push_back(name);
        prepare_bench_work_dir("bench trainer", args->work_dir, names);
      }

      nlohmann::json report;
      report["bench"] = "trainer";
      report["threads"] = threads;
      report["steps"] = args->steps;
      report["warmup"] = args->warmup;
      report["repeats"] = args->repeats;
      report["optimizer"] = {{"lr", cfg.optim.lr}, {"betas", {cfg.optim.beta1, cfg.optim.beta2}},
                             {"eps", cfg.optim.adam_eps}, {"weight_decay", cfg.optim.weight_decay},
                             {"grad_clip", cfg.optim.grad_clip}, {"micro_batch_tokens", cfg.optim.micro_batch_tokens}};
      report["loss"] = {{"eps_low", update.loss.eps_low}, {"eps_high", update.loss.eps_high},
                        {"agg_mode", trainer::to_string(update.loss.agg_mode)}, {"tis_cap", update.loss.tis_cap}};
      report["results"] = nlohmann::json::array();
      bool all_equivalent = true;
      std::stringstream models(args->models);
      for (std::string name; std::getline(models, name, ',');) {
        const auto [c, bs] = bench_model(name, cfg, args->shape);
        const auto [batch, seq] = bs;
        *where = "model " + name + " (" + std::to_string(c.num_parameters()) + " parameters), batch " +
                 std::to_string(batch) + " x " + std::to_string(seq) + " tokens";
        const std::string ckpt = args->work_dir + "/" + name, batch_file = ckpt + "/batch.json";
        {
          policy::Transformer model(c);
          model->init_weights(args->seed, cfg.model.init_std);
          policy::save_checkpoint(ckpt, model);
        }
        const std::vector<rollout::Sample> samples =
            trainer::synthetic_grpo_batch(c.vocab_size, batch, seq, cfg.selfplay.agent.temperature, args->seed);
        write_batch(batch_file, samples);
        int64_t trainable = 0;
        for (const rollout::Sample& s : samples)
          for (size_t t = 1; t < s.loss_mask.size(); ++t) trainable += s.loss_mask[t] > 0;
        const int64_t total = int64_t(batch) * seq;

        nlohmann::json row = {{"model", name}, {"params", c.num_parameters()}, {"vocab", c.vocab_size},
                              {"hidden", c.hidden_size}, {"layers", c.num_hidden_layers},
                              {"heads", c.num_attention_heads}, {"kv_heads", c.kv_heads()},
                              {"intermediate", c.intermediate_size}, {"batch", batch}, {"seq", seq},
                              {"tokens_total", total}, {"tokens_trainable", trainable},
                              {"loadavg_start", loadavg()}};
        // Sides, run in turn; the order rotates every repeat so drifting machine load hits all alike.
        struct Side {
          Side(std::string k, std::string e) : key(std::move(k)), env(std::move(e)) {}
          std::string key, env;  // report key; environment prefix of the reference process
          std::vector<double> step_s, step_cpu_s;
          nlohmann::json first, phases;
          double rss = 0;
        };
        std::vector<Side> sides{Side("ours", "")};
        if (!args->no_reference) sides.emplace_back("reference", "");
        if (!args->no_reference && args->same_malloc) sides.emplace_back("reference_same_malloc", kOurMallocTunables);
        for (int r = 0; r < args->repeats; ++r) {
          for (size_t i = 0; i < sides.size(); ++i) {
            Side& side = sides[(i + r) % sides.size()];
            const nlohmann::json res =
                side.key == "ours" ? run_ours(ckpt, samples, update, cfg.optim, args->warmup, args->steps)
                                   : run_reference(side.env, args->python, args->reference, ckpt, batch_file,
                                                   args->warmup, args->steps, threads, update, cfg.optim);
            for (double v : res["step_s"]) side.step_s.push_back(v);
            for (double v : res["step_cpu_s"]) side.step_cpu_s.push_back(v);
            if (side.first.is_null()) side.first = res["first"];
            side.rss = std::max(side.rss, res["peak_rss_mb"].get<double>());
            if (res.contains("phases_s")) side.phases = res["phases_s"];
            std::fprintf(stderr, "[%s] %s repeat %d: step p50 %.3f s\n", name.c_str(), side.key.c_str(), r,
                         median(res["step_s"].get<std::vector<double>>()));
          }
        }
        for (const Side& side : sides) {
          const double p50 = median(side.step_s);
          row[side.key] = {{"step_s_p50", p50},
                           {"step_s_min", *std::min_element(side.step_s.begin(), side.step_s.end())},
                           {"step_s_max", *std::max_element(side.step_s.begin(), side.step_s.end())},
                           {"step_s", side.step_s},
                           {"step_cpu_s_p50", median(side.step_cpu_s)},
                           {"step_cpu_s", side.step_cpu_s},
                           {"tokens_per_s_total", total / p50},
                           {"tokens_per_s_trainable", trainable / p50},
                           {"peak_rss_mb", side.rss},
                           {"first_step", side.first}};
          if (!side.phases.is_null()) row[side.key]["phases_s"] = side.phases;
          if (!side.env.empty()) row[side.key]["env"] = side.env;
          if (side.key == "ours") continue;
          // ours' tokens/s over this reference's: the ratio of median step times.
          row[side.key == "reference" ? "ratio" : "ratio_same_malloc"] = p50 / median(sides[0].step_s);
          // The same from CPU time (user + system, all threads), which time spent descheduled by
          // other processes on a shared machine does not inflate.
          row[side.key == "reference" ? "cpu_ratio" : "cpu_ratio_same_malloc"] =
              median(side.step_cpu_s) / median(sides[0].step_cpu_s);
          // Equivalence (first step, identical weights and batch, before any update): fp32 on both
          // sides with the same ops, so only summation order may differ: agreement to ~1e-6 relative.
          auto num = [](const nlohmann::json& j, const char* k) { return j.at(k).get<double>(); };
          const nlohmann::json& a = sides[0].first;
          const nlohmann::json& b = side.first;
          const bool eq = close(num(a, "pg_loss"), num(b, "pg_loss"), 1e-5, 1e-4) &&
                          close(num(a, "entropy"), num(b, "entropy"), 1e-5, 1e-4) &&
                          close(num(a, "grad_norm"), num(b, "grad_norm"), 1e-6, 1e-3) &&
                          num(a, "num_tokens") == num(b, "num_tokens");
          row["equivalent"] = eq && row.value("equivalent", true);
          all_equivalent = all_equivalent && eq;
        }
        if (args->phases) row["ours"]["phases_s"] = profile_ours(ckpt, samples, update, cfg.optim, args->warmup, args->steps);
        row["loadavg_end"] = loadavg();
        std::fprintf(stderr, "%s\n", row.dump().c_str());
        report["results"].push_back(row);
      }

      if (args->json) {
        std::printf("%s\n", report.dump(2).c_str());
      } else {
        std::printf("threads %d, %d warm-up + %d timed steps x %d repeats per side; tokens/s from the median step\n",
                    threads, args->warmup, args->steps, args->repeats);
        for (const auto& row : report["results"]) {
          std::printf("\n%s: %.1fM params, batch %d x %d = %lld tokens (%lld trainable)\n",
                      row["model"].get<std::string>().c_str(), row["params"].get<double>() / 1e6,
                      row["batch"].get<int>(), row["seq"].get<int>(), row["tokens_total"].get<long long>(),
                      row["tokens_trainable"].get<long long>());
          const char* keys[] = {"ours", "reference", "reference_same_malloc"};
          for (const char* side : keys) {
            if (!row.contains(side)) continue;
            const auto& s = row[side];
            std::printf("  %-21s step p50 %8.3f s  tok/s total %9.1f  trainable %9.1f  peak RSS %7.1f MiB  "
                        "first step: pg_loss %.7g entropy %.7g grad_norm %.7g\n",
                        side, s["step_s_p50"].get<double>(), s["tokens_per_s_total"].get<double>(),
                        s["tokens_per_s_trainable"].get<double>(), s["peak_rss_mb"].get<double>(),
                        s["first_step"]["pg_loss"].get<double>(), s["first_step"]["entropy"].get<double>(),
                        s["first_step"]["grad_norm"].get<double>());
          }
          if (row.contains("ratio"))
            std::printf("  ratio (ours / reference tokens/s) %.2fx  equivalent first step: %s  load %s -> %s\n",
                        row["ratio"].get<double>(), row["equivalent"].get<bool>() ? "yes" : "NO",
                        row["loadavg_start"].get<std::string>().c_str(), row["loadavg_end"].get<std::string>().c_str());
          if (row.contains("cpu_ratio"))
            std::printf("  CPU-time ratio %.2fx\n", row["cpu_ratio"].get<double>());
          if (row.contains("ratio_same_malloc"))
            std::printf("  ratio vs the reference with our malloc settings %.2fx\n", row["ratio_same_malloc"].get<double>());
          for (const char* side : keys)
            if (row.contains(side) && row[side].contains("phases_s"))
              std::printf("  %-21s phases (s/step): %s\n", side, row[side]["phases_s"].dump().c_str());
        }
      }
      if (!all_equivalent) {
        std::fprintf(stderr, "error: bench trainer: the first-step loss, entropy or gradient norm of ours and the "
                             "reference disagree (see \"first_step\"): the two sides do not compute the same step\n");
        return 1;
      }
      return 0;
    }));
  });
}

}  // namespace spade::apps
