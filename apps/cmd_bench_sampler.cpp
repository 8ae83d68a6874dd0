// `spade bench sampler`: tokens/s of our sampler (rollout::generate) vs a plain PyTorch-in-Python
// KV-cache generate loop (bench/sampler_ref.py) on the same random weights, prompts and sampling
// (issue 4). Prints one JSON object; results are recorded in bench/RESULTS.md.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/commands.h"
#include "apps/json_io.h"
#include "common/error.h"
#include "policy/checkpoint.h"
#include "rollout/sampler.h"

namespace spade::apps {

namespace {

/// Model shapes (qwen3 family, tied embeddings, random weights).
policy::ModelConfig bench_model(const std::string& name) {
  policy::ModelConfig c;
  c.model_type = "qwen3";
  c.qk_norm = true;
  c.tie_word_embeddings = true;
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 4096;
  if (name == "tiny") {  // ~3.4M parameters
    c.vocab_size = 4096; c.hidden_size = 256; c.intermediate_size = 512; c.num_hidden_layers = 4;
    c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 64;
  } else if (name == "100m") {  // ~100M parameters (GPT-2-small-like widths, GQA 12/4)
    c.vocab_size = 32000; c.hidden_size = 768; c.intermediate_size = 2048; c.num_hidden_layers = 12;
    c.num_attention_heads = 12; c.num_key_value_heads = 4; c.head_dim = 64;
  } else {
    throw spade::Error("bench sampler: unknown --model '" + name + "' (tiny | 100m)");
  }
  return c;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stoi(item));
  return v;
}

nlohmann::json run_python(const std::string& script, const std::string& ckpt, int batch, int prompt, int new_tokens,
                          int threads, const std::string& device, const std::string& dtype) {
  const std::string cmd = "OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 " + script + " --checkpoint " + ckpt +
                          " --batch " + std::to_string(batch) + " --prompt " + std::to_string(prompt) + " --new " +
                          std::to_string(new_tokens) + " --threads " + std::to_string(threads) + " --device " + device +
                          " --dtype " + dtype + " 2>&1";
  return last_json_line_of(cmd, "bench sampler");
}

}  // namespace

void add_bench_sampler_command(CLI::App& app) {
  struct Args {
    std::string models = "tiny", batches = "1,16,64", work_dir = "/tmp/spade_bench_sampler";
    std::string reference = std::string(SPADE_SOURCE_DIR) + "/bench/sampler_ref.py";
    std::string device = "cpu", dtype = "float32";
    int prompt = 512, new_tokens = 256, threads = 0;
    bool no_reference = false, no_decode_kernel = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* bench = nullptr;  // shared with `bench sandbox` (whichever registers first creates it)
  try {
    bench = app.get_subcommand("bench");
  } catch (const CLI::OptionNotFound&) {
    bench = app.add_subcommand("bench", "benchmarks");
    bench->require_subcommand(1);
  }
  CLI::App* cmd = bench->add_subcommand("sampler", "sampler tokens/s vs a plain PyTorch-in-Python KV-cache loop");
  cmd->add_option("--models", args->models, "comma-separated: tiny (~3.4M), 100m (~100M)");
  cmd->add_option("--batches", args->batches, "comma-separated batch sizes");
  cmd->add_option("--prompt", args->prompt, "prompt tokens per sequence");
  cmd->add_option("--new", args->new_tokens, "new tokens per sequence (no stop tokens)");
  cmd->add_option("--threads", args->threads, "intra-op threads for both sides (0 = all cores)");
  cmd->add_option("--reference", args->reference, "the Python baseline script");
  cmd->add_option("--work-dir", args->work_dir, "where the random checkpoints are written");
  cmd->add_option("--device", args->device, "torch device for our sampler and the reference (cpu, cuda)");
  cmd->add_option("--dtype", args->dtype, "float32 | bfloat16 (weights and activations, both sides)");
  cmd->add_flag("--no-reference", args->no_reference, "measure our sampler only");
  cmd->add_flag("--no-decode-kernel", args->no_decode_kernel,
                "decode with the generic ATen layer instead of the CPU decode kernel (A/B of issue 4)");
  cmd->callback([args] {
    set_action([args] {
      const int threads = args->threads > 0 ? args->threads
                                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      at::set_num_threads(threads);
      nlohmann::json report;
      report["bench"] = "sampler";
      report["prompt"] = args->prompt;
      report["new"] = args->new_tokens;
      report["threads"] = threads;
      report["sampling"] = "temperature 0.6, top-k 20, top-p 0.95";
      report["device"] = args->device;
      report["dtype"] = args->dtype;
      report["decode_kernel"] = !args->no_decode_kernel;
      report["results"] = nlohmann::json::array();
      std::stringstream models(args->models);
      for (std::string name; std::getline(models, name, ',');) {
        const policy::ModelConfig c = bench_model(name);
        policy::Transformer model(c);
        model->init_weights(1);
        model->set_cpu_decode_kernel(!args->no_decode_kernel);
        const std::string ckpt = args->work_dir + "/" + name;
        policy::save_checkpoint(ckpt, model);  // fp32 file: the reference casts to --dtype itself
        const torch::Device device(args->device);
        if (args->dtype != "float32" && args->dtype != "bfloat16")
          throw spade::Error("bench sampler: --dtype must be float32 or bfloat16");
        model->to(device, args->dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32);
        for (int batch : parse_list(args->batches)) {
          std::vector<std::vector<int64_t>> prompts(batch);
          for (int i = 0; i < batch; ++i)
            for (int t = 0; t < args->prompt; ++t) prompts[i].push_back((int64_t(i) * 131 + int64_t(t) * 17) % c.vocab_size);
          rollout::SamplingParams p;  // SPADE defaults: T 0.6, top-p 0.95, top-k 20
          p.max_new_tokens = args->new_tokens;
          p.max_prefill_tokens = std::max<int64_t>(p.max_prefill_tokens, args->prompt);
          auto t0 = std::chrono::steady_clock::now();
          auto res = rollout::generate(model, prompts, p, 0, batch);
          if (device.is_cuda()) torch::cuda::synchronize();
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          int64_t n = 0;
          for (auto& r : res) n += r.tokens.size();
          nlohmann::json row = {{"model", name}, {"params", c.num_parameters()}, {"batch", batch},
                                {"tokens", n}, {"seconds", s}, {"tokens_per_s", n / s}};
          if (!args->no_reference) {
            nlohmann::json ref = run_python(args->reference, ckpt, batch, args->prompt, args->new_tokens, threads,
                                              args->device, args->dtype);
            row["reference"] = ref;
            row["ratio"] = (n / s) / ref.at("tokens_per_s").get<double>();
          }
          std::fprintf(stderr, "%s\n", row.dump().c_str());
          report["results"].push_back(row);
        }
      }
      std::printf("%s\n", report.dump(2).c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
