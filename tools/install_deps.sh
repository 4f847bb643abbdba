#!/usr/bin/env bash
# Installs the Debian 12 packages ppspec builds with, when any is missing (run as root).
set -euo pipefail
packages=(g++ cmake ninja-build libboost-fiber-dev libboost-context-dev librapidcheck-dev libgtest-dev libfmt-dev
          libtomlplusplus-dev nlohmann-json3-dev libcli11-dev libbenchmark-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ppspec: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
