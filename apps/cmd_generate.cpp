#include <ATen/Parallel.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "apps/commands.h"
#include "common/error.h"
#include "policy/chat_template.h"
#include "policy/checkpoint.h"
#include "policy/stop_tokens.h"
#include "policy/tokenizer.h"
#include "rollout/sampler.h"

namespace spade::apps {

void add_generate_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, prompt;
    bool chat = false;
    int max_new_tokens = 128;
    double temperature = 0.6, top_p = 0.95;
    int top_k = 20;
    uint64_t seed = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* gen = app.add_subcommand("generate", "sample a continuation from an HF-layout checkpoint");
  gen->add_option("--checkpoint", args->checkpoint, "checkpoint directory (config.json, model.safetensors, tokenizer.json or tokenizer.model)")
      ->required();
  gen->add_option("--prompt", args->prompt, "prompt text")->required();
  gen->add_flag("--chat", args->chat, "wrap the prompt as a user turn of the chat template");
  gen->add_option("--max-new-tokens", args->max_new_tokens, "tokens to sample");
  gen->add_option("--temperature", args->temperature, "sampling temperature (0 = greedy)");
  gen->add_option("--top-p", args->top_p, "nucleus sampling mass");
  gen->add_option("--top-k", args->top_k, "top-k cutoff (0 = off)");
  gen->add_option("--seed", args->seed, "sampling seed");
  gen->callback([args] {
    set_action([args] {
      at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      policy::Transformer model = policy::load_checkpoint(args->checkpoint);
      policy::Tokenizer tok = policy::Tokenizer::load_dir(args->checkpoint);
      // The checkpoint's chat format (ChatML, Qwen2, Llama 3, Llama 2, Mistral: ChatTemplate::for_checkpoint);
      // plain prompts work with any tokenizer.
      std::unique_ptr<policy::ChatTemplate> chat;
      if (args->chat)
        chat = std::make_unique<policy::ChatTemplate>(policy::ChatTemplate::for_checkpoint(args->checkpoint, tok));
      std::vector<int64_t> prompt = chat ? chat->render({{"user", args->prompt}}, true) : tok.encode(args->prompt);
      rollout::SamplingParams p;
      p.temperature = args->temperature;
      p.top_p = args->top_p;
      p.top_k = args->top_k;
      p.max_new_tokens = args->max_new_tokens;
      // The chat template's end of turn (with --chat) and every eos id of the checkpoint (config.json
      // and generation_config.json), as every other sampling path.
      p.stop_token_ids = policy::stop_token_ids(model->config(), chat.get());
      rollout::GenerationResult out = rollout::generate(model, {prompt}, p, args->seed, 1)[0];
      if (out.finish_reason == rollout::FinishReason::kStop && !out.tokens.empty()) out.tokens.pop_back();
      std::printf("%s%s\n", args->chat ? "" : args->prompt.c_str(), tok.decode(out.tokens).c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
