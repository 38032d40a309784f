#!/usr/bin/env bash
# Installs what the build and its checks need on Debian or Ubuntu when it is missing:
# clang compiles RocksDB's C++ (faster than gcc), libclang serves bindgen, python3 runs
# scripts/imports.py.
set -euo pipefail
need=()
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v clang++ >/dev/null 2>&1 || need+=(clang)
compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" >/dev/null || need+=(libclang-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "installing build dependencies: ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
