#include "core/mixers.h"

#include <algorithm>
#include <initializer_list>

namespace ppb {

using I64 = std::int64_t;

double SpanShare(const Architecture& a, Span span, I64 s) {
  const double n = static_cast<double>(s);
  if (n <= 0) return 1.0;
  const double half = n * n / 2;
  if (span == Span::Sliding && a.sliding_window > 0 && a.sliding_window < s) {
    const double w = static_cast<double>(a.sliding_window);
    return (w * n - w * w / 2) / half;
  }
  if (span == Span::Chunked && a.attention_chunk > 0 && a.attention_chunk < s) {
    return static_cast<double>(a.attention_chunk) / n;
  }
  return 1.0;
}

namespace {

// Mamba-2's conv1d channels: x, B and C.
I64 MambaConvDim(const Mamba2Shape& m) { return m.inner() + 2 * m.groups * m.state; }
// DeltaNet's conv1d channels: q, k and v.
I64 DeltaConvDim(const DeltaNetShape& d) { return 2 * d.keys() + d.values(); }

}  // namespace

I64 MixerWeights(const Architecture& a, Mixer m) {
  const I64 h = a.hidden;
  if (m == Mixer::Mamba2) {
    const Mamba2Shape& x = a.mamba;
    // in_proj emits z, x, B, C and dt.
    return h * (2 * x.inner() + 2 * x.groups * x.state + x.heads) + x.inner() * h;
  }
  if (m == Mixer::GatedDeltaNet) {
    const DeltaNetShape& d = a.deltanet;
    return h * (2 * d.keys() + 2 * d.values()) + h * 2 * d.value_heads +
           d.values() * h;
  }
  return 0;
}

I64 MixerParams(const Architecture& a, Mixer m) {
  if (m == Mixer::Mamba2) {
    const Mamba2Shape& x = a.mamba;
    I64 n = MixerWeights(a, m) + MambaConvDim(x) * x.conv + 3 * x.heads + x.inner();
    if (x.conv_bias) n += MambaConvDim(x);
    if (x.proj_bias) n += 2 * x.inner() + 2 * x.groups * x.state + x.heads + a.hidden;
    return n;
  }
  if (m == Mixer::GatedDeltaNet) {
    const DeltaNetShape& d = a.deltanet;
    return MixerWeights(a, m) + DeltaConvDim(d) * d.conv + 2 * d.value_heads +
           d.value_dim;
  }
  return 0;
}

double ScanFlopsPerToken(const Architecture& a, Mixer m) {
  if (m == Mixer::Mamba2) {
    const Mamba2Shape& x = a.mamba;
    const double Q = static_cast<double>(x.chunk), N = static_cast<double>(x.state);
    const double P = static_cast<double>(x.head_dim), H = static_cast<double>(x.heads);
    const double G = static_cast<double>(x.groups);
    return 2 * Q * N * G + H * (2 * Q * P + 4 * N * P) +
           2.0 * static_cast<double>(x.conv * MambaConvDim(x));
  }
  if (m == Mixer::GatedDeltaNet) {
    const DeltaNetShape& d = a.deltanet;
    const double C = static_cast<double>(d.chunk), dk = static_cast<double>(d.key_dim);
    const double dv = static_cast<double>(d.value_dim);
    return static_cast<double>(d.value_heads) * (2 * C * (3 * dk + 2 * dv) + 6 * dk * dv) +
           2.0 * static_cast<double>(d.conv * DeltaConvDim(d));
  }
  return 0;
}

MixerActivation MixerSaved(const Architecture& a, Mixer m, int bytes) {
  MixerActivation x;
  if (m != Mixer::Mamba2 && m != Mixer::GatedDeltaNet) return x;
  const I64 e = bytes;
  // The norm's input and its output (the projection's input).
  x.replicated = 2 * e * a.hidden;
  if (m == Mixer::Mamba2) {
    const Mamba2Shape& s = a.mamba;
    const I64 proj = 2 * s.inner() + 2 * s.groups * s.state + s.heads;
    // in_proj's output, the conv's output, the scan's output y and the
    // gated norm's output (out_proj's input); fp32 dt and dA_cumsum.
    x.split = e * (proj + MambaConvDim(s) + 2 * s.inner()) + 2 * 4 * s.heads;
  } else if (m == Mixer::GatedDeltaNet) {
    const DeltaNetShape& d = a.deltanet;
    const I64 proj = 2 * d.keys() + 2 * d.values() + 2 * d.value_heads;
    // Projections' outputs, the conv's output, the recurrence's output and
    // the gated norm's output; fp32 g and beta.
    x.split = e * (proj + DeltaConvDim(d) + 2 * d.values()) + 2 * 4 * d.value_heads;
  }
  return x;
}

I64 MixerTpRemainder(const Architecture& a, Mixer m, int tp) {
  if (tp <= 1) return 0;
  auto first = [tp](std::initializer_list<I64> counts) -> I64 {
    for (I64 c : counts) {
      if (c % tp != 0) return c;
    }
    return 0;
  };
  if (m == Mixer::Mamba2) return first({a.mamba.heads, a.mamba.groups});
  if (m == Mixer::GatedDeltaNet) {
    return first({a.deltanet.key_heads, a.deltanet.value_heads});
  }
  return 0;
}

}  // namespace ppb
