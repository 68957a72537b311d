#!/usr/bin/env bash
# Fuzzes a running Troupe server with schemathesis against the OpenAPI document it serves
# (GET /v1/openapi.json). Run by SchemathesisTest (./troupe test); by hand to replay a seed:
#
#   server/src/test/schemathesis/run.sh http://127.0.0.1:8080 SEED REPORT_DIRECTORY [MAX_EXAMPLES]
#
# Installs the pinned schemathesis from PyPI into a virtual environment under server/target
# (SCHEMATHESIS_VENV overrides where; PYTHON which interpreter, 3.9 or newer) on first use.
# Exit status: schemathesis's (0: no failure; 1: failures found), or 2 when it cannot be installed.
set -euo pipefail
VERSION=4.32.5
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE_URL="$1"
SEED="$2"
REPORT_DIRECTORY="$3"
MAX_EXAMPLES="${4:-60}"
VENV="${SCHEMATHESIS_VENV:-$HERE/../../../target/schemathesis-venv}"
PYTHON="${PYTHON:-python3}"

if [[ "$("$VENV/bin/schemathesis" --version 2>/dev/null || true)" != *"version $VERSION"* ]]; then
  echo "installing schemathesis $VERSION into $VENV" >&2
  rm -rf "$VENV"
  if ! "$PYTHON" -m venv "$VENV" \
      || ! "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"; then
    echo "could not install schemathesis $VERSION" >&2
    exit 2
  fi
fi

mkdir -p "$REPORT_DIRECTORY"
# Checks: no 5xx; every status, content type, header and body as documented. Phases: the
# document's examples, the coverage phase (boundary and invalid values, unexpected methods),
# random fuzzing, then stateful sequences along the document's links (begin a transaction, then
# its steps; register a dependency, then read and deregister it; write, then read); each
# operation gets at most MAX_EXAMPLES generated cases. The Hypothesis
# example database is off, so a seed alone reproduces a run. One worker: with more, Hypothesis
# parses lambdas' source from several threads at once, which CPython 3.11's ast module does not
# survive ("AST constructor recursion depth mismatch"), and the order of requests is the seed's.
exec "$VENV/bin/schemathesis" --config-file "$HERE/schemathesis.toml" run \
  "$BASE_URL/v1/openapi.json" --url "$BASE_URL" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "$MAX_EXAMPLES" \
  --seed "$SEED" \
  --generation-database none \
  --workers 1 \
  --request-timeout 30 \
  --no-color \
  --report junit,ndjson --report-dir "$REPORT_DIRECTORY"
