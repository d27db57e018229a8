#!/usr/bin/env bash
# ci/deps.sh - install what zcstack needs to build, test and benchmark.
#
# Idempotent and quiet when there is nothing to do:
#   - Debian packages: only the missing ones, with one `apt-get update` first
#     and only if something is missing.
#   - Python packages: into the project-local venv .venv/ from
#     requirements.txt, reinstalled only when that file changes (its hash is
#     kept in .venv/.requirements.sha256).
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(
	build-essential meson ninja-build pkg-config
	libcmocka-dev bats liburing-dev
	# zchttpd --tls-listen (OpenSSL 3); tests/tls.bats's openssl s_client
	libssl-dev openssl
	python3 python3-venv python3-pip
	musl-tools clang libclang-rt-14-dev
	# make image / tests/image.bats: builds the FROM scratch image without a daemon
	buildah
	curl strace util-linux-extra brotli man-db
	wrk nginx-light h2o hyperfine
	# kernel-patch/: Debian's 6.1 source, its build tools, the qemu lane
	linux-source-6.1 bc bison flex libelf-dev libssl-dev cpio xz-utils
	qemu-system-x86 busybox-static
	# the guest's checkpoint/restore test of zchttpd (kernel-patch/tests/zchttpd/criu.sh)
	criu
	# zcbench preload: Apache httpd (mmap+write server); tests/preload_programs.bats:
	# socat (socket inputs), Python's own test suite run under the preload
	apache2 socat libpython3.11-testsuite
	# FastCGI: libfcgi (the API cgi/ implements, and the apps built on it),
	# the real applications zchttpd must serve unchanged, cgi-fcgi
	libfcgi-dev libfcgi-bin php8.2-fpm php8.2-cli fcgiwrap
	# HTTP/2: framing, HPACK, flow control (zchttpd); h2load (zcbench
	# static --protocol h2/h2c, the abuse tests' load beside them)
	libnghttp2-dev nghttp2-client
	# tests/helpers/h2client.py (the HTTP/2 abuse tests): frames and HPACK
	python3-h2
	# zchttpd --proxy: HAProxy, the peer of zcbench proxy; Node's http
	# module, an upstream of tests/proxy.bats (gunicorn and websockets come
	# from requirements.txt, Go's net/http from the Go below)
	haproxy nodejs
)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	SUDO=(sudo)
fi

missing=()
for p in "${DEB_PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	if [ "$status" != "install ok installed" ]; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" apt-get update -qq
	"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python venv.  Debian's interpreter, so the venv does not depend on whatever
# python3 happens to be first in PATH on a given machine.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
VENV=.venv
want=$(sha256sum requirements.txt | cut -d' ' -f1)
have=$(cat "$VENV/.requirements.sha256" 2>/dev/null || true)

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
	echo "deps: creating Python venv $VENV"
	rm -rf "$VENV"
	"$PY" -m venv "$VENV"
	have=
fi
if [ "$want" != "$have" ]; then
	echo "deps: installing Python packages from requirements.txt"
	"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
	echo "$want" > "$VENV/.requirements.sha256"
fi

# h2spec, the HTTP/2 conformance suite (tests/h2.bats), with Go's own
# installer into $(go env GOPATH)/bin, where the tests look for it.  Go from
# PATH (or its usual tarball place), else Debian's golang-go.
GO=$(command -v go || true)
[ -n "$GO" ] || { [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go; } || true
if [ -z "$GO" ]; then
	echo "deps: installing Debian package golang-go (for h2spec)"
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" apt-get install -y -qq --no-install-recommends golang-go >/dev/null
	GO=$(command -v go)
fi
if [ ! -x "$("$GO" env GOPATH)/bin/h2spec" ]; then
	echo "deps: installing h2spec (go install)"
	"$GO" install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible
fi
