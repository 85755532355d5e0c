// Kernel calibration files: the shipped ones load, what the writer writes the reader reads back,
// bad input names the file and JSON path, and a device profile's GEMM cost follows its curve.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "model/compute_cost.hpp"
#include "model/device_profile.hpp"
#include "model/kernel_calibration.hpp"
#include "support/fixtures.hpp"

using namespace trainsim::model;
using trainsim::testing_support::config_error_of;

namespace {

std::string write_temp(const std::string& text, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(KernelCalibration, ShippedA100FileLoadsWithProvenance) {
  const auto c = load_kernel_calibration("topologies/calibration/a100-sxm-cublaslt-azure.json");
  EXPECT_EQ(c.provenance.method, "published");
  EXPECT_EQ(c.gemm.size(), 8u);
  EXPECT_DOUBLE_EQ(c.gemm[0].achieved, 119.4e12);
  EXPECT_EQ(c.gemm[0].dtype, Dtype::fp16);
}

TEST(KernelCalibration, WriterOutputReadsBackUnchanged) {
  KernelCalibration c;
  c.provenance = {"measured", "trainsim-validate kernels", "2026-11-22", "GPU X", "1.2", "13.0",
                  "13.1", "", 132, 1980, 2619};
  c.gemm = {{Dtype::bf16, 4096, 4096, 4096, 2, 712.25e12}, {Dtype::tf32, 1024, 512, 256, 1, 33e12}};
  c.memory_bandwidth = 2.875e12;
  c.launch_overhead = 2.5e-6;
  c.elementwise = {{"layer_norm", 1e8, 70e-6}};
  std::ostringstream out;
  write_kernel_calibration(out, c);
  const auto back = load_kernel_calibration(write_temp(out.str(), "roundtrip.json"));
  EXPECT_EQ(back.provenance.gpu, "GPU X");
  EXPECT_EQ(back.provenance.sm_count, 132);
  ASSERT_EQ(back.gemm.size(), 2u);
  EXPECT_EQ(back.gemm[1].dtype, Dtype::tf32);
  EXPECT_DOUBLE_EQ(back.gemm[0].batch, 2);
  EXPECT_NEAR(back.gemm[0].achieved, 712.25e12, 1);
  EXPECT_NEAR(*back.memory_bandwidth, 2.875e12, 1);
  EXPECT_NEAR(*back.launch_overhead, 2.5e-6, 1e-12);
  EXPECT_EQ(back.elementwise[0].name, "layer_norm");
}

TEST(KernelCalibration, UnknownDtypeNamesItsPath) {
  const std::string f = write_temp(R"({"schema": "trainsim.kernel_calibration/1",
    "provenance": {"method": "measured", "source": "x", "date": "2026-11-22"},
    "gemm": [{"dtype": "int4", "m": 1, "n": 1, "k": 1, "tflops": 1}]})", "bad_dtype.json");
  const auto e = config_error_of(load_kernel_calibration, f);
  EXPECT_EQ(e.json_path(), "/gemm/0/dtype");
}

TEST(KernelCalibration, UnknownKeyIsAnError) {
  const std::string f = write_temp(R"({"schema": "trainsim.kernel_calibration/1",
    "provenance": {"method": "measured", "source": "x", "date": "2026-11-22", "colour": "red"},
    "gemm": [{"dtype": "bf16", "m": 1, "n": 1, "k": 1, "tflops": 1}]})", "bad_key.json");
  const auto e = config_error_of(load_kernel_calibration, f);
  EXPECT_EQ(e.json_path(), "/provenance/colour");
}

TEST(KernelCalibration, A100ProfileCostsBf16GemmsFromTheFp16Curve) {
  const auto dev = load_device_profile("topologies/devices/a100-40gb.json");
  ASSERT_NE(gemm_curve(dev, Dtype::bf16), nullptr);
  // 8192^3 was measured at 253.7 TF; it is a knot of the (pooled) curve.
  const Operation g = make_gemm("g", 8192, 8192, 8192, 1, Dtype::bf16);
  const double rate = gemm_rate(g, dev);
  EXPECT_NEAR(rate, 253.7e12, 0.02 * 253.7e12);
  // The duration is the arithmetic time plus the launch overhead (compute-bound shape).
  EXPECT_NEAR(op_duration(g, dev), g.flops / rate + dev.launch_overhead, 1e-9);
  // No fp32 samples: fp32 falls back to peak_fp32 x gemm_efficiency.
  EXPECT_EQ(gemm_curve(dev, Dtype::fp32), nullptr);
}
