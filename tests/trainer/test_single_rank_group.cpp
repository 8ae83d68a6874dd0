// A process group of one rank (DistributedOptions::group_at_world_size_1): what scripts/gpu/
// run_trainer_check.sh uses to exercise NCCL on one GPU, checked here with Gloo. Expected values: a
// one-rank sum/max is the identity, so the collectives leave every value and gradient unchanged and a
// GRPO step through the group equals the step without one (same float operations: exact equality).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/testing/tiny_policy.h"
#include "trainer/distributed.h"
#include "trainer/grpo_update.h"

using namespace spade;
using namespace spade::trainer;

TEST(SingleRankGroup, GlooGroupOfOneIsActiveAndTheIdentity) {
  DistributedOptions o;
  o.backend = "gloo";
  o.group_at_world_size_1 = true;
  DistributedContext dist(DistributedEnv{}, o);
  EXPECT_TRUE(dist.active());
  EXPECT_EQ(dist.backend(), "gloo");
  EXPECT_EQ(dist.all_reduce_sum({1.5, -2.0}), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(dist.all_reduce_max({3.0}), (std::vector<double>{3.0}));
  EXPECT_EQ(dist.broadcast_string("x"), "x");
  DistributedContext plain(DistributedEnv{}, DistributedOptions{});  // the default: no group
  EXPECT_FALSE(plain.active());
  EXPECT_EQ(plain.backend(), "none");
}

TEST(SingleRankGroup, GrpoStepThroughTheGroupEqualsTheStepWithout) {
  DistributedOptions o;
  o.backend = "gloo";
  o.group_at_world_size_1 = true;
  DistributedContext dist(DistributedEnv{}, o);
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(3), b = fixtures::make_tiny_policy(3);
  std::vector<rollout::Sample> samples(2);
  for (int i = 0; i < 2; ++i) {
    samples[i].append_context({5, 6, 7});
    samples[i].append_sampled({8 + i, 9, 10 + i}, {-3.f, -3.f, -3.f});
    samples[i].advantage = i == 0 ? 1.0 : -1.0;
  }
  torch::optim::AdamW opt_a(a.model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_b(b.model->parameters(), torch::optim::AdamWOptions(1e-2));
  const UpdateStats sa = grpo_update(a.model, opt_a, samples, {}, &dist);
  const UpdateStats sb = grpo_update(b.model, opt_b, samples, {});
  EXPECT_EQ(sa.pg_loss, sb.pg_loss);
  EXPECT_EQ(sa.grad_norm, sb.grad_norm);
  auto pb = b.model->parameters();
  auto pa = a.model->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
}
