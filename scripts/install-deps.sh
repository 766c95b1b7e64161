#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what gst-train needs to build, test and run its demo on Debian 12.
# The CUDA toolkit is not a Debian package: when /usr/local/cuda is there the
# CUDA backend is built too, else it is left out. With --quiet it prints
# nothing when nothing is missing.
set -eu

packages="
  gcc meson ninja-build pkg-config clang-format git clang libclang-rt-14-dev
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  libturbojpeg0-dev libjpeg-dev libjpeg-turbo-progs zlib1g-dev libopenblas-dev
  libopenmpi-dev openmpi-bin libcurl4-openssl-dev nginx
  python3-dev libdlpack-dev gobject-introspection libgirepository1.0-dev
  slurm-wlm munge
  dataset-fashion-mnist graphviz mate-backgrounds
  python3 python3-pil python3-torch python3-torchvision python3-venv
  python3-matplotlib python3-gi gir1.2-gstreamer-1.0 python3-pip
"

# TensorBoard, whose reader the tests check cudatrainsink's event files
# with, and webdataset, which reads and writes the tests' shards, are not
# Debian packages: from PyPI, into the system Python.
pip_packages() {
  for module in tensorboard webdataset; do
    /usr/bin/python3 -c "import $module" 2>/dev/null && continue
    echo "install-deps: installing $module (pip)"
    $sudo /usr/bin/python3 -m pip install --break-system-packages -q "$module"
  done
}

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $p"
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ -z "$missing" ]; then
  # --quiet (the demo): nothing to say when nothing is missing
  [ "${1:-}" = --quiet ] || echo "install-deps: all packages present"
  pip_packages
  exit 0
fi

echo "install-deps: installing$missing"
# Another apt or dpkg (unattended-upgrades, a second terminal) may hold the
# package locks: wait up to 10 minutes for it, saying so, rather than fail
# at once with status 100.
wait_lock="-o DPkg::Lock::Timeout=600"
if command -v fuser >/dev/null \
    && fuser /var/lib/dpkg/lock-frontend /var/lib/apt/lists/lock >/dev/null 2>&1; then
  echo "install-deps: another package manager holds the dpkg lock; waiting for it (up to 10 minutes)"
fi
# shellcheck disable=SC2086
$sudo apt-get $wait_lock update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get $wait_lock install -y -qq --no-install-recommends $missing
pip_packages
