// TensorBoard event files (issue 5): CRC32C check values, and files written by TbWriter read back by
// an independent Python reader (tests/trainer/read_tfevents.py: own CRC32C, hand-decoded protobuf).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "tests/trainer/spawn_helpers.h"
#include "trainer/tb_writer.h"

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

TEST(TensorBoard, Crc32cCheckValues) {
  // RFC 3720 B.4 / the CRC catalogue check value of "123456789".
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
}

TEST(TensorBoard, IndependentReaderDecodesScalars) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "tb_writer";
  fs::remove_all(dir);
  std::string path;
  {
    TbWriter w(dir.string());
    path = w.path();
    w.add_scalars(0, {{"actor/pg_loss", -0.25}, {"reward/mean", 0.5}, {"perf/max_rss_gb", 1.0 / 3.0}}, 1700000000.5);
    w.add_scalars(1, {{"actor/pg_loss", 1e-3}, {"reward/mean", NAN}, {"designer/rejected_by_reason/smoke_test", 3}},
                  1700000001.25);
    w.add_scalars(300, {{"actor/pg_loss", 7.0}});
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos);
  const nlohmann::json j = testutil::read_tfevents(path, (dir / "read.json").string());
  EXPECT_EQ(j["file_version"], "brain.Event:2");
  EXPECT_EQ(j["records"], 4);
  const auto& s = j["scalars"];
  ASSERT_EQ(s["actor/pg_loss"].size(), 3u);
  EXPECT_EQ(s["actor/pg_loss"][0][0], 0);
  EXPECT_EQ(s["actor/pg_loss"][0][1].get<double>(), -0.25);
  EXPECT_EQ(s["actor/pg_loss"][0][2].get<double>(), 1700000000.5);
  EXPECT_EQ(s["actor/pg_loss"][1][1].get<double>(), static_cast<double>(1e-3f));
  EXPECT_EQ(s["actor/pg_loss"][2][0], 300);  // a multi-byte varint step
  EXPECT_EQ(s["reward/mean"].size(), 1u);   // NaN skipped
  EXPECT_EQ(s["perf/max_rss_gb"][0][1].get<double>(), static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(s["designer/rejected_by_reason/smoke_test"][0][1].get<double>(), 3.0);
}
