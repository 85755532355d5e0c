// Unit strings -> SI doubles (core/units.hpp): one test per dimension, then what is rejected.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>

#include "core/units.hpp"

namespace trainsim {
namespace {

/// The parsed value, or NaN when the string was rejected (so EXPECT_DOUBLE_EQ reports both).
double parse(const std::string& text, Dimension d) {
  const std::optional<double> v = parse_quantity(text, d);
  return v ? *v : std::numeric_limits<double>::quiet_NaN();
}

TEST(ParseQuantity, Bandwidth) {
  EXPECT_DOUBLE_EQ(parse("100Gbps", Dimension::bandwidth), 100e9 / 8);  // 12.5e9 B/s
  EXPECT_DOUBLE_EQ(parse("400Gbps", Dimension::bandwidth), 50e9);
  EXPECT_DOUBLE_EQ(parse("8bps", Dimension::bandwidth), 1.0);
  EXPECT_DOUBLE_EQ(parse("15.75GB/s", Dimension::bandwidth), 15.75e9);
  EXPECT_DOUBLE_EQ(parse("1TB/s", Dimension::bandwidth), 1e12);
  EXPECT_DOUBLE_EQ(parse("2GiB/s", Dimension::bandwidth), 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse("1Tbps", Dimension::bandwidth), 1e12 / 8);
}

TEST(ParseQuantity, Bytes) {
  EXPECT_DOUBLE_EQ(parse("1.2TiB", Dimension::bytes), 1.2 * 1024.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse("32GiB", Dimension::bytes), 32.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse("32GB", Dimension::bytes), 32e9);
  EXPECT_DOUBLE_EQ(parse("4KiB", Dimension::bytes), 4096.0);
  EXPECT_DOUBLE_EQ(parse("7B", Dimension::bytes), 7.0);
}

TEST(ParseQuantity, Seconds) {
  EXPECT_DOUBLE_EQ(parse("25us", Dimension::seconds), 25e-6);
  EXPECT_DOUBLE_EQ(parse("1.5ms", Dimension::seconds), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse("3ns", Dimension::seconds), 3e-9);
  EXPECT_DOUBLE_EQ(parse("2s", Dimension::seconds), 2.0);
  EXPECT_DOUBLE_EQ(parse("0us", Dimension::seconds), 0.0);
}

TEST(ParseQuantity, FlopRate) {
  EXPECT_DOUBLE_EQ(parse("312TFLOPS", Dimension::flop_rate), 312e12);
  EXPECT_DOUBLE_EQ(parse("19.5TFLOPS", Dimension::flop_rate), 19.5e12);
  EXPECT_DOUBLE_EQ(parse("1PFLOPS", Dimension::flop_rate), 1e15);
  EXPECT_DOUBLE_EQ(parse("900GFLOPS", Dimension::flop_rate), 900e9);
}

TEST(ParseQuantity, DimensionlessIsAPlainNumber) {
  EXPECT_DOUBLE_EQ(parse("0.5", Dimension::dimensionless), 0.5);
  EXPECT_FALSE(parse_quantity("0.5x", Dimension::dimensionless));
}

TEST(ParseQuantity, ExponentAndSpaceBeforeTheUnit) {
  EXPECT_DOUBLE_EQ(parse("1e3GB", Dimension::bytes), 1e12);
  EXPECT_DOUBLE_EQ(parse("100 Gbps", Dimension::bandwidth), 12.5e9);
}

TEST(ParseQuantity, NegativeNumbersParseAndAreLeftToTheCaller) {
  // JsonObject::quantity rejects them with the JSON path; the parser only reads the text.
  EXPECT_DOUBLE_EQ(parse("-5GB/s", Dimension::bandwidth), -5e9);
}

TEST(ParseQuantity, RejectsMalformedStrings) {
  for (const char* bad : {"", "Gbps", "100", "fast", "100gbps", "100GBPS", "100Gb/s", "100 furlong",
                          "100Gbps ", "1.2.3GB", "nan GB", "inf GB", "1e999GB"}) {
    EXPECT_FALSE(parse_quantity(bad, Dimension::bandwidth)) << '"' << bad << '"';
    EXPECT_FALSE(parse_quantity(bad, Dimension::bytes)) << '"' << bad << '"';
  }
}

TEST(ParseQuantity, RejectsAUnitOfAnotherDimension) {
  EXPECT_FALSE(parse_quantity("16GB", Dimension::bandwidth));
  EXPECT_FALSE(parse_quantity("16GB/s", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("25us", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("312TFLOPS", Dimension::bandwidth));
  EXPECT_FALSE(parse_quantity("100Gbps", Dimension::flop_rate));
  EXPECT_FALSE(parse_quantity("1s", Dimension::dimensionless));
}

TEST(DimensionText, NamesAndExamplesForErrorMessages) {
  EXPECT_STREQ(dimension_name(Dimension::bandwidth), "a bandwidth");
  EXPECT_STREQ(dimension_name(Dimension::bytes), "a size");
  EXPECT_NE(std::string(dimension_examples(Dimension::bandwidth)).find("Gbps"), std::string::npos);
  EXPECT_NE(std::string(dimension_examples(Dimension::seconds)).find("us"), std::string::npos);
}

TEST(FormatBytes, DecimalSuffixes) {
  EXPECT_EQ(format_bytes(1.5e9), "1.50 GB");
  EXPECT_EQ(format_bytes(2.5e12), "2.50 TB");
  EXPECT_EQ(format_bytes(1e3), "1.00 KB");
  EXPECT_EQ(format_bytes(999), "999 B");
}

}  // namespace
}  // namespace trainsim
