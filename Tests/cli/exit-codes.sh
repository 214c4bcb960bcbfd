#!/usr/bin/env bash
# The one exit-code table gattd and gattctl share (docs/operations.md "Exit codes", gattd(8)):
# each code checked on both binaries where it applies, with the same message for the same
# failure. Also --version on both.
# Usage: Tests/cli/exit-codes.sh [BIN_DIR]   (default: swift build --show-bin-path)
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${1:-$(swift build --show-bin-path)}"
for b in gattd gattctl; do
    [ -x "$BIN/$b" ] || { echo "FAIL: $BIN/$b is not built"; exit 1; }
done
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME CODE COMMAND...: exit status CODE; stdout in $TMP/out, stderr in $TMP/err.
expect() {
    local name="$1" expected="$2" code=0
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || code=$?
    if [ "$code" != "$expected" ]; then
        fail "$name: exit $code, expected $expected"
        sed 's/^/  | /' "$TMP/out" "$TMP/err"
    fi
}
expect_err() {  # NAME EXACT-STDERR
    [ "$(cat "$TMP/err")" = "$2" ] || { fail "$1: stderr"; echo "  expected: $2"; sed 's/^/  got: /' "$TMP/err"; }
}

GATTD="$BIN/gattd"
GATTCTL="$BIN/gattctl"
DAEMON=(--transport tcp:127.0.0.1:9 --control "$TMP/c.sock" --state-dir "$TMP/state")

# 0: --version prints the version from Sources/GattCore/Version.swift, on both.
version="$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/GattCore/Version.swift)"
[ -n "$version" ] || fail "no version in Sources/GattCore/Version.swift"
for b in "$GATTD" "$GATTCTL"; do
    expect "$(basename "$b") --version" 0 "$b" --version
    [ "$(cat "$TMP/out")" = "$version" ] || fail "$(basename "$b") --version printed $(cat "$TMP/out"), expected $version"
done

# 66: an unreadable config, the same status and message whether served or checked.
expect "gattd --config missing" 66 "$GATTD" --config "$TMP/nope.json" "${DAEMON[@]}"
served="$(cat "$TMP/err")"
expect "gattd --check-config missing" 66 "$GATTD" --check-config "$TMP/nope.json"
expect_err "missing config: same message" "$served"
expect_err "missing config: message" "gattd: cannot read $TMP/nope.json: No such file or directory"

# 65: an invalid config, the same report both ways.
printf '{"name": ""}\n' >"$TMP/bad.json"
expect "gattd --config invalid" 65 "$GATTD" --config "$TMP/bad.json" "${DAEMON[@]}"
served="$(cat "$TMP/err")"
expect "gattd --check-config invalid" 65 "$GATTD" --check-config "$TMP/bad.json"
expect_err "invalid config: same report" "$served"

# 64: bad usage or a bad value, on both.
printf '{"name": "ok"}\n' >"$TMP/ok.json"
expect "gattd unknown option" 64 "$GATTD" --bogus
expect "gattd bad --transport" 64 "$GATTD" --config "$TMP/ok.json" --transport "bogus:x" --control "$TMP/c.sock" --state-dir "$TMP/state"
expect "gattd --probe bad --transport" 64 "$GATTD" --probe --transport "bogus:x"
expect "gattd --probe, no controller there" 69 "$GATTD" --probe --transport tcp:127.0.0.1:9
expect "gattctl unknown command" 64 "$GATTCTL" bogus
expect "gattctl disconnect nonsense" 64 "$GATTCTL" --socket "$TMP/c.sock" disconnect nonsense
expect_err "disconnect nonsense: message" 'gattctl: "nonsense" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)'
expect "gattctl bad hex" 64 "$GATTCTL" --socket "$TMP/c.sock" set x "0a--1b"
expect "gattctl respond bad status" 64 "$GATTCTL" --socket "$TMP/c.sock" respond 1 --status nonsense
expect "gattctl advertise data, nothing to replace" 64 "$GATTCTL" --socket "$TMP/c.sock" advertise data
expect "gattctl advertise on with data options" 64 "$GATTCTL" --socket "$TMP/c.sock" advertise on --manufacturer-data 1:01
expect "gattctl advertise data, bad company" 64 "$GATTCTL" --socket "$TMP/c.sock" advertise data --manufacturer-data 0x10000:01
expect_err "bad company: message" 'gattctl: --manufacturer-data "0x10000:01": "0x10000" is not a company id (0...65535, or 0x0000...0xFFFF)'
expect "gattctl advertise data, bad UUID" 64 "$GATTCTL" --socket "$TMP/c.sock" advertise data --service-data nope:01
expect "gattctl advertise data, bad hex" 64 "$GATTCTL" --socket "$TMP/c.sock" advertise data --service-data FEAA:0g

# 69: gattctl with no gattd.
expect "gattctl, gattd not running" 69 "$GATTCTL" --socket "$TMP/c.sock" status
expect_err "not running: message" "gattctl: gattd is not running (no socket at $TMP/c.sock)"

# 73: a file gattd cannot create.
expect "gattd --btsnoop in a missing directory" 73 "$GATTD" --config "$TMP/ok.json" "${DAEMON[@]}" --btsnoop "$TMP/no/such/dir/x.btsnoop"

if [ "$failures" -gt 0 ]; then
    echo "exit-codes.sh: $failures failure(s)"
    exit 1
fi
echo "exit-codes.sh: all exit codes as documented"
