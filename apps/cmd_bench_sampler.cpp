// `spade bench sampler`: tokens/s of our sampler (rollout::generate) vs Python baselines on the same
// random weights, prompts and sampling (issue 4): the plain PyTorch-in-Python KV-cache generate loop
// (bench/sampler_ref.py, "loop") and Hugging Face transformers' model.generate (bench/sampler_hf.py,
// "hf"). Prints one JSON object (and each row on stderr as it completes); results are recorded in
// bench/RESULTS.md. The GPU run is scripts/gpu/run_all.sh.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/bench_work_dir.h"
#include "apps/commands.h"
#include "apps/error_text.h"
#include "apps/json_io.h"
#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/model_shapes.h"
#include "rollout/sampler.h"
#include "trainer/device_memory.h"

namespace spade::apps {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) v.push_back(item);
  return v;
}

std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> v;
  for (const std::string& item : split(s)) v.push_back(std::stoi(item));
  return v;
}

// Runs one baseline script and returns the JSON line it prints last: its timing, or
// {"skipped": reason} when it cannot run here (sampler_hf.py without transformers).
nlohmann::json run_baseline(const std::string& python, const std::string& script, const std::string& ckpt, int batch,
                            int prompt, int new_tokens, int threads, const std::string& device,
                            const std::string& dtype) {
  const std::string cmd = "OMP_WAIT_POLICY=PASSIVE " + python + " " + script + " --checkpoint " + ckpt + " --batch " +
                          std::to_string(batch) + " --prompt " + std::to_string(prompt) + " --new " +
                          std::to_string(new_tokens) + " --threads " + std::to_string(threads) + " --device " +
                          device + " --dtype " + dtype + " 2>&1";
  return last_json_line_of(cmd, "bench sampler");
}

double to_mb(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

void add_bench_sampler_command(CLI::App& app) {
  struct Args {
    std::string models = "tiny", batches = "1,16,64", work_dir = "/tmp/spade_bench_sampler";
    std::string reference = std::string(SPADE_SOURCE_DIR) + "/bench/sampler_ref.py";
    std::string hf_reference = std::string(SPADE_SOURCE_DIR) + "/bench/sampler_hf.py";
    std::string baseline = "loop", python = "/usr/bin/python3";
    std::string device = "cpu", dtype = "float32", decode_graph = "auto";
    int prompt = 512, new_tokens = 256, threads = 0;
    bool no_reference = false, no_decode_kernel = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* bench = bench_command(app);
  CLI::App* cmd = bench->add_subcommand("sampler", "sampler tokens/s vs Python baselines (plain loop, transformers)");
  cmd->add_option("--models", args->models,
                  "comma-separated shapes: tiny (~3.4M), 100m (~100M), qwen3-0.6b, qwen3-4b");
  cmd->add_option("--batches", args->batches, "comma-separated batch sizes, run in this order");
  cmd->add_option("--prompt", args->prompt, "prompt tokens per sequence");
  cmd->add_option("--new", args->new_tokens, "new tokens per sequence (no stop tokens)");
  cmd->add_option("--threads", args->threads, "intra-op threads for both sides (0 = all cores)");
  cmd->add_option("--baseline", args->baseline,
                  "comma-separated baselines, each run per row: loop (--reference, default) | hf (--hf-reference)");
  cmd->add_option("--reference", args->reference, "the plain-loop baseline script");
  cmd->add_option("--hf-reference", args->hf_reference, "the transformers baseline script");
  cmd->add_option("--python", args->python, "interpreter command for the baseline scripts");
  cmd->add_option("--work-dir", args->work_dir,
                  "where the random checkpoints are written, as WORK/<model>/ (its parent must exist; only those "
                  "entries are replaced, and only when they are earlier checkpoints)");
  cmd->add_option("--device", args->device, "torch device for our sampler and the baselines (cpu, cuda)");
  cmd->add_option("--dtype", args->dtype,
                  "float32 | bfloat16: weights and activations on both sides, and the checkpoint's dtype");
  cmd->add_flag("--no-reference", args->no_reference, "measure our sampler only");
  cmd->add_option("--decode-graph", args->decode_graph,
                  "comma-separated auto | off | on: decode steps replayed as a CUDA graph (auto: on CUDA); "
                  "each batch is timed once per mode (an A/B comparison), the baselines once");
  cmd->add_flag("--no-decode-kernel", args->no_decode_kernel,
                "decode with the generic ATen layer instead of the CPU decode kernel (an A/B comparison)");
  cmd->callback([args] {
    auto where = std::make_shared<std::string>();  // the row being run, for an allocation failure
    set_action(reporting_allocation_failures("bench sampler", where, [args, where] {
      if (args->dtype != "float32" && args->dtype != "bfloat16")
        throw spade::Error("bench sampler: --dtype must be float32 or bfloat16, got '" + args->dtype + "'");
      const std::vector<std::string> graph_modes = split(args->decode_graph);
      for (const std::string& g : graph_modes) rollout::parse_decode_graph_mode(g, "bench sampler --decode-graph");
      if (graph_modes.empty()) throw spade::Error("bench sampler: --decode-graph needs at least one mode");
      const std::vector<std::string> baselines = args->no_reference ? std::vector<std::string>{} : split(args->baseline);
      for (const std::string& b : baselines)
        if (b != "loop" && b != "hf") throw spade::Error("bench sampler: unknown --baseline '" + b + "' (loop | hf)");
      std::vector<policy::ModelConfig> shapes;  // all names checked before any model is built
      const std::vector<std::string> names = split(args->models);
      for (const std::string& name : names) shapes.push_back(policy::named_model_shape(name));
      prepare_bench_work_dir("bench sampler", args->work_dir, names);
      const int threads = args->threads > 0 ? args->threads
                                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      at::set_num_threads(threads);
      const torch::Device device(args->device);
      nlohmann::json report;
      report["bench"] = "sampler";
      report["prompt"] = args->prompt;
      report["new"] = args->new_tokens;
      report["threads"] = threads;
      report["sampling"] = "temperature 0.6, top-k 20, top-p 0.95";
      report["device"] = args->device;
      report["dtype"] = args->dtype;
      report["decode_kernel"] = !args->no_decode_kernel;
      report["decode_graph"] = args->decode_graph;
      report["warmup"] = device.is_cuda() ? "one untimed generate of 4 new tokens per row" : "none";
      report["results"] = nlohmann::json::array();
      bool failed = false;
      for (size_t m = 0; m < names.size(); ++m) {
        const std::string& name = names[m];
        const policy::ModelConfig& c = shapes[m];
        *where = "model " + name + " (" + std::to_string(c.num_parameters()) + " parameters, " + args->dtype +
                 "), device " + args->device;
        policy::Transformer model(c);
        model->init_weights(1);
        model->set_cpu_decode_kernel(!args->no_decode_kernel);
        const std::string ckpt = args->work_dir + "/" + name;
        // In the bench's dtype: what both sides run (our model is cast the same way below), and a 4B
        // checkpoint in bfloat16 is 8 GB of writes instead of 16.
        policy::CheckpointSaveOptions save;
        save.dtype = args->dtype;
        policy::save_checkpoint(ckpt, model, save);
        model->to(device, args->dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32);
        for (int batch : parse_ints(args->batches)) {
          *where = "model " + name + " (" + std::to_string(c.num_parameters()) + " parameters, " + args->dtype +
                   "), batch " + std::to_string(batch) + " x (" + std::to_string(args->prompt) + " prompt + " +
                   std::to_string(args->new_tokens) + " new tokens), device " + args->device;
          std::vector<std::vector<int64_t>> prompts(batch);
          for (int i = 0; i < batch; ++i)
            for (int t = 0; t < args->prompt; ++t) prompts[i].push_back((int64_t(i) * 131 + int64_t(t) * 17) % c.vocab_size);
          // Ours, one row per decode-graph mode. A mode that fails (e.g. CUDA graphs on a GPU they never
          // ran on) is reported in its row; the other modes and the baselines still run.
          std::vector<nlohmann::json> rows;
          for (const std::string& mode : graph_modes) {
            nlohmann::json row = {{"model", name}, {"params", c.num_parameters()}, {"batch", batch},
                                  {"decode_graph", mode}, {"baselines", nlohmann::json::object()}};
            try {
              rollout::SamplingParams p;  // SPADE defaults: T 0.6, top-p 0.95, top-k 20
              p.max_prefill_tokens = std::max<int64_t>(p.max_prefill_tokens, args->prompt);
              p.decode_graph = rollout::parse_decode_graph_mode(mode, "bench sampler --decode-graph");
              if (device.is_cuda()) {  // first-call costs (cuBLAS handles, kernel loading) outside the timing
                p.max_new_tokens = std::min(4, args->new_tokens);
                rollout::generate(model, prompts, p, 0, batch);
                torch::cuda::synchronize();
              }
              p.max_new_tokens = args->new_tokens;
              trainer::reset_device_memory_peaks(device);
              auto t0 = std::chrono::steady_clock::now();
              auto res = rollout::generate(model, prompts, p, 0, batch);
              if (device.is_cuda()) torch::cuda::synchronize();
              const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              int64_t n = 0;
              for (auto& r : res) n += r.tokens.size();
              if (n != static_cast<int64_t>(batch) * args->new_tokens)  // no stop tokens: every row runs to the cap
                throw spade::Error("made " + std::to_string(n) + " tokens, expected batch x new = " +
                                   std::to_string(static_cast<int64_t>(batch) * args->new_tokens));
              const auto peaks = trainer::device_memory_peaks(device);  // nullopt off CUDA: reported as null
              row["tokens"] = n;
              row["seconds"] = s;
              row["tokens_per_s"] = n / s;
              row["peak_gpu_allocated_mb"] = peaks ? nlohmann::json(to_mb(peaks->max_allocated_bytes)) : nlohmann::json();
              row["peak_gpu_reserved_mb"] = peaks ? nlohmann::json(to_mb(peaks->max_reserved_bytes)) : nlohmann::json();
            } catch (const std::exception& e) {  // LibTorch's message without its backtrace, on one line if OOM
              row["error"] = describe_error(e);
              failed = true;
            }
            rows.push_back(row);
          }
          const int64_t n = static_cast<int64_t>(batch) * args->new_tokens;  // what a baseline must make too
          for (const std::string& b : baselines) {
            nlohmann::json ref;
            try {
              ref = run_baseline(args->python, b == "hf" ? args->hf_reference : args->reference, ckpt, batch,
                                 args->prompt, args->new_tokens, threads, args->device, args->dtype);
              if (!ref.contains("skipped")) {
                const double ref_tps = ref.at("tokens_per_s").get<double>();
                if (ref.at("tokens").get<int64_t>() != n || !(ref_tps > 0))
                  throw spade::Error("bench sampler: baseline " + b + " made " + ref.at("tokens").dump() +
                                     " tokens at " + ref.at("tokens_per_s").dump() + " tokens/s; ours made " +
                                     std::to_string(n));
              }
            } catch (const std::exception& e) {  // spade::Error, or a key missing from the baseline's JSON
              std::string what = e.what();
              if (what.size() > 4000) what = "..." + what.substr(what.size() - 4000);
              ref = {{"error", what}};
              failed = true;
            }
            for (nlohmann::json& row : rows) {
              nlohmann::json r = ref;
              if (r.contains("tokens_per_s") && row.contains("tokens_per_s"))  // ours / baseline tokens/s
                r["ratio"] = row["tokens_per_s"].get<double>() / r["tokens_per_s"].get<double>();
              row["baselines"][b] = r;
            }
          }
          for (const nlohmann::json& row : rows) {
            std::fprintf(stderr, "%s\n", row.dump().c_str());
            report["results"].push_back(row);
          }
        }
      }
      std::printf("%s\n", report.dump(2).c_str());
      return failed ? 1 : 0;
    }));
  });
}

}  // namespace spade::apps
