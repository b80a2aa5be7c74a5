#!/usr/bin/env bash
# Installs the Debian packages Speculum builds and tests with, if any is missing.
# Idempotent: when everything is present it touches nothing (no apt-get update).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev libgl1-mesa-dev
  libtorch-dev libopenblas0-openmp libsentencepiece-dev
  libopencv-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  xvfb xauth imagemagick fonts-dejavu-core time
  clang libclang-rt-dev
  fonts-noto-color-emoji unicode-data
  python3-dev python3-numpy pybind11-dev python3-pybind11 python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# LibTorch on Debian uses whatever libblas.so.3 the alternatives point at; the reference BLAS is ~15x slower.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas-openmp*) ;;
  *) echo "setup: warning: libblas.so.3 resolves to '$blas', not OpenBLAS (openmp); LibTorch will be slow." >&2
     echo "       fix: sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3" >&2 ;;
esac
