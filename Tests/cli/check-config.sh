#!/usr/bin/env bash
# CLI checks for `gattd --check-config` (exit codes 0/65/66, output format)
# and the JSON Schema against the example configs.
# Usage: Tests/cli/check-config.sh [path/to/gattd]   (default: builds .build/debug/gattd)
set -euo pipefail
cd "$(dirname "$0")/../.."

GATTD="${1:-}"
if [[ -z "$GATTD" ]]; then
    swift build --product gattd >/dev/null
    GATTD="$(swift build --show-bin-path)/gattd"
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME EXPECTED_CODE ARGS... → stdout in $TMP/out, stderr in $TMP/err
run() {
    local name="$1" expected="$2"
    shift 2
    local code=0
    "$GATTD" "$@" >"$TMP/out" 2>"$TMP/err" || code=$?
    if [[ "$code" != "$expected" ]]; then
        fail "$name: exit code $code, expected $expected"
        sed 's/^/  | /' "$TMP/out" "$TMP/err"
    fi
}
expect_line() {  # FILE EXACT-LINE
    grep -qxF -- "$2" "$1" || { fail "missing line in $(basename "$1"): $2"; sed 's/^/  | /' "$1"; }
}

# Valid: summary line, then the table.
run heart-rate 0 --check-config config/heart-rate.json
expect_line "$TMP/out" 'config/heart-rate.json: OK: "Demo Heart Rate": 2 services, 2 characteristics (plus built-in GAP and GATT), 26 attributes, Database Hash 71c664b220e160fd247703b032a6aa50'
expect_line "$TMP/out" '0x0013  Characteristic Value  2A37 Heart Rate Measurement               notify       readable            id=hr_measurement max=20            0048'
expect_line "$TMP/out" 'eatt: on'
expect_line "$TMP/out" 'phy: each new connection is asked for 2m (the default) where the controller has them'
[[ -s "$TMP/err" ]] && fail "heart-rate: unexpected stderr"

# The advertising data and scan response as sent, decoded, with their byte counts.
expect_line "$TMP/out" 'advertising data: 16 of 31 bytes: 020106080948522d44656d6f03030d18'
expect_line "$TMP/out" '  03030d18         Complete List of 16-bit Service UUIDs 180D'
expect_line "$TMP/out" 'scan response: 0 of 31 bytes'
expect_line "$TMP/out" 'log: advertising as "HR-Demo" (complete local name; 16-bit service UUIDs complete)'

# A name too long for the advertising data: shortened, said on stderr naming the field, still exit 0.
run long-name 0 --check-config config/test/long-name.json
expect_line "$TMP/err" 'config/test/long-name.json: warning: name: the local name "Kitchen Window Thermometer 7" (28 bytes) is advertised shortened as "Kitchen Windo" in the advertising data; the complete name is in the scan response'
[[ $(wc -l <"$TMP/err") == 1 ]] || fail "long-name: $(wc -l <"$TMP/err") lines on stderr, expected 1"
expect_line "$TMP/out" '  0e084b69746368656e2057696e646f Shortened Local Name "Kitchen Windo"'
expect_line "$TMP/out" 'scan response: 30 of 31 bytes: 1d094b69746368656e2057696e646f7720546865726d6f6d657465722037'
expect_line "$TMP/out" 'log: advertising as "Kitchen Windo" (shortened local name of "Kitchen Window Thermometer 7", complete name in the scan response; 16-bit service UUIDs complete)'

# A manufacturer data entry that only fits in the scan response, and a split UUID list.
cat >"$TMP/moved.json" <<'JSON'
{ "name": "Moved", "advertising": { "service_uuids": ["1801", "1802", "1803", "1804", "1805", "1806", "1807", "1808", "1809", "180A"],
  "manufacturer_data": [{ "company_id": 89, "data": { "hex": "01020304" } }] } }
JSON
run moved 0 --check-config "$TMP/moved.json"
expect_line "$TMP/err" "$TMP/moved.json: warning: advertising.service_uuids: the 16-bit service UUID list in the advertising data is incomplete (9 of 10); the rest are in the scan response"
expect_line "$TMP/err" "$TMP/moved.json: warning: advertising.manufacturer_data[0]: moved to the scan response (no room in the advertising data)"

# l2cap_channels: each channel's PSM (picked from its id when the config names none) and the
# PSM characteristic's value, little-endian.
run l2cap-stream 0 --check-config config/l2cap-stream.json
expect_line "$TMP/out" 'L2CAP channel "stream": PSM 229 (0xE5) (dynamic: picked by gattd, kept in the state directory once it runs), security none, MTU 2048'
grep -q '^0x0012  Characteristic Value .* e500$' "$TMP/out" || fail "the PSM characteristic's value is not e500"
printf '{"name": "L", "l2cap_channels": [{"id": "a", "psm": 39}], "services": [{"uuid": "FFF0", "characteristics": [{"uuid": "FFF1", "properties": ["read", "write"], "value": {"l2cap_psm": "b"}}]}]}\n' > "$TMP/bad-l2cap.json"
run bad-l2cap 65 --check-config "$TMP/bad-l2cap.json"
expect_line "$TMP/err" "$TMP/bad-l2cap.json: l2cap_channels[0].psm: PSM 39 is reserved for Enhanced ATT (EATT); leave \"psm\" out to have gattd pick a dynamic one"
expect_line "$TMP/err" "$TMP/bad-l2cap.json: services[0].characteristics[0].value.l2cap_psm: no L2CAP channel \"b\" (no channels are declared in \"l2cap_channels\")"

# advertising_sets: every set's payloads under a heading naming its id, path and PDUs;
# the extended one marked as needing LE Extended Advertising, counted against 1650 bytes.
run advertising-sets 0 --check-config config/advertising-sets.json
expect_line "$TMP/out" 'advertising set "primary" (advertising): legacy PDUs, ADV_IND'
expect_line "$TMP/out" 'advertising data: 14 of 31 bytes: 0201060609536574734103030d18'
expect_line "$TMP/out" 'advertising set "beacon" (advertising_sets[0]): legacy PDUs, ADV_NONCONN_IND'
expect_line "$TMP/out" 'advertising data: 30 of 31 bytes: 0201061aff4c000215e2c56db5dffb48d2b060d0f5a71096e000070009c5'
expect_line "$TMP/out" 'log: advertising an iBeacon (non-connectable, no local name)'
expect_line "$TMP/out" 'advertising set "long" (advertising_sets[1]): extended PDUs (needs LE Extended Advertising), primary PHY LE 1M, secondary PHY LE 1M, non-connectable and non-scannable'
long_hex="0201067bffffff$(python3 -c 'print(bytes(range(120)).hex())')"
expect_line "$TMP/out" "advertising data: 127 of 1650 bytes: $long_hex"
[[ $(grep -c '^advertising set ' "$TMP/out") == 3 ]] || fail "advertising-sets: $(grep -c '^advertising set ' "$TMP/out") set headings, expected 3"
[[ -s "$TMP/err" ]] && fail "advertising-sets: unexpected stderr"
# Without advertising_sets there is no heading (the output above is unchanged).
run heart-rate-no-heading 0 --check-config config/heart-rate.json
grep -q '^advertising set ' "$TMP/out" && fail "heart-rate: a set heading without advertising_sets"

# A scannable extended set: no advertising data, everything in the scan response; warnings name the set's path.
cat >"$TMP/sets.json" <<'JSON'
{ "name": "S", "advertising_sets": [
  { "id": "scan", "extended": true, "secondary_phy": "2m", "connectable": false, "scannable": true, "local_name": "Scan" },
  { "id": "moved", "service_uuids": ["1801", "1802", "1803", "1804", "1805", "1806", "1807", "1808", "1809", "180A", "180B", "180C", "180D", "180E"] } ] }
JSON
run scannable-set 0 --check-config "$TMP/sets.json"
expect_line "$TMP/out" 'advertising set "scan" (advertising_sets[0]): extended PDUs (needs LE Extended Advertising), primary PHY LE 1M, secondary PHY LE 2M, scannable'
expect_line "$TMP/out" 'advertising data: none (a scannable extended set sends its data in the scan response)'
expect_line "$TMP/out" 'scan response: 6 of 1650 bytes: 05095363616e'
expect_line "$TMP/err" "$TMP/sets.json: warning: advertising_sets[1].service_uuids: the 16-bit service UUID list in the advertising data is incomplete (13 of 14); the rest are in the scan response"

# Bad sets: each error names its path, all at once, exit 65.
cat >"$TMP/bad-sets.json" <<JSON
{ "name": "S", "advertising": { "extended": true },
  "advertising_sets": [
    { "id": "a", "colour": "red" },
    { "id": "a", "max_connections": 2 },
    { "local_name": "no id" },
    { "id": "p", "primary_phy": "coded" },
    { "id": "q", "extended": true, "primary_phy": "2m", "secondary_phy": "4m" },
    { "id": "r", "extended": true, "scannable": true } ] }
JSON
run bad-sets 65 --check-config "$TMP/bad-sets.json"
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising.extended: the primary set uses legacy PDUs (seen by every scanner); for extended advertising add an element with \"extended\": true to \"advertising_sets\""
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[0].colour: unknown key; allowed keys here: local_name, service_uuids, manufacturer_data, service_data, tx_power, appearance, ibeacon, interval_ms, connectable, scannable, id, extended, primary_phy, secondary_phy"
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[1].id: \"a\" is already the id of advertising_sets[0]"
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[1].max_connections: not allowed in an advertising set: the connection limit is global; set it in \"advertising\""
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[2].id: required key is missing"
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[3].primary_phy: only for extended sets: add \"extended\": true (legacy PDUs are always on the LE 1M PHY)"
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[4].primary_phy: \"2m\" is not a primary advertising PHY: the primary advertising channels use LE 1M or LE Coded (Core Spec Vol 4 Part E §7.8.53); \"2m\" is for \"secondary_phy\""
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[4].secondary_phy: \"4m\" is not a secondary advertising PHY; did you mean \"1m\"?"
expect_line "$TMP/err" "$TMP/bad-sets.json: advertising_sets[5].scannable: an extended advertising set cannot be both connectable and scannable (Core Spec Vol 4 Part E §7.8.53); leave \"scannable\" out (the data then goes in the advertising data) or set \"connectable\": false (then it all goes in the scan response)"
expect_line "$TMP/err" "gattd: $TMP/bad-sets.json: 9 errors"

# Too much data for legacy PDUs in a set: the set's path and the bytes.
printf '{"name": "S", "advertising_sets": [{"id": "big", "connectable": false, "scannable": false, "manufacturer_data": [{"company_id": 65535, "data": {"hex": "%s"}}]}]}\n' \
    "$(python3 -c 'print(bytes(range(120)).hex())')" >"$TMP/big-set.json"
run legacy-set-too-big 65 --check-config "$TMP/big-set.json"
expect_line "$TMP/err" "$TMP/big-set.json: advertising_sets[0].manufacturer_data[0]: needs 124 bytes, 28 left in the advertising data (no scan response: the advertisement is not scannable)"

run full-example 0 --check-config config/full-example.json
grep -q '^config/full-example.json: OK: "gattd Full Example": 4 services, 8 characteristics' "$TMP/out" || fail "full-example: summary"

# Invalid: every error on stderr as FILE: path: message, exit 65 (EX_DATAERR).
cat >"$TMP/bad.json" <<'JSON'
{ "name": "",
  "services": [ { "id": "hr", "uuid": "180D", "includes": ["batt"],
    "characteristics": [ { "uuid": "XYZ", "properties": ["write"], "permissions": ["readable"], "max_lenght": 3 } ] } ] }
JSON
run invalid 65 --check-config "$TMP/bad.json"
expect_line "$TMP/err" "$TMP/bad.json: name: must not be empty (it is the GAP Device Name)"
expect_line "$TMP/err" "$TMP/bad.json: services[0].includes[0]: no service with id \"batt\""
expect_line "$TMP/err" "$TMP/bad.json: services[0].characteristics[0].uuid: \"XYZ\" is not a UUID; expected 4 hex digits (\"180D\"), 8 hex digits (\"1234ABCD\") or the 36-character form (\"6e400001-b5a3-f393-e0a9-e50e24dcca9e\")"
expect_line "$TMP/err" "$TMP/bad.json: services[0].characteristics[0].properties: \"write\" needs a writeable permission: add \"writeable\" or \"write_encryption_required\" to permissions"
expect_line "$TMP/err" "$TMP/bad.json: services[0].characteristics[0].max_lenght: unknown key; did you mean \"max_length\"?"
expect_line "$TMP/err" "gattd: $TMP/bad.json: 5 errors"
[[ -s "$TMP/out" ]] && fail "invalid: unexpected stdout"

printf '{"name": "x",\n "services": [}\n' >"$TMP/syntax.json"
run syntax 65 --check-config "$TMP/syntax.json"
expect_line "$TMP/err" "$TMP/syntax.json: line 2, column 15: unexpected '}'; expected a value"

# Many errors: the first 100, then a count; the total on the last line.
python3 -c 'print("{\"name\": \"x\", " + ", ".join("\"k%d\": 1" % i for i in range(150)) + "}")' >"$TMP/many.json"
run many-errors 65 --check-config "$TMP/many.json"
expect_line "$TMP/err" "$TMP/many.json: k99: unknown key; allowed keys here: name, appearance, advertising, advertising_sets, connection, security, services, state_restoration, l2cap_channels, eatt, phy"
expect_line "$TMP/err" "… and 50 more errors"
expect_line "$TMP/err" "gattd: $TMP/many.json: 150 errors"
[[ $(wc -l <"$TMP/err") == 102 ]] || fail "many-errors: $(wc -l <"$TMP/err") lines on stderr, expected 102"

# Profiles: each entry's expansion printed; an open console warned about; a bad one refused with its path.
cat >"$TMP/profiles.json" <<'JSON'
{"name": "P", "services": [{"profile": "battery"}, {"profile": "uart_console", "security": "none", "command": ["/bin/cat"]}]}
JSON
run profiles 0 --check-config "$TMP/profiles.json"
expect_line "$TMP/out" 'services[0]: profile "battery" expands to:'
expect_line "$TMP/out" '  {"id":"battery","uuid":"180F","characteristics":[{"id":"battery_level","uuid":"2A19","properties":["read","notify"],"value":{"hex":"64"},"max_length":1}]}'
expect_line "$TMP/err" "$TMP/profiles.json: warning: services[1].security: \"none\": the console (/bin/cat…) is open to any central in range, without pairing"
echo '{"name": "P", "services": [{"profile": "uart_console", "command": ["sh"]}]}' >"$TMP/bad-profile.json"
run bad-profile 65 --check-config "$TMP/bad-profile.json"
expect_line "$TMP/err" "$TMP/bad-profile.json: services[0].command[0]: must be an absolute path (\"sh\" is not)"

# Unreadable: exit 66 (EX_NOINPUT).
run missing 66 --check-config "$TMP/does-not-exist.json"
expect_line "$TMP/err" "gattd: cannot read $TMP/does-not-exist.json: No such file or directory"
run directory 66 --check-config "$TMP"

# JSON Schema: both examples must validate (needs python3 with jsonschema).
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 - <<'PY' || fail "schema"
import json, sys, jsonschema
schema = json.load(open("config/gattd.schema.json"))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
bad = 0
for f in ["config/heart-rate.json", "config/full-example.json", "config/ibeacon.json", "config/advertising-sets.json", "config/l2cap-stream.json",
          "config/uart-console.json", "config/battery.json", "config/device-information.json", "config/improv-wifi.json"]:
    for e in v.iter_errors(json.load(open(f))):
        print(f"{f}: {e.json_path}: {e.message}"); bad += 1
if not list(v.iter_errors({"name": "x", "services": [{"uuid": "180D", "characteristics": [{"uuid": "2A37", "properties": ["read"], "max_lenght": 1}]}]})):
    print("schema accepted an unknown key"); bad += 1
for doc in [{"name": "x", "advertising_sets": [{"id": "a", "colour": 1}]},
            {"name": "x", "advertising_sets": [{"id": "a", "max_connections": 1}]},
            {"name": "x", "advertising_sets": [{"id": "a", "primary_phy": "coded"}]},
            {"name": "x", "advertising_sets": [{"id": "a", "extended": True, "scannable": True}]},
            {"name": "x", "advertising_sets": [{"id": "primary"}]},
            {"name": "x", "advertising": {"extended": True}},
            {"name": "x", "l2cap_channels": [{"id": "a", "psm": 39}]},
            {"name": "x", "l2cap_channels": [{"id": "a", "colour": 1}]},
            {"name": "x", "services": [{"profile": "uart_console", "shell": "/bin/sh"}]},
            {"name": "x", "services": [{"profile": "uart_console", "security": "open"}]},
            {"name": "x", "services": [{"profile": "batery"}]}]:
    if not list(v.iter_errors(doc)):
        print(f"schema accepted {doc}"); bad += 1
sys.exit(1 if bad else 0)
PY
else
    echo "SKIP: schema check (python3 jsonschema not installed)"
fi

# --version prints the version from Sources/GattCore/Version.swift; --help lists the transports.
version="$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/GattCore/Version.swift)"
run version 0 --version
expect_line "$TMP/out" "$version"
run help 0 --help
for form in 'hciN, kernel:hciN' 'user:hciN' 'serial:DEVICE[@BAUD][,rtscts]' 'tcp:HOST:PORT' 'unix:PATH'; do
    grep -qF -- "$form" "$TMP/out" || fail "help: transport form $form not listed"
done

# Hex values: separators only between whole bytes.
printf '{"name": "H", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "value": {"hex": "0a--1b"}}]}]}\n' >"$TMP/hex.json"
run strict-hex 65 --check-config "$TMP/hex.json"
grep -q "services\[0\].characteristics\[0\].value.hex: separator '-' at position 4 follows another separator" "$TMP/err" \
    || { fail "strict-hex: message"; sed 's/^/  | /' "$TMP/err"; }

# A random own address with the kernel transport is refused before any socket is opened.
printf '{"name": "R", "advertising": {"own_address_type": "random"}}\n' >"$TMP/random.json"
run kernel-random 64 --config "$TMP/random.json" --transport hci0 --control "$TMP/c.sock" --state-dir "$TMP/state"
grep -q 'advertising.own_address_type: "random" is not supported with the kernel transport (kernel:hci0)' "$TMP/err" \
    || { fail "kernel-random: message"; sed 's/^/  | /' "$TMP/err"; }

if [[ "$failures" -gt 0 ]]; then
    echo "check-config.sh: $failures failure(s)"
    exit 1
fi
echo "check-config.sh: all CLI checks passed"
