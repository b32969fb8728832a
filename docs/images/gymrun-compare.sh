#!/usr/bin/env bash
# Takes docs/images/gymrun-compare.png: gymrun compare's HTML report of the worked example of
# docs/gymrun.md (testdata/gymrun), in headless Chromium. Every request Chromium might make goes
# to a closed loopback port and no name resolves (the report needs none).
#   bash docs/images/gymrun-compare.sh        (after make gymrun; needs chromium)
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
_build/gymrun compare --html "$tmp/report.html" testdata/gymrun/a testdata/gymrun/b >/dev/null || [ $? -eq 1 ]
chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' --host-resolver-rules='MAP * ~NOTFOUND' \
	--hide-scrollbars --window-size=1480,1150 --screenshot=docs/images/gymrun-compare.png "file://$tmp/report.html"
