#include "trace/frechet_distance.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "error.h"

namespace speculum {
namespace {

std::vector<double> multiply(const std::vector<double>& a, const std::vector<double>& b, int d) {
  std::vector<double> out(static_cast<std::size_t>(d) * d, 0.0);
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < d; ++k) {
      const double aik = a[i * d + k];
      for (int j = 0; j < d; ++j) out[i * d + j] += aik * b[k * d + j];
    }
  return out;
}

// The principal square root of a symmetric positive semi-definite matrix (negative eigenvalues, which
// rounding leaves on singular covariances, count as 0).
std::vector<double> psd_sqrt(const std::vector<double>& m, int d) {
  std::vector<double> v;
  const std::vector<double> lambda = symmetric_eigenvalues(m, d, &v);
  std::vector<double> out(static_cast<std::size_t>(d) * d, 0.0);
  for (int k = 0; k < d; ++k) {
    const double s = std::sqrt(std::max(0.0, lambda[k]));
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) out[i * d + j] += s * v[i * d + k] * v[j * d + k];
  }
  return out;
}

}  // namespace

std::vector<double> symmetric_eigenvalues(std::vector<double> m, int d, std::vector<double>* vectors) {
  std::vector<double> v(static_cast<std::size_t>(d) * d, 0.0);
  for (int i = 0; i < d; ++i) v[i * d + i] = 1;
  double scale = 0;
  for (double x : m) scale = std::max(scale, std::abs(x));
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int p = 0; p < d; ++p)
      for (int q = p + 1; q < d; ++q) off = std::max(off, std::abs(m[p * d + q]));
    if (off <= 1e-15 * scale || off == 0) break;
    for (int p = 0; p < d; ++p)
      for (int q = p + 1; q < d; ++q) {
        const double apq = m[p * d + q];
        if (apq == 0) continue;
        // The rotation that zeroes m[p][q] (Golub & Van Loan, symmetric Schur decomposition).
        const double theta = (m[q * d + q] - m[p * d + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < d; ++k) {  // columns p, q
          const double mkp = m[k * d + p], mkq = m[k * d + q];
          m[k * d + p] = c * mkp - s * mkq;
          m[k * d + q] = s * mkp + c * mkq;
        }
        for (int k = 0; k < d; ++k) {  // rows p, q
          const double mpk = m[p * d + k], mqk = m[q * d + k];
          m[p * d + k] = c * mpk - s * mqk;
          m[q * d + k] = s * mpk + c * mqk;
        }
        for (int k = 0; k < d; ++k) {
          const double vkp = v[k * d + p], vkq = v[k * d + q];
          v[k * d + p] = c * vkp - s * vkq;
          v[k * d + q] = s * vkp + c * vkq;
        }
      }
  }
  std::vector<double> lambda(static_cast<std::size_t>(d));
  for (int i = 0; i < d; ++i) lambda[i] = m[i * d + i];
  if (vectors) *vectors = std::move(v);
  return lambda;
}

FeatureMoments feature_moments(const FeatureVectors& rows) {
  if (rows.size() < 2) throw Error("Fréchet distance: a feature set needs at least 2 images, got " + std::to_string(rows.size()));
  const int d = static_cast<int>(rows.front().size());
  FeatureMoments m;
  m.n = static_cast<int>(rows.size());
  m.mean.assign(static_cast<std::size_t>(d), 0.0);
  for (const auto& r : rows) {
    if (static_cast<int>(r.size()) != d)
      throw Error("Fréchet distance: feature vectors of different lengths (" + std::to_string(d) + " and " + std::to_string(r.size()) + ")");
    for (int i = 0; i < d; ++i) m.mean[i] += r[i];
  }
  for (double& x : m.mean) x /= m.n;
  m.covariance.assign(static_cast<std::size_t>(d) * d, 0.0);
  for (const auto& r : rows)
    for (int i = 0; i < d; ++i)
      for (int j = i; j < d; ++j) m.covariance[i * d + j] += (r[i] - m.mean[i]) * (r[j] - m.mean[j]);
  for (int i = 0; i < d; ++i)
    for (int j = i; j < d; ++j) m.covariance[j * d + i] = m.covariance[i * d + j] /= (m.n - 1);
  return m;
}

double frechet_distance(const FeatureMoments& a, const FeatureMoments& b) {
  const int d = a.dim();
  if (b.dim() != d) throw Error("Fréchet distance: feature sets of different dimensions (" + std::to_string(d) + " and " + std::to_string(b.dim()) + ")");
  double mean_term = 0, trace_term = 0;
  for (int i = 0; i < d; ++i) {
    mean_term += (a.mean[i] - b.mean[i]) * (a.mean[i] - b.mean[i]);
    trace_term += a.covariance[i * d + i] + b.covariance[i * d + i];
  }
  // tr((S_a^1/2 S_b S_a^1/2)^1/2): the middle matrix is symmetric PSD, so its eigenvalues give the trace.
  const std::vector<double> root_a = psd_sqrt(a.covariance, d);
  std::vector<double> middle = multiply(multiply(root_a, b.covariance, d), root_a, d);
  for (int i = 0; i < d; ++i)
    for (int j = i + 1; j < d; ++j) middle[i * d + j] = middle[j * d + i] = (middle[i * d + j] + middle[j * d + i]) / 2;
  double cross = 0;
  for (double lambda : symmetric_eigenvalues(std::move(middle), d))
    cross += std::sqrt(std::max(0.0, lambda));
  return std::max(0.0, mean_term + trace_term - 2 * cross);
}

std::optional<double> frechet_distance(const FeatureVectors& a, const FeatureVectors& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  return frechet_distance(feature_moments(a), feature_moments(b));
}

}  // namespace speculum
