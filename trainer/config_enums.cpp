#include "trainer/config_enums.h"

#include "common/error.h"
#include "envsandbox/sandbox.h"
#include "policy/checkpoint.h"
#include "policy/model_shapes.h"
#include "policy/transformer.h"
#include "reward/designer_reward.h"
#include "rollout/prompts.h"
#include "rollout/sampler.h"
#include "trainer/autocast.h"
#include "trainer/device.h"
#include "trainer/distributed.h"
#include "trainer/env_pool.h"
#include "trainer/heldout_eval.h"
#include "trainer/lr_schedule.h"
#include "trainer/policy_loss.h"
#include "trainer/sharding.h"

namespace spade::trainer::config_enums {

namespace {

// Runs a library parser on `value`; its error (which lists the allowed names) is prefixed by `at` and `key`.
// A message that already names the key (autocast, lr_schedule) is not given it twice.
template <class Parse>
void with_parser(const std::string& key, const std::string& at, Parse&& parse) {
  try {
    parse();
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("config: ", 0) == 0) msg = msg.substr(8);
    if (msg.rfind(key + ": ", 0) == 0) msg = msg.substr(key.size() + 2);
    if (msg.rfind(key + " ", 0) == 0) throw Error(at + ": " + msg);
    throw Error(at + ": " + key + ": " + msg);
  }
}

}  // namespace

void agg_mode(const std::string& v, const std::string& key, const std::string& at) { with_parser(key, at, [&] { parse_agg_mode(v); }); }
void kl_type(const std::string& v, const std::string& key, const std::string& at) { with_parser(key, at, [&] { parse_kl_type(v); }); }
void tis_level(const std::string& v, const std::string& key, const std::string& at) { with_parser(key, at, [&] { parse_tis_level(v); }); }
void designer_reward(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { reward::parse_designer_reward(v); });
}
void decode_graph(const std::string& v, const std::string& key, const std::string& at) { rollout::parse_decode_graph_mode(v, at + ": " + key); }
void attention(const std::string& v, const std::string& key, const std::string& at) { policy::parse_attention_backend(v, at + ": " + key); }
void autocast(const std::string& v, const std::string& key, const std::string& at) { with_parser(key, at, [&] { parse_autocast(v); }); }
void lr_schedule(const std::string& v, const std::string& key, const std::string& at) {
  LrSchedule s;
  s.kind = v;
  with_parser(key, at, [&] { learning_rate(s, 0); });
}
void device(const std::string& v, const std::string& key, const std::string& at) {
  if (!valid_device_spec(v))
    throw Error(at + ": " + key + " must be auto, cpu, cuda or cuda:N (N a GPU index), not '" + v + "'");
}
void model_shape(const std::string& v, const std::string& key, const std::string& at) {
  if (!v.empty()) with_parser(key, at, [&] { policy::checkpoint_shape(v); });
}
void checkpoint_dtype(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { policy::checkpoint_dtype(v); });
}
void inference_dtype(const std::string& v, const std::string& key, const std::string& at) {
  if (v != "fp32" && v != "bf16") throw Error(at + ": " + key + " must be fp32 or bf16, not '" + v + "'");
}
void distributed_backend(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { check_backend_name(v); });
}
void sharding(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { parse_sharding(v); });
}
void selfplay_mode(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { parse_selfplay_mode(v); });
}
void setting(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { rollout::parse_setting(v); });
}
void eval_seeds(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { parse_eval_seeds(v); });
}
void sandbox_namespaces(const std::string& v, const std::string& key, const std::string& at) {
  with_parser(key, at, [&] { envsandbox::check_namespaces_mode(v); });
}

}  // namespace spade::trainer::config_enums
