#include "cli/cli_options.h"

#include <charconv>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/default_bundle.h"

namespace speculum::cli {

void EngineFlags::add_to(CLI::App& c) {
  c.add_option("--bundle", params.bundle_dir, "Model bundle folder (default: the embedded bundle)");
  c.add_option("--device", params.device, "Device")->check(CLI::IsMember({"auto", "cpu", "cuda"}))->capture_default_str();
  c.add_option("--threads", params.threads, "LibTorch threads (default: all cores)")->check(CLI::Range(1, 256));
  c.add_option("--weights", params.weights, "How the matrices run: f32, f16, bf16 or q8 (8-bit weights times 8-bit activations, a scale per 32 values; default: the bundle's, else f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8"}));
  c.add_option("--draft-sizes", params.draft_sizes_file,
               "Where auto draft sizes come from (`speculum-cli tune` writes it; none: each method's default; default: "
               "$SPECULUM_DRAFT_SIZES, else ~/.cache/speculum/draft-sizes.json)");
  c.add_option("--t5", params.t5_folder, "T5 bundles: the T5 folder to read captions with (default: the one the bundle names)")
      ->check(CLI::ExistingDirectory);
}

EngineParams EngineFlags::resolved() const {
  EngineParams p = params;
  if (p.bundle_dir.empty()) p.bundle_dir = app::default_bundle_dir();
  if (p.draft_sizes_file.empty()) p.draft_sizes_file = app::draft_sizes_file();
  if (p.draft_sizes_file == "none") p.draft_sizes_file.clear();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (p.threads <= 0) p.threads = cores;
  if (p.threads > cores) {  // more threads than cores only spin against each other
    std::cerr << "warning: --threads " << p.threads << ": this machine has " << cores << " cores; using " << cores << "\n";
    p.threads = cores;
  }
  return p;
}

std::array<CLI::Option*, 4> add_sampling_options(CLI::App& c, SamplingParams& s, const std::string& default_note) {
  return {c.add_option("--cfg", s.cfg_scale, "Classifier-free guidance scale (1 = off; " + default_note + ")"),
          c.add_option("--temperature", s.temperature, "Sampling temperature (0 = greedy; " + default_note + ")"),
          c.add_option("--top-k", s.top_k, "Keep the k most likely tokens (0 = off; " + default_note + ")"),
          c.add_option("--top-p", s.top_p, "Nucleus sampling mass (1 = off; " + default_note + ")")};
}

void RequestFlags::add_to(CLI::App& c, bool with_method) {
  c.add_option("--prompt", params.prompt, "Caption (text bundles) or class name (class bundles)");
  c.add_option("--class", params.class_id, "Class id (class bundles)")->check(CLI::Range(0, 1 << 20));
  sampling_options_ = add_sampling_options(c, params.sampling, "default: the bundle's");
  if (with_method) {
    c.add_option("--seed", params.seed, "Random seed")->check(whole_number_check())->capture_default_str();
    c.add_option("--method", params.method, "Decoding method (see `speculum-cli methods`)")->capture_default_str();
  }
  c.add_option("--opt", method_options, "Method parameter NAME=VALUE (repeatable)");
}

GenerateParams RequestFlags::resolved(const ModelInfo& model) const {
  GenerateParams p = params;
  const auto given = [&](int i) { return sampling_options_[i] && sampling_options_[i]->count() > 0; };
  if (!given(0)) p.sampling.cfg_scale = model.sampling.cfg_scale;
  if (!given(1)) p.sampling.temperature = model.sampling.temperature;
  if (!given(2)) p.sampling.top_k = model.sampling.top_k;
  if (!given(3)) p.sampling.top_p = model.sampling.top_p;
  for (const auto& [name, value] : parse_method_options(method_options)) p.method_options[name] = value;
  p.sampling.validate();
  return p;
}

MethodOptions parse_method_options(const std::vector<std::string>& name_values) {
  MethodOptions options;
  for (const auto& option : name_values) {
    const auto eq = option.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--opt expects NAME=VALUE, got '" + option + "'");
    try {
      std::size_t used = 0;
      const std::string value = option.substr(eq + 1);
      if (value == "auto") {
        options[option.substr(0, eq)] = kAutoDraftSize;
        continue;
      }
      options[option.substr(0, eq)] = std::stod(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw Error("--opt " + option + ": the value is not a number (or auto, for a draft size)");
    }
  }
  return options;
}

CLI::Validator whole_number_check() {
  // CLI11 turns "-1", "1e23" and "2^64" into some 64-bit value silently; a seed is digits, 0 .. 2^64 - 1.
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || error != std::errc() || end != text.data() + text.size())
          return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
        return {};
      },
      "UINT64");
}

int run_reporting_errors(const std::function<void()>& body) {
  try {
    body();
    return 0;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory: the request or a file needs more memory than this machine has\n";
  } catch (const std::filesystem::filesystem_error& e) {  // a path the program could not follow (a link loop, ...)
    std::cerr << "error: " << user_message(e) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: unexpected failure: " << user_message(e) << "\n";
  }
  return 1;
}

}  // namespace speculum::cli
