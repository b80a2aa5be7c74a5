// The Fréchet distance between two sets of feature vectors (the FID formula, on the features of the project's
// own shapes feature network): |mu_a - mu_b|^2 + tr(S_a + S_b - 2 (S_a^1/2 S_b S_a^1/2)^1/2), each set modelled
// as a Gaussian with its mean and unbiased covariance. Plain C++ (a Jacobi eigen-solver), no LibTorch, so that
// bench results are summarised the same way wherever they are merged.
#pragma once

#include <optional>
#include <vector>

namespace speculum {

using FeatureVectors = std::vector<std::vector<float>>;  // one row per image, all of the same length

struct FeatureMoments {
  int n = 0;
  std::vector<double> mean;
  std::vector<double> covariance;  // row-major d x d, divided by n - 1
  int dim() const { return static_cast<int>(mean.size()); }
};

// Throws Error when the rows differ in length or there are fewer than two.
FeatureMoments feature_moments(const FeatureVectors& rows);

double frechet_distance(const FeatureMoments& a, const FeatureMoments& b);

// Nothing when either set has fewer than two rows (a covariance needs two).
std::optional<double> frechet_distance(const FeatureVectors& a, const FeatureVectors& b);

// Eigenvalues of the symmetric row-major d x d matrix `m` (cyclic Jacobi rotations), and with `vectors` its
// eigenvectors as the columns of a row-major matrix.
std::vector<double> symmetric_eigenvalues(std::vector<double> m, int d, std::vector<double>* vectors = nullptr);

}  // namespace speculum
