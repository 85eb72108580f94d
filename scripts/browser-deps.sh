#!/usr/bin/env bash
# What the browser tests need besides Python: headless Chromium and its driver from Debian's packages (installed
# once; needs root or sudo), and axe-core from npm (tests/browser/node_modules, pinned by its package-lock.json),
# which the accessibility test injects into the pages it checks. Nothing here is needed to run the product.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="none"; fi
fi
apt_install() {
    if [ "$SUDO" = "none" ]; then
        echo "browser tests need: $* (apt); not root and no sudo, not installing" >&2
        return 0
    fi
    echo "installing $* from Debian ..." >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
if ! { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }; then
    apt_install chromium chromium-driver
fi
if [ ! -f tests/browser/node_modules/axe-core/axe.min.js ]; then
    command -v npm >/dev/null 2>&1 || apt_install npm
    echo "installing axe-core (npm) for the accessibility checks ..." >&2
    npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error
fi
