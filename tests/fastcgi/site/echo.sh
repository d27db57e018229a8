#!/bin/sh
# A CGI script for fcgiwrap: its query, its body's digest, N bytes.
echo "Content-Type: text/plain"
echo "X-Script: echo.sh"
echo
echo "query $QUERY_STRING"
echo "method $REQUEST_METHOD"
if [ -n "$CONTENT_LENGTH" ]; then
	echo "body $(head -c "$CONTENT_LENGTH" | sha256sum | cut -d' ' -f1)"
fi
n=$(echo "$QUERY_STRING" | sed -n 's/.*n=\([0-9]*\).*/\1/p')
[ -n "$n" ] && head -c "$n" /dev/zero | tr '\0' 'z'
exit 0
