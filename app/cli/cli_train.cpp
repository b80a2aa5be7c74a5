// speculum-cli train target | drafter | ssd-heads | samples | fit | low-res | install-low-res | bundle: the parts that
// need only LibTorch (they run in SPECULUM_ENGINE_ONLY builds too, on CUDA with --device). Resumable; Ctrl-C stops
// after a checkpoint. Each command fills a request of speculum_tools.h and runs it.
#include <iostream>

#include "cli/cli_options.h"
#include "cli/train_shared.h"
#include "common/process_setup.h"

namespace speculum::cli {
namespace {

// train samples --verdicts / --only-passing: whether the prompt checker passes an image; a caption it cannot judge is an error.
bool checker_passes(const GenerateParams& request, const GenerateResult& result) {
#ifdef SPECULUM_ENGINE_ONLY
  (void)request, (void)result;
  throw Error("--verdicts and --only-passing need the prompt checker, which this engine-only build lacks");
#else
  const std::optional<bool> verdict = shapes_checker_verdict(request.prompt, result.image);
  if (!verdict) throw Error("the prompt checker judges shapes captions; \"" + request.prompt + "\" is not one");
  return *verdict;
#endif
}

}  // namespace

CLI::App* add_train_commands(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train the default model's parts");
  train->require_subcommand(1);
  train->preparse_callback([](std::size_t) { app::keep_freed_memory_for_reuse(); });
  auto g = std::make_shared<TargetTrainRequest>();
  CLI::App* target = train->add_subcommand("target", "Train the text-conditioned target on a tokenised corpus");
  target->add_option("--vq", g->vq_run, "VQ run folder")->required();
  target->add_option("--corpus", g->corpora, "Training corpora (from train tokenize), used as one")->required();
  target->add_option("--held-out", g->held_out, "Held-out corpus for validation loss");
  target->add_option("--out", g->out, "Run folder; resumes if it has a checkpoint")->required();
  target->add_option("--steps", g->params.schedule.steps, "Optimisation steps")->capture_default_str();
  target->add_option("--stop-at", g->params.stop_at,
                     "Stop with a checkpoint at this step without moving the schedule's horizon (0 = run to --steps)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  target->add_option("--lr", g->params.schedule.peak_lr, "Peak learning rate")->capture_default_str();
  target->add_option("--warmup", g->params.schedule.warmup, "Linear warm-up steps")->capture_default_str();
  target->add_option("--batch", g->params.batch, "Sequences per step")->capture_default_str();
  target->add_option("--seed", g->params.seed, "Seed")->check(whole_number_check())->capture_default_str();
  target->add_option("--threads", g->threads, "LibTorch threads")->capture_default_str();
  add_training_device_option(*target, g->params.device);
  target->add_option("--checkpoint-every", g->params.checkpoint_every, "Steps between checkpoints")->capture_default_str();
  target->add_option("--dim", g->shape.dim, "Model width (a new run only; a resumed run keeps its manifest)")->capture_default_str();
  target->add_option("--layers", g->shape.layers, "Transformer blocks")->capture_default_str();
  target->add_option("--heads", g->shape.heads, "Attention heads (head size divisible by 4 for 2D RoPE)")->capture_default_str();
  target->add_option("--text-encoder-layers", g->shape.text_encoder_layers,
                     "Contextual blocks over the caption's words (0: bare word embeddings)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  target->add_flag("--image-positions,!--no-image-positions", g->shape.image_positions,
                   "Learned position embedding per grid cell on top of 2D RoPE")
      ->capture_default_str();
  target->add_option("--object-weight", g->params.object_weight,
                     "Weigh each token's loss by 1 + this x the share of its cell objects cover (a corpus tokenised with "
                     "object shares; 0: the plain mean)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option("--tops-weight", g->params.tops_weight,
                     "Add this to the loss weight of each object-top token (where drawing commits to an object's colour "
                     "and shape; a corpus tokenised with object shares; 0: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option("--caption-reading", g->params.caption_reading,
                     "Weight of the caption-reading loss: a reader on each image's first object row predicts its caption's "
                     "words, so the positions that decide the first shape must carry them (0: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option("--caption-contrast", g->params.caption_contrast,
                     "Weight of the caption-contrast loss: each image is also scored under its caption with one shape, "
                     "count, side or size word swapped, and the model learns to prefer the true caption (0: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option_function<std::string>(
            "--contrast-on", [g](const std::string& scope) { g->params.contrast_object_tops = scope == "object-tops"; },
            "The tokens the caption contrast compares: image (all of them) or object-tops (each object's first two rows "
            "of cells, where generation commits to a shape; needs object shares)")
      ->check(CLI::IsMember({"image", "object-tops"}))
      ->default_str("image");
  target->add_option("--preference", g->params.preference,
                     "Weight of the preference loss (DPO) on the target's own samples judged by the prompt checker "
                     "(--judged): pairs of one caption's passing and failing image, against the --init-from model (0: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option("--judged", g->judged, "The target's own samples with the checker's verdicts (train samples --verdicts)");
  target->add_option("--preference-beta", g->params.preference_beta, "DPO's beta: how far from the reference a margin counts")
      ->check(CLI::Range(1e-6, 100.0))
      ->capture_default_str();
  target->add_option("--preference-pairs", g->params.preference_pairs, "Pairs per step")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  target->add_option("--contrast-exchange", g->params.contrast_exchange,
                     "The share of foils that exchange a caption's two colours or two shapes where it has two (a "
                     "relation's): the same words bound to the other object (0: one-word swaps only)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  target->add_option("--contrast-copy", g->params.contrast_copy,
                     "The share of foils that copy one of a caption's two colours or two shapes onto the other object "
                     "(a relation drawn with both objects alike; with --contrast-exchange at most 1 in all)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  target->add_option("--init-from", g->params.init_from,
                     "A new run starts from this target run's checkpoint; tensors it lacks start as the identity");
  target->add_option("--grown-lr-scale", g->params.grown_lr_scale,
                     "The tensors the --init-from run lacks (blocks grown onto it) train at this multiple of the "
                     "learning rate (1: one rate for all)")
      ->check(CLI::Range(0.01, 1000.0))
      ->capture_default_str();
  target->final_callback([g] {
    const int rc = run_reporting_errors([&] { train_target_run(*g, training_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct DrafterArgs {
    DrafterTrainRequest request;
    std::string objective = "eagle";
  };
  auto d = std::make_shared<DrafterArgs>();
  CLI::App* drafter = train->add_subcommand("drafter", "Train an EAGLE-style drafter on a bundle's frozen target");
  DrafterTrainParams& dp = d->request.params;
  add_frozen_target_options(*drafter, d->request.run, dp.schedule, dp.stop_at, dp.batch, dp.seed, dp.checkpoint_every);
  drafter->add_option("--objective", d->objective, "eagle: Smooth-L1 + 0.1 soft CE; lisa: Locality-Informed Distillation")
      ->check(CLI::IsMember({"eagle", "lisa"}))
      ->capture_default_str();
  drafter->add_flag("--lisa-weights,!--no-lisa-weights", dp.lisa_weights,
                    "lisa: weight positions by structured uncertainty")->capture_default_str();
  drafter->add_flag("--lisa-smoothing,!--no-lisa-smoothing", dp.lisa_smoothing,
                    "lisa: smooth the soft target over the codebook")->capture_default_str();
  drafter->add_option("--init-from", dp.init_from,
                      "A fresh run starts from this drafter run's checkpoint (a warm start for a continued target)");
  drafter->add_flag("--install", d->request.install, "At the end, store the drafter in the bundle (F16) under the objective's name");
  drafter->final_callback([d] {
    const int rc = run_reporting_errors([&] {
      d->request.params.objective = parse_drafter_objective(d->objective);
      train_drafter_run(d->request, training_callbacks());
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto h = std::make_shared<SpatialHeadsTrainRequest>();
  CLI::App* ssd = train->add_subcommand("ssd-heads", "Train SSD's horizontal and vertical heads on a bundle's frozen target");
  SpatialHeadsTrainParams& hp = h->params;
  add_frozen_target_options(*ssd, h->run, hp.schedule, hp.stop_at, hp.batch, hp.seed, hp.checkpoint_every);
  ssd->add_option("--horizontal", hp.horizontal, "Horizontal heads (offsets 1..k_h along a row)")
      ->check(CLI::Range(1, kMaxHorizontalHeads))->capture_default_str();
  ssd->add_option("--vertical", hp.vertical, "Vertical heads (offsets 1..k_v rows down)")
      ->check(CLI::Range(1, kMaxVerticalHeads))->capture_default_str();
  ssd->add_option("--init-from", hp.init_from,
                  "A fresh run starts from this SSD-heads run's checkpoint (same head counts; a warm start for a continued target)");
  ssd->add_flag("--install", h->install, "At the end, store the heads in the bundle (F16, ssd-heads.safetensors)");
  ssd->final_callback([h] {
    const int rc = run_reporting_errors([&] { train_spatial_heads_run(*h, training_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // The target's own images at the bundle's sampling, as a corpus: self-distillation data for drafters.
  auto sa = std::make_shared<SamplesRequest>();
  CLI::App* samples = train->add_subcommand("samples", "Generate the target's own images (ar, the bundle's sampling) as a corpus");
  samples->add_option("--bundle", sa->bundle, "Bundle")->required();
  samples->add_option("--out", sa->out, "Corpus file (.safetensors)")->required();
  samples->add_option("--count", sa->count, "Images")->check(CLI::Range(1, 1000000))->capture_default_str();
  samples->add_option("--scene-seed", sa->scene_seed, "Captions of shapes scenes (class bundles: the classes drawn) from this seed on")
      ->check(whole_number_check())->capture_default_str();
  samples->add_option("--classes", sa->classes, "Class bundles: draw the classes uniformly from these ids (default: all)")
      ->delimiter(',')->check(CLI::NonNegativeNumber);
  samples->add_option("--prompts", sa->prompts_file,
                      "Text bundles: captions from this file, one per line, in turn (required for T5 bundles; default for "
                      "shapes bundles: shapes captions)");
  samples->add_option("--threads", sa->threads, "LibTorch threads")->capture_default_str();
  add_training_device_option(*samples, sa->device);
  samples->add_option("--per-caption", sa->per_caption, "Images per caption, each with its own seed")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  auto judging = std::make_shared<std::pair<bool, bool>>(false, false);  // --verdicts, --only-passing
#ifndef SPECULUM_ENGINE_ONLY  // the prompt checker needs OpenCV
  samples->add_flag("--verdicts", judging->first,
                    "Store the prompt checker's verdict on each image (shapes captions): pairs for train target --preference");
  samples->add_flag("--only-passing", judging->second, "Keep only the images the prompt checker passes (shapes captions)");
#endif
  samples->final_callback([sa, judging] {
    if (judging->first || judging->second) sa->judge = checker_passes;
    sa->only_passing = judging->second;
    // Ctrl-C / SIGTERM: keep the images generated so far.
    const int rc = run_reporting_errors([&] { generate_samples(*sa, training_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // How well a bundle's drafter fits its target on a corpus (teacher-forced): acceptance Σ min(p, q), top-1.
  auto fa = std::make_shared<DrafterFitRequest>();
  CLI::App* fit = train->add_subcommand("fit", "Measure a bundle drafter's fit to its target on a corpus");
  fit->add_option("--bundle", fa->bundle, "Bundle")->required();
  fit->add_option("--drafter", fa->drafter, "Drafter name")->check(CLI::IsMember({"eagle", "lisa"}))->capture_default_str();
  fit->add_option("--corpus", fa->corpus, "Tokenised corpus")->required();
  fit->add_option("--images", fa->images, "Images (the corpus's first rows)")->capture_default_str();
  fit->final_callback([fa] {
    const int rc = run_reporting_errors([&] {
      const DrafterFitReport f = measure_drafter_fit(*fa);
      std::cout << "drafter '" << fa->drafter << "' on " << fa->corpus << ": acceptance " << f.acceptance << ", top-1 agreement " << f.top1 << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // MuLo-SD's low-resolution drafter for any bundle, from its own samples: the samples downscaled through the bundle's
  // tokenizer, a target at the smaller grid initialised from the bundle's (cell positions resampled), trained on them.
  // --corpus: the target's samples at its own grid (train samples); --held-out likewise.
  auto lo = std::make_shared<LowResTrainRequest>();
  CLI::App* low = train->add_subcommand("low-res", "Train a bundle's MuLo-SD low-resolution drafter on its own samples (train samples)");
  TargetTrainParams& lp = lo->params;
  add_frozen_target_options(*low, lo->run, lp.schedule, lp.stop_at, lp.batch, lp.seed, lp.checkpoint_every);
  low->add_option("--factor", lo->factor, "Grid factor: 2 (a 16x16 target drafts at 8x8) or 4")->check(CLI::IsMember({2, 4}))->capture_default_str();
  low->add_flag("--install", lo->install, "At the end, store it in the bundle as its low-resolution drafter (F16)");
  low->final_callback([lo] {
    const int rc = run_reporting_errors([&] { train_low_res_run(*lo, training_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // MuLo-SD's low-resolution drafter: a target run on a downscaled corpus, stored in a bundle it fits.
  struct LowResArgs {
    std::string run, bundle;
  };
  auto lr = std::make_shared<LowResArgs>();
  CLI::App* low_res = train->add_subcommand(
      "install-low-res", "Store a target run trained at a smaller grid (train tokenize --downscale) as a bundle's low-resolution drafter");
  low_res->add_option("--run", lr->run, "Target run folder (its latest checkpoint, EMA weights when present)")->required();
  low_res->add_option("--bundle", lr->bundle, "Bundle")->required();
  low_res->final_callback([lr] {
    const int rc = run_reporting_errors([&] { install_low_res_drafter(lr->run, lr->bundle, progress_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto b = std::make_shared<BundleRequest>();
  CLI::App* bundle = train->add_subcommand("bundle", "Assemble a bundle from a VQ run and a target run's latest checkpoint");
  bundle->add_option("--vq", b->vq_run, "VQ run folder")->required();
  bundle->add_option("--target", b->target_run, "Target run folder")->required();
  bundle->add_option("--out", b->out, "Bundle folder")->required();
  bundle->add_flag("--fp16,!--fp32", b->fp16, "Store weights as F16 (default) or F32");
  // What the model is best sampled with (measured with `speculum-cli eval --cfg ...`); the CLI and the studio start there.
  add_sampling_options(*bundle, b->sampling, "the bundle's recommendation; default: the engine's");
  bundle->final_callback([b] {
    const int rc = run_reporting_errors([&] { assemble_bundle(*b, progress_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });
  return train;
}

}  // namespace speculum::cli
