// `spade score`: teacher-forced per-token logprobs of a token sequence and the last position's top-20
// logits, for perplexity and parity checks (issue 4). With --ids no tokenizer file is needed.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/commands.h"
#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"

namespace spade::apps {

namespace {

std::vector<int64_t> parse_ids(const std::string& s) {
  std::vector<int64_t> ids;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" \t", used) != std::string::npos)
      throw spade::Error("score: --ids: '" + item + "' is not an integer (expected e.g. --ids 1,2,3)");
    ids.push_back(v);
  }
  return ids;
}

}  // namespace

void add_score_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, text, ids;
    bool json = false;
    int top = 20;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("score", "teacher-forced per-token logprobs and last-position top logits");
  cmd->add_option("--checkpoint", args->checkpoint, "checkpoint directory (config.json + safetensors)")->required();
  auto* text = cmd->add_option("--text", args->text, "text to score (needs DIR/tokenizer.json or DIR/tokenizer.model)");
  auto* ids = cmd->add_option("--ids", args->ids, "comma-separated token ids (no tokenizer needed)");
  text->excludes(ids);
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option("--top", args->top, "how many (token id, logit) pairs of the last position");
  cmd->callback([args] {
    set_action([args] {
      if (args->text.empty() == args->ids.empty())
        throw spade::Error("score: give exactly one of --text TEXT or --ids 1,2,3");
      at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      policy::Transformer model = policy::load_checkpoint(args->checkpoint);
      const int64_t vocab = model->config().vocab_size;
      std::vector<int64_t> tokens;
      std::unique_ptr<policy::Tokenizer> tok;
      if (!args->ids.empty()) {
        tokens = parse_ids(args->ids);
      } else {
        tok = std::make_unique<policy::Tokenizer>(policy::Tokenizer::load_dir(args->checkpoint));
        tokens = tok->encode(args->text);
      }
      if (tokens.empty()) throw spade::Error("score: no tokens to score");
      for (int64_t t : tokens)
        if (t < 0 || t >= vocab)
          throw spade::Error("score: token id " + std::to_string(t) + " outside the vocabulary [0, " +
                             std::to_string(vocab) + ")");

      // One full forward: logits[i] predicts tokens[i + 1]; logprobs at temperature 1 (the trainer's
      // definition, policy::token_logprobs).
      torch::NoGradGuard ng;
      model->eval();
      const int64_t T = tokens.size();
      auto ids_t = torch::tensor(tokens, torch::kLong).view({1, T});
      auto logits = model->lm_head(model->forward(ids_t, torch::arange(T, torch::kLong).view({1, T})))[0];  // [T, V]
      std::vector<double> lp;
      if (T > 1) {
        auto l = policy::token_logprobs(logits.narrow(0, 0, T - 1), ids_t[0].narrow(0, 1, T - 1), 1.0)
                     .to(torch::kDouble).contiguous();
        lp.assign(l.data_ptr<double>(), l.data_ptr<double>() + l.numel());
      }
      double sum = 0;
      for (double v : lp) sum += v;
      const int k = static_cast<int>(std::min<int64_t>(std::max(1, args->top), vocab));
      auto [vals, idx] = logits[T - 1].topk(k);
      vals = vals.to(torch::kDouble).contiguous();
      idx = idx.contiguous();

      if (args->json) {
        nlohmann::json j;
        j["ids"] = tokens;
        nlohmann::json lps = nlohmann::json::array();
        lps.push_back(nullptr);  // the first token has no prediction
        for (double v : lp) lps.push_back(v);
        j["logprobs"] = lps;
        j["sum_logprob"] = sum;
        j["mean_nll"] = lp.empty() ? 0.0 : -sum / lp.size();
        j["perplexity"] = lp.empty() ? 1.0 : std::exp(-sum / lp.size());
        nlohmann::json top = nlohmann::json::array();
        for (int i = 0; i < k; ++i) top.push_back({idx[i].item<int64_t>(), vals.data_ptr<double>()[i]});
        j["last_top"] = top;
        std::printf("%s\n", j.dump().c_str());
        return 0;
      }
      std::printf("%6s %8s %12s  %s\n", "pos", "id", "logprob", tok ? "piece" : "");
      for (int64_t i = 0; i < T; ++i) {
        const std::string piece = tok ? tok->piece(tokens[i]) : "";
        if (i == 0) std::printf("%6d %8lld %12s  %s\n", 0, (long long)tokens[0], "-", piece.c_str());
        else std::printf("%6lld %8lld %12.6f  %s\n", (long long)i, (long long)tokens[i], lp[i - 1], piece.c_str());
      }
      std::printf("sum logprob %.6f, mean nll %.6f, perplexity %.4f\n", sum, lp.empty() ? 0.0 : -sum / lp.size(),
                  lp.empty() ? 1.0 : std::exp(-sum / lp.size()));
      std::printf("last position top-%d (token id, logit):\n", k);
      for (int i = 0; i < k; ++i)
        std::printf("  %8lld %12.6f\n", (long long)idx[i].item<int64_t>(), vals.data_ptr<double>()[i]);
      return 0;
    });
  });
}

}  // namespace spade::apps
