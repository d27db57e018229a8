# zcstack - user-facing entry.  The build itself is Meson + Ninja:
#   build/       normal build (debugoptimized)
#   build-asan/  ASan + UBSan build (used by `make test`)
#
#   make          build (no dependency check: fast)
#   make run      install what is missing, build, serve the demo site
#   make test     install what is missing, run every test suite
#   make bench    install what is missing, build, run the IPC benchmark
#   make bench-static  zchttpd vs nginx vs h2o vs the floor with wrk, 0.5 CPU per server (about 35 minutes)
#   make bench-fastcgi zchttpd + FastCGI (zero-copy, socket, php-fpm) vs nginx, 0.5 CPU per configuration (about 60 minutes)
#   make static   static musl zchttpd in build-static/ (ci/static.sh; docs/deploy.md)
#   make image    container image from it (ci/image.sh, buildah; docs/deploy.md)
#   make deps     install what is missing (Debian packages, .venv)
#   make clean    remove the build trees

.PHONY: all build static image deps run test bench bench-static bench-fastcgi clean

all: build

build:
	@ci/build.sh normal

static:
	@ci/static.sh

image: static
	@ci/image.sh

deps:
	@ci/deps.sh

run: deps build
	@ci/demo.sh

test: deps
	@ci/test.sh

bench: deps build
	bench/zcbench ipc

bench-static: deps build
	bench/zcbench static

bench-fastcgi: deps build
	bench/zcbench fastcgi

clean:
	rm -rf build build-asan build-static
