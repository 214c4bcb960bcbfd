#!/usr/bin/env bash
# Tests scripts/install without root and without touching the system: --dry-run, and a
# real install staged with --destdir using stub binaries (--from). Exit 0: all passed.
#   Tests/cli/install.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_line() {  # FILE EXACT-LINE
    grep -qxF -- "$2" "$1" || { fail "missing line in $(basename "$1"): $2"; sed 's/^/  | /' "$1"; }
}
expect_no_match() {  # FILE REGEX
    if grep -qE -- "$2" "$1"; then fail "unexpected line in $(basename "$1") matching $2"; sed 's/^/  | /' "$1"; fi
}

mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho stub gattd\n' >"$TMP/bin/gattd"
printf '#!/bin/sh\necho stub gattctl\n' >"$TMP/bin/gattctl"
chmod +x "$TMP/bin/gattd" "$TMP/bin/gattctl"
STAGE="$TMP/root"

# 1. Dry run into an empty stage: lists every step, creates nothing.
scripts/install --dry-run --prefix /opt/gattd --from "$TMP/bin" --destdir "$STAGE" >"$TMP/dry" 2>&1 || fail "dry run exit $?"
expect_line "$TMP/dry" "+ install -D -m 0755 $TMP/bin/gattd $STAGE/opt/gattd/bin/gattd"
expect_line "$TMP/dry" "+ install -D -m 0755 $TMP/bin/gattctl $STAGE/opt/gattd/bin/gattctl"
expect_line "$TMP/dry" "+ install -D -m 0644 $PWD/config/heart-rate.json $STAGE/etc/gattd/gattd.json"
expect_line "$TMP/dry" "= --destdir: not creating the gattd user and group"
expect_line "$TMP/dry" "= --destdir: not running systemctl"
expect_line "$TMP/dry" "Dry run: nothing was changed."
expect_no_match "$TMP/dry" "swift build"
[ -e "$STAGE" ] && fail "dry run created $STAGE"

# 2. Dry run of a normal install: builds first, never changes anything.
scripts/install --dry-run >"$TMP/dry2" 2>&1 || fail "plain dry run exit $?"
expect_line "$TMP/dry2" "+ swift build -c release --product gattd"
expect_line "$TMP/dry2" "+ swift build -c release --product gattctl"
grep -qE '^(\+ (sudo )?groupadd --system gattd|= group gattd exists)$' "$TMP/dry2" || fail "plain dry run: no group step"
grep -qE '^(\+ (sudo )?useradd --system --gid gattd .* gattd|= user gattd exists)$' "$TMP/dry2" || fail "plain dry run: no user step"
expect_line "$TMP/dry2" "Dry run: nothing was changed."

# 3. Real staged install.
scripts/install --prefix /opt/gattd --from "$TMP/bin" --destdir "$STAGE" >"$TMP/first" 2>&1 || { fail "install exit $?"; cat "$TMP/first"; }
for f in opt/gattd/bin/gattd opt/gattd/bin/gattctl; do
    [ -x "$STAGE/$f" ] || fail "$f not installed executable"
done
[ "$("$STAGE/opt/gattd/bin/gattctl")" = "stub gattctl" ] || fail "gattctl is not the --from binary"
cmp -s config/heart-rate.json "$STAGE/etc/gattd/gattd.json" || fail "config not installed"
cmp -s config/gattd.schema.json "$STAGE/etc/gattd/gattd.schema.json" || fail "schema not installed"
cmp -s README.md "$STAGE/opt/gattd/share/doc/gattd/README.md" || fail "README not installed"
UNIT="$STAGE/etc/systemd/system/gattd.service"
expect_line "$UNIT" "ExecStart=/opt/gattd/bin/gattd --config /etc/gattd/gattd.json --control /run/gattd/control.sock --state-dir /var/lib/gattd \$GATTD_OPTIONS"
expect_line "$UNIT" "Documentation=file:///opt/gattd/share/doc/gattd/README.md"
[ "$(stat -c %a "$UNIT")" = 644 ] || fail "unit mode $(stat -c %a "$UNIT")"
[ "$(diff <(sed 's#/opt/gattd/#/usr/local/#g' "$UNIT") systemd/gattd.service)" = "" ] || fail "unit differs beyond the prefix"

# 4. Idempotent: a second run changes nothing; an edited config is kept.
echo '{"name": "mine"}' >"$STAGE/etc/gattd/gattd.json"
scripts/install --prefix /opt/gattd --from "$TMP/bin" --destdir "$STAGE" >"$TMP/second" 2>&1 || fail "second install exit $?"
expect_no_match "$TMP/second" '^\+ '
expect_line "$TMP/second" "= unchanged: $STAGE/opt/gattd/bin/gattd"
expect_line "$TMP/second" "= unchanged: $STAGE/etc/systemd/system/gattd.service"
expect_line "$TMP/second" "= kept: $STAGE/etc/gattd/gattd.json"
[ "$(cat "$STAGE/etc/gattd/gattd.json")" = '{"name": "mine"}' ] || fail "config was overwritten"

# 5. Bad usage.
code=0; scripts/install --prefix relative/path >/dev/null 2>&1 || code=$?
[ "$code" = 64 ] || fail "relative --prefix: exit $code, expected 64"
code=0; scripts/install --bogus >/dev/null 2>&1 || code=$?
[ "$code" = 64 ] || fail "unknown option: exit $code, expected 64"

if [ "$failures" -gt 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "install: all passed"
