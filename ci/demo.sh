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
	echo '</ul><p>Dynamic, from FastCGI applications on the zero-copy transport'
	echo '(cgi/apps, docs/fastcgi.md):</p><ul>'
	echo '<li><a href="/gen?size=102400">/gen?size=102400</a>: 100 KB from zcgen, a cached document sent by reference</li>'
	echo '<li><a href="/wrap?file=10k.txt">/wrap?file=10k.txt</a>: a page around a file, included by extent (zcwrap)</li>'
	echo '<li>POST to /echo: the body'"'"'s length and SHA-256 (zcecho)</li>'
	echo '</ul></body></html>'
} > "$SITE/index.html"

if [ "${1:-}" = "--site-only" ]; then
	exit 0
fi

if [ ! -x "$SERVER" ]; then
	echo "error: $SERVER is not built (run make)" >&2
	exit 1
fi

APPS=build/cgi/apps
echo "serving demo on http://$LISTEN/ (status: http://$LISTEN/.zc/status; Ctrl-C stops)"
# The demo apps are linked against libfcgi; LD_LIBRARY_PATH (inherited by
# the processes zchttpd spawns) runs them on zcstack's libfcgi.so.0.
LD_LIBRARY_PATH="$PWD/build/cgi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
exec "$SERVER" --root "$SITE" --listen "$LISTEN" --access-log - \
	--fastcgi-spawn "/gen=zc:2:$PWD/$APPS/zcgen" \
	--fastcgi-spawn "/wrap=zc:1:$PWD/$APPS/zcwrap --root $PWD/$SITE" \
	--fastcgi-spawn "/echo=zc:1:$PWD/$APPS/zcecho"
