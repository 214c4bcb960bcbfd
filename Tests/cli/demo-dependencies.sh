#!/usr/bin/env bash
# Tests that scripts/demo installs what it needs on a fresh machine (issue #22): with
# libbluetooth-dev and libsystemd-dev missing (a stub dpkg), it runs apt-get install for them (a stub
# that records its arguments), says so, and only then builds (a stub swift that records its
# call and fails, which ends the demo there). Nothing on the system is touched; the Python
# venv step uses the repository's .venv (scripts/test set it up before). Exit 0: passed.
#   Tests/cli/demo-dependencies.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$TMP/bin"
cat >"$TMP/bin/dpkg" <<'SH'
#!/bin/sh
# `dpkg -s PACKAGE`: nothing is installed.
exit 1
SH
for tool in apt-get swift; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$TMP" >"$TMP/bin/$tool"
done
echo 'exit 1' >>"$TMP/bin/swift"  # the build "fails": the demo stops after it
printf '#!/bin/sh\nexec "$@"\n' >"$TMP/bin/sudo"
chmod +x "$TMP/bin/"*

status=0
PATH="$TMP/bin:$PATH" scripts/demo </dev/null >"$TMP/out" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "scripts/demo succeeded with a swift that fails"
grep -qxF "installing with apt-get: libbluetooth-dev libsystemd-dev" "$TMP/out" \
    || fail "scripts/demo did not say it installs libbluetooth-dev and libsystemd-dev"
if [ "$(cat "$TMP/calls" 2>/dev/null)" != "$(printf '%s\n' "apt-get update" \
    "apt-get install -y libbluetooth-dev libsystemd-dev" "swift build")" ]; then
    fail "expected apt-get update, apt-get install -y libbluetooth-dev libsystemd-dev, then swift build; got:"
    sed 's/^/  | /' "$TMP/calls" 2>/dev/null || echo "  | (nothing)"
fi
if [ "$failures" -ne 0 ]; then
    echo "----- scripts/demo output -----"; cat "$TMP/out"
    exit 1
fi
echo "demo-dependencies: scripts/demo installs libbluetooth-dev and libsystemd-dev before building"
