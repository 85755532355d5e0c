#include "sweep/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace trainsim::sweep {

namespace {

constexpr double kPanelW = 420, kPanelH = 280, kLeft = 70, kTop = 40, kGap = 90;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

struct Series {
  std::string name;
  std::vector<std::pair<std::size_t, double>> throughput, efficiency;  // (x index, value)
};

/// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten.
double nice_max(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

void panel(std::ostringstream& svg, double x0, const std::string& title, const std::string& x_label,
           const std::vector<std::string>& ticks, const std::vector<Series>& series, bool eff) {
  double top = 0;
  for (const auto& s : series)
    for (const auto& [i, v] : eff ? s.efficiency : s.throughput) top = std::max(top, v);
  top = nice_max(eff ? std::max(top, 1.0) : top);
  const double n = static_cast<double>(std::max<std::size_t>(ticks.size(), 1));
  auto px = [&](std::size_t i) { return x0 + kPanelW * (static_cast<double>(i) + 0.5) / n; };
  auto py = [&](double v) { return kTop + kPanelH * (1 - v / top); };
  svg << "<text x=\"" << x0 + kPanelW / 2 << "\" y=\"" << kTop - 14
      << "\" text-anchor=\"middle\" font-weight=\"bold\">" << escape(title) << "</text>\n";
  svg << "<rect x=\"" << x0 << "\" y=\"" << kTop << "\" width=\"" << kPanelW << "\" height=\""
      << kPanelH << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = top * k / 4;
    svg << "<line x1=\"" << x0 << "\" x2=\"" << x0 + kPanelW << "\" y1=\"" << py(v) << "\" y2=\""
        << py(v) << "\" stroke=\"#ddd\"/>\n<text x=\"" << x0 - 6 << "\" y=\"" << py(v) + 4
        << "\" text-anchor=\"end\">" << (eff ? num(100 * v) + "%" : num(v)) << "</text>\n";
  }
  for (std::size_t i = 0; i < ticks.size(); ++i)
    svg << "<text x=\"" << px(i) << "\" y=\"" << kTop + kPanelH + 18 << "\" text-anchor=\"middle\">"
        << escape(ticks[i]) << "</text>\n";
  svg << "<text x=\"" << x0 + kPanelW / 2 << "\" y=\"" << kTop + kPanelH + 40
      << "\" text-anchor=\"middle\">" << escape(x_label) << "</text>\n";
  for (std::size_t s = 0; s < series.size(); ++s) {
    const auto& pts = eff ? series[s].efficiency : series[s].throughput;
    const char* color = kColors[s % (sizeof kColors / sizeof *kColors)];
    std::string path;
    for (const auto& [i, v] : pts) path += (path.empty() ? "M" : " L") + num(px(i)) + "," + num(py(v));
    if (pts.size() > 1)
      svg << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
    for (const auto& [i, v] : pts)
      svg << "<circle cx=\"" << px(i) << "\" cy=\"" << py(v) << "\" r=\"3.5\" fill=\"" << color
          << "\"><title>" << escape(series[s].name) << ": " << num(eff ? 100 * v : v)
          << (eff ? "%" : " samples/s") << "</title></circle>\n";
  }
}

}  // namespace

std::string sweep_svg(const SweepPlan& plan, const std::vector<nlohmann::ordered_json>& rows) {
  const Axis& x_axis = plan.axes.front();
  std::vector<Series> series;
  std::map<std::string, std::size_t> index;
  for (const auto& r : rows) {
    std::string name;
    for (std::size_t a = 1; a < plan.axes.size(); ++a)
      name += plan.axes[a].path + "=" + axis_text(r, plan.axes[a]) + ", ";
    if (x_axis.path != kNodesPath) name += r.at("label").get<std::string>();
    if (name.size() >= 2 && name.compare(name.size() - 2, 2, ", ") == 0) name.resize(name.size() - 2);
    if (!index.count(name)) {
      index[name] = series.size();
      series.push_back({name, {}, {}});
    }
    const std::string xv = axis_text(r, x_axis);
    const auto xi = static_cast<std::size_t>(
        std::find(x_axis.texts.begin(), x_axis.texts.end(), xv) - x_axis.texts.begin());
    Series& s = series[index[name]];
    s.throughput.emplace_back(xi, r.at("samples_per_s").get<double>());
    s.efficiency.emplace_back(xi, r.at("scaling_efficiency").get<double>());
  }
  const double legend_h = 18.0 * static_cast<double>(series.size()) + 10;
  const double width = kLeft + 2 * kPanelW + kGap + 30;
  const double height = kTop + kPanelH + 60 + legend_h;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n";
  panel(svg, kLeft, "throughput (samples/s): " + plan.variants.front().name, x_axis.path,
        x_axis.texts, series, false);
  panel(svg, kLeft + kPanelW + kGap, "scaling efficiency", x_axis.path, x_axis.texts, series, true);
  for (std::size_t s = 0; s < series.size(); ++s) {
    const double y = kTop + kPanelH + 62 + 18.0 * static_cast<double>(s);
    svg << "<rect x=\"" << kLeft << "\" y=\"" << y - 9 << "\" width=\"14\" height=\"4\" fill=\""
        << kColors[s % (sizeof kColors / sizeof *kColors)] << "\"/><text x=\"" << kLeft + 20
        << "\" y=\"" << y - 3 << "\">" << escape(series[s].name.empty() ? "all" : series[s].name)
        << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace trainsim::sweep
