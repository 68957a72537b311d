#!/usr/bin/env bash
# Makes sure Debian's chromium is installed, for ConsoleBrowserTest (the web console driven in a
# real headless browser over the DevTools protocol). Installs it with apt when missing: CI runs as
# root on a clean Debian 12 clone, where it is not installed. Prints the browser's path on stdout.
# Exit status 0 with the path, or non-zero with the reason on stderr: the test then fails, it is
# never skipped.
set -euo pipefail
BROWSER="${CHROMIUM:-/usr/bin/chromium}"
if [[ -x "$BROWSER" ]]; then
  echo "$BROWSER"
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
started=$(date +%s)
echo "installing chromium with apt-get (one time)" >&2
export DEBIAN_FRONTEND=noninteractive
# An update first: a clean machine's package lists may be missing or stale.
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium >&2
echo "chromium installed in $(( $(date +%s) - started )) s" >&2
if [[ ! -x "$BROWSER" ]]; then
  echo "apt-get installed chromium but $BROWSER is not there" >&2
  exit 1
fi
echo "$BROWSER"
