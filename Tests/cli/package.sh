#!/usr/bin/env bash
# The Debian package end to end (CI runs it from .ci/run; it installs a package, so it is
# not part of scripts/test): scripts/package builds dist/gattd_VERSION_ARCH.deb, `dpkg -i`
# installs it, the installed gattd checks the installed config, `systemd-analyze verify`
# checks the installed unit, then `dpkg --purge` removes it all again.
#   Tests/cli/package.sh [--skip-build]     (root, or sudo for dpkg)
set -euo pipefail
cd "$(dirname "$0")/../.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if dpkg -s gattd >/dev/null 2>&1; then
    echo "FAIL: a gattd package is already installed here; not touching it (dpkg --purge gattd first)"
    exit 1
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
scripts/package --output "$OUT" "$@" | tee "$OUT/package.log"
grep -qE '^size: package [0-9]+ bytes; installed [0-9]+ KiB; /usr/bin/gattd [0-9]+ bytes, /usr/bin/gattctl -> gattd$' \
    "$OUT/package.log" || fail "scripts/package did not print the sizes"
version="$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/GattCore/Version.swift)"
DEB="$OUT/gattd_${version}_$(dpkg --print-architecture).deb"
[ -f "$DEB" ] || { echo "FAIL: $DEB was not built"; exit 1; }

# The package's contents, before installing.
dpkg-deb --contents "$DEB" >"$OUT/contents"
grep -q ' \./usr/bin/gattctl -> gattd$' "$OUT/contents" || fail "gattctl is not a link to gattd in the package"
for f in ./usr/bin/gattd ./lib/systemd/system/gattd.service ./etc/gattd/gattd.json \
    ./etc/gattd/gattd.schema.json ./usr/share/man/man8/gattd.8.gz ./usr/share/man/man1/gattctl.1.gz \
    ./usr/share/man/man5/gattd.json.5.gz ./usr/share/bash-completion/completions/gattctl \
    ./usr/share/zsh/site-functions/_gattctl ./usr/share/fish/vendor_completions.d/gattctl.fish; do
    grep -q " $f\$" "$OUT/contents" || fail "not in the package: $f"
done
dpkg-deb --field "$DEB" Architecture | grep -qx "$(dpkg --print-architecture)" || fail "Architecture"
dpkg-deb --info "$DEB" postinst | grep -q "useradd --system" || fail "postinst does not create the gattd user"
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/bin/gattd >"$OUT/gattd" && chmod +x "$OUT/gattd"
if readelf -S "$OUT/gattd" | grep -q '\.symtab'; then fail "gattd is not stripped"; fi
if ldd "$OUT/gattd" | grep -q libswift; then fail "gattd links the Swift runtime dynamically"; fi

# Install, use, verify, purge.
as_root dpkg -i "$DEB"
trap 'as_root dpkg --purge gattd >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
[ "$(/usr/bin/gattd --version)" = "$version" ] || fail "installed gattd --version"
[ "$(/usr/bin/gattctl --version)" = "$version" ] || fail "installed gattctl --version"
/usr/bin/gattctl --help | grep -q '^USAGE: gattctl ' || fail "installed gattctl --help is not gattctl's"
/usr/bin/gattd --help | grep -q '^USAGE: gattd ' || fail "installed gattd --help is not gattd's"
/usr/bin/gattd --check-config /etc/gattd/gattd.json >/dev/null || fail "gattd --check-config /etc/gattd/gattd.json"
getent passwd gattd >/dev/null || fail "no gattd user after install"
getent group gattd >/dev/null || fail "no gattd group after install"
grep -qx "ExecStart=/usr/bin/gattd --config /etc/gattd/gattd.json --control /run/gattd/control.sock --state-dir /var/lib/gattd \$GATTD_OPTIONS" \
    /lib/systemd/system/gattd.service || fail "installed unit's ExecStart"
scripts/verify-systemd-unit /lib/systemd/system/gattd.service || fail "systemd-analyze verify on the installed unit"
as_root dpkg --purge gattd
[ ! -e /usr/bin/gattd ] || fail "/usr/bin/gattd left after purge"
[ ! -e /etc/gattd/gattd.json ] || fail "/etc/gattd/gattd.json left after purge"

if [ "$failures" -gt 0 ]; then
    echo "package.sh: $failures failure(s)"
    exit 1
fi
echo "package.sh: $(basename "$DEB") builds, installs, checks its config, verifies its unit and purges"
