#!/bin/sh
# Debian's chromium for the operator page's browser test (tests/test_ui_browser.py).
# Idempotent: does nothing when /usr/bin/chromium is there. Called by `make test`.
set -e
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
echo "installing Debian's chromium (for the browser test)..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
