#!/usr/bin/env bash
# Debian's Chromium, for the test that opens the HTML report page in a headless browser.
# Nothing to do when it is already installed; uses sudo when not run as root.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -qq chromium >/dev/null 2>&1 || {
    $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null
}
chromium --version
