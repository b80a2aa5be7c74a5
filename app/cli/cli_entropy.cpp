// speculum-cli entropy: how sure the target is where images are flat versus textured. Teacher-forces
// the target on held-out shapes images (their true tokens and captions) and averages the entropy of
// its next-token distribution over cells whose 4x4-pixel patch is flat or textured. The methods exist
// for this regime: sharp distributions on flat areas, flat ones on texture.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <iomanip>
#include <iostream>

#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "data/image_batches.h"
#include "io/bundle.h"
#include "models/tensor_io.h"
#include "models/transformer.h"
#include "train/target_trainer.h"

namespace speculum::cli {

namespace {

struct Mean {
  double sum = 0;
  long count = 0;
  void add(double v) { sum += v, ++count; }
  double value() const { return count ? sum / count : 0; }
};

}  // namespace

void add_entropy_command(CLI::App& app) {
  struct Args {
    std::string bundle, held_out;
    int count = 256;
    std::uint64_t scene_seed = 800000000;
    double flat_below = 2.0, textured_above = 12.0;
    int threads = 2;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("entropy", "Mean next-token entropy of the target on flat vs. textured image regions");
  c->add_option("--bundle", a->bundle, "Model bundle (default: the embedded one)");
  c->add_option("--held-out", a->held_out, "Held-out corpus from `train tokenize` (shapes rows first)")->required();
  c->add_option("--count", a->count, "Shapes images to use (the corpus's first rows)")->check(CLI::Range(1, 100000))->capture_default_str();
  c->add_option("--scene-seed", a->scene_seed, "Scene seed of the corpus's first row (train tokenize --seed)")->check(whole_number_check())->capture_default_str();
  c->add_option("--flat-below", a->flat_below, "A cell is flat when its patch's pixel std (0-255) is below this")->capture_default_str();
  c->add_option("--textured-above", a->textured_above, "... and textured when above this")->capture_default_str();
  c->add_option("--threads", a->threads, "LibTorch threads")->capture_default_str();
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      at::set_num_threads(a->threads);
      c10::InferenceMode inference;
      const BundleManifest m = read_manifest(a->bundle.empty() ? app::default_bundle_dir() : a->bundle);
      if (m.target.condition != ConditionKind::Text) throw Error("entropy needs a text-conditioned bundle ('" + m.dir + "')");
      const Transformer model(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU),
                              at::kCPU);
      const TokenizedCorpus corpus = TokenizedCorpus::load(a->held_out);
      if (corpus.size() < a->count)
        throw Error("'" + a->held_out + "' has " + std::to_string(corpus.size()) + " images, --count asks for " + std::to_string(a->count));
      if (corpus.codes.size(1) != m.target.grid_rows * m.target.grid_cols)
        throw Error("'" + a->held_out + "' has " + std::to_string(corpus.codes.size(1)) + " tokens per image, the bundle's grid has " +
                    std::to_string(m.target.grid_rows * m.target.grid_cols));
      Mean flat, textured, middle, all;
      const int rows = m.target.grid_rows, cols = m.target.grid_cols;
      for (int first = 0; first < a->count; first += 16) {
        const int n = std::min(16, a->count - first);
        std::vector<std::int64_t> indices;
        for (int i = 0; i < n; ++i) indices.push_back(first + i);
        const at::Tensor entropy = next_token_entropy(model, corpus, indices);  // [n, rows*cols]
        // Pixel std of each cell's patch, averaged over the channels, in 0-255 units.
        const at::Tensor images = (data::shapes_images(a->scene_seed + first, n) + 1) * 127.5;  // [n, 3, H, W]
        const int patch = static_cast<int>(images.size(2)) / rows;
        const at::Tensor patches = images.reshape({n, 3, rows, patch, cols, patch}).permute({0, 2, 4, 1, 3, 5}).reshape({n, rows * cols, 3, -1});
        const at::Tensor patch_std = patches.std(-1, /*unbiased=*/false).mean(-1);  // [n, rows*cols]
        const auto e = entropy.accessor<float, 2>();
        const auto s = patch_std.accessor<float, 2>();
        for (int i = 0; i < n; ++i)
          for (int t = 0; t < rows * cols; ++t) {
            all.add(e[i][t]);
            (s[i][t] < a->flat_below ? flat : s[i][t] > a->textured_above ? textured : middle).add(e[i][t]);
          }
      }
      std::cout << std::fixed << std::setprecision(3) << "entropy of the next-token distribution (nats; uniform over "
                << m.target.vocab_size << " codes = " << std::log(double(m.target.vocab_size)) << "), " << a->count
                << " held-out shapes images:\n"
                << "  flat cells (patch std < " << a->flat_below << ")      " << flat.value() << "  (" << flat.count << " cells)\n"
                << "  textured cells (patch std > " << a->textured_above << ") " << textured.value() << "  (" << textured.count << " cells)\n"
                << "  in between                        " << middle.value() << "  (" << middle.count << " cells)\n"
                << "  all cells                         " << all.value() << "  (" << all.count << " cells)\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
