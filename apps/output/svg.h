// The picture of a simulation: one self-contained SVG with the timeline (one
// row per device: forward, backward, input-gradient, weight-gradient,
// recompute and communication in distinct colours on a light idle
// background, micro-batch numbers inside ops that have room, a time axis and
// a legend) above a memory-over-time step chart per device (static memory,
// activations + workspace, the capacity line and the peak with its value).
//
// Legible from 2 to 64 devices and 4 to 512 micro-batches: rows shrink with
// the number of devices, memory charts go into a grid, and when ops get
// narrower than a few pixels the timeline draws busy intervals instead of
// single ops: bars at most a few pixels wide whose height is the share of
// the interval the device is busy, split into bands by op kind (an idle gap
// of two pixels or more stays a gap); sends become a strip whose height is
// the share of time on the link; the memory curves keep each pixel column's
// range, so peaks survive.
//
// Pure formatting: the same inputs give the same bytes (fixed number
// formatting, no clock, no locale).
#pragma once

#include <string>

#include "apps/input/config.h"
#include "core/engine.h"

namespace ppb {

// Class of every timeline row (<g class=...>) and memory chart, so tests and
// tools can find them: one of each per device, ids "rank-<d>" and
// "memory-<d>".
inline constexpr const char* kSvgTimelineRowClass = "ppb-row";
inline constexpr const char* kSvgMemoryChartClass = "ppb-mem";

// The SVG document (no XML declaration, so it can be inlined in HTML).
// `note`, when not empty, is shown above the title (e.g. "search
// recommendation"). REQUIRES: result came from running run.program on
// run.spec with SimOptions::record_ops and record_memory.
std::string FormatSvg(const RunConfig& config, const PreparedRun& run, const SimResult& result,
                      const std::string& note = "");

// Text escaped for XML and HTML content and attribute values (& < > " ').
std::string EscapeXml(std::string_view text);

}  // namespace ppb
