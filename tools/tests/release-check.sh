#!/bin/sh
# release-check.sh KIT [CUDA_ARCHS]: tools/release KIT's student edition into
# a temporary folder with --check (configure, build, host tests, progress,
# self-check), then removes it. CUDA_ARCHS (the outer build's) goes to the
# release's configure as $CUDAARCHS. Run by CTest as kit.release.
set -u
kit=${1:?usage: release-check.sh KIT}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cml-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -n "${2:-}" ]; then
  CUDAARCHS=$2
  export CUDAARCHS
fi
"$kit/tools/release" "$tmp/course-kit" --course "the kit's CI" --check --logs "$tmp/logs"
