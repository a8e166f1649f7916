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
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <overlap/plan/parallel.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/rules/validate.hpp>
#include <overlap/settings/print.hpp>
#include <overlap/sim/machine.hpp>
#include <overlap/sim/profile_json.hpp>
#include <overlap/trace/chrome_trace.hpp>
#include <overlap/trace/svg_timeline.hpp>

#include "bridge.hpp"

namespace {

namespace ov = overlap;
using overlap_plan::input_error;
using overlap_plan::json;

constexpr const char* help_text = R"(overlap-plan: check, simulate and tune the communication overlap of a
Megatron-Bridge config, with the rule table of the overlap library.

usage:
  overlap-plan check    CONFIG [options] [OVERRIDE...]
  overlap-plan simulate CONFIG [options] [--machine h100|h200] [--profile FILE] [--out DIR] [OVERRIDE...]
  overlap-plan tune     CONFIG [options] [--machine h100|h200] [--profile FILE] [OVERRIDE...]

CONFIG is Bridge's ConfigContainer dump: YAML (cfg.to_yaml()) or the same as JSON (.json, or a
file that starts with '{'). OVERRIDE has Hydra's semantics, applied on top in order:
  model.tensor_model_parallel_size=4   sets a key the config holds (else exit 2, naming the closest)
  +comm_overlap.delay_wgrad_compute=true   adds one it lacks     ++a.b=v   sets or adds
  ~ddp.bucket_size                     deletes one it holds

check     validates the config (same rule ids and messages as the C++ static_asserts) as
          upstream judges it: a rule upstream enforces is an error; one where upstream turns a
          feature off or ignores a flag and runs is a warning that says what upstream does (a
          note where the value is upstream's default, as every dump holds). Names the config
          field behind each finding and the overrides that fix it, prints the settings upstream
          runs, the environment as export lines, and the notes.
simulate  simulates one training step, as upstream runs the config (its warnings applied: the
          feature off, the flag dropped), with the config's overlap and with every overlap off on a
          model of an H100/H200 node: step time and exposed communication per family; with
          --out DIR writes DIR/step.json and DIR/step_baseline.json (Perfetto /
          chrome://tracing) and DIR/step.svg: one representative of each class of symmetric ranks
          (labelled with its class size), as the step is generated and simulated once per class.
tune      tries the overlap knobs the config leaves unset (EP overlap and delayed wgrad,
          bucket_size, overlap_param_gather, TP userbuffer slots, CUDA_DEVICE_MAX_CONNECTIONS,
          p2p mode), keeps the combinations the rule table accepts, simulates each and prints
          them ranked, then the best as Bridge overrides and as a YAML fragment.

options:
  --world-size N     GPUs of the run: data_parallel_size = N / (tp x pp x cp), as Bridge derives
                     it (else comm_overlap.data_parallel_size; neither: exit 2)
  --gpu NAME         a100 h100 h200 b200 b300 gb200 gb300 (rules ENV-1, ENV-6, EP-21, FX-3);
                     also overlap_plan.gpu in the config
  --te-version X.Y.Z the Transformer Engine version (TE rules apply only when it is given);
                     also overlap_plan.te_version
  --machine NAME     simulate/tune: h100 or h200: the node (links, NICs, host); both compute as
                     measured on an H200 (the profile built in), the h100 with its HBM3. Default:
                     the --gpu's node (h100 without one); another GPU needs --machine and --profile
  --profile FILE     simulate/tune: compute as measured on your GPU: the JSON that overlap-profile
                     writes there (SMs, GEMM, grouped GEMM and attention times, memory rate)
  --threads N        tune: simulate up to N combinations at once (default: one per core; the
                     result does not depend on it)
  --out DIR          simulate: write the trace and the picture there
  --ignore-environment   do not read CUDA_DEVICE_MAX_CONNECTIONS / NVTE_*_LAYERNORM_SM_MARGIN
                     from the environment (by default it wins over env_vars, as in Bridge)
  --strict           warnings are errors (exit 1), in check, simulate and tune
  --json             machine-readable output on stdout
  -h, --help         this text

exit status: 0 valid (warnings allowed), 1 errors (or warnings under --strict), 2 the config (or the command line) cannot be read or
used; the message names the file, line and column, or the field.
)";

struct cli {
  std::string command, config, machine, out, profile;  ///< machine: "" until given or chosen
  std::vector<std::string> overrides;
  overlap_plan::read_options read;
  bool json_output = false;
  bool strict = false;  ///< warnings (rules upstream lets run) stop the run too
  unsigned threads = 0;  ///< tune: 0 for one per core
};

[[noreturn]] void usage_error(const std::string& what) {
  throw input_error(what + " (overlap-plan --help)");
}

cli parse_args(int argc, char** argv) {
  cli c;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::optional<std::string> given;  // --name=value
    if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos) {
      given = a.substr(eq + 1);
      a.resize(eq);
    }
    const auto value = [&]() -> std::string {
      if (given) return *std::exchange(given, std::nullopt);
      if (i + 1 >= args.size()) usage_error(a + " needs a value");
      return args[++i];
    };
    if (given && (a == "--help" || a == "--json" || a == "--ignore-environment" || a == "--strict")) usage_error(a + " takes no value");
    if (a == "-h" || a == "--help") {
      c.command = "help";
      return c;
    }
    if (a == "--json") c.json_output = true;
    else if (a == "--strict") c.strict = true;
    else if (a == "--ignore-environment") c.read.process_environment = false;
    else if (a == "--world-size") {
      const json v = overlap_plan::detail::plain_scalar(value());
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1 << 24)
        usage_error("--world-size needs a positive integer");
      c.read.world_size = static_cast<int>(v.get<std::int64_t>());
    } else if (a == "--gpu") {
      overlap_plan::document d;
      d.name = "--gpu";
      c.read.gpu = overlap_plan::detail::to_enum<ov::gpu_model>(d, "gpu", json(value()));
    } else if (a == "--te-version") {
      overlap_plan::document d;
      d.name = "--te-version";
      c.read.te_version = overlap_plan::detail::to_version(d, "te_version", json(value()));
    } else if (a == "--machine") {
      c.machine = value();
      if (c.machine != "h100" && c.machine != "h200") usage_error("--machine is h100 or h200");
    } else if (a == "--threads") {
      const json v = overlap_plan::detail::plain_scalar(value());
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1024)
        usage_error("--threads needs an integer in 1..1024");
      c.threads = static_cast<unsigned>(v.get<std::int64_t>());
    } else if (a == "--out") c.out = value();
    else if (a == "--profile") c.profile = value();
    else if (a.starts_with("--")) usage_error("unknown option " + a);
    else if (c.command.empty()) c.command = a;
    else if (c.config.empty() && a.find('=') == std::string::npos && !a.starts_with("~")) c.config = a;
    else c.overrides.push_back(a);
  }
  if (c.command.empty()) usage_error("no command: check, simulate or tune");
  c.read.require_world_size = true;  // a job has one: dp 1 would check another job
  if (c.command != "check" && c.command != "simulate" && c.command != "tune")
    usage_error("unknown command " + c.command);
  if (c.config.empty()) usage_error(c.command + " needs a CONFIG file");
  if (!c.profile.empty() && c.command == "check") usage_error("--profile is for simulate and tune");
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
  std::ostringstream text;
  ov::write_environment(text, r);
  json out = json::object();
  std::string line;
  std::istringstream in(text.str());
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    out[line.substr(7, eq - 7)] = std::stoi(line.substr(eq + 1));
  }
  return out;
}

/// A settings field's value as a Bridge override value ("true", "alltoall", "null", "[a,b]").
template <class T>
std::string override_value(const T& v) {
  if constexpr (overlap_plan::detail::is_optional<T>::value) {
    if (!v) return "null";
    return override_value(*v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(ov::to_string(v));
  } else if constexpr (overlap_plan::detail::is_enum_set<T>::value) {
    std::string out = "[";
    // Appended in two steps: g++ 12 at -O3 warns falsely (-Wrestrict) on "literal" + string&&.
    for (const auto& x : overlap_plan::detail::enum_list(v)) (out += out.size() > 1 ? "," : "") += x.template get<std::string>();
    return out + "]";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(v);
  } else {
    return "...";
  }
}

/// The override that sets settings field `field` to `v`, at the place the config reads it from:
/// Hydra's `a.b=v` where the config holds a.b, `++a.b=v` (set or add) where it does not.
template <class T>
std::string override_for(const overlap_plan::bridge_config& c, std::string_view field, const T& v) {
  const std::string path = c.path_of.at(std::string(field));
  const auto set = [&](const std::string& p, const std::string& value) {
    return (c.in_document.contains(p) ? "" : "++") + p + "=" + value;
  };
  if constexpr (std::is_same_v<T, ov::dtype>) {
    const std::string section = path.substr(0, path.find('.'));
    if (v == ov::dtype::fp32) return set(section + ".bf16", "false") + " " + set(section + ".fp16", "false");
    return set(section + "." + std::string(ov::to_string(v)), "true");
  } else {
    if constexpr (std::is_same_v<T, bool>)
      if (field == "use_dist_ckpt") return set("checkpoint.ckpt_format", v ? "torch_dist" : "torch");
    if (path.starts_with("--")) return path + " " + override_value(v);
    if (path.starts_with("environment ")) return "(environment) " + path.substr(12) + "=" + override_value(v);
    return set(path, override_value(v));
  }
}

// ---- check: upstream's severity --------------------------------------------------------------

/// How a rule that fires reads on an upstream dump: an error stops the run upstream would start
/// (it enforces the rule too); a warning is a rule upstream lets run, turning a feature off or
/// ignoring a flag, on a value somebody set; a note is the same on values that are upstream's
/// defaults, which a dump holds whether anybody asked for them or not.
enum class severity { error, warning, note };

constexpr const char* to_string(severity v) {
  return v == severity::error ? "error" : v == severity::warning ? "warning" : "note";
}

struct finding {
  ov::diagnostic d;
  severity level = severity::error;
  const ov::rules::rule* rule = nullptr;
  ov::rules::upstream upstream = ov::rules::upstream::enforces;
  std::vector<std::string> fields;  ///< config paths behind it (what upstream runs otherwise first)
  std::set<std::string> defaults;   ///< those of `fields` that hold upstream's default
  std::vector<std::string> fixes;   ///< overrides that clear it without breaking another rule
};

/// The config as upstream runs it, and its findings: errors, then the rules upstream let run in
/// the order it applied them.
struct judgement {
  ov::upstream_reading upstream;
  std::vector<finding> findings;

  std::size_t count(severity v) const {
    return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(), [&](const finding& f) { return f.level == v; }));
  }
  /// Whether the run stops here: a rule upstream enforces, or with --strict any warning.
  bool stops(bool strict) const { return count(severity::error) > 0 || (strict && count(severity::warning) > 0); }
};

std::set<std::string_view> violated_ids(const ov::settings& s) {
  std::set<std::string_view> out;
  for (const ov::diagnostic& d : ov::validate(s)) out.insert(d.id);
  return out;
}

/// For each of `findings` (rules violated by `s`), the single-field changes that clear it and
/// break nothing else: every reflected field is tried with its other values (a flag flipped or
/// unset, an enum's other values, an optional emptied, a list without one of its entries).
void find_fixes(const overlap_plan::bridge_config& c, const overlap_plan::document& doc, const ov::settings& s,
                std::vector<finding*> findings) {
  const std::set<std::string_view> before = violated_ids(s);
  ov::reflect::for_each_field(s, [&](std::string_view field, const auto& current) {
    using T = std::remove_cvref_t<decltype(current)>;
    std::vector<T> alternatives;
    if constexpr (std::is_same_v<T, bool>) {
      alternatives.push_back(!current);
    } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
      if (current) alternatives.push_back(!*current);  // unsetting reads like false: not offered twice
      else alternatives = {true, false};
    } else if constexpr (std::is_enum_v<T>) {
      for (std::size_t i = 0; i < ov::enum_info<T>::count; ++i)
        if (static_cast<T>(i) != current) alternatives.push_back(static_cast<T>(i));
    } else if constexpr (overlap_plan::detail::is_optional<T>::value) {
      using V = typename T::value_type;
      if (current) alternatives.push_back(T{});
      if constexpr (std::is_enum_v<V>)
        for (std::size_t i = 0; i < ov::enum_info<V>::count; ++i)
          if (!current || static_cast<V>(i) != *current) alternatives.push_back(static_cast<V>(i));
    } else if constexpr (overlap_plan::detail::is_enum_set<T>::value) {
      using E = typename overlap_plan::detail::is_enum_set<T>::element;
      for (std::size_t i = 0; i < ov::enum_info<E>::count; ++i)
        if (current.contains(static_cast<E>(i))) {
          T smaller = current;
          smaller.bits &= ~(1u << i);
          alternatives.push_back(smaller);
        }
    }
    if constexpr (!std::is_same_v<T, std::optional<ov::ub::user_config>> && !std::is_same_v<T, std::optional<ov::version>>) {
      for (const T& alt : alternatives) {
        ov::settings changed = s;
        ov::reflect::for_each_field(changed, [&](std::string_view f, auto& m) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(m)>, T>)
            if (f == field) m = alt;
        });
        const std::set<std::string_view> after = violated_ids(changed);
        for (finding* v : findings) {
          if (after.count(v->d.id)) continue;
          bool new_ones = false;
          for (const std::string_view id : after) new_ones = new_ones || !before.count(id);
          if (new_ones) continue;
          v->fixes.push_back(override_for(c, field, alt));
          const std::string path = c.path_of.at(std::string(field));
          if (doc.where.count(path) && std::find(v->fields.begin(), v->fields.end(), path) == v->fields.end())
            v->fields.push_back(path);
        }
      }
    }
  });
}

/// `c` judged as upstream runs it, with the config fields and fixes of each finding.
judgement judge(const overlap_plan::bridge_config& c, const overlap_plan::document& doc) {
  judgement out{ov::read_as_upstream(c.settings), {}};
  for (const ov::diagnostic& d : out.upstream.errors) out.findings.push_back({d, severity::error, &ov::rules::find(d.id), ov::rules::upstream::enforces, {}, {}, {}});
  const std::size_t errors = out.findings.size();
  for (const ov::upstream_finding& u : out.upstream.lenient) {
    finding f{{u.rule->id, u.rule->message()}, severity::note, u.rule, u.what, {}, {}, {}};
    for (const std::string_view field : u.changed) {
      const bool by_default = overlap_plan::holds_upstream_default(doc, c, field);
      if (!by_default) f.level = severity::warning;
      if (const auto p = c.path_of.find(std::string(field)); p != c.path_of.end() && doc.where.count(p->second)) {
        f.fields.push_back(p->second);
        if (by_default) f.defaults.insert(p->second);
      }
    }
    out.findings.push_back(std::move(f));
  }
  // Errors are fixed on the settings upstream runs; the rules it let run, on the config as written.
  std::vector<finding*> enforced, lenient;
  for (std::size_t i = 0; i < out.findings.size(); ++i) (i < errors ? enforced : lenient).push_back(&out.findings[i]);
  find_fixes(c, doc, out.upstream.as_run, enforced);
  find_fixes(c, doc, c.settings, lenient);
  return out;
}

std::string value_at(const overlap_plan::document& doc, const std::string& path) {
  const json* v = overlap_plan::detail::find(doc.tree, path);
  return v ? overlap_plan::shown(*v) : "?";
}

json finding_json(const finding& f, const overlap_plan::document& doc) {
  json fields = json::array();
  for (const std::string& p : f.fields)
    fields.push_back({{"path", p}, {"value", *overlap_plan::detail::find(doc.tree, p)}, {"at", doc.at(p)}, {"upstream_default", f.defaults.count(p) > 0}});
  json out = {{"id", f.d.id}, {"message", f.d.message}, {"severity", to_string(f.level)}, {"fields", fields}, {"fixes", f.fixes}};
  if (f.level != severity::error) {
    out["upstream"] = ov::rules::to_string(f.upstream);
    out["upstream_does"] = f.rule->upstream_does;
  }
  return out;
}

void print_finding(const finding& f, const overlap_plan::document& doc) {
  std::cout << "  " << f.d << '\n';
  for (const std::string& p : f.fields)
    std::cout << "      at " << p << " = " << value_at(doc, p) << (f.defaults.count(p) ? ", upstream's default" : "")
              << "  (" << doc.at(p) << ")\n";
  if (f.level != severity::error) std::cout << "      upstream: " << f.rule->upstream_does << '\n';
  if (!f.fixes.empty()) {
    std::cout << "      fix: ";
    for (std::size_t i = 0; i < f.fixes.size() && i < 4; ++i) std::cout << (i ? "  |  " : "") << f.fixes[i];
    std::cout << '\n';
  }
}

int run_check(const cli& args, const overlap_plan::document& doc, const overlap_plan::bridge_config& c) {
  const judgement j = judge(c, doc);
  const ov::report& rep = j.upstream.errors;  // the settings upstream runs: resolved, N rules
  const bool stops = j.stops(args.strict);
  if (args.json_output) {
    json out = json::object();
    out["config"] = args.config;
    out["valid"] = !stops;
    out["violations"] = json::array();
    out["warnings"] = json::array();
    out["notes"] = json::array();
    for (const finding& f : j.findings)
      out[f.level == severity::error ? "violations" : f.level == severity::warning ? "warnings" : "notes"].push_back(finding_json(f, doc));
    for (const ov::diagnostic& d : rep.notes) out["notes"].push_back({{"id", d.id}, {"message", d.message}, {"severity", "note"}});
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
    std::cout << '\n' << errors << (errors == 1 ? " rule violated" : " rules violated") << " (upstream stops on it too):\n";
    for (const finding& f : j.findings)
      if (f.level == severity::error) print_finding(f, doc);
  }
  if (warnings > 0) {
    std::cout << '\n' << warnings << (warnings == 1 ? " warning" : " warnings")
              << ": upstream runs the config, but not as written" << (args.strict ? " (errors under --strict)" : " (--strict makes warnings errors)") << ":\n";
    for (const finding& f : j.findings)
      if (f.level == severity::warning) print_finding(f, doc);
  }
  if (rep.resolved) {
    std::cout << (j.upstream.lenient.empty() ? "\nresolved settings:\n" : "\nresolved settings, as upstream runs the config:\n");
    std::ostringstream text;
    ov::write_resolved(text, *rep.resolved);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) std::cout << "  " << line << '\n';
    std::cout << "\nenvironment:\n";
    ov::write_environment(std::cout, *rep.resolved);
  }
  const bool no_notes = rep.notes.empty() && j.count(severity::note) == 0;
  std::cout << "\nnotes:" << (no_notes ? " none" : "") << '\n';
  for (const finding& f : j.findings)
    if (f.level == severity::note) print_finding(f, doc);
  for (const ov::diagnostic& d : rep.notes) std::cout << "  " << d << '\n';
  return stops ? 1 : 0;
}

// ---- simulate -----------------------------------------------------------------------------------

/// The node to simulate on: --machine, else the config's GPU where it has a preset (h100, h200;
/// h100 when it names none). A GPU without a preset is an input error naming the way out, not a
/// silent H100.
std::string node_for(const cli& args, const overlap_plan::bridge_config& c) {
  if (!args.machine.empty()) return args.machine;
  const std::optional<ov::gpu_model> gpu = c.settings.gpu;
  if (!gpu || *gpu == ov::gpu_model::h100) return "h100";
  if (*gpu == ov::gpu_model::h200) return "h200";
  throw input_error("no node preset for " + std::string(ov::to_string(*gpu)) +
                    " (the simulator has h100 and h200 nodes): simulate on one of them with --machine h100|h200, "
                    "and give compute as measured on your GPU with --profile FILE (what overlap-profile writes there)");
}

/// The node of --machine; with --profile, computing as that profile measured.
ov::sim::machine machine_of(const cli& args) {
  ov::sim::machine m = args.machine == "h200" ? ov::sim::h200_node() : ov::sim::h100_node();
  if (args.profile.empty()) return m;
  return ov::sim::with_profile(std::move(m), std::make_shared<const ov::sim::profile>(ov::sim::read_profile(args.profile)));
}

/// "h100 node", or "h100 node, compute from FILE (GPU)".
std::string machine_label(const cli& args, const ov::sim::machine& m) {
  if (args.profile.empty()) return args.machine + " node";
  return args.machine + " node, compute from " + args.profile + " (" + m.profile->gpu + ")";
}

/// Refuses a config without the model's sizes; warns of sizes far beyond what the planner was
/// made for (schedule::beyond_planned).
void require_workload(const overlap_plan::bridge_config& c) {
  if (!c.missing_workload.empty()) {
    std::string list;
    for (const std::string& m : c.missing_workload) (list += list.empty() ? "" : ", ") += m;
    throw input_error("the simulator needs the model's sizes and the batch; the config lacks " + list);
  }
  for (const std::string& w : ov::schedule::beyond_planned(c.workload)) std::cerr << "overlap-plan: warning: " << w << '\n';
}

json family_json(const ov::sim::per_family& v) {
  json out = json::object();
  for (const auto f : ov::schedule::families) out[std::string(ov::schedule::to_string(f))] = v[static_cast<std::size_t>(f)];
  return out;
}

/// `c` as upstream runs it, or nothing when a rule upstream enforces (or, with --strict, a warning)
/// stops the run; says on stderr which, and what upstream changes.
std::optional<overlap_plan::bridge_config> as_upstream_runs(const char* command, const cli& args,
                                                            const overlap_plan::document& doc,
                                                            const overlap_plan::bridge_config& c) {
  const judgement j = judge(c, doc);
  const auto say = [&](severity level) {
    for (const finding& f : j.findings)
      if (f.level == level) {
        std::cerr << "  " << f.d << '\n';
        if (level != severity::error) std::cerr << "      upstream: " << f.rule->upstream_does << '\n';
      }
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
  for (const std::string& n : c.not_modelled) std::cerr << "overlap-plan " << command << ": warning: " << n << '\n';
  overlap_plan::bridge_config out = c;
  out.settings = j.upstream.as_run;
  return out;
}

int run_simulate(const cli& args, const overlap_plan::bridge_config& c) {
  require_workload(c);
  const ov::sim::cost_model cost(machine_of(args));
  ov::plan::family_plan plan;
  try {
    plan = ov::plan::plan_step(c.settings, c.workload, cost);
  } catch (const std::invalid_argument& e) {
    throw input_error(args.config + ": the step cannot be built from this model and layout: " + e.what());
  }
  std::vector<std::string> written;
  if (!args.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.out, ec);
    if (ec) throw input_error("--out " + args.out + ": " + ec.message());
    {
      std::ofstream trace(args.out + "/step.json");
      ov::trace::write_chrome_trace(trace, plan.overlap_step, plan.overlap, &plan.overlap_classes);
      std::ofstream base(args.out + "/step_baseline.json");
      ov::trace::write_chrome_trace(base, plan.baseline_step, plan.baseline, &plan.baseline_classes);
      std::ofstream svg(args.out + "/step.svg");
      ov::trace::write_svg_timeline(svg, plan.overlap_step, plan.overlap, {}, &plan.overlap_classes);
      if (!trace || !svg || !base) throw input_error("--out " + args.out + ": cannot write the files");
    }
    written = {args.out + "/step.json", args.out + "/step_baseline.json", args.out + "/step.svg"};
  }
  const double gain = plan.baseline.step_time_us > 0 ? 1 - plan.overlap.step_time_us / plan.baseline.step_time_us : 0;
  if (args.json_output) {
    json out = {{"config", args.config},
                {"machine", args.machine},
                {"profile", args.profile.empty() ? json(nullptr) : json(args.profile)},
                {"ranks", plan.overlap_classes.world()},
                {"classes", plan.overlap_step.size()},
                {"micro_batches", c.workload.micro_batches},
                {"overlap", {{"step_time_us", plan.overlap.step_time_us}, {"exposed_comm_us", family_json(plan.overlap.exposed_comm_us)},
                             {"comm_us", family_json(plan.overlap.comm_us)}, {"deadlock", plan.overlap.deadlock}}},
                {"baseline", {{"step_time_us", plan.baseline.step_time_us}, {"exposed_comm_us", family_json(plan.baseline.exposed_comm_us)},
                              {"comm_us", family_json(plan.baseline.comm_us)}, {"deadlock", plan.baseline.deadlock}}},
                {"gain", gain},
                {"files", written}};
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  std::printf("overlap-plan simulate %s on an %s: %d %s in %zu %s of symmetric ranks, %d layers, "
              "%d %s per dp rank\n",
              args.config.c_str(), machine_label(args, cost.machine()).c_str(), plan.overlap_classes.world(),
              plan.overlap_classes.world() == 1 ? "rank" : "ranks", plan.overlap_step.size(),
              plan.overlap_step.size() == 1 ? "class" : "classes",
              c.workload.num_layers, c.workload.micro_batches, c.workload.micro_batches == 1 ? "micro-batch" : "micro-batches");
  std::printf("\n%-22s %14s %14s\n", "", "overlap off", "as configured");
  std::printf("%-22s %11.2f ms %11.2f ms   (%+.1f %%)\n", "step time", plan.baseline.step_time_us / 1000,
              plan.overlap.step_time_us / 1000, -100 * gain);
  for (const auto f : ov::schedule::families) {
    const auto i = static_cast<std::size_t>(f);
    if (plan.baseline.comm_us[i] == 0 && plan.overlap.comm_us[i] == 0) continue;
    std::printf("%-22s %11.2f ms %11.2f ms   (of %.2f ms communication)\n",
                ("exposed " + std::string(ov::schedule::to_string(f)) + " comm").c_str(), plan.baseline.exposed_comm_us[i] / 1000,
                plan.overlap.exposed_comm_us[i] / 1000, plan.overlap.comm_us[i] / 1000);
  }
  if (plan.overlap.deadlock || plan.baseline.deadlock) std::printf("\nTHE STEP HANGS:\n%s", plan.overlap.wait_for_graph.c_str());
  for (const std::string& f : written) std::printf("wrote %s\n", f.c_str());
  return 0;
}

// ---- tune ---------------------------------------------------------------------------------------

struct choice {
  std::string label;                          ///< "delay_wgrad_compute=true" style, for the table
  std::vector<std::string> overrides;         ///< Bridge overrides that select it (empty: leave to Bridge)
  std::function<void(ov::settings&)> apply;
};
struct knob {
  std::string name;
  std::vector<choice> choices;  ///< choices[0]: what the config gives (Bridge's derivation)
};

bool given(const overlap_plan::document& doc, const overlap_plan::bridge_config& c, const std::string& field) {
  return overlap_plan::detail::given(doc.tree, c.path_of.at(field)) != nullptr;
}

std::vector<knob> free_knobs(const overlap_plan::document& doc, const overlap_plan::bridge_config& c) {
  const ov::settings& s = c.settings;
  const ov::resolved_settings r = ov::derive(s);
  const auto path = [&](const std::string& field) { return c.path_of.at(field); };
  std::vector<knob> out;
  if (s.expert_model_parallel_size > 1 && s.num_moe_experts && !given(doc, c, "overlap_moe_expert_parallel_comm") &&
      !given(doc, c, "delay_wgrad_compute")) {
    const std::string ep = path("overlap_moe_expert_parallel_comm"), wg = path("delay_wgrad_compute");
    out.push_back({"EP overlap",
                   {{"ep_overlap=off", {}, [](ov::settings&) {}},
                    {"ep_overlap=on", {ep + "=true"}, [](ov::settings& x) { x.overlap_moe_expert_parallel_comm = true; }},
                    {"ep_overlap=on+delay_wgrad", {ep + "=true", wg + "=true"}, [](ov::settings& x) {
                       x.overlap_moe_expert_parallel_comm = true;
                       x.delay_wgrad_compute = true;
                     }}}});
  }
  if (s.data_parallel_size > 1 && r.overlap_grad_reduce && !given(doc, c, "bucket_size") && !s.num_buckets) {
    knob k{"bucket_size", {{"bucket_size=" + (r.bucket_size ? std::to_string(*r.bucket_size) : std::string("one")) + " (derived)", {}, [](ov::settings&) {}}}};
    for (const std::int64_t b : {16'777'216LL, 67'108'864LL, 268'435'456LL})
      if (!r.bucket_size || b != *r.bucket_size)
        k.choices.push_back({"bucket_size=" + std::to_string(b), {path("bucket_size") + "=" + std::to_string(b)},
                             [b](ov::settings& x) { x.bucket_size = b; }});
    out.push_back(k);
  }
  if (s.data_parallel_size > 1 && s.distributed_optimizer && !given(doc, c, "overlap_param_gather"))
    out.push_back({"overlap_param_gather",
                   {{std::string("overlap_param_gather=") + (r.overlap_param_gather ? "true" : "false") + " (derived)", {}, [](ov::settings&) {}},
                    {std::string("overlap_param_gather=") + (r.overlap_param_gather ? "false" : "true"),
                     {path("overlap_param_gather") + "=" + (r.overlap_param_gather ? "false" : "true")},
                     [v = !r.overlap_param_gather](ov::settings& x) {
                       x.overlap_param_gather = v;
                       if (!v) x.align_param_gather = false;
                     }}}});
  if (r.tp_comm_overlap && !s.tp_comm_overlap_cfg) {
    const std::string cfg = path("tp_comm_overlap_cfg");
    const auto slots = [](ov::ub::method m, int num_sm) {
      ov::ub::user_config u;
      for (const ov::ub::slot_id id : {ov::ub::slot_id::proj_fprop, ov::ub::slot_id::fc2_fprop}) {
        ov::ub::slot x = ov::ub::default_knobs(m);
        x.num_sm = num_sm;
        u.slots[id] = x;
      }
      return u;
    };
    knob k{"TP userbuffers", {{"tp_slots=TE defaults", {}, [](ov::settings&) {}}}};
    for (const auto& [label, method, sm] : {std::tuple{"rs=pipeline num_sm=8", ov::ub::method::pipeline, 8},
                                            std::tuple{"rs=pipeline num_sm=24", ov::ub::method::pipeline, 24},
                                            std::tuple{"rs=ring_exchange", ov::ub::method::ring_exchange, 1}}) {
      const ov::ub::user_config u = slots(method, sm);
      std::string m(ov::to_string(method));
      k.choices.push_back({std::string("tp_slots=") + label,
                           {cfg + ".proj_fprop.method=" + m, cfg + ".proj_fprop.num_sm=" + std::to_string(sm),
                            cfg + ".fc2_fprop.method=" + m, cfg + ".fc2_fprop.num_sm=" + std::to_string(sm)},
                           [u](ov::settings& x) { x.tp_comm_overlap_cfg = u; }});
    }
    out.push_back(k);
  }
  if (!s.cuda_device_max_connections) {
    knob k{"CUDA_DEVICE_MAX_CONNECTIONS",
           {{"max_connections=" + std::to_string(r.cuda_device_max_connections.value_or(8)) + " (derived)", {}, [](ov::settings&) {}}}};
    for (const int n : {1, 8, 32})
      if (n != r.cuda_device_max_connections.value_or(8))
        k.choices.push_back({"max_connections=" + std::to_string(n), {"env_vars.CUDA_DEVICE_MAX_CONNECTIONS=" + std::to_string(n)},
                             [n](ov::settings& x) { x.cuda_device_max_connections = n; }});
    out.push_back(k);
  }
  if (s.pipeline_model_parallel_size > 1 && !given(doc, c, "overlap_p2p_comm") && !given(doc, c, "batch_p2p_comm")) {
    const std::string o = path("overlap_p2p_comm"), b = path("batch_p2p_comm");
    knob k{"p2p", {{std::string("p2p=") + (r.overlap_p2p_comm ? "overlap" : "batch") + " (derived)", {}, [](ov::settings&) {}}}};
    k.choices.push_back({"p2p=overlap", {o + "=true", b + "=false"}, [](ov::settings& x) {
                           x.overlap_p2p_comm = true;
                           x.batch_p2p_comm = false;
                         }});
    k.choices.push_back({"p2p=batch", {o + "=false", b + "=true"}, [](ov::settings& x) {
                           x.overlap_p2p_comm = false;
                           x.batch_p2p_comm = true;
                         }});
    k.choices.push_back({"p2p=plain", {o + "=false", b + "=false"}, [](ov::settings& x) {
                           x.overlap_p2p_comm = false;
                           x.batch_p2p_comm = false;
                         }});
    out.push_back(k);
  }
  // A choice that resolves to what the config already gives is the first choice again.
  for (knob& k : out)
    std::erase_if(k.choices, [&](const choice& ch) {
      if (&ch == &k.choices.front()) return false;
      ov::settings x = s;
      ch.apply(x);
      return ov::derive(x) == r;
    });
  // Each knob sets keys the config does not give (absent or null): Hydra's set-or-add, `++`.
  for (knob& k : out)
    for (choice& ch : k.choices)
      for (std::string& o : ch.overrides) o = "++" + o;
  return out;
}

struct evaluation {
  std::vector<std::size_t> picks;
  bool valid = false;
  std::vector<std::string> rules;  ///< violated rule ids when not valid
  ov::sim::result result;
  bool failed = false;
  std::string failure;
};

class progress {
 public:
  explicit progress(bool enabled) : enabled_(enabled && isatty(2)), start_(std::chrono::steady_clock::now()) {}
  void update(std::size_t done, std::size_t planned) {
    if (!enabled_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    const std::size_t width = 30, filled = planned ? std::min(width, done * width / planned) : 0;
    std::fprintf(stderr, "\r[%s%s] %zu simulated", std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done);
    shown_ = true;
  }
  ~progress() {
    if (shown_) std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  bool enabled_, shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

int run_tune(const cli& args, const overlap_plan::document& doc, const overlap_plan::bridge_config& c) {
  const auto started = std::chrono::steady_clock::now();
  require_workload(c);
  const std::vector<knob> knobs = free_knobs(doc, c);
  const ov::sim::cost_model cost(machine_of(args));
  std::map<std::vector<std::size_t>, evaluation> seen;
  std::size_t planned = 1;
  for (const knob& k : knobs) planned += 2 * (k.choices.size() - 1);
  progress bar(!args.json_output);
  const auto settings_of = [&](const std::vector<std::size_t>& picks) {
    ov::settings s = c.settings;
    for (std::size_t i = 0; i < knobs.size(); ++i) knobs[i].choices[picks[i]].apply(s);
    return s;
  };
  // Each worker thread simulates in memory of its own, kept from one candidate to the next.
  std::vector<ov::sim::workspace> spaces(args.threads > 0 ? args.threads : ov::plan::default_threads());
  // Simulates the combinations of `batch` not seen yet, at once (each in its own slot, so the
  // results are the serial ones), and records them in order.
  const auto evaluate_all = [&](const std::vector<std::vector<std::size_t>>& batch) {
    std::vector<std::vector<std::size_t>> fresh;
    for (const auto& picks : batch)
      if (!seen.contains(picks) && std::find(fresh.begin(), fresh.end(), picks) == fresh.end()) fresh.push_back(picks);
    std::vector<evaluation> done(fresh.size());
    ov::plan::parallel_for(fresh.size(), [&](std::size_t i, unsigned worker) {
      evaluation& e = done[i];
      e.picks = fresh[i];
      const ov::settings s = settings_of(e.picks);
      const ov::report r = ov::validate(s);
      e.valid = r.ok();
      for (const ov::diagnostic& d : r) e.rules.emplace_back(d.id);
      if (!e.valid) return;
      try {
        e.result = ov::plan::simulate_by_class(s, c.workload, cost, {}, /*intervals=*/false, &spaces[worker]).simulated;
        e.failed = e.result.deadlock;
        if (e.failed) e.failure = "hangs";
      } catch (const std::invalid_argument& x) {
        e.failed = true;
        e.failure = x.what();
      }
    }, args.threads);
    for (evaluation& e : done) {
      seen.emplace(e.picks, std::move(e));
      bar.update(seen.size(), planned);
    }
  };
  // A knob changes only for a gain of more than 0.1 % of the step: below that a change is noise
  // of the model (it printed env_vars.CUDA_DEVICE_MAX_CONNECTIONS=32 for 0.001 ms on moe.yaml).
  const auto better = [](const evaluation& a, const evaluation& b) {
    const bool ua = a.valid && !a.failed, ub = b.valid && !b.failed;
    if (ua != ub) return ua;
    return ua && a.result.step_time_us < b.result.step_time_us * (1 - 1e-3);
  };
  // The baseline with every overlap off, for the gain, simulated alongside the config as given.
  const ov::settings off = ov::plan::detail::without_overlap(c.settings, ov::schedule::family::none);
  ov::sim::result off_result;
  std::vector<std::size_t> best(knobs.size(), 0);
  ov::plan::parallel_for(2, [&](std::size_t i) {
    if (i == 0) evaluate_all({best});
    else off_result = ov::plan::simulate_by_class(off, c.workload, cost, {}, /*intervals=*/false).simulated;
  }, args.threads);
  const evaluation& given_eval = seen.at(best);
  if (given_eval.failed) throw input_error(args.config + ": the step cannot be simulated: " + given_eval.failure);
  // Coordinate descent: each knob in turn takes its best choice with the others held, until a
  // pass changes nothing (at most three passes). A knob's choices are simulated together, then
  // compared in order as one at a time would.
  for (int pass = 0; pass < 3; ++pass) {
    bool changed = false;
    for (std::size_t k = 0; k < knobs.size(); ++k) {
      std::vector<std::vector<std::size_t>> batch;
      for (std::size_t j = 0; j < knobs[k].choices.size(); ++j) {
        batch.push_back(best);
        batch.back()[k] = j;
      }
      evaluate_all(batch);
      for (const auto& picks : batch)
        if (better(seen.at(picks), seen.at(best))) {
          best = picks;
          changed = true;
        }
    }
    if (!changed) break;
  }
  std::vector<const evaluation*> ranked;
  std::size_t rejected = 0;
  std::map<std::string, std::size_t> rejected_by;  // rule id (or why the simulation failed) -> combinations
  for (const auto& [picks, e] : seen) {
    if (e.valid && !e.failed) {
      ranked.push_back(&e);
      continue;
    }
    ++rejected;
    if (e.failed) ++rejected_by["simulation: " + e.failure.substr(0, 80)];
    for (const std::string& id : e.rules) ++rejected_by[id];
  }
  const auto rejected_text = [&] {
    std::string out;
    for (const auto& [why, n] : rejected_by) (out += out.empty() ? "" : ", ") += why + " x" + std::to_string(n);
    return out;
  };
  // Ties go to the combination that changes fewer knobs.
  const auto changes = [](const evaluation* e) { return std::count_if(e->picks.begin(), e->picks.end(), [](std::size_t p) { return p != 0; }); };
  std::sort(ranked.begin(), ranked.end(), [&](auto* a, auto* b) {
    if (a->result.step_time_us != b->result.step_time_us) return a->result.step_time_us < b->result.step_time_us;
    return changes(a) < changes(b);
  });
  // The best found leads, ahead of a combination faster by less than the 0.1 % a knob must gain.
  std::stable_partition(ranked.begin(), ranked.end(), [&](const evaluation* e) { return e == &seen.at(best); });
  const double given_us = given_eval.result.step_time_us;
  const auto label = [&](const evaluation& e) {
    std::string out;
    // Only what differs from the config as given: the rest is Bridge's derivation.
    for (std::size_t i = 0; i < knobs.size(); ++i)
      if (e.picks[i] != 0) (out += out.empty() ? "" : ", ") += knobs[i].choices[e.picks[i]].label;
    return out.empty() ? std::string("as configured") : out;
  };
  const evaluation& top = seen.at(best);
  std::vector<std::string> overrides;
  for (std::size_t i = 0; i < knobs.size(); ++i)
    for (const std::string& o : knobs[i].choices[best[i]].overrides) overrides.push_back(o);
  overlap_plan::document fragment_doc;
  for (const std::string& o : overrides) overlap_plan::apply_override(fragment_doc, o, overlap_plan::override_mode::set_or_add);
  const std::string yaml = overrides.empty() ? "" : overlap_plan::to_yaml(fragment_doc.tree);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (args.json_output) {
    json out = {{"config", args.config}, {"machine", args.machine},
                {"profile", args.profile.empty() ? json(nullptr) : json(args.profile)},
                {"knobs", json::array()}, {"ranked", json::array()},
                {"rejected", rejected}, {"rejected_by", rejected_by},
                {"overlap_off_step_time_us", off_result.step_time_us},
                {"given_step_time_us", given_us}, {"best_overrides", overrides}, {"best_yaml", yaml}, {"seconds", seconds}};
    for (const knob& k : knobs) {
      json choices = json::array();
      for (const choice& ch : k.choices) choices.push_back(ch.label);
      out["knobs"].push_back({{"name", k.name}, {"choices", choices}});
    }
    for (std::size_t i = 0; i < ranked.size(); ++i)
      out["ranked"].push_back({{"rank", i + 1}, {"combination", label(*ranked[i])}, {"step_time_us", ranked[i]->result.step_time_us},
                               {"gain_vs_config", 1 - ranked[i]->result.step_time_us / given_us},
                               {"exposed_comm_us", family_json(ranked[i]->result.exposed_comm_us)}});
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  std::printf("overlap-plan tune %s on an %s: %zu free knob(s), %zu combinations simulated, %zu rejected, %.1f s\n",
              args.config.c_str(), machine_label(args, cost.machine()).c_str(), knobs.size(), ranked.size(), rejected,
              seconds);
  if (rejected > 0) std::printf("  rejected (a combination may break several rules): %s\n", rejected_text().c_str());
  for (const knob& k : knobs) {
    std::printf("  %-28s", k.name.c_str());
    for (const choice& ch : k.choices) std::printf(" [%s]", ch.label.c_str());
    std::printf("\n");
  }
  std::printf("\nevery overlap off: %.2f ms; as configured (Bridge's derivation for the free knobs): %.2f ms\n\n",
              off_result.step_time_us / 1000, given_us / 1000);
  std::printf("%4s %10s %8s %9s %9s %9s %9s  %s\n", "rank", "step_ms", "gain", "tp_ms", "dp_ms", "pp_ms", "ep_ms", "combination");
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& e = *ranked[i];
    const auto x = [&](ov::schedule::family f) { return e.result.exposed_comm_us[static_cast<std::size_t>(f)] / 1000; };
    std::printf("%4zu %10.2f %7.1f%% %9.2f %9.2f %9.2f %9.2f  %s\n", i + 1, e.result.step_time_us / 1000,
                100 * (1 - e.result.step_time_us / given_us), x(ov::schedule::family::tp), x(ov::schedule::family::dp),
                x(ov::schedule::family::pp), x(ov::schedule::family::ep), label(e).c_str());
  }
  std::printf("(gain: against the config as given; *_ms: exposed communication per family; the combination\n"
              " lists the knobs changed from the config, every other one keeps Bridge's derivation)\n");
  // "x % faster" or "x % slower": the best combination of the free knobs may still lose to every
  // overlap off when a knob the config sets (tp_comm_overlap, say) costs more than it hides.
  const auto versus = [](double us, double than) {
    const double gain = 100 * (1 - us / than);
    char text[48];
    std::snprintf(text, sizeof text, "%.1f %% %s", gain >= 0 ? gain : -gain, gain >= 0 ? "faster" : "slower");
    return std::string(text);
  };
  std::printf("\nbest: %s, %.2f ms (%s than as configured, %s than every overlap off)\n", label(top).c_str(),
              top.result.step_time_us / 1000, versus(top.result.step_time_us, given_us).c_str(),
              versus(top.result.step_time_us, off_result.step_time_us).c_str());
  if (overrides.empty()) {
    std::printf("Bridge's derivation is already the best found: nothing to override.\n");
  } else {
    std::printf("\nas Bridge overrides:\n ");
    for (const std::string& o : overrides) std::printf(" %s", o.c_str());
    std::printf("\n\nas YAML:\n%s", yaml.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const cli args = parse_args(argc, argv);
    if (args.command == "help") {
      std::cout << help_text;
      return 0;
    }
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
