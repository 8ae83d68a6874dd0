// `spade eval --checkpoint DIR [--envs DIR]... [--plays N] [--temperature T] [--no-greedy]
//  [--reset-seeds heldout|training] [--config F] [--json OUT] [--seed S]`: a checkpoint plays held-out
// environments (trainer/heldout_eval.h) and success is printed per environment, per skill and overall
// with 95% intervals and pass@k. Two passes by default: greedy and sampled at --temperature.
// `spade eval compare BEFORE.json AFTER.json [--json OUT]`: two such --json files compared, paired by
// environment, with a bootstrap interval of the difference (trainer/eval_comparison.h).
#include <ATen/Parallel.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "apps/commands.h"
#include "common/error.h"
#include "common/output_path.h"
#include "policy/chat_template.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"
#include "trainer/config.h"
#include "trainer/config_bridge.h"
#include "trainer/eval_comparison.h"
#include "trainer/heldout_eval.h"

namespace spade::apps {
namespace fs = std::filesystem;

namespace {

// The episode settings: --config, else the resolved config of the run the checkpoint belongs to
// (runs/<name>/checkpoints/step_N -> runs/<name>/config.yaml), else the paper defaults. Says which.
trainer::Config eval_config(const std::string& config_path, const std::string& checkpoint, std::string* from) {
  if (!config_path.empty()) {
    *from = config_path;
    return trainer::load_config(config_path);
  }
  const fs::path run_config = fs::path(checkpoint).lexically_normal().parent_path().parent_path() / "config.yaml";
  if (fs::is_regular_file(run_config) && fs::path(checkpoint).lexically_normal().parent_path().filename() == "checkpoints") {
    *from = run_config.string() + " (the checkpoint's run)";
    return trainer::load_config(run_config.string());
  }
  *from = "the paper defaults (no --config, and the checkpoint is not in a run directory)";
  return trainer::Config{};
}

// `spade eval compare`: a subcommand of eval that plays nothing, so eval's own options (--checkpoint
// included) belong to eval alone.
CLI::App* add_eval_compare_command(CLI::App& eval) {
  struct Args {
    std::string before, after, json;
    int resamples = 10000;
    uint64_t seed = 42;
    bool overwrite = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = eval.add_subcommand(
      "compare", "compare two `spade eval --json` files: per pass and set, the change in success with a paired "
                 "bootstrap 95% interval over environments, and environments up / down / same");
  c->add_option("before", a->before, "the evaluation before (a `spade eval --json` file)")->required()->check(CLI::ExistingFile);
  c->add_option("after", a->after, "the evaluation after, of the same environments, plays and reset seeds")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--json", a->json, "also write the comparison as JSON here");
  c->add_flag("--overwrite", a->overwrite, "replace a non-empty --json file");
  c->add_option("--resamples", a->resamples, "bootstrap resamples of the environments")->check(CLI::Range(1, 10000000));
  c->add_option("--seed", a->seed, "bootstrap seed");
  c->callback([a] {
    set_action([a] {
      OutputRule rule;
      rule.what = "eval compare --json";
      rule.overwrite = a->overwrite;
      rule.inputs = {a->before, a->after};
      if (!a->json.empty()) check_output(a->json, OutputKind::file, rule);
      const trainer::EvalComparison cmp = trainer::compare_evaluation_files(a->before, a->after, a->resamples, a->seed);
      std::printf("%s", trainer::format_eval_comparison(cmp).c_str());
      if (!a->json.empty()) {
        write_output_file(a->json, cmp.to_json().dump(2) + "\n", rule);
        std::printf("\ncomparison: %s\n", a->json.c_str());
      }
      return 0;
    });
  });
  return c;
}

}  // namespace

void add_eval_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, config, json, seeds = "heldout";
    std::vector<std::string> envs{"data/heldout_envs"};
    int plays = 8;
    double temperature = 0.6;
    bool no_greedy = false, overwrite = false;
    uint64_t seed = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand(
      "eval", "play held-out environments with a checkpoint: success with 95% intervals, pass@k; `eval compare`: "
              "two evaluations compared");
  // Required unless `eval compare` runs (checked in the callback: CLI11 would require it of compare too).
  c->add_option("--checkpoint", a->checkpoint,
                "HF-layout checkpoint directory (e.g. runs/NAME/checkpoints/step_N); required")
      ->check(CLI::ExistingDirectory);
  c->add_option("--envs", a->envs, "environment sets, each <skill>/<name>.py (default data/heldout_envs); repeatable")
      ->check(CLI::ExistingDirectory);
  c->add_option("--plays", a->plays, "plays per environment, each on its own instance (avg@N)")->check(CLI::Range(1, 1024));
  c->add_option("--temperature", a->temperature, "temperature of the sampled pass (0: greedy only)")->check(CLI::Range(0.0, 100.0));
  c->add_flag("--no-greedy", a->no_greedy, "skip the greedy pass");
  c->add_option("--reset-seeds", a->seeds,
                "heldout: instances no training path uses (seeds from 2^31); training: the cold start's seeds 0..N-1")
      ->check(CLI::IsMember({"heldout", "training"}));
  c->add_option("--config", a->config, "run config for turns, context and sampling (default: the checkpoint's run, else the paper's)");
  c->add_option("--json", a->json, "also write the results as JSON here");
  c->add_flag("--overwrite", a->overwrite, "replace a non-empty --json file");
  c->add_option("--seed", a->seed, "sampling seed");
  CLI::App* compare = add_eval_compare_command(*c);
  c->callback([a, c, compare] {
    // eval's callback runs after compare's: `eval compare` is compare's action alone, and eval's options
    // do not apply to it.
    if (c->got_subcommand(compare)) {
      for (const CLI::Option* opt : c->get_options())
        if (opt->count() > 0 && opt->get_name() != "--help")
          throw CLI::ValidationError(opt->get_name() + " is an option of 'spade eval', not of 'spade eval compare'");
      return;
    }
    if (a->checkpoint.empty()) throw CLI::RequiredError("--checkpoint");
    set_action([a] {
      OutputRule rule;
      rule.what = "eval --json";
      rule.overwrite = a->overwrite;
      rule.inputs = a->envs;
      rule.inputs.push_back(a->checkpoint);
      if (!a->json.empty()) check_output(a->json, OutputKind::file, rule);
      std::vector<std::vector<trainer::SeedEnv>> sets;
      for (const std::string& dir : a->envs) sets.push_back(trainer::load_seed_envs(dir));
      std::string from;
      const trainer::Config config = eval_config(a->config, a->checkpoint, &from);

      at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      policy::Transformer model = policy::load_checkpoint(a->checkpoint);
      const policy::Tokenizer tok = policy::Tokenizer::load_dir(a->checkpoint);
      const policy::ChatTemplate chat = policy::ChatTemplate::for_checkpoint(a->checkpoint, tok);
      const rollout::PolicyRef policy{model, tok, chat};
      envsandbox::EnvServer server(trainer::sandbox_options(config.sandbox));

      trainer::EvalOptions o;
      o.episode = trainer::episode_options(config);
      const int64_t positions = model->config().max_position_embeddings;
      if (o.episode.context_tokens > positions) o.episode.context_tokens = static_cast<int>(positions);
      o.plays = a->plays;
      o.seeds = trainer::parse_eval_seeds(a->seeds);
      o.seed = a->seed;
      std::printf("eval: %s; episodes: %d turns, %d context tokens, %d new tokens per turn (from %s)\n",
                  a->checkpoint.c_str(), o.episode.max_turns, o.episode.context_tokens,
                  o.episode.sampling.max_new_tokens, from.c_str());
      std::vector<double> temperatures;
      if (!a->no_greedy || a->temperature == 0) temperatures.push_back(0.0);
      if (a->temperature > 0) temperatures.push_back(a->temperature);
      nlohmann::json passes = nlohmann::json::array();
      for (double t : temperatures) {
        o.episode.sampling.temperature = t;
        nlohmann::json sets_j = nlohmann::json::array();
        for (size_t i = 0; i < sets.size(); ++i) {
          const trainer::SetEval r = trainer::evaluate_set(policy, server, a->envs[i], sets[i], o);
          std::printf("\n%s", trainer::format_set_eval(r).c_str());
          sets_j.push_back(r.to_json());
        }
        passes.push_back({{"temperature", t}, {"sets", sets_j}});
      }
      if (!a->json.empty()) {
        const nlohmann::json out = {{"checkpoint", a->checkpoint}, {"episode_settings_from", from}, {"passes", passes}};
        write_output_file(a->json, out.dump(2) + "\n", rule);
        std::printf("\nresults: %s\n", a->json.c_str());
      }
      return 0;
    });
  });
}

}  // namespace spade::apps
