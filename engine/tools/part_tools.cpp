// The parts trained beside a bundle's frozen target: EAGLE/LISA drafters and SSD's spatial heads, and how well a
// drafter fits its target.
#include "error.h"
#include "models/drafter.h"
#include "models/vq_model.h"
#include "tools/tool_support.h"
#include "train/drafter_trainer.h"
#include "train/spatial_heads_trainer.h"

namespace speculum {

void train_drafter_run(const DrafterTrainRequest& request, const ToolCallbacks& callbacks) {
  tools::FrozenTarget run = tools::load_frozen_target(request.run, callbacks);
  BundleManifest& m = run.manifest;
  const std::string objective = drafter_objective_name(request.params.objective);
  const VqModel vq = VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
  tools::report(callbacks, "drafter (" + objective + "): " + std::to_string(parameter_count(drafter_tensor_specs(m.target))) +
                               " parameters for " + m.name + "'s target, " + std::to_string(run.corpus.size()) +
                               " training images, " + std::to_string(request.params.schedule.steps) + " steps of " +
                               std::to_string(request.params.batch));
  const std::string& out = request.run.out;
  const TensorMap weights = train_drafter(*run.target, vq.normalized_codebook(), request.params, out, run.corpus, run.held_out,
                                          tools::progress_of(callbacks), callbacks.stop);
  save_tensors(out + "/drafter.safetensors", weights);
  tools::report(callbacks, "wrote " + out + "/drafter.safetensors");
  if (request.install && !tools::stopped(callbacks)) {
    const std::string file = "drafter-" + objective + ".safetensors";
    save_tensors(m.dir + "/" + file, weights, DType::F16);
    m.drafters[objective] = {file, objective};
    write_manifest(m, m.dir);
    tools::report(callbacks, "installed as drafter '" + objective + "' in " + m.dir);
  }
}

void train_spatial_heads_run(const SpatialHeadsTrainRequest& request, const ToolCallbacks& callbacks) {
  const SpatialHeadsTrainParams& p = request.params;
  if (p.horizontal < 1 || p.horizontal > kMaxHorizontalHeads || p.vertical < 1 || p.vertical > kMaxVerticalHeads)
    throw Error("SSD heads: " + std::to_string(p.horizontal) + " horizontal and " + std::to_string(p.vertical) +
                " vertical; allowed 1.." + std::to_string(kMaxHorizontalHeads) + " and 1.." + std::to_string(kMaxVerticalHeads));
  tools::FrozenTarget run = tools::load_frozen_target(request.run, callbacks);
  BundleManifest& m = run.manifest;
  tools::report(callbacks, "SSD heads (" + std::to_string(p.horizontal) + " horizontal, " + std::to_string(p.vertical) +
                               " vertical): " +
                               std::to_string(parameter_count(spatial_heads_tensor_specs(m.target, p.horizontal, p.vertical))) +
                               " parameters for " + m.name + "'s target, " + std::to_string(run.corpus.size()) +
                               " training images, " + std::to_string(p.schedule.steps) + " steps of " + std::to_string(p.batch));
  const std::string& out = request.run.out;
  const TensorMap weights = train_spatial_heads(*run.target, p, out, run.corpus, run.held_out, tools::progress_of(callbacks),
                                                callbacks.stop);
  save_tensors(out + "/ssd-heads.safetensors", weights);
  tools::report(callbacks, "wrote " + out + "/ssd-heads.safetensors");
  if (request.install && !tools::stopped(callbacks)) {
    m.ssd_heads = SpatialHeadsEntry{"ssd-heads.safetensors", p.horizontal, p.vertical};
    save_tensors(m.ssd_heads_path(), weights, DType::F16);
    write_manifest(m, m.dir);
    tools::report(callbacks, "installed as the SSD heads of " + m.dir);
  }
}

DrafterFitReport measure_drafter_fit(const DrafterFitRequest& request) {
  const BundleManifest m = read_manifest(request.bundle);
  if (!m.drafters.count(request.drafter)) throw Error("bundle '" + m.dir + "' has no '" + request.drafter + "' drafter");
  const Transformer target(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU),
                           at::kCPU);
  const Drafter d(target, load_tensors(SafetensorsFile::open(m.drafter_path(request.drafter)), drafter_tensor_specs(m.target), at::kCPU));
  return drafter_fit(d, TokenizedCorpus::load(request.corpus), request.images);
}

}  // namespace speculum
