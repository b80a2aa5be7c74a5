// speculum-cli calibrate: measures LISA's soft-verification bounds on a bundle's target (its own images
// at its recommended sampling) and writes them into the manifest ("soft_verification").
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <iomanip>
#include <iostream>

#include "cli/cli_options.h"
#include "cli/train_shared.h"
#include "common/default_bundle.h"
#include "data/shapes_scene.h"
#include "decoding/codebook_geometry.h"
#include "decoding/soft_calibration.h"
#include "io/bundle.h"
#include "io/t5_folder.h"
#include "models/t5_captions.h"
#include "models/text_vocabulary.h"
#include "models/vq_model.h"

namespace speculum::cli {

void add_calibrate_command(CLI::App& app) {
  struct Args {
    std::string bundle;
    int images = 48;
    std::uint64_t scene_seed = 950000000;
    SoftCalibrationParams params;
    int threads = 2;
    bool dry_run = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c =
      app.add_subcommand("calibrate", "Measure LISA's soft-verification bounds and write them into the bundle");
  c->add_option("--bundle", a->bundle, "Model bundle (default: the embedded one)");
  c->add_option("--images", a->images, "Images the target generates (ar, the bundle's sampling) for the measurement")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  c->add_option("--positions", a->params.positions_per_image, "Positions sampled per image")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  c->add_option("--delta", a->params.delta, "Quantile level 1 - delta of the bounds")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  c->add_option("--confidence-max", a->params.confidence_max,
                "Never relax where the target's top probability exceeds this")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c->add_option("--scene-seed", a->scene_seed, "Captions come from shapes scenes (class bundles: the classes drawn) from this seed on")->check(whole_number_check())
      ->capture_default_str();
  c->add_option("--threads", a->threads, "LibTorch threads")->capture_default_str();
  c->add_flag("--dry-run", a->dry_run, "Print the bounds without writing them");
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      at::set_num_threads(a->threads);
      EngineParams ep;
      ep.bundle_dir = a->bundle.empty() ? app::default_bundle_dir() : a->bundle;
      ep.device = "cpu";
      const auto engine = Engine::load(ep);
      BundleManifest m = read_manifest(ep.bundle_dir);
      c10::InferenceMode inference;
      const Transformer target(
          m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU),
          at::kCPU);
      // The target's own images, each with the condition it was drawn under. A T5 bundle (LlamaGen T2I) reads the same
      // shapes captions as free text, a class bundle classes drawn as train samples draws them: the bounds measure the
      // target's local sensitivity on its own samples.
      const bool class_bundle = m.target.condition == ConditionKind::Class;
      std::vector<int> classes;
      for (int c = 0; c < (class_bundle ? m.target.num_classes : 0); ++c) classes.push_back(c);
      const TextVocabulary vocabulary(m.text_vocab);
      std::unique_ptr<T5Captions> t5;
      if (m.t5) t5 = std::make_unique<T5Captions>(open_t5_folder(m.t5_folder()), at::kCPU, m.t5->clean_captions, m.target.cls_token_num);
      const int rows = engine->info().sampling.uses_cfg() ? 2 : 1;
      std::vector<at::Tensor> images;
      std::vector<ConditionPrefix> conditions;
      for (int i = 0; i < a->images; ++i) {
        GenerateParams p;
        p.seed = static_cast<std::uint64_t>(i);
        if (class_bundle) p.class_id = class_of_sample(a->scene_seed + i, classes);
        else p.prompt = data::sample_scene(a->scene_seed + i).caption();
        p.sampling = engine->info().sampling;
        const auto tokens = engine->generate(p).tokens;
        images.push_back(at::tensor(std::vector<std::int64_t>(tokens.begin(), tokens.end()), at::kLong));
        if (class_bundle) {
          conditions.push_back(target.class_prefix(p.class_id, rows));
        } else if (t5) {
          const EncodedCaption caption = t5->encode(p.prompt);
          conditions.push_back(target.caption_prefix(caption.features, caption.slots, rows));
        } else {
          conditions.push_back(target.text_prefix(vocabulary.encode(p.prompt), rows));
        }
      }
      const CodebookGeometry geometry(VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU).normalized_codebook(),
                                      1);
      const SoftVerificationBounds b = calibrate_soft_verification(target, geometry.whitened(), at::stack(images),
                                                                   conditions, engine->info().sampling, a->params);
      std::cout << std::setprecision(4) << "soft verification bounds from " << b.samples << " positions of "
                << a->images << " images (quantile " << 1 - a->params.delta << "):\n  alpha " << b.alpha << "  beta "
                << b.beta << "  u_bound " << b.u_bound << "  delta_max " << b.delta_max << "  confidence_max "
                << b.confidence_max << "\n";
      if (!a->dry_run) {
        m.soft_verification = b;
        write_manifest(m, m.dir);
        std::cout << "wrote them into " << m.dir << "/" << kManifestName << "\n";
      }
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
