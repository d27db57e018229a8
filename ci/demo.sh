#!/usr/bin/env bash
# ci/demo.sh - generate the demo site and serve it (what `make run` does).
#
# The site (build/demo-site) is an index page plus files of 1 KB, 10 KB,
# 100 KB and 1 MB with deterministic content, so a download can be checked
# byte for byte (`ci/demo.sh --site-only` just writes the site).
set -euo pipefail
cd "$(dirname "$0")/.."

SITE=build/demo-site
SERVER=build/server/zchttpd
LISTEN=${ZC_DEMO_LISTEN:-127.0.0.1:8080}

# Deterministic content: the line "zcstack demo <name> line <n>" repeated,
# cut to the exact size.
make_file() { # name size
	local name=$1 size=$2
	awk -v name="$name" -v size="$size" 'BEGIN {
		n = 0; out = 0
		while (out < size) {
			line = sprintf("zcstack demo %s line %07d\n", name, n++)
			if (out + length(line) > size) line = substr(line, 1, size - out)
			printf "%s", line; out += length(line)
		}
	}' > "$SITE/$name.tmp"
	mv "$SITE/$name.tmp" "$SITE/$name"
}

mkdir -p "$SITE"
files=("1k.txt:1024" "10k.txt:10240" "100k.txt:102400" "1m.txt:1048576")
for spec in "${files[@]}"; do
	name=${spec%%:*}; size=${spec#*:}
	if [ "$(stat -c %s "$SITE/$name" 2>/dev/null || echo -1)" != "$size" ]; then
		make_file "$name" "$size"
	fi
done

{
	echo '<!DOCTYPE html>'
	echo '<html><head><meta charset="utf-8"><title>zcstack demo</title></head><body>'
	echo '<h1>zcstack demo site</h1>'
	echo '<p>Served zero-copy by zcstack. Files of known size and content:</p><ul>'
	for spec in "${files[@]}"; do
		name=${spec%%:*}; size=${spec#*:}
		echo "<li><a href=\"/$name\">$name</a> ($size bytes)</li>"
	done
	echo '</ul></body></html>'
} > "$SITE/index.html"

if [ "${1:-}" = "--site-only" ]; then
	exit 0
fi

if [ ! -x "$SERVER" ]; then
	echo "error: $SERVER is not built (run make)" >&2
	exit 1
fi

echo "serving demo on http://$LISTEN/ (status: http://$LISTEN/.zc/status; Ctrl-C stops)"
exec "$SERVER" --root "$SITE" --listen "$LISTEN" --access-log -
