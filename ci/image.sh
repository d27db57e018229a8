#!/usr/bin/env bash
# ci/image.sh [TAG] - `make image`: the final stage of docker/Dockerfile from
# build-static/ (make static), with buildah and no daemon.  Base images
# cannot be pulled here, so docker/Dockerfile's debian:12 build stage is
# replaced by what ci/stage-image.sh lays out on the host (the same
# scripts that stage runs).  docs/deploy.md.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${1:-zchttpd:latest}
ctx=build-static/ctx
ci/stage-image.sh "$ctx"
# --format docker: OCI image configs have no HEALTHCHECK.
buildah --storage-driver vfs bud --isolation chroot --format docker --quiet \
	--build-context build="$ctx" --target final -t "$tag" \
	-f docker/Dockerfile "$ctx" >/dev/null
buildah --storage-driver vfs images "$tag"
