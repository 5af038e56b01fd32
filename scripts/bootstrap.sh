#!/bin/sh
# Create corun's pinned Python environment (.venv) on a fresh Debian machine.
# Installs python3-venv with apt when it is missing (needs root), then the exact
# versions in requirements.txt, then corun itself in editable mode.
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x /usr/bin/python3 ] && PYTHON=${PYTHON_OVERRIDE:-/usr/bin/python3}

if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "corun: $PYTHON is missing or older than 3.11 (Snakemake 9 needs >= 3.11); installing Debian's python3" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null
fi
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "corun: installing python3-venv (apt)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
# corun's Snakemake logger plugin (workflows/logger): Snakemake finds plugins by listing the
# modules on sys.path, which an editable install does not put there
.venv/bin/python -c 'import site, sys; open(site.getsitepackages()[0] + "/corun_logger.pth", "w").write(sys.argv[1] + "\n")' "$(pwd)/workflows/logger"
echo "corun: Python environment ready in .venv" >&2
