# Sourced by the scripts that need a Python tool: ensure_venv <dir> <requirements.txt>
# makes a venv at <dir> with the pinned packages, once. A venv cannot be moved once made,
# so it is made in place and marked complete at the end; an interrupted one is remade.
ensure_venv() {
  local venv="$1" requirements="$2" py
  [ -f "$venv/.complete" ] && return 0
  py="$(command -v python3 || command -v python)" || { echo "python3 is needed for $requirements" >&2; return 1; }
  echo "making the venv of $requirements (once; cached in $venv)..." >&2
  rm -rf "$venv"
  if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
    # Debian's python3 keeps venv in a package of its own.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      rm -rf "$venv"
      apt-get install -y -qq python3-venv >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-venv >/dev/null 2>&1; }
      "$py" -m venv "$venv"
    else
      echo "python3 -m venv failed: install python3-venv" >&2
      return 1
    fi
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2
  touch "$venv/.complete"
}
