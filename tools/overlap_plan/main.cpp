// overlap-plan: checks a Megatron-Bridge config with the rule table of `overlap`, simulates its
// step with and without overlap, and searches the overlap knobs it leaves free. See --help.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <overlap/plan/judge.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/plan/tune.hpp>
#include <overlap/rules/validate.hpp>
#include <overlap/settings/print.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/sim/analysis/placement.hpp>
#include <overlap/sim/machine/machine.hpp>
#include <overlap/sim/machine/presets.hpp>
#include <overlap/sim/machine/profile_json.hpp>
#include <overlap/trace/svg_timeline.hpp>
#include <overlap/trace/traced_ranks.hpp>

#include "bridge.hpp"
#include "convert.hpp"
#include "overrides.hpp"

namespace {

namespace ov = overlap;
using overlap_plan::input_error;
using overlap_plan::json;

constexpr const char* description =
    "overlap-plan: check, simulate and tune the communication overlap of a Megatron-Bridge config, "
    "with the rule table of the overlap library.";

constexpr const char* footer =
    R"(CONFIG is Bridge's ConfigContainer dump: YAML (cfg.to_yaml()) or the same as JSON (.json, or a
file that starts with '{'). OVERRIDE has Hydra's semantics, applied on top in order:
  model.tensor_model_parallel_size=4   sets a key the config holds (else exit 2, naming the closest)
  +comm_overlap.delay_wgrad_compute=true   adds one it lacks     ++a.b=v   sets or adds
  ~ddp.bucket_size                     deletes one it holds

exit status: 0 valid (warnings allowed), 1 errors (or warnings under --strict), 2 the config
(or the command line) cannot be read or used; the message names the file, line and column, or
the field.)";

/// Each command: a line for the list, and what it does, shown by `overlap-plan COMMAND --help`.
struct command_text {
  const char* name;
  const char* line;
  const char* details;
};
constexpr command_text commands[] = {
    {"check", "validate the config as upstream judges it: errors, warnings, notes",
     R"(check validates the config (the rule ids and messages of the C++ static_asserts) as upstream
judges it: a rule upstream enforces is an error; one where upstream turns a feature off or ignores
a flag and runs is a warning that says what upstream does (a note where the value is upstream's
default, as every dump holds). It names the config field behind each finding and the overrides
that fix it, and prints the settings upstream runs, the environment as export lines, and the notes.)"},
    {"simulate", "simulate one step with its overlap and with every overlap off",
     R"(simulate runs one training step as upstream runs the config (its warnings applied), with the
config's overlap and with every overlap off, on a model of an H100/H200 node: step time and
exposed communication per family. --out DIR writes DIR/step.json and DIR/step_baseline.json
(Perfetto) and DIR/step.svg: one representative of each class of symmetric ranks.)"},
    {"tune", "search every overlap knob by simulation; print the best as overrides",
     R"(tune tries every overlap knob, the ones the config sets too (EP overlap and delayed wgrad, TP
overlap and its userbuffer slots, overlap_grad_reduce, overlap_param_gather, bucket_size,
CUDA_DEVICE_MAX_CONNECTIONS, p2p mode), counts the combinations the rules reject by rule id,
simulates the others and ranks them against the config as configured; prints the best as Bridge
overrides and as YAML.)"},
};

struct cli {
  std::string command, config, machine, out, profile;  ///< machine: "" until given or chosen
  std::vector<std::string> overrides;
  std::vector<int> ranks;  ///< simulate: the ranks whose traces step.json holds (empty: chosen)
  overlap_plan::read_options read;
  bool json_output = false;
  bool strict = false;                    ///< warnings (rules upstream lets run) stop the run too
  unsigned threads = 0;                   ///< tune: 0 for one per core
  std::optional<double> memory_limit_gb;  ///< simulate, tune: what a rank's step may take
  std::optional<int> placement;           ///< simulate, tune: GPUs of each NVLink domain the job fills
  std::optional<double> compute_speed;    ///< simulate, tune: the analytic compute's rate, times the node's
};

/// How the default limit is found, from sim/analysis/memory.hpp's margin.
std::string margin_text() {
  char text[160];
  std::snprintf(text, sizeof text,
                "less %.0f GB for the CUDA context, cuBLAS and NCCL, and %.0f %% of the rest for the "
                "allocator's fragmentation",
                static_cast<double>(ov::sim::reserved_bytes) / 1e9, 100 * ov::sim::fragmentation);
  return text;
}

/// `items` with `separator` between them.
std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& x : items) (out += out.empty() ? "" : separator) += x;
  return out;
}

[[noreturn]] void usage_error(const std::string& what) { throw input_error(what + " (overlap-plan --help)"); }

/// Whether `name` is a Rubin GPU (Bridge's VR200 dumps): newer than the settings' GPU list and
/// the node presets.
bool rubin(const std::string& name) { return name == "vr200" || name == "r100" || name == "r200"; }

/// How a GPU that has no node preset is simulated: on a preset's node, computing as measured.
constexpr const char* without_preset =
    "with --profile FILE, FILE holding compute measured on your GPU (what overlap-profile writes)";

/// --gpu's check: one of `known`; a GPU the recipes name that is newer than the settings' GPU
/// list gets the way out instead of the list alone.
CLI::Validator gpu_check(const std::vector<std::string>& known) {
  const std::string list = "{" + join(known, ",") + "}";
  return CLI::Validator(
      [known, list](std::string& name) -> std::string {
        if (std::find(known.begin(), known.end(), name) != known.end()) return {};
        if (rubin(name))
          return name + " (Rubin) is newer than the GPUs this tool knows " + list +
                 ": there is no gpu_model for the rules nor a node preset. Check it as the closest one it knows "
                 "(--gpu gb300), and simulate on --machine gb300 " +
                 without_preset;
        return name + " not in " + list;
      },
      "GPU");
}

/// --machine's check: a preset's name; any other GPU gets the way out (a preset and --profile).
CLI::Validator machine_check() {
  std::vector<std::string> names;
  for (const ov::sim::node_preset& p : ov::sim::node_presets) names.emplace_back(p.name);
  const std::string list = "{" + join(names, ",") + "}";
  return CLI::Validator(
      [names, list](std::string& name) -> std::string {
        if (std::find(names.begin(), names.end(), name) != names.end()) return {};
        return name + (rubin(name) ? " (Rubin)" : "") + " has no node preset " + list +
               ": simulate on the closest one (--machine gb300 for Rubin) " + without_preset;
      },
      "NODE");
}

/// The command line, with CLI11: one declaration per option gives its parsing, its check and its
/// line of --help. Returns nothing for --help (printed here).
std::optional<cli> parse_args(int argc, char** argv) {
  cli c;
  CLI::App app{description, "overlap-plan"};
  app.footer(footer);
  app.require_subcommand(1);
  std::vector<std::string> gpus;
  for (std::size_t i = 0; i < ov::enum_info<ov::gpu_model>::count; ++i)
    gpus.emplace_back(ov::to_string(static_cast<ov::gpu_model>(i)));
  std::optional<int> world_size;
  std::string gpu, te_version;
  bool ignore_environment = false;
  const auto common = [&](CLI::App* sub) {
    sub->add_option("CONFIG", c.config, "Bridge's ConfigContainer dump (YAML or JSON)")->required();
    sub->add_option("OVERRIDE", c.overrides, "Hydra overrides, applied in order (see below)");
    sub->add_option("--world-size", world_size,
                    "GPUs of the run: data_parallel_size = N / (tp x pp x cp), as Bridge derives it (else "
                    "comm_overlap.data_parallel_size; neither: exit 2)")
        ->check(CLI::Range(1, 1 << 24));
    sub->add_option("--gpu", gpu,
                    "the GPU (rules ENV-1, ENV-6, EP-21, FX-3; the simulated node); also "
                    "overlap_plan.gpu in the config")
        ->check(gpu_check(gpus));
    sub->add_option("--te-version", te_version,
                    "the Transformer Engine version X.Y.Z (TE rules apply only when it is given); also "
                    "overlap_plan.te_version");
    sub->add_flag("--ignore-environment", ignore_environment,
                  "do not read CUDA_DEVICE_MAX_CONNECTIONS / NVTE_*_LAYERNORM_SM_MARGIN from the environment "
                  "(by default it wins over env_vars, as in Bridge)");
    sub->add_flag("--strict", c.strict, "warnings are errors (exit 1)");
    sub->add_flag("--json", c.json_output, "machine-readable output on stdout");
  };
  const auto node = [&](CLI::App* sub) {
    sub->add_option("--machine", c.machine,
                    "the node (links, NICs, host): h100 and h200 compute as measured on an H200 (the h100 with "
                    "its HBM3); b200, b300 (8 GPUs) and gb200, gb300 (NVL72 racks) from published figures "
                    "(sim/machine/blackwell.hpp). Default: the --gpu's node (h100 without one)")
        ->check(machine_check());
    sub->add_option("--profile", c.profile,
                    "compute as measured on your GPU: the JSON that overlap-profile writes there");
    sub->add_option("--memory-limit", c.memory_limit_gb,
                    "GB a rank's step may take (default: the GPU's memory " + margin_text() + ")")
        ->check(CLI::Range(0.001, 1e6));
    sub->add_option("--placement", c.placement,
                    "GPUs of each NVLink domain the job's ranks fill, in rank order (default: as NVIDIA's "
                    "schedulers place jobs, the largest power of two a domain holds: 8 of an HGX node, 64 of an "
                    "NVL72 rack)")
        ->check(CLI::Range(1, 1 << 20));
    sub->add_option("--compute-speed", c.compute_speed,
                    "compute kernels F times as fast as the node's model gives them (a what-if; memory-bound "
                    "kernels and links keep their rates; not with --profile, whose times are measured)")
        ->check(CLI::Range(0.01, 100.0));
  };
  std::vector<CLI::App*> subs;
  for (const command_text& x : commands) {
    subs.push_back(app.add_subcommand(x.name, x.line));
    subs.back()->footer(std::string(x.details) + "\n\n" + footer);
    common(subs.back());
  }
  CLI::App* simulate = subs[1];
  CLI::App* tune = subs[2];
  node(simulate);
  node(tune);
  simulate->add_option("--out", c.out, "write the trace and the picture to this directory");
  simulate
      ->add_option("--ranks", c.ranks,
                   "the ranks whose ops step.json holds (each stands for its class), e.g. 0,128; default: "
                   "the representatives, as many as fit about 250,000 ops")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::NonNegativeNumber);
  tune->add_option("--threads", c.threads,
                   "simulate up to N combinations at once (default: one per core; the result does not depend on it)")
      ->check(CLI::Range(1, 1024));
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(std::begin(commands), std::end(commands),
                   [&](const command_text& x) { return std::string_view(argv[1]) == x.name; }))
    usage_error(std::string("unknown command ") + argv[1] + ": check, simulate or tune");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << (app.get_subcommands().empty() ? app.help() : app.get_subcommands().front()->help());
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    usage_error(e.what());
  }
  c.command = app.get_subcommands().front()->get_name();
  c.read.process_environment = !ignore_environment;
  c.read.require_world_size = true;  // a job has one: dp 1 would check another job
  if (world_size) c.read.world_size = *world_size;
  overlap_plan::document d;
  if (!gpu.empty()) {
    d.name = "--gpu";
    c.read.gpu = overlap_plan::detail::to_enum<ov::gpu_model>(d, "gpu", json(gpu));
  }
  if (!te_version.empty()) {
    d.name = "--te-version";
    c.read.te_version = overlap_plan::detail::to_version(d, "te_version", json(te_version));
  }
  return c;
}

// ---- values as text and JSON, from the reflected field lists ---------------------------------

json resolved_json(const ov::resolved_settings& r) {
  json out = json::object();
  ov::reflect::for_each_field(r, [&](std::string_view name, const auto& v) {
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (std::is_same_v<T, ov::ub::resolved_config>) {
      if (!r.tp_comm_overlap) return;
      json slots = json::object();
      for (const ov::ub::slot_id id : ov::ub::all_slots)
        slots[std::string(ov::ub::to_string(id))] = overlap_plan::detail::slot_tree(v[id]);
      out[std::string(name)] = slots;
    } else if constexpr (overlap_plan::detail::is_optional<T>::value) {
      out[std::string(name)] = v ? json(*v) : json();
    } else {
      out[std::string(name)] = v;
    }
  });
  return out;
}

json environment_json(const ov::resolved_settings& r) {
  json out = json::object();
  for (const ov::environment_variable& e : ov::environment_of(r)) out[e.name] = e.value;
  return out;
}

// ---- check: upstream's severity --------------------------------------------------------------

using ov::plan::rule_finding;
using ov::plan::severity;

/// `c` judged as upstream runs it (plan/judge.hpp), with the overrides that fix each finding when
/// `with_fixes`.
ov::plan::judgement judge(const overlap_plan::bridge_config& c, const overlap_plan::document& doc, bool with_fixes) {
  return ov::plan::judge(c.settings, c.upstream, overlap_plan::bridge_source(c, doc), with_fixes);
}

std::string value_at(const overlap_plan::document& doc, const std::string& path) {
  const json* v = overlap_plan::detail::find(doc.tree, path);
  return v ? overlap_plan::shown(*v) : "?";
}

json finding_json(const rule_finding& f, const overlap_plan::document& doc) {
  json fields = json::array();
  for (const std::string& p : f.fields)
    fields.push_back({{"path", p},
                      {"value", *overlap_plan::detail::find(doc.tree, p)},
                      {"at", doc.at(p)},
                      {"upstream_default", f.defaults.count(p) > 0}});
  json out = {{"id", f.rule->id},
              {"message", f.rule->message()},
              {"severity", std::string(ov::plan::to_string(f.level))},
              {"fields", fields},
              {"fixes", f.fixes}};
  if (f.level != severity::error) {
    out["upstream"] = ov::rules::to_string(f.upstream);
    out["upstream_does"] = f.rule->upstream_does;
  }
  return out;
}

/// A finding's line, then (unless `brief`) the config fields behind it, then what upstream does
/// where it runs the config anyway, then (unless `brief`) its fixes.
void print_finding(std::ostream& os, const rule_finding& f, const overlap_plan::document& doc, bool brief = false) {
  os << "  " << f.as_diagnostic() << '\n';
  if (!brief)
    for (const std::string& p : f.fields)
      os << "      at " << p << " = " << value_at(doc, p) << (f.defaults.count(p) ? ", upstream's default" : "")
         << "  (" << doc.at(p) << ")\n";
  if (f.level != severity::error) os << "      upstream: " << f.rule->upstream_does << '\n';
  if (!brief && !f.fixes.empty()) {
    os << "      fix: ";
    for (std::size_t i = 0; i < f.fixes.size() && i < 4; ++i) os << (i ? "  |  " : "") << f.fixes[i];
    os << '\n';
  }
}

int run_check(const cli& args, const overlap_plan::document& doc, const overlap_plan::bridge_config& c) {
  const ov::plan::judgement j = judge(c, doc, /*with_fixes=*/true);
  const ov::report& rep = j.upstream.errors;  // the settings upstream runs: resolved, N rules
  const bool stops = j.stops(args.strict);
  if (args.json_output) {
    json out = json::object();
    out["config"] = args.config;
    out["valid"] = !stops;
    out["violations"] = json::array();
    out["warnings"] = json::array();
    out["notes"] = json::array();
    for (const rule_finding& f : j.findings)
      out[f.level == severity::error     ? "violations"
          : f.level == severity::warning ? "warnings"
                                         : "notes"]
          .push_back(finding_json(f, doc));
    for (const ov::diagnostic& d : rep.notes)
      out["notes"].push_back({{"id", d.id}, {"message", d.message}, {"severity", "note"}});
    out["reading_notes"] = c.notes;
    out["data_parallel_size"] = c.settings.data_parallel_size;
    if (rep.resolved) {
      out["resolved"] = resolved_json(*rep.resolved);
      out["environment"] = environment_json(*rep.resolved);
    }
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    return stops ? 1 : 0;
  }
  const std::size_t errors = j.count(severity::error), warnings = j.count(severity::warning);
  std::cout << "overlap-plan check " << args.config << ": " << (stops ? "INVALID" : "valid");
  if (warnings > 0) std::cout << ", " << warnings << (warnings == 1 ? " warning" : " warnings");
  std::cout << " (tp " << c.settings.tensor_model_parallel_size << ", pp " << c.settings.pipeline_model_parallel_size
            << ", dp " << c.settings.data_parallel_size << ", ep " << c.settings.expert_model_parallel_size << ")\n";
  if (!c.notes.empty()) {
    std::cout << "\nreading the config:\n";
    for (const std::string& n : c.notes) std::cout << "  - " << n << '\n';
  }
  if (errors > 0) {
    std::cout << '\n'
              << errors << (errors == 1 ? " rule violated" : " rules violated") << " (upstream stops on it too):\n";
    for (const rule_finding& f : j.findings)
      if (f.level == severity::error) print_finding(std::cout, f, doc);
  }
  if (warnings > 0) {
    std::cout << '\n'
              << warnings << (warnings == 1 ? " warning" : " warnings")
              << ": upstream runs the config, but not as written or not as Megatron-LM would"
              << (args.strict ? " (errors under --strict)" : " (--strict makes warnings errors)") << ":\n";
    for (const rule_finding& f : j.findings)
      if (f.level == severity::warning) print_finding(std::cout, f, doc);
  }
  if (rep.resolved) {
    std::cout << (j.upstream.lenient.empty() ? "\nresolved settings:\n"
                                             : "\nresolved settings, as upstream runs the config:\n");
    std::ostringstream text;
    ov::write_resolved(text, *rep.resolved);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) std::cout << "  " << line << '\n';
    std::cout << "\nenvironment:\n";
    ov::write_environment(std::cout, *rep.resolved);
  }
  const bool no_notes = rep.notes.empty() && j.count(severity::note) == 0;
  std::cout << "\nnotes:" << (no_notes ? " none" : "") << '\n';
  for (const rule_finding& f : j.findings)
    if (f.level == severity::note) print_finding(std::cout, f, doc);
  for (const ov::diagnostic& d : rep.notes) std::cout << "  " << d << '\n';
  return stops ? 1 : 0;
}

// ---- simulate -----------------------------------------------------------------------------------

/// The node to simulate on: --machine, else the config's GPU where it has a preset (h100 when it
/// names none). A GPU without a preset (a100) is an input error naming the way out, not a silent
/// H100.
std::string node_for(const cli& args, const overlap_plan::bridge_config& c) {
  if (!args.machine.empty()) return args.machine;
  const std::optional<ov::gpu_model> gpu = c.settings.gpu;
  if (!gpu) return "h100";
  const std::string name(ov::to_string(*gpu));
  if (ov::sim::preset_for(*gpu)) return name;
  throw input_error(
      "no node preset for " + name + ": simulate on one with --machine (" + ov::sim::preset_list() +
      "), and give compute as measured on your GPU with --profile FILE (what overlap-profile writes there)");
}

/// The node of --machine; with --profile, computing as that profile measured. A recipe whose
/// format the node has no tensor cores for (fp4 on Hopper) is an input error naming the way out.
ov::sim::machine machine_of(const cli& args, const overlap_plan::bridge_config& c) {
  ov::sim::machine m = ov::sim::preset_named(args.machine)->make();
  if (args.placement) {
    try {
      m = ov::sim::with_placement(std::move(m), *args.placement);
    } catch (const std::invalid_argument& e) {
      throw input_error(std::string("--") + e.what());  // "--placement: ..."
    }
  }
  if (args.compute_speed) {
    if (!args.profile.empty())
      throw input_error(
          "--compute-speed scales the node model's compute, and --profile gives it as measured: "
          "give one of them");
    m.compute_speed *= *args.compute_speed;
  }
  if (!args.profile.empty())
    m = ov::sim::with_profile(std::move(m),
                              std::make_shared<const ov::sim::profile>(ov::sim::read_profile(args.profile)));
  const auto refuse = [&](const char* field, bool (*has)(const ov::sim::machine&)) {
    throw input_error(std::string(field) + " GEMMs (" + c.path_of.at(field) + ") need " + field +
                      " tensor cores, which the " + args.machine + " node has not: give the recipe's GPU with --gpu (" +
                      ov::sim::preset_list(has) + ") or --machine");
  };
  constexpr auto has_fp8 = [](const ov::sim::machine& n) { return n.fp8_gemm_speedup > 0; };
  constexpr auto has_fp4 = [](const ov::sim::machine& n) { return n.fp4_gemm_speedup > 0; };
  if (c.settings.fp8 && !has_fp8(m)) refuse("fp8", has_fp8);
  if (c.settings.fp4 && !has_fp4(m)) refuse("fp4", has_fp4);
  return m;
}

/// "an h100 node", "a gb200 NVL72 rack (the job on 64 GPUs of each)", or either with ", compute
/// from FILE (GPU)".
std::string machine_label(const cli& args, const ov::sim::machine& m) {
  const int domain = m.domain_gpus();
  std::string what = (args.machine.starts_with("h") ? "an " : "a ") + args.machine +
                     (domain > 8 ? " NVL" + std::to_string(domain) + " rack" : std::string(" node"));
  if (m.gpus_per_node < domain) what += " (the job on " + std::to_string(m.gpus_per_node) + " GPUs of each)";
  if (args.compute_speed) {
    char speed[64];
    std::snprintf(speed, sizeof speed, ", compute %.3g times as fast (--compute-speed)", *args.compute_speed);
    what += speed;
  }
  if (args.profile.empty()) return what;
  return what + ", compute from " + args.profile + " (" + m.profile->gpu + ")";
}

/// Refuses a config without the model's sizes; warns of sizes far beyond what the planner was
/// made for (schedule::beyond_planned).
void require_workload(const overlap_plan::bridge_config& c) {
  if (!c.missing_workload.empty()) {
    throw input_error("the simulator needs the model's sizes and the batch; the config lacks " +
                      join(c.missing_workload, ", "));
  }
  for (const std::string& w : ov::schedule::beyond_planned(c.workload))
    std::cerr << "overlap-plan: warning: " << w << '\n';
}

json family_json(const ov::sim::per_family& v) {
  json out = json::object();
  for (const auto f : ov::schedule::families)
    out[std::string(ov::schedule::to_string(f))] = v[static_cast<std::size_t>(f)];
  return out;
}

/// `c` as upstream runs it, or nothing when a rule upstream enforces (or, with --strict, a warning)
/// stops the run; says on stderr which, and what upstream changes. A config that asks for what
/// is not modelled (bridge_config::not_modelled) is an input_error naming it.
std::optional<overlap_plan::bridge_config> as_upstream_runs(const char* command, const cli& args,
                                                            const overlap_plan::document& doc,
                                                            const overlap_plan::bridge_config& c) {
  const ov::plan::judgement j = judge(c, doc, /*with_fixes=*/false);
  const auto say = [&](severity level) {
    for (const rule_finding& f : j.findings)
      if (f.level == level) print_finding(std::cerr, f, doc, /*brief=*/true);
  };
  if (j.stops(args.strict)) {
    std::cerr << "overlap-plan " << command << ": " << args.config << " breaks rules upstream enforces"
              << (args.strict ? " (or, with --strict, lets run)" : "") << "; run check for the fields and the fixes:\n";
    say(severity::error);
    if (args.strict) say(severity::warning);
    return std::nullopt;
  }
  if (j.count(severity::warning) > 0) {
    std::cerr << "overlap-plan " << command << ": simulating " << args.config << " as upstream runs it:\n";
    say(severity::warning);
  }
  // What shapes the run but is not modelled would be simulated as a different run: refused, each
  // named (check still judges such a config, with a note).
  if (!c.not_modelled.empty())
    throw input_error(std::string(command) +
                      " would simulate another run than the config's: " + join(c.not_modelled, "; ") +
                      " (set it off with an override to simulate the run without it; check judges the rules as given)");
  overlap_plan::bridge_config out = c;
  out.settings = j.upstream.as_run;
  out.upstream.lenient.clear();  // the settings upstream runs read as themselves
  return out;
}

/// The bytes a rank's step may take: --memory-limit, else what the GPU's memory leaves (0: not
/// known).
std::int64_t memory_limit_of(const cli& args, const ov::sim::machine& m) {
  if (args.memory_limit_gb) return static_cast<std::int64_t>(*args.memory_limit_gb * 1e9);
  return ov::sim::usable_bytes(m.memory_capacity_bytes);
}

json memory_json(const ov::sim::step_memory& m) {
  json uses = json::object();
  for (std::size_t u = 0; u < ov::sim::memory_uses; ++u)
    uses[std::string(ov::sim::to_string(static_cast<ov::sim::memory_use>(u))) + "_bytes"] = m.peak().by_use[u];
  json per_rank = json::array();
  for (std::size_t k = 0; k < m.ranks.size(); ++k)
    per_rank.push_back({{"rank", m.ranks[k]}, {"peak_bytes", m.peaks[k].bytes}});
  return {{"rank", m.rank()},
          {"peak_bytes", m.peak().bytes},
          {"at_us", m.peak().at_us},
          {"at_peak", uses},
          {"per_rank", per_rank}};
}

/// What `simulate` found: the plan, the memory of its busiest rank, and the files it wrote.
struct simulation {
  ov::plan::family_plan plan;
  ov::sim::step_memory most, most_off;  ///< with the config's overlap, and with every overlap off
  std::int64_t limit = 0;               ///< the bytes a rank may take (0: not known)
  std::vector<std::string> written;     ///< the files of --out
  std::vector<int> traced;              ///< the ranks step.json holds
  std::vector<std::string> placement;   ///< the groups that straddle NVLink domains (placement_notes)
  double gain() const {
    return plan.baseline.step_time_us > 0 ? 1 - plan.overlap.step_time_us / plan.baseline.step_time_us : 0;
  }
};

/// --out DIR: the Perfetto traces with and without overlap (of a bounded set of representatives)
/// and the picture, its rows named by the rank's class and its coordinates in the layout.
void write_step_files(const cli& args, const overlap_plan::bridge_config& c, simulation& run) {
  const ov::plan::family_plan& plan = run.plan;
  std::vector<int>& traced = run.traced;
  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  if (ec) throw input_error("--out " + args.out + ": " + ec.message());
  try {
    traced = ov::trace::traced_ranks(args.ranks, plan.overlap_classes, plan.overlap);
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string("--ranks: ") + e.what());
  }
  std::ofstream trace(args.out + "/step.json");
  ov::trace::write_chrome_trace_of(trace, plan.overlap_step, plan.overlap, plan.overlap_classes, traced);
  std::vector<int> traced_baseline;
  for (const int rank : traced)
    traced_baseline.push_back(plan.baseline_classes.representative[static_cast<std::size_t>(rank)]);
  std::sort(traced_baseline.begin(), traced_baseline.end());
  traced_baseline.erase(std::unique(traced_baseline.begin(), traced_baseline.end()), traced_baseline.end());
  std::ofstream base(args.out + "/step_baseline.json");
  ov::trace::write_chrome_trace_of(base, plan.baseline_step, plan.baseline, plan.baseline_classes, traced_baseline);
  std::ofstream svg(args.out + "/step.svg");
  // Rows named by the rank's class and its coordinates in the layout.
  const ov::schedule::layout L = ov::schedule::layout_of(c.settings);
  const std::vector<int> sizes = plan.overlap_classes.sizes();
  ov::trace::svg_options picture;
  picture.rank_name = [&](int rank) { return ov::trace::detail::rank_label(rank, &sizes) + " " + L.coordinates(rank); };
  ov::trace::write_svg_timeline(svg, plan.overlap_step, plan.overlap, picture, &plan.overlap_classes);
  if (!trace || !svg || !base) throw input_error("--out " + args.out + ": cannot write the files");
  run.written = {args.out + "/step.json", args.out + "/step_baseline.json", args.out + "/step.svg"};
}

/// `simulate --json`.
json simulation_json(const cli& args, const overlap_plan::bridge_config& c, const ov::sim::cost_model& cost,
                     const simulation& run) {
  const ov::plan::family_plan& plan = run.plan;
  const ov::sim::step_memory &most = run.most, &most_off = run.most_off;
  const std::int64_t limit = run.limit;
  const double gain = run.gain();
  const std::vector<std::string>& written = run.written;
  const std::vector<int>& traced = run.traced;
  json out = {{"config", args.config},
              {"machine", args.machine},
              {"profile", args.profile.empty() ? json(nullptr) : json(args.profile)},
              {"ranks", plan.overlap_classes.world()},
              {"classes", plan.overlap_step.size()},
              {"micro_batches", c.workload.micro_batches},
              {"overlap",
               {{"step_time_us", plan.overlap.step_time_us},
                {"exposed_comm_us", family_json(plan.overlap.exposed_comm_us)},
                {"comm_us", family_json(plan.overlap.comm_us)},
                {"deadlock", plan.overlap.deadlock}}},
              {"baseline",
               {{"step_time_us", plan.baseline.step_time_us},
                {"exposed_comm_us", family_json(plan.baseline.exposed_comm_us)},
                {"comm_us", family_json(plan.baseline.comm_us)},
                {"deadlock", plan.baseline.deadlock}}},
              {"gain", gain},
              {"memory",
               {{"overlap", memory_json(most)},
                {"baseline", memory_json(most_off)},
                {"gpu_memory_bytes", cost.machine().memory_capacity_bytes},
                {"limit_bytes", limit},
                {"fits", limit == 0 || most.peak().bytes <= limit}}},
              {"placement",
               {{"domain_gpus", cost.machine().domain_gpus()},
                {"ranks_per_domain", cost.machine().gpus_per_node},
                {"notes", run.placement}}},
              {"files", written},
              {"traced_ranks", traced}};
  return out;
}

/// `simulate`'s text: step time, exposed communication and peak memory, with and without overlap.
void print_simulation(const cli& args, const overlap_plan::bridge_config& c, const ov::sim::cost_model& cost,
                      const simulation& run) {
  const ov::plan::family_plan& plan = run.plan;
  const ov::sim::step_memory &most = run.most, &most_off = run.most_off;
  const std::int64_t limit = run.limit;
  const double gain = run.gain();
  const std::vector<std::string>& written = run.written;
  const std::vector<int>& traced = run.traced;
  std::printf(
      "overlap-plan simulate %s on %s: %d %s in %zu %s of symmetric ranks, %d layers, "
      "%d %s per dp rank\n",
      args.config.c_str(), machine_label(args, cost.machine()).c_str(), plan.overlap_classes.world(),
      plan.overlap_classes.world() == 1 ? "rank" : "ranks", plan.overlap_step.size(),
      plan.overlap_step.size() == 1 ? "class" : "classes", c.workload.num_layers, c.workload.micro_batches,
      c.workload.micro_batches == 1 ? "micro-batch" : "micro-batches");
  for (const std::string& n : run.placement) std::printf("note: %s\n", n.c_str());
  std::printf("\n%-22s %14s %14s\n", "", "overlap off", "as configured");
  std::printf("%-22s %11.2f ms %11.2f ms   (%+.1f %%)\n", "step time", plan.baseline.step_time_us / 1000,
              plan.overlap.step_time_us / 1000, -100 * gain);
  for (const auto f : ov::schedule::families) {
    const auto i = static_cast<std::size_t>(f);
    if (plan.baseline.comm_us[i] == 0 && plan.overlap.comm_us[i] == 0) continue;
    std::printf("%-22s %11.2f ms %11.2f ms   (of %.2f ms communication)\n",
                ("exposed " + std::string(ov::schedule::to_string(f)) + " comm").c_str(),
                plan.baseline.exposed_comm_us[i] / 1000, plan.overlap.exposed_comm_us[i] / 1000,
                plan.overlap.comm_us[i] / 1000);
  }
  const auto gb = [](std::int64_t bytes) { return static_cast<double>(bytes) / 1e9; };
  std::printf("\n%-22s %11.2f GB %11.2f GB   (rank %d, at %.2f ms)\n", "peak memory", gb(most_off.peak().bytes),
              gb(most.peak().bytes), most.rank(), most.peak().at_us / 1000);
  for (std::size_t u = 0; u < ov::sim::memory_uses; ++u)
    std::printf("%-22s %11.2f GB %11.2f GB\n",
                ("  " + std::string(ov::sim::to_string(static_cast<ov::sim::memory_use>(u)))).c_str(),
                gb(most_off.peak().by_use[u]), gb(most.peak().by_use[u]));
  if (limit > 0) {
    const bool fits = most.peak().bytes <= limit;
    std::printf("%s: a rank may take %.2f GB (%s)\n", fits ? "fits" : "DOES NOT FIT", gb(limit),
                args.memory_limit_gb
                    ? "--memory-limit"
                    : ("of the GPU's " + std::to_string(std::lround(gb(cost.machine().memory_capacity_bytes))) +
                       " GB, " + margin_text())
                          .c_str());
    if (!fits)
      std::fprintf(stderr,
                   "overlap-plan simulate: warning: rank %d needs %.2f GB at its peak, more than the %.2f GB it may "
                   "take: the run will not fit (recompute activations, fewer micro-batches in flight, or more ranks)\n",
                   most.rank(), gb(most.peak().bytes), gb(limit));
  }
  if (plan.overlap.deadlock || plan.baseline.deadlock)
    std::printf("\nTHE STEP HANGS:\n%s", plan.overlap.wait_for_graph.c_str());
  for (const std::string& f : written) std::printf("wrote %s\n", f.c_str());
  if (!written.empty()) {
    std::string list;
    for (const int rank : traced) (list += list.empty() ? "" : ",") += std::to_string(rank);
    std::printf("the traces hold rank%s %s (%zu of %zu classes; --ranks R,R,... for others)\n",
                traced.size() == 1 ? "" : "s", list.c_str(), traced.size(), plan.overlap_step.size());
  }
}

int run_simulate(const cli& args, const overlap_plan::bridge_config& c) {
  require_workload(c);
  const ov::sim::analytic_cost_model cost(machine_of(args, c));
  simulation run;
  try {
    run.plan = ov::plan::plan_step(c.settings, c.workload, cost);
  } catch (const std::invalid_argument& e) {
    throw input_error(args.config + ": the step cannot be built from this model and layout: " + e.what());
  }
  if (!args.out.empty()) write_step_files(args, c, run);
  // The rank whose step takes the most memory (one representative stands for its class).
  run.most = ov::sim::memory_of(run.plan.overlap_step, run.plan.overlap);
  run.most_off = ov::sim::memory_of(run.plan.baseline_step, run.plan.baseline);
  run.limit = memory_limit_of(args, cost.machine());
  run.placement = ov::sim::placement_notes(ov::schedule::layout_of(c.settings), cost.machine());
  if (args.json_output)
    std::cout << simulation_json(args, c, cost, run).dump(2) << '\n';
  else
    print_simulation(args, c, cost, run);
  return 0;
}

// ---- tune ---------------------------------------------------------------------------------------

class progress {
 public:
  explicit progress(bool enabled) : enabled_(enabled && isatty(2)), start_(std::chrono::steady_clock::now()) {}
  void update(std::size_t done, std::size_t planned) {
    if (!enabled_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    const std::size_t width = 30, filled = planned ? std::min(width, done * width / planned) : 0;
    std::fprintf(stderr, "\r[%s%s] %zu simulated", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done);
    shown_ = true;
  }
  ~progress() {
    if (shown_) std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  bool enabled_, shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

/// What `tune` found, and the best combination as Bridge overrides and YAML.
struct tuning {
  ov::plan::tune_result result;
  std::int64_t limit = 0;              ///< the bytes a rank may take (0: not known)
  std::vector<std::string> overrides;  ///< the best combination as Bridge overrides
  std::string yaml;                    ///< the same as YAML
  double seconds = 0;
  /// The knobs a candidate changes from the config, as a label ("as configured" for none).
  std::string label(const ov::plan::tune_candidate& e) const {
    std::vector<std::string> changed;
    for (std::size_t i = 0; i < result.knobs.size(); ++i)
      if (e.picks[i] != 0) changed.push_back(result.knobs[i].choices[e.picks[i]].label);
    return changed.empty() ? std::string("as configured") : join(changed, ", ");
  }
};

/// `tune --json`: the knobs, every combination ranked with its overrides, the best.
json tuning_json(const cli& args, const overlap_plan::document& doc, const overlap_plan::bridge_config& c,
                 const tuning& run) {
  const ov::plan::tune_result& t = run.result;
  const std::int64_t limit = run.limit;
  const ov::plan::tune_candidate& given = t.configured();
  const double given_us = given.simulated.step_time_us;
  const auto label = [&](const ov::plan::tune_candidate& e) { return run.label(e); };
  const std::vector<std::string>& overrides = run.overrides;
  const std::string& yaml = run.yaml;
  const double seconds = run.seconds;
  json out = {{"config", args.config},
              {"machine", args.machine},
              {"profile", args.profile.empty() ? json(nullptr) : json(args.profile)},
              {"knobs", json::array()},
              {"ranked", json::array()},
              {"rejected", t.rejected},
              {"rejected_by", t.rejected_by},
              {"memory_limit_bytes", limit},
              {"none_fits", t.none_fits_least_bytes > 0},
              {"overlap_off_step_time_us", t.overlap_off.step_time_us},
              {"given_step_time_us", given_us},
              {"best_overrides", overrides},
              {"best_yaml", yaml},
              {"seconds", seconds}};
  for (const ov::plan::knob& k : t.knobs) {
    json choices = json::array();
    for (const ov::plan::knob_choice& ch : k.choices) choices.push_back(ch.label);
    out["knobs"].push_back({{"name", k.name}, {"choices", choices}});
  }
  for (std::size_t i = 0; i < t.ranked.size(); ++i) {
    const ov::plan::tune_candidate& e = t.tried[t.ranked[i]];
    out["ranked"].push_back({{"rank", i + 1},
                             {"combination", label(e)},
                             {"step_time_us", e.simulated.step_time_us},
                             {"peak_memory_bytes", e.peak_bytes},
                             {"gain_vs_config", 1 - e.simulated.step_time_us / given_us},
                             {"exposed_comm_us", family_json(e.simulated.exposed_comm_us)},
                             {"overrides", overlap_plan::overrides_between(c, doc, c.settings, e.tried)}});
  }
  return out;
}

/// `tune`'s text: the knobs, the ranking, the best as overrides and YAML.
void print_tuning(const cli& args, const ov::sim::cost_model& cost, const tuning& run) {
  const ov::plan::tune_result& t = run.result;
  const std::int64_t limit = run.limit;
  const ov::plan::tune_candidate& given = t.configured();
  const double given_us = given.simulated.step_time_us;
  const auto label = [&](const ov::plan::tune_candidate& e) { return run.label(e); };
  const ov::plan::tune_candidate& top = t.best();
  const std::vector<std::string>& overrides = run.overrides;
  const std::string& yaml = run.yaml;
  const double seconds = run.seconds;
  std::printf("overlap-plan tune %s on %s: %zu knob(s), %zu combinations simulated, %zu rejected, %.1f s\n",
              args.config.c_str(), machine_label(args, cost.machine()).c_str(), t.knobs.size(), t.ranked.size(),
              t.rejected, seconds);
  if (t.rejected > 0) {
    std::string text;
    for (const auto& [why, n] : t.rejected_by) (text += text.empty() ? "" : ", ") += why + " x" + std::to_string(n);
    std::printf("  rejected (a combination may break several rules): %s\n", text.c_str());
  }
  if (limit > 0)
    std::printf("  a rank may take %.2f GB (%s); peak_GB: the most a rank's step takes, over issue order\n",
                static_cast<double>(limit) / 1e9,
                args.memory_limit_gb ? "--memory-limit" : "the GPU's memory less the margin");
  if (t.none_fits_least_bytes > 0)
    std::printf(
        "  NONE FITS: the least any combination takes is %.2f GB, so all are ranked without the limit\n"
        "  (recompute activations, fewer micro-batches in flight, or more ranks)\n",
        static_cast<double>(t.none_fits_least_bytes) / 1e9);
  for (const ov::plan::knob& k : t.knobs) {
    std::printf("  %-28s", k.name.c_str());
    for (const ov::plan::knob_choice& ch : k.choices) std::printf(" [%s]", ch.label.c_str());
    std::printf("\n");
  }
  std::printf("\nevery overlap off: %.2f ms; as configured: %.2f ms%s\n\n", t.overlap_off.step_time_us / 1000,
              given_us / 1000,
              given.too_big ? (", which does not fit (" +
                               std::to_string(std::lround(static_cast<double>(given.peak_bytes) / 1e9)) + " GB a rank)")
                                  .c_str()
                            : "");
  std::printf("%4s %10s %8s %9s %9s %9s %9s %8s  %s\n", "rank", "step_ms", "gain", "tp_ms", "dp_ms", "pp_ms", "ep_ms",
              "peak_GB", "combination");
  for (std::size_t i = 0; i < t.ranked.size(); ++i) {
    const ov::plan::tune_candidate& e = t.tried[t.ranked[i]];
    const auto x = [&](ov::schedule::family f) {
      return e.simulated.exposed_comm_us[static_cast<std::size_t>(f)] / 1000;
    };
    std::printf("%4zu %10.2f %7.1f%% %9.2f %9.2f %9.2f %9.2f %8.2f  %s\n", i + 1, e.simulated.step_time_us / 1000,
                100 * (1 - e.simulated.step_time_us / given_us), x(ov::schedule::family::tp),
                x(ov::schedule::family::dp), x(ov::schedule::family::pp), x(ov::schedule::family::ep),
                static_cast<double>(e.peak_bytes) / 1e9, label(e).c_str());
  }
  std::printf(
      "(gain: against the config as configured; *_ms: exposed communication per family; the combination\n"
      " lists the knobs changed from the config)\n");
  // "x % faster" or "x % slower": the best combination may still lose to every overlap off.
  const auto versus = [](double us, double than) {
    const double gain = 100 * (1 - us / than);
    char text[48];
    std::snprintf(text, sizeof text, "%.1f %% %s", gain >= 0 ? gain : -gain, gain >= 0 ? "faster" : "slower");
    return std::string(text);
  };
  std::printf("\nbest: %s, %.2f ms (%s than as configured, %s than every overlap off)\n", label(top).c_str(),
              top.simulated.step_time_us / 1000, versus(top.simulated.step_time_us, given_us).c_str(),
              versus(top.simulated.step_time_us, t.overlap_off.step_time_us).c_str());
  if (overrides.empty()) {
    std::printf("The config as given is already the best found: nothing to override.\n");
  } else {
    std::printf("\nas Bridge overrides:\n ");
    for (const std::string& o : overrides) std::printf(" %s", o.c_str());
    std::printf("\n\nas YAML:\n%s", yaml.c_str());
  }
}

int run_tune(const cli& args, const overlap_plan::document& doc, const overlap_plan::bridge_config& c) {
  const auto started = std::chrono::steady_clock::now();
  require_workload(c);
  const ov::sim::analytic_cost_model cost(machine_of(args, c));
  tuning run;
  run.limit = memory_limit_of(args, cost.machine());
  {
    progress bar(!args.json_output);
    try {
      run.result = ov::plan::tune(
          c.settings, c.workload, cost, args.threads,
          [&](std::size_t done, std::size_t planned) { bar.update(done, planned); }, run.limit);
    } catch (const std::invalid_argument& e) {
      throw input_error(args.config + ": " + e.what());
    }
  }
  run.overrides = overlap_plan::overrides_between(c, doc, c.settings, run.result.best().tried);
  overlap_plan::document fragment;
  for (const std::string& o : run.overrides)
    overlap_plan::apply_override(fragment, o, overlap_plan::override_mode::set_or_add);
  run.yaml = run.overrides.empty() ? "" : overlap_plan::to_yaml(fragment.tree);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (args.json_output)
    std::cout << tuning_json(args, doc, c, run).dump(2) << '\n';
  else
    print_tuning(args, cost, run);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::optional<cli> parsed = parse_args(argc, argv);
    if (!parsed) return 0;
    const cli& args = *parsed;
    overlap_plan::document doc = overlap_plan::read_file(args.config);
    for (const std::string& o : args.overrides) overlap_plan::apply_override(doc, o);
    const overlap_plan::bridge_config c = overlap_plan::read_config(doc, args.read);
    if (args.command == "check") return run_check(args, doc, c);
    const std::optional<overlap_plan::bridge_config> runs = as_upstream_runs(args.command.c_str(), args, doc, c);
    if (!runs) return 1;
    cli on_node = args;
    on_node.machine = node_for(args, *runs);
    if (args.command == "simulate") return run_simulate(on_node, *runs);
    return run_tune(on_node, doc, *runs);
  } catch (const input_error& e) {
    std::cerr << "overlap-plan: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "overlap-plan: error: " << e.what() << '\n';
    return 2;
  }
}
