#!/usr/bin/env bash
# bench/trace/make_gdssim_figure.sh - regenerate docs/figures/gdssim-hitratio.png
# and the table of docs/gds-cache.md from scratch:
#
#   1. build gdssim (make),
#   2. generate the 1,000,000-request SURGE-like trace (alpha 0.8, seed 42)
#      into build/traces/ (not committed: it is ~25 MB and reproducible),
#   3. replay it through every policy at 1%..10% of the unique bytes,
#      printing the table and drawing the figure.
#
# Usage: bench/trace/make_gdssim_figure.sh [out.png]   (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/../.."

out=${1:-docs/figures/gdssim-hitratio.png}
seed=42
alpha=0.8
trace=build/traces/surge-1m-a${alpha}-s${seed}.txt
py=.venv/bin/python
[ -x "$py" ] || { echo "no $py: run ci/deps.sh first" >&2; exit 1; }

ci/build.sh normal >/dev/null
mkdir -p "$(dirname "$trace")" "$(dirname "$out")"
if [ ! -s "$trace" ]; then
	echo "generating $trace" >&2
	"$py" bench/trace/gen_trace.py --requests 1000000 --alpha "$alpha" \
		--seed "$seed" --out "$trace.tmp"
	mv "$trace.tmp" "$trace"
fi
build/gds-cache/gdssim --trace "$trace" --policy all \
	--cache-size 1%,2%,3%,4%,5%,6%,7%,8%,9%,10% --plot "$out"
echo "wrote $out" >&2
