// The library option structs and the run config share one copy of each default: a default config
// bridged into the options (trainer/config_bridge.h) equals the options' own defaults, and both are the
// reference's values (docs/sources.md, reference §4-§5, trainer-anchors §4), written out here.
#include <gtest/gtest.h>

#include "trainer/config.h"
#include "trainer/config_bridge.h"
#include "trainer/step_bench.h"

using namespace spade;
using namespace spade::trainer;

TEST(ConfigDefaults, SamplingIsTheReferencesAndTheSamplers) {
  const Config c;
  const rollout::SamplingParams lib;
  for (const SamplingYaml* s : {&c.selfplay.designer, &c.selfplay.agent}) {
    const rollout::SamplingParams p = sampling(*s);
    EXPECT_DOUBLE_EQ(p.temperature, 0.6);  // reference §5
    EXPECT_DOUBLE_EQ(p.top_p, 0.95);
    EXPECT_EQ(p.top_k, 20);
    EXPECT_EQ(p.temperature, lib.temperature);
    EXPECT_EQ(p.top_p, lib.top_p);
    EXPECT_EQ(p.top_k, lib.top_k);
    EXPECT_EQ(p.min_p, lib.min_p);
  }
  EXPECT_DOUBLE_EQ(c.selfplay.hint.temperature, 0.3);  // reference §5: hint/validator temperature
}

TEST(ConfigDefaults, SandboxIsTheSandboxOptions) {
  const envsandbox::SandboxOptions bridged = sandbox_options(SandboxYaml{});
  const envsandbox::SandboxOptions lib;
  EXPECT_EQ(bridged.load_timeout_s, 30);  // reference §4: env step/load 30 s
  EXPECT_EQ(bridged.call_timeout_s, 30);
  EXPECT_EQ(bridged.memory_limit_bytes, int64_t{1} << 30);  // 1 GiB
  EXPECT_EQ(bridged.load_timeout_s, lib.load_timeout_s);
  EXPECT_EQ(bridged.call_timeout_s, lib.call_timeout_s);
  EXPECT_EQ(bridged.memory_limit_bytes, lib.memory_limit_bytes);
  EXPECT_EQ(bridged.cpu_limit_s, lib.cpu_limit_s);
  EXPECT_EQ(bridged.namespaces, lib.namespaces);
  EXPECT_EQ(bridged.seccomp, lib.seccomp);
  EXPECT_EQ(bridged.cgroups, lib.cgroups);
  EXPECT_EQ(bridged.pool_memory_bytes, lib.pool_memory_bytes);
  EXPECT_EQ(bridged.spare_children, lib.spare_children);
  EXPECT_EQ(bridged.preload_spares, lib.preload_spares);
  EXPECT_EQ(bridged.spin_us, lib.spin_us);
  EXPECT_EQ(bridged.max_obs_chars, lib.max_obs_chars);
}

TEST(ConfigDefaults, LossUpdateScheduleAndBlendAreTheLibraries) {
  const Config c;
  const PolicyLossConfig bridged = loss_config(c.loss), lib;
  EXPECT_DOUBLE_EQ(bridged.eps_low, 0.2);  // reference §5
  EXPECT_DOUBLE_EQ(bridged.eps_high, 0.28);
  EXPECT_DOUBLE_EQ(bridged.tis_cap, 2.0);
  EXPECT_EQ(bridged.eps_low, lib.eps_low);
  EXPECT_EQ(bridged.eps_high, lib.eps_high);
  EXPECT_EQ(bridged.agg_mode, lib.agg_mode);
  EXPECT_EQ(bridged.tis, lib.tis);
  EXPECT_EQ(bridged.tis_cap, lib.tis_cap);
  EXPECT_EQ(bridged.tis_low, lib.tis_low);
  EXPECT_EQ(bridged.tis_level, lib.tis_level);
  EXPECT_EQ(bridged.kl_type, lib.kl_type);
  EXPECT_EQ(bridged.dual_clip_c.has_value(), lib.dual_clip_c.has_value());

  const UpdateOptions u = update_options(c), ulib;
  EXPECT_EQ(u.micro_batch_tokens, 8192);
  EXPECT_EQ(u.logprob_chunk_rows, 2048);
  EXPECT_DOUBLE_EQ(u.grad_clip, 1.0);  // trainer-anchors §4
  EXPECT_EQ(u.micro_batch_tokens, ulib.micro_batch_tokens);
  EXPECT_EQ(u.logprob_chunk_rows, ulib.logprob_chunk_rows);
  EXPECT_EQ(u.grad_clip, ulib.grad_clip);
  EXPECT_EQ(u.mini_batches, ulib.mini_batches);
  EXPECT_EQ(u.autocast, ulib.autocast);
  const StepBenchOptions bench;
  EXPECT_EQ(bench.micro_batch_tokens, u.micro_batch_tokens);
  EXPECT_EQ(bench.logprob_chunk_rows, u.logprob_chunk_rows);

  const LrSchedule s = lr_schedule(c), slib;
  EXPECT_DOUBLE_EQ(s.base_lr, 1e-6);  // reference §5: Adam lr 1e-6 constant
  EXPECT_EQ(s.kind, slib.kind);
  EXPECT_EQ(s.base_lr, slib.base_lr);
  EXPECT_EQ(s.warmup_steps, slib.warmup_steps);
  EXPECT_EQ(s.min_lr_ratio, slib.min_lr_ratio);
  EXPECT_EQ(s.total_steps, c.selfplay.steps);

  const reward::BlendConfig b = blend_config(c.reward), blib;
  EXPECT_DOUBLE_EQ(b.regret_weight, 0.4);  // paper Sec. 4.1 weights 0.4 / 0.6
  EXPECT_DOUBLE_EQ(b.plateau_weight, 0.6);
  EXPECT_DOUBLE_EQ(b.regret_scale, 0.15);
  EXPECT_EQ(b.regret_weight, blib.regret_weight);
  EXPECT_EQ(b.plateau_weight, blib.plateau_weight);
  EXPECT_EQ(b.regret_scale, blib.regret_scale);
  EXPECT_EQ(b.plateau.low, blib.plateau.low);
  EXPECT_EQ(b.plateau.high, blib.plateau.high);
  EXPECT_EQ(b.plateau.ramp, blib.plateau.ramp);
  EXPECT_EQ(b.frontier_weight, blib.frontier_weight);
  EXPECT_EQ(b.frontier_scale, blib.frontier_scale);
}
