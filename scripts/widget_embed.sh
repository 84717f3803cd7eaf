# Fetch the ipywidgets HTML manager (dist/embed.js of @jupyter-widgets/html-manager, the version the
# installed ipywidgets embeds) for the live-board screenshot test, when it is missing and npm is usable.
# Sourced by scripts/test after _env.sh. Never fatal: without it that one test skips and says why.
# The file goes into the virtualenv ($VENV/share/agenteval/html-manager/embed.js), so the tests read it
# offline and git never sees it.
ensure_widget_embed() {
  local target="$VENV/share/agenteval/html-manager"
  if [ -f "$target/embed.js" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "[widgets] npm not found; the live-board screenshot test will be skipped" >&2
    return 0
  fi
  local version work
  version="$("$VENV/bin/python" -c 'from ipywidgets._version import __html_manager_version__ as v; print(v)')"
  work="$(mktemp -d)"
  echo "[widgets] fetching @jupyter-widgets/html-manager@$version for the live-board screenshot test"
  # npm's cache goes into the temporary directory, not the home directory.
  if (cd "$work" && npm_config_cache="$work/cache" npm pack --silent "@jupyter-widgets/html-manager@$version" >/dev/null \
      && tar -xzf ./*.tgz package/dist/embed.js); then
    mkdir -p "$target"
    mv "$work/package/dist/embed.js" "$target/embed.js"
  else
    echo "[widgets] could not fetch the HTML manager; the live-board screenshot test will be skipped" >&2
  fi
  rm -rf "$work"
  return 0
}
