#!/usr/bin/env bash
# The project's test command (README "Run the tests", and .ci/run): makes sure the wgpu tests have a Vulkan driver
# (Mesa's lavapipe runs CubeCL kernels on the CPU), then runs every test that needs no GPU. CUDA tests are compiled
# but skipped by name; they run on a GPU machine (docs/BENCHMARKS.md).
#
#   scripts/test.sh [extra cargo test args, e.g. -p yolo26-eval]
set -euo pipefail
cd "$(dirname "$0")/.."

# A Vulkan loader plus at least one driver manifest (lavapipe's is lvp_icd.*.json; a GPU driver's works too).
have_vulkan() {
  compgen -G '/usr/share/vulkan/icd.d/*.json' >/dev/null || compgen -G '/etc/vulkan/icd.d/*.json' >/dev/null || return 1
  ldconfig -p | grep 'libvulkan\.so\.1' >/dev/null
}
if ! have_vulkan; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "scripts/test.sh: installing Mesa's lavapipe Vulkan driver (mesa-vulkan-drivers libvulkan1) for the wgpu tests" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends mesa-vulkan-drivers libvulkan1
  elif command -v sudo >/dev/null && command -v apt-get >/dev/null; then
    echo "scripts/test.sh: installing mesa-vulkan-drivers libvulkan1 with sudo (wgpu tests need a Vulkan driver)" >&2
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mesa-vulkan-drivers libvulkan1
  else
    echo "scripts/test.sh: the wgpu tests need a Vulkan driver and none was found." >&2
    echo "  Install Mesa's lavapipe (Debian/Ubuntu: apt-get install mesa-vulkan-drivers libvulkan1;" >&2
    echo "  Fedora: dnf install mesa-vulkan-drivers), or a GPU's Vulkan driver, then run this again." >&2
    exit 1
  fi
  have_vulkan || { echo "scripts/test.sh: no Vulkan driver found even after installing lavapipe" >&2; exit 1; }
fi

cargo test --release --workspace --features wgpu,cuda "$@" -- --skip cuda
