// `import speculum`: the engine's two public faces (speculum.h, speculum_tools.h) for Python, with NumPy arrays in and
// out. Generation runs with the GIL released; callbacks run with it held, on the thread that called generate(), in
// event order. Ctrl-C cancels a run within one step and raises KeyboardInterrupt; Engine.cancel() (from a callback or
// another thread) ends it with result.cancelled set. Errors are speculum.Error with the engine's own message; a bad
// request raises speculum.RequestError, which is also a ValueError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/default_bundle.h"
#include "speculum_tools.h"

namespace py = pybind11;
using speculum::Error;

namespace {

PyObject* error_type = nullptr;          // speculum.Error
PyObject* request_error_type = nullptr;  // speculum.RequestError(speculum.Error, ValueError)

py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& item : j) out.append(to_python(item));
      return std::move(out);
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [key, value] : j.items()) out[py::str(key)] = to_python(value);
      return std::move(out);
    }
    default: return py::none();
  }
}

// An event as a plain dict in the trace's own schema (the fields of a trace's JSON line).
py::dict event_dict(const speculum::Event& event) {
  return to_python(nlohmann::json::parse(speculum::event_to_json_line(event))).cast<py::dict>();
}

speculum::Event event_from_dict(const py::handle& dict) {
  const std::string line = py::module_::import("json").attr("dumps")(dict).cast<std::string>();
  return speculum::event_from_json_line(line);
}

py::array_t<std::uint8_t> image_array(const speculum::Image& image) {
  py::array_t<std::uint8_t> out({image.height, image.width, 3});
  std::copy(image.rgb.begin(), image.rgb.end(), out.mutable_data());
  return out;
}

// A preview as {"image": [H, W, 3], "known": bool [rows, cols], "committed", "total"}.
py::dict preview_dict(const speculum::Preview& preview, int rows, int cols) {
  py::dict d;
  d["image"] = image_array(preview.image);
  py::array_t<bool> known({rows, cols});
  for (std::size_t i = 0; i < preview.known.size(); ++i) known.mutable_data()[i] = preview.known[i] != 0;
  d["known"] = known;
  d["committed"] = preview.committed;
  d["total"] = preview.total;
  return d;
}

py::array_t<std::int32_t> grid_array(const std::vector<int>& tokens, int rows, int cols) {
  py::array_t<std::int32_t> out({rows, cols});
  std::copy(tokens.begin(), tokens.end(), out.mutable_data());
  return out;
}

// A token grid from any integer array (its size is the engine's to check).
std::vector<int> tokens_from(const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& array) {
  return std::vector<int>(array.data(), array.data() + array.size());
}

py::dict metrics_dict(const speculum::RunMetrics& m) {
  py::dict d;
  d["tokens"] = m.tokens;
  d["nfe"] = m.nfe;
  d["steps"] = m.steps;
  d["tau"] = m.mean_accepted_length();
  d["drafted"] = m.drafted_verified;
  d["accepted"] = m.accepted;
  d["acceptance"] = m.acceptance_rate();
  d["wall_ms"] = m.wall_ms;
  d["forward_ms"] = m.forward_ms;
  d["draft_ms"] = m.draft_ms;
  d["tokens_per_second"] = m.tokens_per_second();
  return d;
}

py::dict param_dict(const speculum::ParamSpec& p) {
  py::dict d;
  d["name"] = p.name;
  d["label"] = p.label;
  d["help"] = p.help;
  d["unit"] = p.unit;
  d["default"] = p.default_value;
  d["range"] = py::make_tuple(p.min, p.max);
  d["integer"] = p.integer;
  d["choices"] = p.choices;
  d["toggle"] = p.toggle;
  d["draft_size"] = p.draft_size;
  return d;
}

py::list method_list(const std::vector<std::string>& names) {
  py::list out;
  for (const speculum::MethodInfo& m : speculum::available_methods()) {
    if (std::find(names.begin(), names.end(), m.name) == names.end()) continue;
    py::dict d;
    d["name"] = m.name;
    d["summary"] = m.summary;
    py::list params;
    for (const auto& p : m.params) params.append(param_dict(p));
    d["params"] = params;
    out.append(d);
  }
  return out;
}

py::dict row_dict(const speculum::BenchRow& r) {
  py::dict d;
  d["method"] = r.method;
  d["images"] = r.images;
  d["tokens"] = r.tokens;
  d["nfe"] = r.nfe;
  d["nfe_per_image"] = r.nfe_per_image();
  d["tau"] = r.tau();
  d["drafted"] = r.drafted;
  d["accepted"] = r.accepted;
  d["acceptance"] = r.acceptance();
  d["ms_per_image"] = r.ms_per_image.median;
  d["ms_per_image_quartiles"] = py::make_tuple(r.ms_per_image.q1, r.ms_per_image.q3);
  d["speedup"] = r.speedup.median;
  d["speedup_quartiles"] = py::make_tuple(r.speedup.q1, r.speedup.q3);
  d["same_as_ar"] = r.tokens ? double(r.same_as_ar) / double(r.tokens) : 0.0;
  d["outside_forward_share"] = r.outside_forward_share();
  d["draft_share"] = r.draft_share();
  d["checked"] = r.checked;
  d["passed"] = r.passed;
  d["fd_reference"] = r.fd_reference ? py::object(py::float_(*r.fd_reference)) : py::none();
  d["fd_ar"] = r.fd_ar ? py::object(py::float_(*r.fd_ar)) : py::none();
  return d;
}

// What generate() returns.
struct Result {
  py::array_t<std::int32_t> tokens;  // [rows, cols], -1 where a cancelled run left cells open
  py::array_t<std::uint8_t> image;   // [H, W, 3]
  py::dict metrics;
  py::list events;
  bool cancelled = false;
  py::dict method_options;  // what the method ran with (auto draft sizes made concrete)
};

// The engine's log lines go to Python's logging, logger "speculum" (by default only warnings reach stderr).
speculum::LogCallback python_logging() {
  return [](speculum::LogLevel level, const std::string& text) {
    static const int levels[] = {10, 20, 30, 40};  // logging.DEBUG, INFO, WARNING, ERROR
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("logging").attr("getLogger")("speculum").attr("log")(levels[static_cast<int>(level)], text);
    } catch (py::error_already_set&) {  // a log line must never end a run
    }
  };
}

class PyEngine {
 public:
  PyEngine(const std::optional<std::string>& bundle, const std::string& device, int threads) {
    speculum::EngineParams p;
    p.bundle_dir = bundle ? *bundle : speculum::app::default_bundle_dir();
    p.device = device;
    p.threads = threads;
    p.draft_sizes_file = speculum::app::draft_sizes_file();
    py::gil_scoped_release release;
    engine_ = speculum::Engine::load(p, python_logging());
  }

  const speculum::ModelInfo& info() const { return engine_->info(); }
  py::list methods() const { return method_list(info().methods); }
  std::optional<std::string> check_prompt(const std::string& text) const {
    const std::string problem = engine_->check_prompt(text);
    return problem.empty() ? std::nullopt : std::optional<std::string>(problem);
  }
  void cancel() { cancel_ = true; }

  Result generate(const std::string& prompt, int class_id, std::uint64_t seed, const std::string& method, const py::dict& options,
                  std::optional<float> cfg, std::optional<float> temperature, std::optional<int> top_k,
                  std::optional<float> top_p, const py::object& on_event, const py::object& on_preview, int preview_every) {
    speculum::GenerateParams p;
    p.prompt = prompt;
    p.class_id = class_id;
    p.seed = seed;
    p.method = method;
    for (const auto& [key, value] : options) p.method_options[key.cast<std::string>()] = value.cast<double>();
    p.sampling = info().sampling;
    if (cfg) p.sampling.cfg_scale = *cfg;
    if (temperature) p.sampling.temperature = *temperature;
    if (top_k) p.sampling.top_k = *top_k;
    if (top_p) p.sampling.top_p = *top_p;
    p.preview_every = on_preview.is_none() ? 0 : std::max(1, preview_every);

    // Events are kept as the engine sends them and become dicts once: when the callback takes them, as it is called;
    // otherwise after the run. Signals are looked at once per commit.
    std::vector<speculum::Event> events;
    py::list event_dicts;
    std::optional<py::error_already_set> callback_error;
    bool interrupted = false;
    cancel_ = false;
    const auto with_gil = [&](const auto& body) {
      if (callback_error || interrupted) return;
      py::gil_scoped_acquire gil;
      try {
        body();
      } catch (py::error_already_set& e) {
        callback_error = std::move(e);
        cancel_ = true;
      }
    };
    speculum::Callbacks callbacks;
    callbacks.log = python_logging();
    callbacks.event = [&](const speculum::Event& e) {
      if (on_event.is_none()) return events.push_back(e);
      with_gil([&] {
        py::dict d = event_dict(e);
        event_dicts.append(d);
        on_event(d);
      });
    };
    if (!on_preview.is_none())
      callbacks.preview = [&](const speculum::Preview& preview) {
        with_gil([&] {
          on_preview(preview_dict(preview, info().grid_rows, info().grid_cols));
        });
      };
    callbacks.progress = [&](int, int) {
      with_gil([&] {
        if (PyErr_CheckSignals() != 0) {  // Ctrl-C: stop at the end of this step, raise when the run has ended
          PyErr_Clear();
          interrupted = true;
          cancel_ = true;
        }
      });
    };
    speculum::GenerateResult r;
    {
      py::gil_scoped_release release;
      r = engine_->generate(p, callbacks, &cancel_);
    }
    if (callback_error) throw std::move(*callback_error);
    if (interrupted) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    }
    Result out;
    out.tokens = grid_array(r.tokens, info().grid_rows, info().grid_cols);
    out.image = image_array(r.image);
    out.metrics = metrics_dict(r.metrics);
    for (const auto& e : events) event_dicts.append(event_dict(e));
    out.events = event_dicts;
    out.cancelled = r.cancelled;
    for (const auto& [key, value] : r.method_options) out.method_options[py::str(key)] = value;
    return out;
  }

  py::array_t<std::uint8_t> decode(const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& tokens) const {
    const std::vector<int> grid = tokens_from(tokens);
    speculum::Image image;
    {
      py::gil_scoped_release release;
      image = engine_->decode(grid);
    }
    return image_array(image);
  }

  py::dict preview(const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& tokens) const {
    const std::vector<int> grid = tokens_from(tokens);
    speculum::Preview preview;
    {
      py::gil_scoped_release release;
      preview = engine_->preview(grid);
    }
    return preview_dict(preview, info().grid_rows, info().grid_cols);
  }

 private:
  std::unique_ptr<speculum::Engine> engine_;
  std::atomic<bool> cancel_{false};
};

py::dict bench_dict(const speculum::BenchRun& run) {
  py::dict d;
  d["bundle"] = run.bundle;
  d["machine"] = run.machine;
  d["threads"] = run.threads;
  d["methods"] = run.methods;
  d["prompts"] = run.prompts;
  d["seeds"] = run.seeds;
  d["reference"] = run.reference;
  const std::vector<speculum::BenchRow> summary = speculum::summarize(run);
  py::list rows;
  for (const auto& row : summary) rows.append(row_dict(row));
  d["rows"] = rows;
  d["markdown"] = speculum::bench_markdown(run, summary);
  return d;
}

}  // namespace

PYBIND11_MODULE(speculum, m) {
  m.doc() = "Speculum: speculative decoding of autoregressive image models (LlamaGen family), with traces and benchmarks";

  error_type = PyErr_NewException("speculum.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(error_type);
  py::tuple bases = py::make_tuple(py::handle(error_type), py::handle(PyExc_ValueError));
  request_error_type = PyErr_NewException("speculum.RequestError", bases.ptr(), nullptr);
  m.attr("RequestError") = py::handle(request_error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const speculum::RequestError& e) {
      PyErr_SetString(request_error_type, e.what());
    } catch (const Error& e) {
      PyErr_SetString(error_type, e.what());
    }
  });

  py::class_<speculum::SamplingParams>(m, "Sampling")
      .def_readonly("cfg", &speculum::SamplingParams::cfg_scale)
      .def_readonly("temperature", &speculum::SamplingParams::temperature)
      .def_readonly("top_k", &speculum::SamplingParams::top_k)
      .def_readonly("top_p", &speculum::SamplingParams::top_p)
      .def("__repr__", [](const speculum::SamplingParams& s) { return "Sampling(" + s.to_string() + ")"; });

  py::class_<speculum::ModelInfo>(m, "Info", "What a loaded bundle is (read-only)")
      .def_readonly("name", &speculum::ModelInfo::name)
      .def_readonly("bundle_dir", &speculum::ModelInfo::bundle_dir)
      .def_readonly("device", &speculum::ModelInfo::device)
      .def_readonly("text_conditioned", &speculum::ModelInfo::text_conditioned)
      .def_readonly("free_text", &speculum::ModelInfo::free_text)
      .def_readonly("classes", &speculum::ModelInfo::classes)
      .def_readonly("text_vocab", &speculum::ModelInfo::text_vocab)
      .def_readonly("max_prompt_words", &speculum::ModelInfo::max_prompt_words)
      .def_readonly("grid_rows", &speculum::ModelInfo::grid_rows)
      .def_readonly("grid_cols", &speculum::ModelInfo::grid_cols)
      .def_readonly("image_size", &speculum::ModelInfo::image_size)
      .def_readonly("vocab_size", &speculum::ModelInfo::vocab_size)
      .def_readonly("target_parameters", &speculum::ModelInfo::target_parameters)
      .def_readonly("weight_format", &speculum::ModelInfo::weight_format)
      .def_readonly("kernels", &speculum::ModelInfo::kernels)
      .def_readonly("target_summary", &speculum::ModelInfo::target_summary)
      .def_readonly("sampling", &speculum::ModelInfo::sampling)
      .def_readonly("method_options", &speculum::ModelInfo::method_options)
      .def_readonly("methods", &speculum::ModelInfo::methods)
      .def_readonly("example_prompts", &speculum::ModelInfo::example_prompts)
      .def("__repr__", [](const speculum::ModelInfo& i) {
        return "Info(name='" + i.name + "', grid=" + std::to_string(i.grid_rows) + "x" + std::to_string(i.grid_cols) +
               ", image_size=" + std::to_string(i.image_size) + ", device='" + i.device + "', weights='" + i.weight_format + "')";
      });

  py::class_<Result>(m, "Result", "What generate() returns")
      .def_readonly("tokens", &Result::tokens)
      .def_readonly("image", &Result::image)
      .def_readonly("metrics", &Result::metrics)
      .def_readonly("events", &Result::events)
      .def_readonly("cancelled", &Result::cancelled)
      .def_readonly("method_options", &Result::method_options);

  py::class_<PyEngine>(m, "Engine", "A loaded bundle; generate() runs any decoding method on it")
      .def(py::init<const std::optional<std::string>&, const std::string&, int>(), py::arg("bundle") = py::none(),
           py::arg("device") = "auto", py::arg("threads") = 0,
           "bundle: a folder with speculum.json (None: the embedded default model); device: auto, cpu or cuda; "
           "threads: LibTorch threads (0 keeps the current setting)")
      .def_property_readonly("info", &PyEngine::info, py::return_value_policy::reference_internal)
      .def("methods", &PyEngine::methods, "The methods this bundle runs, each with its parameters")
      .def("check_prompt", &PyEngine::check_prompt, py::arg("text"), "None when the prompt is usable, else the reason")
      .def("cancel", &PyEngine::cancel, "Ends the running generate() within one step (from a callback or another thread)")
      .def("generate", &PyEngine::generate, py::arg("prompt") = "", py::arg("class_id") = -1, py::arg("seed") = 0,
           py::arg("method") = "ar", py::arg("options") = py::dict(), py::arg("cfg") = py::none(),
           py::arg("temperature") = py::none(), py::arg("top_k") = py::none(), py::arg("top_p") = py::none(),
           py::arg("on_event") = py::none(), py::arg("on_preview") = py::none(), py::arg("preview_every") = 16,
           "Generates one image; sampling the bundle recommends unless given. Same request and seed, same tokens.")
      .def("decode", &PyEngine::decode, py::arg("tokens"), "A full token grid to an RGB image [H, W, 3]")
      .def("preview", &PyEngine::preview, py::arg("tokens"), "A partial grid (-1: unknown) to a preview image and mask");

  m.def("read_trace", [](const std::string& path) {
    py::list out;
    for (const auto& e : speculum::read_trace(path)) out.append(event_dict(e));
    return out;
  }, py::arg("path"), "A trace (.jsonl) as a list of event dicts");
  m.def("write_trace", [](const std::string& path, const py::list& events) {
    std::vector<speculum::Event> parsed;
    for (const auto& e : events) parsed.push_back(event_from_dict(e));
    speculum::write_trace(path, parsed);
  }, py::arg("path"), py::arg("events"), "Writes event dicts as a trace the studio opens (atomically)");
  m.def("read_bench", [](const std::string& path) { return bench_dict(speculum::read_bench_run(path, "read_bench")); },
        py::arg("path"), "A bench or sweep result (.json): the run and one row per method with the table's numbers");
  m.def("methods", [] {
    std::vector<std::string> names;
    for (const auto& method : speculum::available_methods()) names.push_back(method.name);
    return method_list(names);
  }, "Every method Speculum has, with its parameters");
}
