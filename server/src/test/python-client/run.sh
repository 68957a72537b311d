#!/usr/bin/env bash
# Runs the Python client's tests (clients/python/tests) against a running Troupe server. Run by
# PythonClientTest (./troupe test); by hand against a server of your own:
#
#   server/src/test/python-client/run.sh http://127.0.0.1:8080 REPORT_DIRECTORY
#
# Installs the client from the checkout as a user does (`pip install ./clients/python`, with its
# `test` extra) into a virtual environment under server/target (PYTHON_CLIENT_VENV overrides
# where; PYTHON which interpreter, 3.10 or newer), reinstalling the client itself every run so the
# tests meet the checkout's code. Its dependencies come from PyPI on first use.
# Exit status: mypy's when it finds a typing error, else pytest's (0: all passed), or 2 when
# the client cannot be installed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT="$(cd "$HERE/../../../../clients/python" && pwd)"
BASE_URL="$1"
REPORT_DIRECTORY="$2"
VENV="${PYTHON_CLIENT_VENV:-$HERE/../../../target/python-client-venv}"
PYTHON="${PYTHON:-python3}"
PIP=(--quiet --disable-pip-version-check)

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating $VENV" >&2
  if ! "$PYTHON" -m venv "$VENV"; then
    echo "could not create a virtual environment with $PYTHON" >&2
    exit 2
  fi
fi
if ! "$VENV/bin/pip" install "${PIP[@]}" "$CLIENT[test]" \
    || ! "$VENV/bin/pip" install "${PIP[@]}" --force-reinstall --no-deps "$CLIENT"; then
  echo "could not install the client from $CLIENT" >&2
  exit 2
fi

mkdir -p "$REPORT_DIRECTORY"
cd "$CLIENT"
# No bytecode or cache written into the checkout; -rs lists every skip with its reason.
export PYTHONDONTWRITEBYTECODE=1
# The package is typed (py.typed): its code and the tests that use it pass mypy --strict.
echo "mypy --strict src tests"
"$VENV/bin/mypy" --strict --no-incremental --cache-dir=/dev/null src tests
TROUPE_URL="$BASE_URL" exec "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider \
  --junitxml "$REPORT_DIRECTORY/junit.xml" tests
