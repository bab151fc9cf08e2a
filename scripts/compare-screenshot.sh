#!/usr/bin/env bash
# Renders a vembed compare report (DIR/index.html) in headless Chromium and
# saves a screenshot beside it: a check that the report opens and shows its
# tables and heatmaps. Needs Debian's chromium (apt-get install chromium);
# not part of CI.
set -euo pipefail
dir=${1:?usage: scripts/compare-screenshot.sh REPORT_DIR [WIDTHxHEIGHT]}
size=${2:-1200,2400}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	echo "chromium is not installed (apt-get install chromium)" >&2
	exit 2
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
	--window-size="$size" --screenshot="$dir/screenshot.png" "file://$(cd "$dir" && pwd)/index.html" 2>/dev/null
echo "$dir/screenshot.png"
