#pragma once
/// @file
/// A model of the machine a step runs on, and presets for H100 and H200 nodes.

#include <string>

namespace overlap::sim {

/// Per-GPU figures. Bandwidths are per direction in bytes per microsecond (1 GB/s = 1000 bytes/us);
/// latencies and costs in microseconds.
struct machine {
  std::string name;
  int sms = 132;                    ///< streaming multiprocessors per GPU
  double peak_flops_per_us = 0;     ///< dense bf16 tensor throughput of the whole GPU
  double memory_bytes_per_us = 0;   ///< HBM bandwidth
  int gpus_per_node = 8;
  double nvlink_bytes_per_us = 0;   ///< per GPU, per direction, inside a node
  double nvlink_latency_us = 0;     ///< per ring step / message inside a node
  double network_bytes_per_us = 0;  ///< per GPU, per direction, across nodes
  double network_latency_us = 0;
  double launch_us = 0;             ///< host cost to issue one op (kernel launch, NCCL call)
  int comm_sms = 0;                 ///< SMs a collective kernel occupies
  int p2p_sms = 0;                  ///< SMs a send or recv kernel occupies
};

/// An 8-GPU H100 SXM node: 989 TFLOP/s dense bf16, 132 SMs, 3.35 TB/s HBM3, NVLink 4 at 450 GB/s
/// per direction, one 400 Gb/s NIC (50 GB/s) per GPU. Latencies and launch cost are typical NCCL
/// and CUDA launch figures, and the SMs of communication kernels typical channel counts (NCCL runs
/// one block per channel: many for collectives, a few per peer for send/recv), not measurements of
/// ours.
inline machine h100_node() {
  return machine{.name = "h100",
                 .sms = 132,
                 .peak_flops_per_us = 989.4e6,
                 .memory_bytes_per_us = 3.35e6,
                 .gpus_per_node = 8,
                 .nvlink_bytes_per_us = 450e3,
                 .nvlink_latency_us = 3,
                 .network_bytes_per_us = 50e3,
                 .network_latency_us = 8,
                 .launch_us = 4,
                 .comm_sms = 16,
                 .p2p_sms = 2};
}

/// An 8-GPU H200 node: the H100's compute and links with 4.8 TB/s HBM3e.
inline machine h200_node() {
  machine m = h100_node();
  m.name = "h200";
  m.memory_bytes_per_us = 4.8e6;
  return m;
}

}  // namespace overlap::sim
