// The executor side of the host-overhead bench: basic_executor<null_api> dispatching the bench
// program eagerly (measure_dispatch), and replaying it once captured (measure_replay); callgrind
// collects inside one of them (see bench/host_overhead.sh). argv: steps, then "replay" or not.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include <overlap/cuda/executor.hpp>

#include "null_api.hpp"
#include "program.hpp"

using executor = overlap::cuda::basic_executor<bench::null_api>;

extern "C" __attribute__((noinline)) void measure_dispatch(executor* e, int steps) {
  for (int i = 0; i < steps; ++i) e->run();
}

extern "C" __attribute__((noinline)) void measure_replay(executor* e, int steps) {
  for (int i = 0; i < steps; ++i) e->replay();
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const overlap::schedule::program p = bench::bench_program();
  std::vector<bench::comm_shape> shapes = bench::comm_shapes(p);
  static char memory[2];  // never touched: the null backend only passes pointers on
  executor::resources r;
  for (std::size_t c = 0; c < p.comms.size(); ++c) r.comms[p.comms[c].name] = &shapes[c];
  // One kernel per compute type, as a trainer binds them; the key is what tells ops apart.
  for (const auto& o : p.ops)
    if (o.kind == overlap::schedule::op_kind::compute)
      r.kernels[o.key.type] = [](const overlap::schedule::op_key&, void* stream) { bench::null_kernel(stream); };
  r.buffers = [](const overlap::schedule::op& o) {
    return executor::buffer{memory, o.bytes, memory + 1, o.bytes, bench::element_bytes};
  };
  executor e(p, std::move(r));
  if (argc > 2 && std::string(argv[2]) == "replay") {
    e.capture();
    measure_replay(&e, steps);
  } else {
    measure_dispatch(&e, steps);
  }
  std::printf("{\"ops\":%zu,\"steps\":%d}\n", p.ops.size(), steps);
}
