# zcstack - user-facing entry.  The build itself is Meson + Ninja:
#   build/       normal build (debugoptimized)
#   build-asan/  ASan + UBSan build (used by `make test`)
#
#   make          build (no dependency check: fast)
#   make run      install what is missing, build, serve the demo site
#   make test     install what is missing, run every test suite
#   make bench    install what is missing, build, run the IPC benchmark
#   make deps     install what is missing (Debian packages, .venv)
#   make clean    remove the build trees

.PHONY: all build deps run test bench clean

all: build

build:
	@ci/build.sh normal

deps:
	@ci/deps.sh

run: deps build
	@ci/demo.sh

test: deps
	@ci/test.sh

bench: deps build
	@if [ ! -x build/bench/zcbench-ipc ]; then \
		echo "error: build/bench/zcbench-ipc is not built (bench/ipc/zcbench_ipc.c not written yet)" >&2; \
		exit 1; \
	fi
	build/bench/zcbench-ipc

clean:
	rm -rf build build-asan
