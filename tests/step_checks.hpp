#pragma once
// What tests that hold a generated step to hand-computed numbers share: a small model, and
// looking its ops up.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>

#include <overlap/program/program.hpp>
#include <overlap/schedule/workload.hpp>

namespace test_queries {

namespace sc = overlap::schedule;

/// h 256, 4 heads in 2 query groups of head size 64, ffn 512, vocabulary 1000, 2 layers of 128
/// tokens, 2 micro-batches.
inline sc::workload small_gqa() {
  return {.num_layers = 2,
          .micro_batches = 2,
          .seq_length = 128,
          .micro_batch_size = 1,
          .hidden_size = 256,
          .ffn_hidden_size = 512,
          .num_attention_heads = 4,
          .num_query_groups = 2,
          .vocab_size = 1000};
}
/// Multi-latent attention at the same scale: h 256, 4 heads; q latent 64, kv latent 32,
/// query/key heads 32 + 16 rotary, values 32; ffn 512, vocabulary 1000, 2 layers of 128 tokens.
inline sc::workload small_mla() {
  return {.num_layers = 2,
          .micro_batches = 2,
          .seq_length = 128,
          .micro_batch_size = 1,
          .hidden_size = 256,
          .ffn_hidden_size = 512,
          .num_attention_heads = 4,
          .vocab_size = 1000,
          .multi_latent_attention = true,
          .q_lora_rank = 64,
          .kv_lora_rank = 32,
          .qk_head_dim = 32,
          .qk_pos_emb_head_dim = 16,
          .v_head_dim = 32};
}

/// The index of the op with `key` (a test failure when there is none).
inline std::size_t index_of(const sc::program& p, const sc::op_key& key) {
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].key == key) return i;
  FAIL("no op " << sc::display_name(key));
  return 0;
}
inline const sc::op& find(const sc::program& p, const sc::op_key& key) { return p.ops[index_of(p, key)]; }

/// The bytes of every gradient reduction of the program.
inline std::int64_t reduced_bytes(const sc::program& p) {
  std::int64_t total = 0;
  for (const auto& o : p.ops)
    if (o.key.type == sc::op_type::dp_grad_reduce) total += o.bytes;
  return total;
}

}  // namespace test_queries
