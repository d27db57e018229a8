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
#   make bench-proxy   zchttpd's reverse proxy vs nginx, HAProxy, h2o and the relay floor, 0.5 CPU per proxy (about 20 minutes)
#   make static   static musl zchttpd in build-static/ (ci/static.sh; docs/deploy.md)
#   make image    container image from it (ci/image.sh, buildah; docs/deploy.md)
#   make deps     install what is missing (Debian packages, .venv)
#   make clean    remove the build trees

.PHONY: all build static image deps run test bench bench-static bench-fastcgi bench-proxy bench-replay precompress clean

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

bench-proxy: deps build
	bench/zcbench proxy

# A 100,000-request Zipf trace played against zchttpd (per policy), nginx, h2o.
bench-replay: deps build
	python3 bench/trace/gen_trace.py --requests 100000 --objects 20000 --seed 42 \
		--max-size 1000000 --out build/bench/zipf-100k.trace
	bench/zcbench replay --trace build/bench/zipf-100k.trace --cache-size 5%

# FILE.br and FILE.gz next to a site's text files (zchttpd --precompressed on).
precompress: deps
	@test -n "$(DIR)" || { echo "usage: make precompress DIR=site-root" >&2; exit 2; }
	server/zchttpd-precompress "$(DIR)"

clean:
	rm -rf build build-asan build-static
