#!/usr/bin/env bash
# ci/stage-image.sh DIR - lay out the image's files under DIR/image/ (the
# static zchttpd, the demo site, passwd/group for the non-root user), from
# build-static/ (ci/static.sh) and ci/demo.sh --site-only.  Run by
# docker/Dockerfile's build stage and by ci/image.sh, so both images hold
# the same files.
set -euo pipefail
cd "$(dirname "$0")/.."

out=$1/image
ci/demo.sh --site-only
rm -rf "$out"
mkdir -p "$out/etc" "$out/site"
install -m 0755 build-static/zchttpd "$out/zchttpd"
cp -p build/demo-site/* "$out/site/"
install -m 0644 docker/passwd docker/group "$out/etc/"
