// The enum-valued config keys, checked by the parser of the library that owns each enum, so that each
// enum has one list of names (the parser's). Torch-free header; the definitions (config_enums.cpp) call
// into policy/, rollout/, reward/ and trainer/. Thread-safe (pure functions).
#pragma once
#include <string>

namespace spade::trainer::config_enums {

// Each throws spade::Error "AT: KEY: <the parser's message, which lists the allowed names>" (the key
// once) when `value` is not one of the names its parser accepts; `at` is "FILE:LINE" or "--set K=V".
void agg_mode(const std::string& value, const std::string& key, const std::string& at);         // loss.agg_mode (policy_loss.h)
void kl_type(const std::string& value, const std::string& key, const std::string& at);          // loss.kl_type (policy_loss.h)
void tis_level(const std::string& value, const std::string& key, const std::string& at);        // loss.tis_level (policy_loss.h)
void designer_reward(const std::string& value, const std::string& key, const std::string& at);  // reward.designer_reward (reward/designer_reward.h)
void decode_graph(const std::string& value, const std::string& key, const std::string& at);     // selfplay.<role>.decode_graph (rollout/sampler.h)
void attention(const std::string& value, const std::string& key, const std::string& at);        // train.attention (policy/transformer.h)
void autocast(const std::string& value, const std::string& key, const std::string& at);         // train.autocast (trainer/autocast.h)
void lr_schedule(const std::string& value, const std::string& key, const std::string& at);      // optim.lr_schedule (trainer/lr_schedule.h)
void device(const std::string& value, const std::string& key, const std::string& at);           // train.device (trainer/device.h)
void checkpoint_dtype(const std::string& value, const std::string& key, const std::string& at); // checkpoint.dtype (trainer/checkpointing.h)
void distributed_backend(const std::string& value, const std::string& key, const std::string& at);  // distributed.backend (trainer/distributed.h)
void sharding(const std::string& value, const std::string& key, const std::string& at);           // distributed.sharding (trainer/sharding.h)
void inference_dtype(const std::string& value, const std::string& key, const std::string& at);    // distributed.inference_dtype (trainer/parameter_shards.h)
void selfplay_mode(const std::string& value, const std::string& key, const std::string& at);      // selfplay.mode (trainer/env_pool.h)
void setting(const std::string& value, const std::string& key, const std::string& at);            // selfplay.setting (rollout/prompts.h)
void eval_seeds(const std::string& value, const std::string& key, const std::string& at);         // eval.reset_seeds (trainer/heldout_eval.h)
void model_shape(const std::string& value, const std::string& key, const std::string& at);          // model.shape: "" or policy::checkpoint_shape_names()
void sandbox_namespaces(const std::string& value, const std::string& key, const std::string& at);   // sandbox.namespaces (envsandbox/sandbox.h)

}  // namespace spade::trainer::config_enums
