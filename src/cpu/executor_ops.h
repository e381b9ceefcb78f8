// What the executor's files share (cpu/executor.cc: binding, placement,
// the call loop; executor_<family>.cc: running each family of ops). Not a
// public header.
//
// Ops run by family, each family in its own file:
//   Linear         executor_linear.cc       Linear (integer-dot, AMX, int16 GEMM, float, reference paths)
//   Attention      executor_attention.cc    Attention, KvStore (the KV cache)
//   SequenceMixer  executor_sequence_ops.cc ShortConv, CausalConv, DeltaRule (conv tails, recurrent state)
//   Elementwise    executor_elementwise.cc  every other op: row-local or elementwise, no state
// Attention and SequenceMixer ops read and write a sequence's state; in a
// step of several sequences each row runs against its own (run_rows_on_own_states).
#pragma once

#include <cstdint>

#include "graph/program.h"
#include "kernels/cpu_isa.h"
#include "cpu/executor.h"

namespace tessera {

// Elements per thread below which an elementwise op is not split (a decode
// step's ops are a few thousand elements; a pool hand-off costs microseconds).
inline constexpr int64_t kElementwiseGrain = 16384;
// Query rows per work item of a prefill attention split (see Attention).
inline constexpr int64_t kAttentionRowBlock = 16;
// Linears in one group at most (q/k/v make 3).
inline constexpr int kMaxLinearGroup = 8;

// The levels whose prefill calls (kI16GemmMinTokens rows or more) run the
// int16 GEMM; Isa::Amx has its tiles instead.
inline bool uses_i16gemm(Isa isa) { return isa == Isa::Avx2 || isa == Isa::Avx512; }

enum class OpFamily { Linear, Attention, SequenceMixer, Elementwise };

inline OpFamily op_family(OpKind k) {
  switch (k) {
    case OpKind::Linear: return OpFamily::Linear;
    case OpKind::Attention:
    case OpKind::KvStore: return OpFamily::Attention;
    case OpKind::ShortConv:
    case OpKind::CausalConv:
    case OpKind::DeltaRule: return OpFamily::SequenceMixer;
    case OpKind::Embed:
    case OpKind::RmsNorm:
    case OpKind::Rope:
    case OpKind::GatedActivation:
    case OpKind::Add:
    case OpKind::SelectRows:
    case OpKind::Softcap:
    case OpKind::Argmax:
    case OpKind::SliceCols:
    case OpKind::Scale:
    case OpKind::SplitHeads: return OpFamily::Elementwise;
  }
  return OpFamily::Elementwise;
}

}  // namespace tessera
