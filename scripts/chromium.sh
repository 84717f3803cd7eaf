# Install Debian's Chromium for the HTML-export screenshot test, when it is missing and apt is usable.
# Sourced by scripts/test. Never fatal: without Chromium that one test skips and says why.
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[chromium] installing chromium for the HTML export screenshot test"
    export DEBIAN_FRONTEND=noninteractive
    (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
      || echo "[chromium] could not install chromium; the screenshot test will be skipped" >&2
  fi
  return 0
}
