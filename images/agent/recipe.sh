# Sourced by images/build: the agent image the Dockerfile describes (git, openssh-client,
# ca-certificates; the agent installed from this checkout; user 10001, HOME=/tmp, entrypoint
# `bindy-agent`, command `run`; no build tools), on the shared Debian rootfs with Debian's python3
# in a venv, since no registry here serves the Dockerfile's python base image. Wheels are made on
# the host by its pip (its index, proxy and certificates), then installed offline in the rootfs.
# Two steps, so that a change to agent/ reinstalls only the agent's own wheel:
#   recipe_base  Debian packages, the user, the venv with every dependency (keyed by pyproject.toml)
#   recipe       the agent's wheel on a copy of that
_agent_src() {  # the sources pip builds the wheel from, without caches
  local repo=$1 dst=$2
  rm -rf "$dst"; mkdir -p "$dst"
  cp -a "$repo/pyproject.toml" "$repo/setup.py" "$repo/README.md" "$dst/"
  rsync -a --exclude __pycache__ --exclude "*.pyc" "$repo/agent" "$dst/"
}

_host_python() {  # the project's venv (scripts/venv: a python with pip and the host's pip settings)
  local repo=$1
  [[ -x "$repo/.venv/bin/python" ]] || quiet "$repo/scripts/venv"
  echo "$repo/.venv/bin/python"
}

recipe_base() {
  local root=$1 repo=$2 wheels="$WORK/wheels-agent"
  _agent_src "$repo" "$WORK/src-agent"
  rm -rf "$wheels"
  quiet "$(_host_python "$repo")" -m pip wheel -q --wheel-dir "$wheels" "$WORK/src-agent"
  quiet in_root "$root" apt-get install -y -qq python3 python3-venv git openssh-client ca-certificates
  quiet in_root "$root" git config --system --add safe.directory '*'  # a CI checkout another user owns (Dockerfile)
  quiet in_root "$root" useradd --uid 10001 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin bindy
  quiet in_root "$root" python3 -m venv /opt/bindy-agent
  mkdir -p "$root/tmp/wheels"; cp "$wheels"/*.whl "$root/tmp/wheels/"
  quiet in_root "$root" sh -c '/opt/bindy-agent/bin/pip install -q --no-cache-dir --no-compile --no-index \
    --find-links /tmp/wheels /tmp/wheels/bindy_agent-*.whl'
  rm -rf "$root/tmp/wheels" "$WORK/src-agent" "$wheels"
}

recipe() {
  local root=$1 repo=$2 wheels="$WORK/wheels-agent"
  _agent_src "$repo" "$WORK/src-agent"
  rm -rf "$wheels"
  quiet "$(_host_python "$repo")" -m pip wheel -q --no-deps --wheel-dir "$wheels" "$WORK/src-agent"
  mkdir -p "$root/tmp/wheels"; cp "$wheels"/*.whl "$root/tmp/wheels/"
  quiet in_root "$root" sh -c '/opt/bindy-agent/bin/pip install -q --no-cache-dir --no-compile --no-index \
    --no-deps --force-reinstall /tmp/wheels/bindy_agent-*.whl'
  quiet in_root "$root" /opt/bindy-agent/bin/pip uninstall -q -y pip setuptools
  ln -sfn /opt/bindy-agent/bin/bindy-agent "$root/usr/local/bin/bindy-agent"
  rm -rf "$root/tmp/wheels" "$WORK/src-agent" "$wheels"
  quiet in_root "$root" bindy-agent --help
}
