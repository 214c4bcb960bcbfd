#!/bin/sh
# Runs inside the kernel-vm QEMU VM (cwd /share), started by scripts/kernel-vm-test with the
# controllers left DOWN (run.sh -D). hci0 = the real gattd (--transport hci0: the kernel
# transport) serving ./gattd.json; hci1 = the central (hcitool lescan, gatttool, btmgmt).
# Every check prints PASS/FAIL (INFO for what is only reported); exit status 1 on any FAIL.
set -u
P=0; F=0
pass() { echo "PASS: $*"; P=$((P+1)); }
bad()  { echo "FAIL: $*"; F=$((F+1)); }
export LD_LIBRARY_PATH=/share/lib
GATTD=./gattd
GATTCTL="./gattctl --socket /tmp/gattd.sock"
LOG=/tmp/gattd.log
UUID_BASE=0000-1000-8000-00805f9b34fb
cp gattd.json /tmp/gattd-first.json   # the config as shipped (later sections change gattd.json)

wait_for() { # PATTERN FILE TENTHS
    i=0; while ! grep -q "$1" "$2" 2>/dev/null && [ "$i" -lt "$3" ]; do sleep 0.1; i=$((i+1)); done
    grep -q "$1" "$2" 2>/dev/null
}
# (0 for a file not there yet: a background command's output file is created when its shell
# starts, which a loaded VM may not have done when the first check runs.)
count() { c=$(grep -c "$1" "$2" 2>/dev/null); echo "${c:-0}"; }
gatt() { # gatttool on hci1 against hci0; output in /tmp/gatt.out
    timeout 20 gatttool -i hci1 -b "$HCI0_ADDR" -t public "$@" >/tmp/gatt.out 2>&1
    echo "gatttool $* -> rc=$?"; head -c 2000 /tmp/gatt.out
}
expect_out() { # PATTERN DESCRIPTION
    if grep -q "$1" /tmp/gatt.out; then pass "$2"; else bad "$2 (wanted: $1)"; fi
}
# hci1's kernel keeps an idle LE link ~2 s after gatttool exits and the next gatttool reuses
# it. Waits until gattd has logged as many disconnections as connections.
links_closed() {
    i=0; while [ "$(count ' connected: ' $LOG)" != "$(count ' disconnected: ' $LOG)" ] && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i+1)); done
    [ "$(count ' connected: ' $LOG)" = "$(count ' disconnected: ' $LOG)" ]
}
wait_more() { # PATTERN FILE BEFORE TENTHS: waits until PATTERN occurs more than BEFORE times
    i=0; while [ "$(count "$1" "$2")" -le "$3" ] && [ $i -lt "$4" ]; do sleep 0.1; i=$((i+1)); done
    [ "$(count "$1" "$2")" -gt "$3" ]
}
hexdump_value() { # HEXSTRING -> "aa bb cc" as gatttool prints it
    echo "$1" | sed 's/\(..\)/\1 /g; s/ $//'
}

# Pairing needs the kernel's ECDH (P-256 for LE Secure Connections keys). Its self-test needs a
# random number generator, and the VM image loads ecdh_generic before any "stdrng" exists: the
# test fails ("alg: self-tests for ecdh-nist-p256 ... failed"), SMP cannot be registered when an
# adapter is powered ("Unable to create ECDH crypto context") and every pairing attempt ends in
# "security requested but not available". So reload the Bluetooth stack with ansi_cprng
# (/share/modules, from the same kernel) loaded first, and restart btmon and btvirt.
KVER=$(uname -r)
M=/lib/modules/$KVER/kernel
# The controllers btvirt emulates: `-L` LE-only 4.x ones, otherwise BR/EDR+LE 5.2 ones that the
# kernel drives with extended advertising and scanning once LE is on (BT5=1).
BTVIRT_ARGS=$(tr '\0' ' ' </proc/$BTVIRT_PID/cmdline | sed 's/^[^ ]* //; s/ *$//')
case " $BTVIRT_ARGS " in *" -L "*) BT5=0 ;; *) BT5=1 ;; esac
echo "btvirt $BTVIRT_ARGS (BT5=$BT5)"
if ! grep -A6 'name *: ecdh-nist-p256' /proc/crypto | grep -q 'selftest *: passed' && [ -f /share/modules/ansi_cprng.ko ]; then
    echo "reloading bluetooth with a stdrng (ansi_cprng) so ECDH passes its self-test"
    kill "$BTVIRT_PID" "$BTMON_PID" 2>/dev/null; sleep 0.3
    rmmod hci_vhci && rmmod bluetooth && rmmod ecdh_generic || echo "rmmod failed: $(lsmod | head -5)"
    insmod /share/modules/ansi_cprng.ko
    insmod $M/crypto/ecdh_generic.ko && insmod $M/net/bluetooth/bluetooth.ko && insmod $M/drivers/bluetooth/hci_vhci.ko
    btmon -w /tmp/hci.btsnoop >/dev/null 2>&1 &
    BTMON_PID=$!
    sleep 0.3
    btvirt $BTVIRT_ARGS >/tmp/btvirt.log 2>&1 &
    BTVIRT_PID=$!
    i=0; while [ ! -e /sys/class/bluetooth/hci1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    sleep 0.3
fi
grep -A6 'name *: ecdh-nist-p256' /proc/crypto | grep -q 'selftest *: passed' && pass "ecdh-nist-p256 passed its self-test (SMP can pair)" \
    || echo "INFO: ecdh-nist-p256 self-test not passed: pairing will fail in this VM"
HCI0_ADDR=$(hciconfig hci0 | awk '/BD Address/{print $3}')
HCI1_ADDR=$(hciconfig hci1 | awk '/BD Address/{print $3}')
echo "hci0=$HCI0_ADDR hci1=$HCI1_ADDR"
# The central: powered through mgmt (so its kernel registers SMP and can pair), bondable, with
# an agent that confirms Just Works pairings (the kernel asks user space; bluetoothd would answer).
[ "$BT5" = 1 ] && btmgmt -i hci1 le on >/dev/null 2>&1
btmgmt -i hci1 bondable on >/dev/null 2>&1
btmgmt -i hci1 power on >/dev/null 2>&1
./mgmt_agent 1 >/tmp/agent.log 2>&1 &
AGENT=$!
hciconfig hci1 | grep -q 'UP RUNNING' && pass "hci1 up (btmgmt power on)" || bad "hci1 is not UP"
hciconfig hci0 | grep -q DOWN && pass "hci0 starts DOWN" || bad "hci0 was not DOWN at start"

# bluetoothd running (faked: a process named bluetoothd): gattd must refuse to start, say what
# to do, and exit non-zero.
cp /usr/bin/bash /tmp/bluetoothd
/tmp/bluetoothd -c 'sleep 30; true' &
FAKE=$!
# Until the exec has happened (a busy TCG guest can take longer than the 0.2 s this once slept).
i=0; while [ "$(cat /proc/$FAKE/comm 2>/dev/null)" != bluetoothd ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
timeout 20 $GATTD --config gattd.json --transport hci0 --control /tmp/gattd-refused.sock >/tmp/refused.log 2>&1
rc=$?
kill $FAKE 2>/dev/null; wait $FAKE 2>/dev/null
echo "gattd beside bluetoothd: rc=$rc"; cat /tmp/refused.log
[ $rc != 0 ] && grep -q "bluetoothd (pid $FAKE) is running and serves GATT on hci0 itself: stop bluetoothd (systemctl stop bluetooth) or give gattd the controller exclusively with --transport user:hci0" /tmp/refused.log \
    && pass "gattd refuses to start beside bluetoothd (rc=$rc) and says what to do" || bad "bluetoothd refusal (rc=$rc)"

# The scanner first: btvirt reports an advertiser once, when advertising is enabled. (hcitool
# scans with legacy commands: on BT5 controllers the kernel's own extended scanning finds it.)
if [ "$BT5" = 0 ]; then
    hcitool -i hci1 lescan >/tmp/scan.log 2>&1 &
    SCAN=$!
    sleep 0.5
fi

$GATTD --config gattd.json --transport hci0 --control /tmp/gattd.sock --state-dir /tmp/gattd-state --log-level debug >$LOG 2>&1 &
GATTD_PID=$!
wait_for 'advertising as "gattd-vm"' $LOG 150 && pass "gattd started and advertises" || bad "gattd did not start advertising"
cat $LOG
hciconfig hci0 | grep -q 'UP RUNNING' && pass "gattd brought hci0 up" || bad "hci0 is not UP"
grep -q "controller $HCI0_ADDR (hci0, kernel): Bluetooth [0-9.]* (HCI .*), .*; LE features: .*; LE ACL [0-9]* bytes x [0-9]*; " $LOG \
    && pass "controller line (address, version, LE features)" || bad "no controller line"
grep -q "by the kernel, through mgmt Add Extended Advertising" $LOG && pass "advertising through the kernel (mgmt extended advertising)" \
    || bad "controller line does not say mgmt extended advertising"
# The security settings (KernelSecurityPlan): LE Secure Connections on without a warning. On a
# BR/EDR+LE adapter the kernel takes it only with Secure Simple Pairing on, so gattd switches SSP on
# first, once; on an LE-only one it never sends SSP. (Queued before the first advertising command.)
sec_trace() { btmon -r /tmp/hci.btsnoop 2>/dev/null; }
ssp_sent=$(sec_trace | grep -c "MGMT Command: .*(0x000b) .*\[hci0\]")
sc_settings=$(sec_trace | grep -A12 "^ *Set Secure Connections (0x002d) plen 4" | grep -c "^ *Secure Connections$")
sc_rejected=$(sec_trace | grep -A1 "^ *Set Secure Connections (0x002d)$" | grep -c "Status: Rejected")
if grep -q "not applied" $LOG; then bad "security warning: $(grep 'not applied' $LOG)"
elif [ "$sc_settings" -lt 1 ]; then bad "hci0's settings do not show Secure Connections after gattd's Set Secure Connections"
elif [ "$sc_rejected" != 0 ]; then bad "Set Secure Connections sent before the kernel could take it (Rejected $sc_rejected times)"
elif [ "$BT5" = 1 ] && [ "$ssp_sent" != 1 ]; then bad "BR/EDR+LE adapter: Set Secure Simple Pairing sent $ssp_sent times (wanted once, before Secure Connections)"
elif [ "$BT5" = 0 ] && [ "$ssp_sent" != 0 ]; then bad "LE-only adapter: Set Secure Simple Pairing sent ($ssp_sent)"
else pass "LE Secure Connections on hci0 without a warning (Set Secure Simple Pairing sent $ssp_sent time(s), BT5=$BT5)"; fi
# gattd --probe reads the adapter without changing it, even while a gattd serves it.
$GATTD --probe --transport hci0 >/tmp/probe.txt 2>&1 && grep -q "^controller $HCI0_ADDR at kernel:hci0" /tmp/probe.txt \
    && grep -q "^  advertising .* by the kernel, through mgmt" /tmp/probe.txt \
    && pass "gattd --probe describes hci0 while gattd serves it" || bad "gattd --probe"
cat /tmp/probe.txt
if [ "$BT5" = 1 ]; then
    grep -q "^  sets .*up to [0-9]* on the air at once; 251 bytes of data per set; extended PDUs yes" /tmp/probe.txt \
        && pass "probe: a 5.2 controller has its sets on the air at once" || bad "probe: 5.2 sets line"
else
    grep -q "^  sets .*taking turns on the air; 31 bytes of data per set; extended PDUs no" /tmp/probe.txt \
        && pass "probe: a 4.x controller's sets take turns" || bad "probe: 4.x sets line"
fi
if [ "$BT5" = 0 ]; then
    sleep 1
    kill -INT $SCAN 2>/dev/null; wait $SCAN 2>/dev/null   # hcitool's stdout is block-buffered: read it after
    echo "scan:"; cat /tmp/scan.log
    grep -q "$HCI0_ADDR gattd-vm" /tmp/scan.log && pass "hci1 saw hci0 advertise 'gattd-vm'" \
        || bad "scanner did not report $HCI0_ADDR gattd-vm"
    SET_DATA='(0x08|0x0008) plen'   # LE Set Advertising Data: the kernel drives a 4.x controller with legacy commands
else
    # The kernel's discovery on hci1 (extended scanning) reports gattd's advertising.
    timeout 6 btmgmt -i hci1 find -l >/dev/null 2>&1
    btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -B2 -A30 'LE Extended Advertising Report' | grep -q 'Name (complete): gattd-vm' \
        && pass "hci1's extended scan saw hci0 advertise 'gattd-vm'" || bad "hci1's extended scan did not report gattd-vm"
    SET_DATA='(0x08|0x0037) plen'  # LE Set Extended Advertising Data
fi
# The service UUID is in the advertising data: btmon saw it go to the controller.
if btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -F -A14 "$SET_DATA" | grep -qi '0xfff0'; then
    pass "advertising data carries service UUID 0xFFF0 ($SET_DATA)"
else
    bad "service UUID 0xFFF0 not in the advertising data ($SET_DATA)"
fi

gatt --primary
expect_out "attr handle = 0x0001, end grp handle = 0x0005 uuid: 00001800-$UUID_BASE" "GAP service 0x0001-0x0005"
expect_out "attr handle = 0x0006, end grp handle = 0x000f uuid: 00001801-$UUID_BASE" "GATT service 0x0006-0x000f"
expect_out "attr handle = 0x0010, end grp handle = 0x0019 uuid: 0000fff0-$UUID_BASE" "service FFF0 0x0010-0x0019"

gatt --characteristics
expect_out "handle = 0x0011, char properties = 0x0a, char value handle = 0x0012, uuid = 0000fff1-$UUID_BASE" \
    "characteristic FFF1 (read|write) value 0x0012"
expect_out "handle = 0x0013, char properties = 0x12, char value handle = 0x0014, uuid = 0000fff2-$UUID_BASE" \
    "characteristic FFF2 (read|notify) value 0x0014"
expect_out "handle = 0x0018, char properties = 0x02, char value handle = 0x0019, uuid = 0000fff4-$UUID_BASE" \
    "characteristic FFF4 (read) value 0x0019"

gatt --char-desc -s 0x0014 -e 0x0015
expect_out "handle = 0x0015, uuid = 00002902-$UUID_BASE" "descriptor CCCD at 0x0015"

gatt --char-read -a 0x0012
expect_out "Characteristic value/descriptor: 68 65 6c 6c 6f" "read FFF1 = 'hello'"
gatt --char-write-req -a 0x0012 -n 776f726c64
expect_out "Characteristic value was written successfully" "write request FFF1"
gatt --char-read -a 0x0012
expect_out "Characteristic value/descriptor: 77 6f 72 6c 64" "read back FFF1 = 'world'"
wait_for ": wrote 5 bytes to greeting" $LOG 20 && pass "gattd logged the write" || bad "no write log line"
# connection.preferred (15 ms) lies outside hci1's default interval: the kernel asks the central
# for it with an L2CAP Connection Parameter Update Request, because gattd set it as hci0's default.
if btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -q 'Connection Parameter Update Request'; then
    pass "connection.preferred requested from the central (L2CAP Connection Parameter Update Request)"
else
    bad "no Connection Parameter Update Request for connection.preferred in the trace"
fi

# Long values: the 300-byte value needs Read + Read Blob (MTU 23), the write Prepare/Execute.
LONG=$(awk 'BEGIN { for (i = 0; i < 300; i++) printf "%02x", (i * 7 + 3) % 256 }')
gatt --char-read -a 0x0017
expect_out "Characteristic value/descriptor: $(hexdump_value "$LONG")" "long read of FFF3 (300 bytes, Read Blob)"
NEWLONG=$(awk 'BEGIN { for (i = 0; i < 300; i++) printf "%02x", (555 - i) % 256 }')
gatt --char-write-req -a 0x0017 -n "$NEWLONG"
expect_out "Characteristic value was written successfully" "long write of FFF3 (Prepare/Execute Write)"
gatt --char-read -a 0x0017
expect_out "Characteristic value/descriptor: $(hexdump_value "$NEWLONG")" "long read back of FFF3"

# Notifications through the daemon's notify path: gattctl → control socket → ATT server → socket.
timeout 40 gatttool -i hci1 -b "$HCI0_ADDR" -t public --char-write-req -a 0x0015 -n 0100 --listen >/tmp/listen.out 2>&1 &
LISTEN=$!
if wait_for "subscribed to counter" $LOG 100; then
    pass "CCCD write subscribed to counter"
    # Status while the listener is surely connected: gatttool's output is block-buffered, so the
    # notification wait below may last until gatttool exits and its link closes.
    $GATTCTL status >/tmp/status.out 2>&1; echo "gattctl status rc=$?"; cat /tmp/status.out
    grep -qi "$HCI1_ADDR" /tmp/status.out && pass "gattctl status lists the central" || bad "status does not list $HCI1_ADDR"
    $GATTCTL notify counter 0badcafe; echo "gattctl notify rc=$?"
    wait_for "Notification handle = 0x0014 value: 0b ad ca fe" /tmp/listen.out 50 \
        && pass "notification 0badcafe received by the central (gattctl notify)" || bad "no notification received"
else
    bad "no subscription"
fi
kill $LISTEN 2>/dev/null; wait $LISTEN 2>/dev/null
echo "listener:"; cat /tmp/listen.out

# Per-central link control (issue #33): gattd sends LE Connection Update, LE Set PHY and LE Set
# Data Length for the link's handle on its raw HCI socket, as the kernel's own commands go, and
# reads the link's values from the LE Meta events its adapter monitor sees (the kernel takes the
# same events). The kernel keeps LE signalling, so there is no L2CAP fallback. A central that
# stays connected (gatttool --listen) takes them; each op waits for its answer.
links_closed
SUBS=$(count "subscribed to counter" $LOG)
LINKS=$(count ": link interval" $LOG)
UPDATED=$(count ": link interval 15 ms, latency 0, timeout 420 ms" $LOG)
SETPHY=$(btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -c '< HCI Command: LE Set PHY (0x08|0x0032) plen 7.*\[hci0\]')
timeout 60 gatttool -i hci1 -b "$HCI0_ADDR" -t public --char-write-req -a 0x0015 -n 0100 --listen >/tmp/hold.out 2>&1 &
HOLD=$!
link_op() { # DESCRIPTION gattctl-args...: runs one op, its reply in /tmp/link-op.out, rc in LINK_RC
    what=$1; shift
    timeout 30 $GATTCTL "$@" >/tmp/link-op.out 2>&1; LINK_RC=$?
    echo "gattctl $* -> rc=$LINK_RC: $(cat /tmp/link-op.out)"
}
if wait_more "subscribed to counter" $LOG "$SUBS" 100; then
    $GATTCTL status --json >/tmp/link-status.out 2>&1; cat /tmp/link-status.out; echo
    grep -q '"interval_ms":[0-9]' /tmp/link-status.out && grep -q '"tx_phy":"1m"' /tmp/link-status.out \
        && pass "status shows the link's interval and PHY (LE Connection Complete, seen by the monitor)" \
        || bad "status has no link values for the central"
    wait_more ": link interval" $LOG "$LINKS" 20 && pass "the link's values logged at info level" || bad "no link log line"
    grep ': link interval' $LOG | tail -3

    # The kernel asked the central for connection.preferred (15 ms, above) and the central
    # updated the link: the monitor saw LE Connection Update Complete.
    wait_more ": link interval 15 ms, latency 0, timeout 420 ms" $LOG "$UPDATED" 50 \
        && pass "the central's own update (to connection.preferred) seen as a link change" || bad "no link change for the central's update"

    # phy.preferred (2M by default) is asked of each new link, where the controller has LE 2M.
    setphy=$(($(btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -c '< HCI Command: LE Set PHY (0x08|0x0032) plen 7.*\[hci0\]') - SETPHY))
    if [ "$BT5" = 1 ]; then
        [ "$setphy" = 1 ] && pass "phy.preferred: LE Set PHY sent once for the new link" || bad "LE Set PHY for the new link: $setphy"
    else
        [ "$setphy" = 0 ] && pass "phy.preferred: no LE Set PHY on a controller without LE 2M" || bad "LE Set PHY sent to a 4.x controller ($setphy)"
    fi

    # What btvirt's controllers can do: the 4.x ones list the Connection Parameters Request
    # procedure (LE Connection Update works as peripheral) and neither LE 2M nor LE Data Packet
    # Length Extension; the 5.2 ones list LE 2M but not the procedure (and the kernel keeps the
    # L2CAP request, so the op is refused), do not know LE Set PHY, and lack the data length feature.
    link_op "connection parameters" connection-parameters low_latency --central "$HCI1_ADDR"
    if [ "$BT5" = 0 ]; then
        $GATTCTL status --json >/tmp/link-status.out 2>&1
        [ "$LINK_RC" = 0 ] && grep -q '"interval_ms":15,"latency":0,' /tmp/link-status.out && grep -q '"timeout_ms":2000,' /tmp/link-status.out \
            && pass "connection_parameters low_latency accepted: status shows 15 ms/0/2000 ms" \
            || bad "connection_parameters on a 4.x controller: $(cat /tmp/link-status.out)"
        grep -q ": link interval 15 ms, latency 0, timeout 2000 ms" $LOG && pass "the update logged as a link change" || bad "the update not logged"
        btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -q "LE Connection Update (0x08|0x0013)" \
            && pass "gattd's LE Connection Update went to hci0's controller (raw HCI socket)" || bad "no LE Connection Update in the trace"
    else
        [ "$LINK_RC" = 1 ] && grep -q "lacks the Connection Parameters Request procedure, and the kernel keeps LE signalling" /tmp/link-op.out \
            && pass "connection_parameters refused on a controller without the procedure, with the reason" \
            || bad "connection_parameters on a 5.2 controller not refused cleanly"
    fi
    # Values outside Apple's rules: refused by gattd before anything goes on the air.
    link_op "bad parameters" connection-parameters --central "$HCI1_ADDR" --interval 10,11.25 --latency 0 --timeout 2000
    [ "$LINK_RC" = 1 ] && grep -q 'breaks the rule "Apple: Interval Min' /tmp/link-op.out && grep -q "nothing was sent" /tmp/link-op.out \
        && pass "parameters outside Apple's rules refused, naming the rule" || bad "bad parameters not refused"
    link_op "phy" phy "$HCI1_ADDR" 2m
    if [ "$BT5" = 1 ]; then
        [ "$LINK_RC" = 1 ] && grep -q "the controller does not know LE Set PHY" /tmp/link-op.out \
            && pass "phy 2m: LE Set PHY sent, and refused with the controller's answer (btvirt lacks the command)" \
            || bad "phy 2m on a 5.2 controller not refused cleanly"
    else
        [ "$LINK_RC" = 1 ] && grep -q "does not support LE 2M" /tmp/link-op.out \
            && pass "phy 2m refused on a 4.x controller, with the reason" || bad "phy 2m on a 4.x controller not refused cleanly"
    fi
    link_op "data length" data-length "$HCI1_ADDR" 200
    [ "$LINK_RC" = 1 ] && grep -q "does not support LE Data Packet Length Extension" /tmp/link-op.out \
        && pass "data-length refused on a controller without the feature, with the reason" || bad "data-length not refused cleanly"
    # An unknown central: a clear error, nothing waits.
    link_op "unknown central" phy 00:11:22:33:44:55 1m
    [ "$LINK_RC" != 0 ] && grep -qi "not connected\|no central\|unknown" /tmp/link-op.out \
        && pass "a link op for an unknown central is refused" || bad "unknown central: $(cat /tmp/link-op.out)"
else
    bad "no central held the link for the link ops"
fi
kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null
grep -i "link\|connection update\|PHY" $LOG | tail -12

# The capture op on the kernel transport: the ATT PDUs gattd exchanges, framed as HCI ACL
# packets on the ATT channel, in a btsnoop file btmon decodes.
links_closed   # (a read over the idle link hci1 is dropping fails with Connection reset by peer)
$GATTCTL capture start /tmp/att.btsnoop >/tmp/capture.out 2>&1; echo "gattctl capture start rc=$?"; cat /tmp/capture.out
grep -q "capturing the ATT PDUs gattd exchanges" /tmp/capture.out && pass "capture started (ATT PDUs on the kernel transport)" \
    || bad "gattctl capture start"
gatt --char-read -a 0x0012
$GATTCTL capture stop; echo "gattctl capture stop rc=$?"
btmon -r /tmp/att.btsnoop >/tmp/att.txt 2>&1; head -40 /tmp/att.txt
if grep -q "ATT: Read Request (0x0a)" /tmp/att.txt && grep -q "ATT: Read Response (0x0b)" /tmp/att.txt; then
    pass "btmon decodes the captured Read Request and Read Response"
else
    bad "the capture has no decodable Read Request/Response"
fi

# App L2CAP channels (issue #21): gattd.json declares "echo" (PSM 129, security none, MTU 1024)
# and "secure" (PSM 130, encryption, MTU 512). gattd listens on a kernel L2CAP LE socket for a
# channel only while a program listens for it on the control socket: `gattctl l2cap serve ID
# --exec CMD` gets each channel's socket (SCM_RIGHTS) and runs CMD on it (cat: an echo server).
# hci1's l2test opens LE credit-based channels (-V le_public: an LE PSM, so LE flow control).
l2cap_trace() { btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -A6 "LE L2CAP: LE Connection Response (0x15)" | grep "Result:"; }
l2test_y() { # PSM FRAMES BYTES OUT: connect, send FRAMES SDUs of BYTES, wait for as many back
    timeout 30 l2test -y -i hci1 -V le_public -P "$1" -N "$2" -b "$3" -I 1000 "$HCI0_ADDR" >"$4" 2>&1 &
    L2=$!
    i=0; while [ "$(count "Received $3 bytes" "$4")" -lt "$2" ] && kill -0 $L2 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
    kill $L2 2>/dev/null; wait $L2 2>/dev/null
    cat "$4"
}
echo "INFO: enable_ecred (Enhanced Credit Based mode, EATT) = $(cat /sys/module/bluetooth/parameters/enable_ecred 2>&1)"
# Each l2test on a link of its own (an idle link hci1 is about to drop can leave the next
# connect hanging on 5.2 controllers).
links_closed
timeout 20 l2test -n -i hci1 -V le_public -P 129 "$HCI0_ADDR" >/tmp/l2-none.out 2>&1; rc=$?
cat /tmp/l2-none.out
[ $rc != 0 ] && grep -q "Connection refused" /tmp/l2-none.out && pass "l2cap: nobody listens for \"echo\": PSM 129 refused" \
    || bad "l2cap: PSM 129 not refused while nobody listens (rc=$rc)"
links_closed
# (The command says what gattctl set for it, then echoes.)
$GATTCTL l2cap serve echo --exec 'echo "env: $GATTD_CENTRAL $GATTD_L2CAP_CHANNEL $GATTD_PSM $GATTD_MTU $GATTD_PEER_MTU" >&2; exec cat' \
    >/tmp/echo.log 2>&1 &
ECHO=$!
$GATTCTL l2cap serve secure --exec cat >/tmp/echo-secure.log 2>&1 &
ECHO2=$!
wait_for 'serving L2CAP channel "echo" (PSM 129)' /tmp/echo.log 100 && wait_for 'serving L2CAP channel "secure" (PSM 130)' /tmp/echo-secure.log 100 \
    && pass "l2cap: gattctl l2cap serve listens for echo and secure (l2cap_listen answered)" || bad "l2cap: gattctl l2cap serve"
cat /tmp/echo.log /tmp/echo-secure.log
wait_for 'listening for L2CAP channel "secure" on PSM 130 (security encryption, MTU 512)' $LOG 50 \
    && grep -q 'listening for L2CAP channel "echo" on PSM 129 (security none, MTU 1024)' $LOG \
    && pass "l2cap: gattd listens on kernel L2CAP sockets for PSM 129 and 130" || bad "l2cap: no listening sockets"
grep -E "BT_MODE|L2CAP channel" $LOG
l2test_y 129 3 100 /tmp/l2-echo.out
cat /tmp/echo.log
[ "$(count 'Received 100 bytes' /tmp/l2-echo.out)" = 3 ] \
    && pass "l2cap: 3 SDUs of 100 bytes from hci1 to cat and back (echo over the kernel's socket)" || bad "l2cap: echo on PSM 129"
grep -q "gattctl: $HCI1_ADDR opened \"echo\" (MTU 1000)" /tmp/echo.log \
    && grep -q "env: $HCI1_ADDR echo 129 1024 1000" /tmp/echo.log \
    && pass "l2cap: the channel's event names the central ($HCI1_ADDR: the ATT link's connection), gattd's MTU 1024 (BT_RCVMTU) and the central's 1000 (BT_SNDMTU)" \
    || bad "l2cap: the l2cap_channel event's central or MTUs"
grep -q "Options \[imtu 1000, omtu 1024," /tmp/l2-echo.out && pass "l2cap: the central sees gattd's MTU 1024" || bad "l2cap: MTU"
l2cap_trace | grep -q "Connection successful" && pass "l2cap: LE Credit Based Connection Response: successful (btmon)" \
    || bad "l2cap: no successful LE Credit Based Connection Response in the trace"
links_closed
timeout 20 l2test -n -i hci1 -V le_public -P 131 "$HCI0_ADDR" >/tmp/l2-131.out 2>&1; rc=$?
[ $rc != 0 ] && grep -q "Connection refused" /tmp/l2-131.out && l2cap_trace | grep -q "PSM not supported" \
    && pass "l2cap: a PSM no channel has (131) is refused: PSM not supported" || bad "l2cap: PSM 131 (rc=$rc)"
kill $ECHO 2>/dev/null; wait $ECHO 2>/dev/null
wait_for 'stopped listening for L2CAP channel "echo"' $LOG 50 && pass "l2cap: the program left: gattd closed echo's listening socket" \
    || bad "l2cap: listening socket not closed after the program left"
links_closed
timeout 20 l2test -n -i hci1 -V le_public -P 129 "$HCI0_ADDR" >/tmp/l2-left.out 2>&1; rc=$?
[ $rc != 0 ] && grep -q "Connection refused" /tmp/l2-left.out && pass "l2cap: PSM 129 refused again once nobody listens" \
    || bad "l2cap: PSM 129 not refused after the program left (rc=$rc)"
links_closed

# Nothing lost at the end: when gattctl's input ends (l2cap cat) or the command exits (l2cap
# serve --exec), the tail of what was written still waits in the kernel for the central's
# credits; closing the channel's socket then would make the kernel drop it. gattctl keeps the
# socket until its send queue is empty. hci1's l2cap_recv (Tests/kernel-vm/l2cap_recv.c) writes
# every SDU it receives to a file until gattd closes the channel.
head -c 204800 /dev/urandom >/tmp/big.bin
l2cap_file() { # WHAT RECEIVED: hci1 receives a channel on PSM 129 into RECEIVED, compared with /tmp/big.bin
    timeout 120 ./l2cap_recv -i hci1 -b "$HCI0_ADDR" -P 129 >"$2" 2>/tmp/recv.log; rc=$?
    cat /tmp/recv.log
    [ $rc = 0 ] && cmp -s /tmp/big.bin "$2" \
        && pass "l2cap: $1: hci1 received all $(wc -c </tmp/big.bin) bytes, then gattd closed the channel" \
        || bad "l2cap: $1: hci1 received $(wc -c <"$2") of $(wc -c </tmp/big.bin) bytes (rc=$rc)"
}
listening_before=$(count 'listening for L2CAP channel "echo" on PSM 129' $LOG)
$GATTCTL l2cap cat echo </tmp/big.bin >/tmp/cat.out 2>/tmp/cat.err &
CAT=$!
wait_more 'listening for L2CAP channel "echo" on PSM 129' $LOG "$listening_before" 100 || bad "l2cap cat: gattd does not listen for echo"
l2cap_file "gattctl l2cap cat < a 200 KB file" /tmp/cat-received.bin
i=0; while kill -0 $CAT 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
kill $CAT 2>/dev/null; wait $CAT; echo "gattctl l2cap cat rc=$?"; cat /tmp/cat.err
links_closed
listening_before=$(count 'listening for L2CAP channel "echo" on PSM 129' $LOG)
# (dd: one write per SDU of the central's MTU; cat's larger writes would be EMSGSIZE.)
$GATTCTL l2cap serve echo --exec 'dd if=/tmp/big.bin bs=$GATTD_PEER_MTU 2>/dev/null' >/tmp/serve-file.log 2>&1 &
SERVE=$!
wait_more 'listening for L2CAP channel "echo" on PSM 129' $LOG "$listening_before" 100 || bad "l2cap serve: gattd does not listen for echo"
l2cap_file "gattctl l2cap serve --exec 'dd if=FILE'" /tmp/serve-received.bin
kill $SERVE 2>/dev/null; wait $SERVE 2>/dev/null; cat /tmp/serve-file.log
links_closed

# Encryption: the ATT server refuses the encrypted characteristic on an unencrypted link
# (Insufficient Encryption); gattd then raises BT_SECURITY so the kernel sends an SMP Security
# Request. gatttool (BlueZ's bt_att) also raises security when it gets that error, the two
# kernels pair (Just Works, confirmed by gattd's agent and mgmt_agent) and gatttool retries the
# read on the encrypted link.
gatt --char-read -a 0x0019
wait_for "Insufficient Encryption" $LOG 20 && pass "encrypted read refused on an unencrypted link (Insufficient Encryption)" \
    || bad "no Insufficient Encryption"
grep "Insufficient Encryption" $LOG
if ! grep -q "Characteristic value/descriptor: 73 65 63 72 65 74" /tmp/gatt.out; then
    gatt --sec-level=medium --char-read -a 0x0019
fi
if grep -q "Characteristic value/descriptor: 73 65 63 72 65 74" /tmp/gatt.out; then
    pass "paired (Just Works) and read the encrypted characteristic"
    wait_for ": security medium" $LOG 20 && pass "gattd saw the link's security become medium" || bad "no security change logged"
else
    bad "encrypted read after pairing failed"
    dmesg | grep -i -E "Bluetooth" | tail -5 | sed 's/^/INFO: dmesg: /'
fi
grep -q "pairing with $HCI1_ADDR: accepted Just Works" $LOG && pass "gattd's agent confirmed the Just Works pairing" \
    || bad "gattd's agent did not confirm a pairing"
cat /tmp/agent.log

# The "secure" channel (security encryption, BT_SECURITY medium on its listening socket; its
# gattctl l2cap serve still runs): hci1 is bonded now. On a new, unencrypted link the kernel
# refuses the channel (insufficient encryption); hci1's kernel then encrypts the link with its
# key and asks again.
links_closed
refused_before=$(l2cap_trace | grep -c "insufficient encryption")
l2test_y 130 2 50 /tmp/l2-secure.out
cat /tmp/echo-secure.log
[ "$(count 'Received 50 bytes' /tmp/l2-secure.out)" = 2 ] && grep -q "gattctl: $HCI1_ADDR opened \"secure\"" /tmp/echo-secure.log \
    && pass "l2cap: the encrypted channel echoed 2 SDUs once the link was encrypted" || bad "l2cap: echo on the encrypted channel"
[ "$(l2cap_trace | grep -c "insufficient encryption")" -gt "$refused_before" ] \
    && pass "l2cap: first refused on the unencrypted link (insufficient encryption)" || bad "l2cap: the encrypted channel was not refused first"
kill $ECHO2 2>/dev/null; wait $ECHO2 2>/dev/null

# Disconnection: the central drops the idle link; advertising resumes; a new connection works.
links_closed && pass "link closed (disconnected logged)" || bad "links still open"
grep " disconnected: " $LOG | tail -2
adv_before=$(count 'advertising as "gattd-vm"' $LOG)
sleep 0.5
gatt --char-read -a 0x0012
expect_out "Characteristic value/descriptor: 77 6f 72 6c 64" "reconnected after a disconnection (advertising resumed)"
links_closed
[ "$(count 'advertising as "gattd-vm"' $LOG)" -ge "$adv_before" ] && pass "advertising resumed after the disconnection" \
    || bad "advertising did not resume"

# gattctl disconnect: gattd drops the central's link (HCI Disconnect).
subs=$(count 'subscribed to counter' $LOG)
# (30 s: gattctl may take seconds to start in a TCG guest on a busy host; the link goes sooner.)
timeout 30 gatttool -i hci1 -b "$HCI0_ADDR" -t public --char-write-req -a 0x0015 -n 0100 --listen >/tmp/listen2.out 2>&1 &
LISTEN=$!
if wait_more 'subscribed to counter' $LOG "$subs" 100; then
    before=$(count ' disconnected: ' $LOG)
    $GATTCTL disconnect "$HCI1_ADDR"; echo "gattctl disconnect rc=$?"
    if wait_more ' disconnected: ' $LOG "$before" 50; then
        grep ' disconnected: ' $LOG | tail -1
        pass "gattctl disconnect dropped the central"
        # (btvirt reports the reason gattd sent, 0x13, on the local side too, where a controller
        # would say Connection Terminated By Local Host: check gattd's HCI Disconnect instead.)
        btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -q '< HCI Command: Disconnect (0x01|0x0006) plen 3.*\[hci0\]' \
            && pass "gattd sent HCI Disconnect on hci0" || bad "no HCI Disconnect from hci0 in the trace"
    else
        bad "gattctl disconnect did not drop the central"
    fi
else
    bad "second subscription for the disconnect test"
fi
kill $LISTEN 2>/dev/null; wait $LISTEN 2>/dev/null
links_closed

# The adapter goes down and comes back: gattd drops its centrals, waits, re-opens the
# controller, advertises and listens again without a restart. (Links closed first: btvirt does
# not tell hci1 when hci0 goes down, so hci1 would keep a dead link and gatttool reuse it.)
hcitool -i hci1 con
hciconfig hci0 down
wait_for "hci0 went down" $LOG 30 && pass "gattd saw hci0 go down" || bad "no 'went down' log"
adv_before=$(count 'advertising as "gattd-vm"' $LOG)
hciconfig hci0 up
i=0; while [ "$(count 'advertising as "gattd-vm"' $LOG)" = "$adv_before" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
[ $i -lt 50 ] && pass "gattd advertises again after hci0 down/up" \
    || { bad "no advertising after hci0 up"; tail -15 $LOG; btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -A3 '^@ MGMT' | tail -30; }
gatt --primary
expect_out "attr handle = 0x0010, end grp handle = 0x0019 uuid: 0000fff0-$UUID_BASE" "service discovery after hci0 down/up"
links_closed

# Bonds, per-bond state, restarts, unbonding and pairing prompts run on the 4.x controllers
# only: they exercise the kernel's SMP and key store, not its advertising, and on 5.2 controllers
# Debian's 6.1.192 kernel hits its hci_chan_del list-corruption BUG there now and then (seen
# while writing the 5.2 run), which takes the rest of the run down with it.
if [ "$BT5" = 0 ]; then
# Bonds (the kernel transport's bond store): the kernel's New Long Term Key became a bond in the
# state dir; gattd loads it into the kernel at every open of the adapter (hci0 down/up) and at
# start (here after the kernel's own keys were cleared while gattd was stopped), so the central
# re-encrypts with its key and reads the encryption-required characteristic without pairing again.
BOND=/tmp/gattd-state/bonds/$HCI1_ADDR.json
grep -q "paired and bonded as $HCI1_ADDR" $LOG && pass "the kernel's pairing was stored as a bond (New Long Term Key)" \
    || bad "no 'paired and bonded as $HCI1_ADDR' line"
[ -f "$BOND" ] && pass "bond file $BOND" || bad "no bond file $BOND"
cat "$BOND" 2>/dev/null
pairings() { btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -c "SMP: Pairing Request"; }
echo "SMP Pairing Requests so far: $(pairings)"
[ "$(pairings)" -gt 0 ] && pass "the trace shows the first pairing (SMP Pairing Request)" || bad "no SMP Pairing Request in the trace"
# Command Complete of LE Long Term Key Request Reply: the kernel answered a central's LTK Request.
ltk_replies() { btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -c "(0x08|0x001a) ncmd"; }
encrypted_read() { # WHEN: the encryption-required read at sec-level medium, with no new pairing
    p_before=$(pairings); b_before=$(count "paired and bonded" $LOG); r_before=$(ltk_replies)
    gatt --sec-level=medium --char-read -a 0x0019
    expect_out "Characteristic value/descriptor: 73 65 63 72 65 74" "$1: encrypted characteristic read"
    links_closed
    [ "$(ltk_replies)" -gt "$r_before" ] && pass "$1: hci0's kernel answered the LTK Request with the bond's key" \
        || bad "$1: no LE Long Term Key Request Reply"
    [ "$(pairings)" = "$p_before" ] && [ "$(count "paired and bonded" $LOG)" = "$b_before" ] \
        && pass "$1: no new pairing (no SMP Pairing Request, no new bond)" \
        || bad "$1: paired again (Pairing Requests $p_before -> $(pairings))"
}
grep -q "hci0: 1 bond loaded into the kernel (1 LTK" $LOG && pass "after hci0 down/up gattd loaded the bond into the kernel again" \
    || bad "no 'hci0: 1 bond loaded into the kernel' after hci0 down/up"
encrypted_read "after hci0 down/up"

# Per-bond GATT state (issue #11): on an encrypted link the bonded central subscribes to counter
# (notifications) and to Service Changed (indications, CCCD 0x0009); gattd writes both to
# <state-dir>/bonds/<address>.gatt before it answers the CCCD writes.
GATTSTATE=/tmp/gattd-state/bonds/$HCI1_ADDR.gatt
gatt --sec-level=medium --char-write-req -a 0x0015 -n 0100
expect_out "Characteristic value was written successfully" "bonded central subscribes to counter (encrypted CCCD write)"
links_closed
gatt --sec-level=medium --char-write-req -a 0x0009 -n 0200
expect_out "Characteristic value was written successfully" "bonded central enables Service Changed indications"
links_closed
echo "$GATTSTATE:"; cat "$GATTSTATE" 2>/dev/null
grep -q '"id:counter":1' "$GATTSTATE" 2>/dev/null && grep -q '"id:service_changed":2' "$GATTSTATE" \
    && pass "the bond's .gatt file keeps both subscriptions (counter: notify, Service Changed: indicate)" \
    || bad "the .gatt file does not keep the subscriptions"
# Lines of gattd's log since `mark`: what one connection did.
since() { tail -n +$((mark + 1)) $LOG; }
wait_since() { # PATTERN TENTHS
    i=0; while ! since | grep -q "$1" && [ $i -lt "$2" ]; do sleep 0.1; i=$((i+1)); done
    since | grep -q "$1"
}
# A bonded central that only listens: att_listen (Tests/kernel-vm/att_listen.c) connects at
# BT_SECURITY medium, so hci1's kernel encrypts with the bond before the ATT socket is connected,
# and sends nothing but a confirmation for each indication (gatttool cannot connect without
# sending a request: `--listen` alone prints its usage).
listen_encrypted() { # OUT
    mark=$(wc -l < $LOG)
    ./att_listen -i hci1 -b "$HCI0_ADDR" 30 >"$1" 2>&1 &
    LISTEN=$!
}

# gattd restart with the kernel's keys gone meanwhile: only gattd's Load Long Term Keys can bring it back.
stop_gattd() {
    kill -TERM $GATTD_PID 2>/dev/null
    i=0; while kill -0 $GATTD_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    wait $GATTD_PID; echo "gattd stopped: rc=$?"
}
stop_gattd
./mgmt_agent --clear 0 && pass "hci0's kernel keys cleared while gattd was stopped (Load LTKs/IRKs, empty lists)" \
    || bad "could not clear hci0's kernel keys"
loads_before=$(count "hci0: 1 bond loaded into the kernel" $LOG)
adv_before=$(count 'advertising as "gattd-vm"' $LOG)
$GATTD --config gattd.json --transport hci0 --control /tmp/gattd.sock --state-dir /tmp/gattd-state --log-level debug >>$LOG 2>&1 &
GATTD_PID=$!
wait_more 'advertising as "gattd-vm"' $LOG "$adv_before" 150 && pass "gattd restarted and advertises" || bad "gattd did not restart"
grep -q "loaded 1 bond from /tmp/gattd-state/bonds" $LOG && pass "the restarted gattd read the bond store" || bad "bond store not read"
wait_more "hci0: 1 bond loaded into the kernel (1 LTK" $LOG "$loads_before" 30 && pass "the restarted gattd loaded the bond into the kernel" \
    || bad "no bond loaded into the kernel after the restart"
encrypted_read "after a gattd restart"

# CCCD restore: the restarted gattd gives the bonded central its subscriptions back as soon as
# its link is encrypted (the kernel's Encryption Change, seen by gattd's adapter monitor), with
# no CCCD write (the central sends no PDU at all); a notification pushed with gattctl reaches it.
listen_encrypted /tmp/listen3.out
if wait_since "$HCI1_ADDR: bonded central $HCI1_ADDR; restored 2 subscriptions" 150; then
    pass "restart: the bonded central's 2 subscriptions restored when its link was encrypted"
    $GATTCTL notify counter c0ffee; echo "gattctl notify rc=$?"
    wait_for "notification handle 0x0014 value c0ffee" /tmp/listen3.out 50 \
        && pass "restart: notification c0ffee received with the restored subscription" || bad "restart: no notification received"
else
    bad "restart: no subscription restored"
fi
kill $LISTEN 2>/dev/null; wait $LISTEN 2>/dev/null
links_closed
echo "listener:"; cat /tmp/listen3.out
since | grep -E "$HCI1_ADDR (→|←)|restored|subscribed"
# Which way gattd saw the encryption depends on timing: the link may already be encrypted when
# the kernel hands gattd the ATT socket, or its Encryption Change comes after (then gattd logs
# "security medium" with no PDU from the central: only the adapter monitor can have told it).
since | grep -q "$HCI1_ADDR: security medium" && echo "INFO: restart: encryption seen through the kernel's Encryption Change" \
    || echo "INFO: restart: the link was already encrypted when gattd accepted it"
since | grep -q "$HCI1_ADDR → \|subscribed to counter" && bad "restart: the central sent a PDU (a CCCD write?)" \
    || pass "restart: no CCCD write in that connection (no PDU from the central in gattd's ATT log)"

# Pending Service Changed: while the central is away gattd stops, a service is added after the
# last handle (0x001A-0x001C) and gattd starts: the bond is owed Service Changed for that range
# (kept in its .gatt file), indicated on its next encrypted connection without any request,
# confirmed by gatttool, and then cleared from the file.
stop_gattd
awk '$0 == "  ]" { print "    ,{\"id\": \"extra\", \"uuid\": \"FFF8\", \"characteristics\": [{\"id\": \"extra1\", \"uuid\": \"FFF9\", \"properties\": [\"read\"], \"value\": {\"hex\": \"01\"}}]}" } { print }' \
    gattd.json >/tmp/gattd-extra.json && cp /tmp/gattd-extra.json gattd.json
grep -q FFF8 gattd.json || bad "could not add a service to gattd.json"
adv_before=$(count 'advertising as "gattd-vm"' $LOG)
mark=$(wc -l < $LOG)
$GATTD --config gattd.json --transport hci0 --control /tmp/gattd.sock --state-dir /tmp/gattd-state --log-level debug >>$LOG 2>&1 &
GATTD_PID=$!
wait_more 'advertising as "gattd-vm"' $LOG "$adv_before" 150 && pass "gattd restarted with a service added" || bad "gattd did not restart"
since | grep -q "$HCI1_ADDR: Service Changed 0x001A-0x001C owed" \
    && pass "the restarted gattd owes the away bond Service Changed 0x001A-0x001C" || bad "no Service Changed 0x001A-0x001C owed"
cat "$GATTSTATE"
grep -q '"service_changed":\[26,28\]' "$GATTSTATE" && pass "the debt is in the .gatt file (service_changed [26,28])" \
    || bad "no service_changed [26,28] in the .gatt file"
listen_encrypted /tmp/listen4.out
wait_since "$HCI1_ADDR: bonded central $HCI1_ADDR; restored 2 subscriptions, Service Changed 0x001A-0x001C owed" 150 \
    && pass "reconnect: the bond's state restored with the Service Changed owed" || bad "reconnect: state not restored"
wait_for "indication handle 0x0008 value 1a001c00" /tmp/listen4.out 50 \
    && pass "reconnect: Service Changed indication (handle 0x0008) for 0x001A-0x001C received" || bad "reconnect: no Service Changed indication"
wait_since "$HCI1_ADDR → Handle Value Confirmation" 50 && pass "reconnect: the central's confirmation reached gattd" || bad "reconnect: no confirmation"
i=0; while grep -q '"service_changed":' "$GATTSTATE" && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
cat "$GATTSTATE"
grep -q '"service_changed":' "$GATTSTATE" && bad "the debt is still in the .gatt file after the confirmation" \
    || pass "the debt is cleared from the .gatt file after the confirmation"
kill $LISTEN 2>/dev/null; wait $LISTEN 2>/dev/null
links_closed
echo "listener:"; cat /tmp/listen4.out
since | grep -E "$HCI1_ADDR (→|←)|restored|owed"
since | grep "$HCI1_ADDR → " | grep -qv "Handle Value Confirmation" && bad "reconnect: the central sent more than the confirmation" \
    || pass "reconnect: the central sent nothing but the confirmation"

# Unbond: gattctl unbond → the bond file goes and mgmt Unpair Device makes the kernel forget the
# key: its Command Complete is Success only when the kernel removed an LTK (Not Paired otherwise,
# which gattd logs as "it had none"), and the kernel tells other mgmt sockets (Device Unpaired).
# (No encryption attempt with the forgotten key here: on this 6.1 kernel a peripheral-side
# encryption failure followed by the release of the ATT socket hits a kernel BUG in hci_chan_del.)
$GATTCTL unbond "$HCI1_ADDR"; echo "gattctl unbond rc=$?"
wait_for "hci0: the kernel forgot the keys of $HCI1_ADDR (mgmt Unpair Device)" $LOG 30 \
    && pass "unbond: the kernel removed the central's keys (mgmt Unpair Device: Success)" || bad "unbond: no Unpair Device success"
grep "the kernel forgot the keys" $LOG
[ ! -f "$BOND" ] && pass "unbond: bond file removed" || bad "unbond: bond file still there"
btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -q "MGMT Event: Device Unpaired" \
    && pass "unbond: the kernel reported Device Unpaired" || bad "unbond: no Device Unpaired in the trace"

# Pairing prompts from the kernel: with security.io_capability display_yes_no (applied on SIGHUP
# through mgmt Set IO Capability) and a DisplayYesNo, Secure Connections central, the kernel asks
# gattd to compare numbers (User Confirmation Request, Confirm_Hint 0). gattd reports the
# comparison as a pairing prompt; with no control client to answer it the daemon refuses, and
# the transport sends mgmt User Confirmation Negative Reply, so the pairing fails.
mgmt_cmds() { btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -c "MGMT Command: .*($1) .*\[hci0\]"; }   # by opcode
io_before=$(mgmt_cmds 0x0018)   # Set IO Capability
sed -i 's/^  "name": "gattd-vm",$/  "name": "gattd-vm", "security": {"io_capability": "display_yes_no"},/' gattd.json
grep -q display_yes_no gattd.json || bad "could not put io_capability into gattd.json"
reloads=$(count "config reloaded" $LOG)
kill -HUP $GATTD_PID
wait_more "config reloaded" $LOG "$reloads" 50 && pass "SIGHUP reload with security.io_capability display_yes_no" || bad "no reload"
i=0; while [ "$(mgmt_cmds 0x0018)" -le "$io_before" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -A3 "MGMT Command: Set IO Capability" | grep -q "DisplayYesNo" \
    && pass "the reload set hci0's IO capability to DisplayYesNo (mgmt Set IO Capability)" || bad "no Set IO Capability DisplayYesNo"
btmgmt -i hci1 io-cap 1 >/dev/null 2>&1
# A BR/EDR+LE adapter takes Secure Connections only with Secure Simple Pairing on (the kernel's rule).
[ "$BT5" = 1 ] && btmgmt -i hci1 ssp on >/dev/null 2>&1
btmgmt -i hci1 sc on >/dev/null 2>&1
btmgmt -i hci1 unpair -t 1 "$HCI0_ADDR" >/dev/null 2>&1   # hci1 forgets its key: it must pair again
neg_before=$(mgmt_cmds 0x001d)   # User Confirmation Negative Reply
gatt --sec-level=medium --char-read -a 0x0019
links_closed
wait_for ": numeric comparison [0-9]\{6\}" $LOG 30 && pass "the kernel's numeric comparison reached the daemon as a pairing prompt" \
    || bad "no numeric comparison prompt"
grep -E "numeric comparison|pairing needs" $LOG | tail -2
[ "$(mgmt_cmds 0x001d)" -gt "$neg_before" ] \
    && pass "the refused comparison went back to the kernel (mgmt User Confirmation Negative Reply)" \
    || bad "no User Confirmation Negative Reply from gattd"
grep -q "Characteristic value/descriptor: 73 65 63 72 65 74" /tmp/gatt.out && bad "the refused pairing still read the encrypted value" \
    || pass "the refused pairing left the encrypted characteristic unreadable"

else
    echo "INFO: bonds, restarts, unbond and pairing prompts: checked on the 4.x controllers only"
fi
# Never mixed (Core Spec Vol 4 Part E §3.1.1): on hci0 no legacy advertising command after an
# extended one. gattd sends none of either (the kernel advertises for it through mgmt); this
# checks what the kernel sent on its behalf for the whole run.
btmon -r /tmp/hci.btsnoop 2>/dev/null | awk '
    /^< HCI Command: .*\(0x08\|0x00(3[5-9a-d])\).*\[hci0\]/ { ext++ }
    /^< HCI Command: .*\(0x08\|0x000[689a]\).*\[hci0\]/ { if (ext) { mixed++; print "legacy after extended: " $0 } else legacy++ }
    END { printf "hci0 advertising commands: %d extended, %d legacy before any extended, %d legacy after\n", ext, legacy, mixed; exit mixed > 0 }' \
    && pass "no legacy advertising command on hci0 after an extended one" || bad "legacy and extended advertising commands mixed on hci0"
if [ "$BT5" = 1 ]; then
    [ "$(btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -c '^< HCI Command: LE Set Extended Advertising Enable.*\[hci0\]\|(0x08|0x0039).*\[hci0\]')" -gt 0 ] \
        && pass "the kernel advertised for gattd with extended commands on the 5.2 controller" || bad "no LE Set Extended Advertising Enable on hci0"
fi

# SIGTERM: clean exit 0.
kill $AGENT 2>/dev/null
kill -0 $GATTD_PID 2>/dev/null && pass "gattd still running at the end" || bad "gattd died"
kill -TERM $GATTD_PID 2>/dev/null
i=0; while kill -0 $GATTD_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
wait $GATTD_PID; grc=$?
[ $grc = 0 ] && pass "gattd exited 0 on SIGTERM" || bad "gattd exit status $grc on SIGTERM"
# mgmt instances outlive the process that added them: gattd removes its own as it stops.
sleep 0.3
btmon -r /tmp/hci.btsnoop 2>/dev/null | grep '^@ MGMT Command: ' | tail -3 | grep -q 'Remove Advertising' \
    && pass "gattd removed its advertising instance as it stopped" || bad "no mgmt Remove Advertising at the stop"
echo "gattd log:"; cat $LOG
grep -q "warning\|error" $LOG && echo "INFO: warnings/errors in the log:" && grep "warning\|error" $LOG

# Enhanced ATT (issue #21 item 5) on the kernel transport: only where the kernel offers
# Enhanced Credit Based mode (the bluetooth module's enable_ecred, writable at run time; gattd
# decides at start). A gattd of its own for each setting, with the config as shipped and a
# fresh state dir. The Server Supported Features value (0x2B3A, the characteristic after
# Database Hash in the GATT service; its handle read from the database) has bit 0 (EATT
# Supported) set only with enable_ecred Y. hci1's eatt_client (Tests/kernel-vm/eatt_client.c)
# opens an Enhanced Credit Based channel to PSM 0x0027 and sends ATT requests on it.
ECRED=/sys/module/bluetooth/parameters/enable_ecred
EATTCTL="./gattctl --socket /tmp/gattd-eatt.sock"
LOG=/tmp/gattd-eatt.log
: >$LOG
./mgmt_agent 1 >/tmp/agent-eatt.log 2>&1 &
AGENT=$!
btmgmt -i hci1 unpair -t 1 "$HCI0_ADDR" >/dev/null 2>&1   # no key: the first EATT channel's link stays unencrypted
eatt_start() {
    adv_before=$(count 'advertising as "gattd-vm"' $LOG)
    $GATTD --config /tmp/gattd-first.json --transport hci0 --control /tmp/gattd-eatt.sock --state-dir /tmp/gattd-eatt-state \
        --log-level debug >>$LOG 2>&1 &
    GATTD_PID=$!
    wait_more 'advertising as "gattd-vm"' $LOG "$adv_before" 150
}
eatt_stop() {
    kill -TERM $GATTD_PID 2>/dev/null
    i=0; while kill -0 $GATTD_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    wait $GATTD_PID; echo "gattd stopped: rc=$?"
}
ssf_read() { # reads Server Supported Features on the fixed channel; SSF = its value handle (4 hex digits)
    gatt --characteristics
    SSF=$(grep "uuid = 00002b3a-" /tmp/gatt.out | sed -n 's/.*char value handle = 0x\([0-9a-f]*\),.*/\1/p')
    links_closed
    if [ -n "$SSF" ]; then gatt --char-read -a "0x$SSF"; links_closed; else echo "no Server Supported Features characteristic"; : >/tmp/gatt.out; fi
}
since() { tail -n +$((mark + 1)) $LOG; }
wait_since() { # PATTERN TENTHS
    i=0; while ! since | grep -q "$1" && [ $i -lt "$2" ]; do sleep 0.1; i=$((i+1)); done
    since | grep -q "$1"
}
ecred_results() { btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -A8 "Enhanced Credit Connection Response" | grep "Result:"; }
echo N >$ECRED
eatt_start && pass "eatt: gattd started with enable_ecred $(cat $ECRED)" || bad "eatt: gattd did not start (enable_ecred N)"
grep -q "no Enhanced ATT on the kernel transport: the kernel's Enhanced Credit Based mode is off" $LOG \
    && pass "eatt: enable_ecred N: gattd says why there is no EATT" || bad "eatt: no 'no Enhanced ATT' line with enable_ecred N"
# Once: one line above debug says there is no EATT (the daemon's own follows at debug only).
[ "$(grep -v " debug " $LOG | grep -c "Enhanced ATT")" = 1 ] && pass "eatt: enable_ecred N: said once" \
    || { bad "eatt: enable_ecred N: not said exactly once above debug"; grep -v " debug " $LOG | grep "Enhanced ATT"; }
ssf_read
expect_out "Characteristic value/descriptor: 00 *$" "eatt: enable_ecred N: Server Supported Features 00 (EATT bit clear)"
grep -q "listening for Enhanced ATT" $LOG && bad "eatt: gattd listens on PSM 0x0027 with enable_ecred N" \
    || pass "eatt: enable_ecred N: no listening socket on PSM 0x0027"
eatt_stop
echo Y >$ECRED
mark=$(wc -l <$LOG)
eatt_start && pass "eatt: gattd started with enable_ecred $(cat $ECRED)" || bad "eatt: gattd did not start (enable_ecred Y)"
since | grep -q "listening for Enhanced ATT on PSM 0x0027 (Enhanced Credit Based, encrypted links only, MTU 517)" \
    && pass "eatt: enable_ecred Y: gattd listens on PSM 0x0027 (BT_MODE_EXT_FLOWCTL)" || bad "eatt: no EATT listening socket with enable_ecred Y"
ssf_read
expect_out "Characteristic value/descriptor: 01 *$" "eatt: enable_ecred Y: Server Supported Features 01 (EATT bit set)"
SSF_LE=$(echo "${SSF:-0000}" | sed 's/\(..\)\(..\)/\2\1/')
# On the unencrypted link gattd's kernel refuses the channel (BT_SECURITY medium on gattd's
# socket); this 6.1 kernel as the central then gives up (connect: Connection refused).
refused_before=$(ecred_results | grep -c "insufficient")
timeout 60 ./eatt_client -i hci1 -b "$HCI0_ADDR" 0a0300 >/tmp/eatt0.out 2>&1; rc=$?
cat /tmp/eatt0.out; ecred_results
[ $rc != 0 ] && grep -q "^connect failed" /tmp/eatt0.out && [ "$(ecred_results | grep -c "insufficient")" -gt "$refused_before" ] \
    && pass "eatt: the kernel refused the EATT channel on the unencrypted link (insufficient authentication/encryption)" \
    || bad "eatt: the EATT channel was not refused on the unencrypted link (rc=$rc)"
links_closed
# hci1 pairs (Just Works, on the fixed channel: a channel asked for while the kernel is still
# pairing was refused too now and then), then asks at BT_SECURITY medium, so its kernel
# encrypts with the new key first; Read Device Name (0x0003) and Server Supported Features on
# the EATT bearer.
gatt --sec-level=medium --char-read -a 0x0003
expect_out "Characteristic value/descriptor: 67 61 74 74 64 2d 76 6d" "eatt: hci1 paired with the EATT gattd (read at security medium)"
links_closed
timeout 60 ./eatt_client -i hci1 -b "$HCI0_ADDR" -s medium 0a0300 "0a$SSF_LE" >/tmp/eatt.out 2>&1; rc=$?
cat /tmp/eatt.out; ecred_results
grep -q "^connected cid 0x[0-9a-f]* imtu 517 omtu 517 security [23]" /tmp/eatt.out \
    && pass "eatt: hci1 opened an Enhanced Credit Based channel to PSM 0x0027 on the encrypted link (MTU 517 both ways)" \
    || bad "eatt: no EATT channel (rc=$rc)"
grep -q "^rsp 0b67617474642d766d$" /tmp/eatt.out \
    && pass "eatt: Read Request on the EATT bearer answered (Device Name gattd-vm)" || bad "eatt: no Read Response on the EATT bearer"
grep -q "^rsp 0b01$" /tmp/eatt.out && pass "eatt: Server Supported Features read on the EATT bearer: bit 0 set" \
    || bad "eatt: Server Supported Features on the EATT bearer"
since | grep -q "$HCI1_ADDR.* opened an Enhanced ATT bearer (ATT_MTU 517" && pass "eatt: gattd opened a bearer (ATT_MTU 517)" \
    || bad "eatt: no 'opened an Enhanced ATT bearer' line"
since | grep "Enhanced ATT"
wait_since "Enhanced ATT bearer closed" 50 && pass "eatt: the central closed the channel: gattd closed the bearer" \
    || bad "eatt: no 'Enhanced ATT bearer closed'"
links_closed
# The central reconfigures its channel from MTU 64 to 517 (its kernel sends the Credit Based
# Reconfigure Request, gattd's kernel answers it): the bearer's ATT_MTU follows, so a 101-byte
# Write Request to the GAP service declaration is taken as a request (Write Not Permitted),
# where at ATT_MTU 64 it is too long (Invalid PDU).
LONG="120100$(printf '00%.0s' $(seq 98))"
timeout 60 ./eatt_client -i hci1 -b "$HCI0_ADDR" -s medium -m 64 "$LONG" >/tmp/eatt-r0.out 2>&1
cat /tmp/eatt-r0.out
links_closed
mark=$(wc -l < $LOG)
timeout 60 ./eatt_client -i hci1 -b "$HCI0_ADDR" -s medium -m 64 -r 517 "$LONG" >/tmp/eatt-r1.out 2>&1
cat /tmp/eatt-r1.out
links_closed
grep -q "^rsp 0112000004$" /tmp/eatt-r0.out && grep -q "^reconfigured imtu 517$" /tmp/eatt-r1.out \
    && grep -q "^rsp 0112010003$" /tmp/eatt-r1.out \
    && pass "eatt: a reconfigured channel's larger MTU is the bearer's ATT_MTU (101-byte Write Request: Invalid PDU at 64, Write Not Permitted at 517)" \
    || bad "eatt: the bearer's ATT_MTU did not follow the channel's reconfiguration"
# gattd logs the reconfiguration when it saw the channel at MTU 64 first; when the kernel had
# answered the Reconfigure before gattd accepted the socket, the bearer opens at 517 instead.
since | grep -qE "the central reconfigured the channel: ATT_MTU 517|opened an Enhanced ATT bearer \(ATT_MTU 517" \
    && pass "eatt: gattd logged the reconfigured bearer's ATT_MTU 517" \
    || bad "eatt: no 'reconfigured the channel' or 'opened ... (ATT_MTU 517' line for the reconfigured channel"
# The link goes (gattctl disconnect) while a bearer is open: the channel goes with it.
timeout 60 ./eatt_client -i hci1 -b "$HCI0_ADDR" -s medium -w 30 0a0300 >/tmp/eatt2.out 2>&1 &
E2=$!
if wait_for "^rsp 0b" /tmp/eatt2.out 300; then
    before=$(count ' disconnected: ' $LOG)
    $EATTCTL disconnect "$HCI1_ADDR"; echo "gattctl disconnect rc=$?"
    wait_for "closed by the peer" /tmp/eatt2.out 100 && wait_more ' disconnected: ' $LOG "$before" 50 \
        && pass "eatt: gattctl disconnect dropped the link and its EATT channel" || bad "eatt: EATT channel not closed with its link"
else
    bad "eatt: second EATT channel"
fi
wait $E2 2>/dev/null; cat /tmp/eatt2.out
links_closed
kill -0 $GATTD_PID 2>/dev/null && pass "eatt: gattd still running" || bad "eatt: gattd died"
eatt_stop
echo N >$ECRED
kill $AGENT 2>/dev/null
grep -E "warning|error" $LOG | head -5

# Advertising sets (gattd-sets.json, the config of the issue): the primary "SetsA" (connectable),
# an iBeacon and a 120-byte extended set, each its own mgmt instance. A central connects to the
# primary; the other sets stay on the air. A 4.x controller has no extended advertising: the
# issue's config is a config error at start there (exit 65, naming the set), and the primary and
# the iBeacon (gattd-sets-legacy.json) take turns, the kernel giving each instance a slice.
SLOG=/tmp/gattd-sets.log
SETS_CONFIG=gattd-sets.json
if [ "$BT5" = 0 ]; then
    $GATTD --config gattd-sets.json --transport hci0 --control /tmp/gattd-sets.sock >/tmp/gattd-sets-65.log 2>&1; rc=$?
    [ $rc = 65 ] && grep -q "gattd-sets.json: advertising_sets\[1\].extended: extended advertising PDUs need LE Extended Advertising" /tmp/gattd-sets-65.log \
        && pass "sets: the extended set is a config error at start on a 4.x controller (exit 65, naming the set)" \
        || { bad "sets: exit $rc on a 4.x controller"; cat /tmp/gattd-sets-65.log; }
    SETS_CONFIG=gattd-sets-legacy.json
fi
$GATTD --config $SETS_CONFIG --transport hci0 --control /tmp/gattd-sets.sock --log-level debug >$SLOG 2>&1 &
SETS_PID=$!
wait_for 'advertising as "SetsA"' $SLOG 150 && pass "sets: the primary set advertises" || bad "sets: the primary set did not start"
wait_for 'advertising set "beacon" on the air' $SLOG 50 && pass "sets: the iBeacon set is on the air" || bad "sets: no iBeacon set"
if [ "$BT5" = 1 ]; then
    wait_for 'advertising set "long" on the air' $SLOG 50 && pass "sets: the 120-byte extended set is on the air" || bad "sets: no extended set"
    ./gattctl --socket /tmp/gattd-sets.sock status >/tmp/sets-status.txt 2>&1
    grep -q 'set beacon: advertising, legacy PDUs' /tmp/sets-status.txt && grep -q 'set long: advertising, extended PDUs' /tmp/sets-status.txt \
        && pass "sets: gattctl status shows the iBeacon and the extended set advertising" || { bad "sets: status"; cat /tmp/sets-status.txt; }
    btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -A3 'MGMT Command: Add Extended Adv.* (0x0054)' | grep -q 'Instance: 3' \
        && pass "sets: each set is a kernel instance (instance 3 added)" || bad "sets: no instance 3"
    # btvirt 5.66 crashed (segfault, hci0 and hci1 gone) when hci1 scanned while the 120-byte
    # extended set was on the air, in the one run that tried: hci1 scans with it off (the
    # advertise op per set), the primary set and the iBeacon on.
    ./gattctl --socket /tmp/gattd-sets.sock advertise off --set long \
        && wait_for 'advertising set "long" stopped' $SLOG 50 && pass "sets: advertise off --set long stops that set only" \
        || bad "sets: advertise off --set long"
    timeout 6 btmgmt -i hci1 find -l >/dev/null 2>&1
    btmon -r /tmp/hci.btsnoop 2>/dev/null >/tmp/sets-trace.txt
    grep -A40 'LE Extended Advertising Report' /tmp/sets-trace.txt | grep -q 'Name (complete): SetsA' \
        && pass "sets: hci1's extended scan saw the primary set" || bad "sets: hci1 did not see SetsA"
    # btvirt reports one advertising event per advertiser when scanning starts, so hci1 may see
    # only one of hci0's sets here: reported, not required (btmon shows an iBeacon's UUID
    # byte-reversed, so the check is its "Type: iBeacon" line).
    grep -A40 'LE Extended Advertising Report' /tmp/sets-trace.txt | grep -q 'Type: iBeacon' \
        && echo "INFO: sets: hci1's extended scan saw the iBeacon too" || echo "INFO: sets: btvirt reported only one of hci0's sets to hci1"
    beacon_removes() { btmon -r /tmp/hci.btsnoop 2>/dev/null | grep -A1 'MGMT Command: Remove Advertising' | grep -c 'Instance: 2'; }
    removes_before=$(beacon_removes)
    timeout 20 gatttool -i hci1 -b "$HCI0_ADDR" -t public --char-read -a 0x0003 >/tmp/gatt.out 2>&1
    grep -q "Characteristic value/descriptor" /tmp/gatt.out && pass "sets: a central connected to the primary set and read" || bad "sets: read through the primary set"
    sleep 1
    [ "$(beacon_removes)" = "$removes_before" ] && ! grep -q 'advertising set "beacon" stopped' $SLOG \
        && pass "sets: the iBeacon stayed on the air through the connection" || bad "sets: the iBeacon was stopped by the connection"
    # hci1 sees a second set of hci0 too: btvirt reports one set per advertiser to a scan, so
    # with the primary set off (the advertise op) a new extended scan receives the iBeacon.
    stops=$(grep -c 'info advertising stopped' $SLOG)
    ./gattctl --socket /tmp/gattd-sets.sock advertise off
    i=0; while [ "$(grep -c 'info advertising stopped' $SLOG)" = "$stops" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    trace_lines=$(btmon -r /tmp/hci.btsnoop 2>/dev/null | wc -l)
    timeout 6 btmgmt -i hci1 find -l >/dev/null 2>&1
    btmon -r /tmp/hci.btsnoop 2>/dev/null | tail -n +$((trace_lines + 1)) >/tmp/sets-trace2.txt
    grep -A40 'LE Extended Advertising Report' /tmp/sets-trace2.txt | grep -q 'Type: iBeacon' \
        && pass "sets: with the primary off, hci1's extended scan saw the iBeacon (a second set of hci0)" \
        || { bad "sets: hci1 did not see the iBeacon"; grep -A40 'LE Extended Advertising Report' /tmp/sets-trace2.txt | head -60; }
else
    grep -q "the 2 advertising sets take turns on the air" $SLOG && pass "sets: gattd says the sets take turns on a 4.x controller" \
        || bad "sets: no take-turns line"
    ./gattctl --socket /tmp/gattd-sets.sock status --json >/tmp/sets-status.json 2>&1
    grep -q '"sets_take_turns":true' /tmp/sets-status.json && pass "sets: status says the sets take turns" || { bad "sets: status sets_take_turns"; cat /tmp/sets-status.json; }
fi
kill -TERM $SETS_PID 2>/dev/null
i=0; while kill -0 $SETS_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
wait $SETS_PID; src=$?
[ $src = 0 ] && pass "sets: gattd exited 0" || bad "sets: gattd exit status $src"
grep -E "warning|error" $SLOG | head -5

# Profiles (docs/profiles.md) on the kernel transport: they drive gattd only through its control
# socket, so they must work here as on H4. Battery Level follows a capacity file and is notified
# on change; Device Information is read; the console runs /bin/cat on a pty for hci1 (subscribe
# to TX 0x001A, type "hi\n" into RX 0x0016: the terminal's echo and cat's copy come back), and
# hci1's disconnect hangs the session up (SIGHUP). A state directory of its own: the default one
# holds the sets section's choices (its primary set turned off), which state restoration would
# bring back.
PLOG=/tmp/gattd-profiles.log
echo 57 >/tmp/capacity
cat >/tmp/profiles.json <<'JSON'
{"name": "gattd-profiles", "services": [
  {"profile": "battery", "capacity_file": "/tmp/capacity", "poll_interval_s": 0.2},
  {"profile": "uart_console", "security": "none", "command": ["/bin/cat"]},
  {"profile": "device_information", "system": false, "manufacturer": "ACME"}]}
JSON
$GATTD --config /tmp/profiles.json --transport hci0 --control /tmp/gattd-profiles.sock --state-dir /tmp/gattd-profiles-state --log-level debug >$PLOG 2>&1 &
PROF_PID=$!
wait_for 'advertising as "gattd-profiles"' $PLOG 300 && pass "profiles: gattd serves the profiles on the kernel transport" \
    || { bad "profiles: gattd did not start advertising"; tail -60 $PLOG; btmgmt -i hci0 info; }
wait_for 'battery: battery_level follows /tmp/capacity' $PLOG 50 && pass "profiles: the battery agent follows the capacity file" \
    || bad "profiles: no battery agent"
gatt --char-read --uuid=2a29
expect_out "41 43 4d 45" "profiles: Device Information's manufacturer (ACME) read"
gatt --char-read --uuid=2a19
expect_out "value: 39" "profiles: Battery Level 57 % read"
./att_listen -i hci1 -b "$HCI0_ADDR" -L -w 0x0013:0100 -w 0x001a:0100 -w 0x0016:68690a 8 >/tmp/profiles-listen.out 2>&1 &
LISTEN=$!
wait_for 'console: session for' $PLOG 100 && pass "profiles: hci1 subscribed to TX and got a console session" || bad "profiles: no console session"
echo 42 >/tmp/capacity
wait_for "notification handle 0x0012 value 2a" /tmp/profiles-listen.out 50 && pass "profiles: Battery Level 42 % notified on change" \
    || bad "profiles: no Battery Level notification"
i=0; while [ "$(grep 'notification handle 0x0019' /tmp/profiles-listen.out | sed 's/.*value //' | tr -d '\n')" != "68690d0a68690d0a" ] && [ $i -lt 50 ]; do
    sleep 0.1; i=$((i+1)); done
[ "$(grep 'notification handle 0x0019' /tmp/profiles-listen.out | sed 's/.*value //' | tr -d '\n')" = "68690d0a68690d0a" ] \
    && pass "profiles: the console echoed \"hi\" and cat printed it (TX notifications)" || bad "profiles: console output"
kill $LISTEN 2>/dev/null; wait $LISTEN 2>/dev/null
cat /tmp/profiles-listen.out
wait_for "console: the program of $HCI1_ADDR's session (pid [0-9]*) was killed by signal 1" $PLOG 100 \
    && pass "profiles: hci1's disconnect hung the session up (SIGHUP)" || bad "profiles: the session was not hung up"
kill -TERM $PROF_PID 2>/dev/null
i=0; while kill -0 $PROF_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
wait $PROF_PID; prc=$?
[ $prc = 0 ] && pass "profiles: gattd exited 0" || bad "profiles: gattd exit status $prc"
grep -E "console:|battery:|warning|error" $PLOG | head -20

# ---- beside bluetoothd (the BlueZ back end, docs/bluez.md): Debian's dbus-daemon and bluetoothd
# (put in the image by scripts/kernel-vm-test) run now, last, since they take both adapters.
echo "== beside bluetoothd"
mkdir -p /run/dbus /var/lib/bluetooth /etc/bluetooth
dbus-daemon --config-file=/share/dbus.conf --nofork --nopidfile >/tmp/dbus.log 2>&1 &
i=0; while [ ! -S /run/dbus/system_bus_socket ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket
# No bluetoothd yet: gattd says so, and what to do.
./gattd --probe --transport bluez >/tmp/bz-none.out 2>&1; rc=$?
[ $rc = 69 ] && grep -q "bluetoothd is not running (org.bluez is not on the system bus)" /tmp/bz-none.out \
    && pass "bluez: without bluetoothd the probe says so (rc=69)" || { bad "bluez: probe without bluetoothd (rc=$rc)"; cat /tmp/bz-none.out; }
# No --transport and no bluetoothd on the bus: the kernel transport, and why.
./gattd --probe >/tmp/bz-default.out 2>&1
grep -q "no --transport: bluetoothd is not running: gattd serves through the kernel" /tmp/bz-default.out \
    && pass "bluez: with no --transport and no bluetoothd, gattd takes the kernel (and says why)" || { bad "bluez: default without bluetoothd"; cat /tmp/bz-default.out; }
bluetoothd -n -d >/tmp/bluetoothd.log 2>&1 &
BZ_PID=$!
i=0; while ! bluetoothctl list 2>/dev/null | grep -q "$HCI1_ADDR" && [ $i -lt 100 ]; do sleep 0.2; i=$((i+1)); done
./gattd --probe --transport bluez:hci0 >/tmp/bz-probe.out 2>&1; rc=$?
cat /tmp/bz-probe.out
[ $rc = 0 ] && grep -q "^controller $HCI0_ADDR at bluez:hci0, through bluetoothd 5.66 on the system bus" /tmp/bz-probe.out \
    && grep -q "GattManager1: applications can be registered" /tmp/bz-probe.out \
    && grep -Eq "^  advertising  [0-9]+ instances" /tmp/bz-probe.out \
    && pass "bluez: gattd --probe reads hci0 through bluetoothd (GATT manager, advertising instances)" || bad "bluez: probe (rc=$rc)"
./gattd --check-config /tmp/gattd-first.json --probe --transport bluez:hci0 >/tmp/bz-check.out 2>&1; rc=$?
[ $rc = 0 ] && grep -Eq "advertising sets? fit this controller" /tmp/bz-check.out \
    && pass "bluez: --check-config --probe checks the config's set against bluetoothd's instances" || { bad "bluez: check-config against bluetoothd (rc=$rc)"; cat /tmp/bz-check.out; }
./gattd --probe --transport bluez:hci7 >/tmp/bz-missing.out 2>&1; rc=$?
[ $rc = 69 ] && grep -q "bluetoothd has no adapter hci7 (it has hci0, hci1)" /tmp/bz-missing.out \
    && pass "bluez: an adapter bluetoothd lacks is named with those it has (rc=69)" || { bad "bluez: missing adapter (rc=$rc)"; cat /tmp/bz-missing.out; }

# Serving through bluetoothd: gattd registers its database and its advertising set over D-Bus;
# gatttool on hci1 reads, writes and subscribes through bluetoothd's ATT server on hci0.
btmgmt -i hci1 power on >/dev/null 2>&1   # bluetoothd powered the adapters off at start
BZLOG=/tmp/gattd-bz.log
BZCTL="./gattctl --socket /tmp/bz.sock"
bz_links_closed() {
    i=0; while [ "$(count ' connected: ' $BZLOG)" != "$(count ' disconnected: ' $BZLOG)" ] && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i+1)); done
}
BZ_TRANSPORT="--transport bluez:hci0"
BZ_CONFIG=/share/gattd-bluez.json
start_bz() {
    $GATTD --config $BZ_CONFIG $BZ_TRANSPORT --log-level debug --state-dir /tmp/bz-state --control /tmp/bz.sock >>$BZLOG 2>&1 &
    BZG=$!
}
start_bz
if wait_for "GATT application registered with bluetoothd on hci0" $BZLOG 200; then
    pass "bluez: gattd registered its GATT application with bluetoothd"
else
    bad "bluez: no GATT application registered"; tail -40 $BZLOG; grep -i "gatt\|error" /tmp/bluetoothd.log | tail -30
fi
wait_for 'advertising as "gattd-bz"' $BZLOG 100 && pass "bluez: advertising set registered with bluetoothd" \
    || { bad "bluez: not advertising"; tail -20 $BZLOG; }
$BZCTL status >/tmp/bz-status.txt 2>&1
grep -q "^via  *hci0 $HCI0_ADDR through bluetoothd 5.66; through it notify reaches every subscribed central" /tmp/bz-status.txt \
    && pass "bluez: gattctl status says gattd reaches hci0 through bluetoothd, and what that cannot do" || { bad "bluez: status"; cat /tmp/bz-status.txt; }
gatt --char-read --uuid=ffb1
expect_out "62 65 73 69 64 65 20 62 6c 75 65 74 6f 6f 74 68 64" "bluez: hci1 read \"beside bluetoothd\" through bluetoothd's ATT server"
gatt --characteristics
cat /tmp/gatt.out
vhandle() { grep "uuid = 0000$1-" /tmp/gatt.out | sed 's/.*char value handle = \(0x[0-9a-f]*\).*/\1/' | head -1; }
KEPT=$(vhandle ffb2); LEVEL=$(vhandle ffb3); ALERT=$(vhandle ffb6)
echo "kept=$KEPT level=$LEVEL (gattd's: 0x0014, 0x0016)"
grep "higher\|places them itself" $BZLOG | head -5
# bluetoothd 5.66's own services (GAP, GATT, Device Information) hold gattd's 0x0010...:
# gattd asks for its layout 0x0100 higher, the same on every start.
[ "$KEPT" = 0x0114 ] && [ "$LEVEL" = 0x0116 ] && pass "bluez: gattd's layout 0x0100 above its own handles (bluetoothd holds 0x0010)" \
    || bad "bluez: handles kept=$KEPT level=$LEVEL, wanted 0x0114 and 0x0116"
gatt --char-write-req -a "$KEPT" -n 2a
expect_out "Characteristic value was written successfully" "bluez: a persisted value written through bluetoothd"
kill -TERM $BZG; wait $BZG
# Started again with no --transport: bluetoothd runs, so gattd serves beside it.
BZ_TRANSPORT=""
before=$(count "GATT application registered with bluetoothd on hci0" $BZLOG)
start_bz
wait_more "GATT application registered with bluetoothd on hci0" $BZLOG "$before" 200
grep -q "no --transport: bluetoothd is running: gattd serves beside it" $BZLOG \
    && pass "bluez: with no --transport and bluetoothd running, gattd serves beside it (and says why)" || bad "bluez: the default with bluetoothd"
gatt --characteristics
[ "$(vhandle ffb2)" = "$KEPT" ] && [ "$(vhandle ffb3)" = "$LEVEL" ] && pass "bluez: the handles are the same after gattd restarts (bonded centrals' caches stay valid)" \
    || { bad "bluez: handles moved on restart"; cat /tmp/gatt.out; }
gatt --char-read -a "$KEPT"
expect_out "Characteristic value/descriptor: 2a" "bluez: the written value survived a restart (durable before acknowledged)"
CCCD=$(printf '0x%04x' $(( LEVEL + 1 )))
timeout 40 gatttool -i hci1 -b "$HCI0_ADDR" -t public --char-write-req -a "$CCCD" -n 0100 --listen >/tmp/bz-listen.out 2>&1 &
BZL=$!
if wait_for "centrals subscribed (bluetoothd's StartNotify" $BZLOG 150; then
    pass "bluez: hci1's subscription reached gattd (StartNotify)"
    $BZCTL notify level 07; echo "gattctl notify rc=$?"
    wait_for "Notification handle = $LEVEL value: 07" /tmp/bz-listen.out 100 \
        && pass "bluez: gattctl notify reached hci1 through bluetoothd" || bad "bluez: no notification"
else
    bad "bluez: no StartNotify"
fi
kill $BZL 2>/dev/null; wait $BZL 2>/dev/null
cat /tmp/bz-listen.out
# An indication: hci1 enables indications of "alert" (gatttool confirms each); bluetoothd's
# Confirm is the `confirmed` event a watcher gets, naming hci1 (the one central connected).
$BZCTL watch --json >/tmp/bz-watch.out 2>&1 &
BZW=$!
wait_for "control client [0-9]* watches" $BZLOG 50
subs=$(count "centrals subscribed (bluetoothd's StartNotify" $BZLOG)
timeout 40 gatttool -i hci1 -b "$HCI0_ADDR" -t public --char-write-req -a "$(printf '0x%04x' $(( ALERT + 1 )))" -n 0200 --listen >/tmp/bz-ind.out 2>&1 &
BZL=$!
if wait_more "centrals subscribed (bluetoothd's StartNotify" $BZLOG "$subs" 150; then
    $BZCTL notify alert 05; echo "gattctl notify alert rc=$?"
    wait_for "Indication.*handle = $ALERT value: 05" /tmp/bz-ind.out 100 && pass "bluez: gattctl notify indicated hci1 through bluetoothd" || bad "bluez: no indication"
    wait_for '"event": *"confirmed"' /tmp/bz-watch.out 100 && grep '"confirmed"' /tmp/bz-watch.out | grep "alert" | grep -q "$HCI1_ADDR" \
        && pass "bluez: hci1's confirmation reached the watcher (bluetoothd's Confirm: a confirmed event naming hci1)" || bad "bluez: no confirmed event"
else
    bad "bluez: no StartNotify for the indication"
fi
kill $BZL $BZW 2>/dev/null; wait $BZL $BZW 2>/dev/null
cat /tmp/bz-ind.out /tmp/bz-watch.out
# Two advertising sets: the primary (hci1 connects through it) and a non-connectable beacon,
# each an LEAdvertisement1. btvirt reports one set per advertiser to a scan, so hci1 scans
# with the primary off (the advertise op) and must see the beacon's manufacturer data.
# hci1 scans through its bluetoothd (bluetoothctl on hci1) with the primary set off, then asks
# bluetoothd what each device it found advertised: the beacon's manufacturer data (0xFFFF).
# (btmon -r has crashed reading the trace once bluetoothd's traffic is in it, and btmgmt's
# report is lost when its output is a file.)
wait_for 'advertising set "beacon" on the air' $BZLOG 50 && pass "bluez: a second advertising set registered with bluetoothd" || bad "bluez: no beacon set"
bz_links_closed
$BZCTL advertise off && wait_for "info advertising stopped" $BZLOG 50
# (A discovery filter, transport le: else bluetoothd drops advertisers without discoverable
# flags, as a broadcaster is, adapter.c device_is_discoverable.)
# One bluetoothctl session (fed through a FIFO): bluetoothd forgets the devices a discovery
# found when the session that asked for it leaves.
rm -f /tmp/btc.in; mkfifo /tmp/btc.in
timeout 60 bluetoothctl </tmp/btc.in >/tmp/bz-scan.txt 2>&1 &
BTC=$!
exec 7>/tmp/btc.in
{ echo "select $HCI1_ADDR"; sleep 0.5; echo "menu scan"; echo "transport le"; echo "back"; sleep 0.3; } >&7
# Until a device other than hci0's public address is found (the beacon's NRPA). btvirt reports
# an advertiser to a scan as it starts, and has reported none at times (on 5.2 controllers, and
# once in three scans on 4.x ones): up to five scans, each stopped (and seen stopped) before the next.
beacon_found() { grep "NEW.*Device" /tmp/bz-scan.txt 2>/dev/null | grep -qv "$HCI0_ADDR"; }
for round in 1 2 3 4 5; do
    stopped=$(count "Discovering: no" /tmp/bz-scan.txt)
    echo "scan on" >&7
    i=0; while ! beacon_found && [ $i -lt 60 ]; do sleep 0.1; i=$((i+1)); done
    beacon_found && break
    echo "scan off" >&7
    wait_more "Discovering: no" /tmp/bz-scan.txt "$stopped" 50
done
found=$(grep -o "Device [0-9A-F:]\{17\}" /tmp/bz-scan.txt | awk '{print $2}' | sort -u)
for a in $found; do echo "info $a" >&7; sleep 0.3; done
{ echo "scan off"; sleep 0.3; echo "quit"; } >&7
exec 7>&-
wait $BTC 2>/dev/null
cp /tmp/bz-scan.txt /tmp/bz-info.txt
rm -f /tmp/btc.in
echo "hci1 found: $found"
# (Required on the 4.x controllers; on 5.2 ones btvirt has reported hci0's extended sets to
# bluetoothd's scan in some runs and none in others, so there it is reported, not required.)
if grep -q "ManufacturerData Key: 0xffff" /tmp/bz-info.txt; then
    pass "bluez: hci1's scan saw the beacon set (its manufacturer data: a second set of hci0 through bluetoothd)"
elif [ "$BT5" = 1 ]; then
    echo "INFO: bluez: btvirt reported no extended set of hci0 to hci1's scan this time"
else
    bad "bluez: hci1 did not see the beacon"; grep -v "1;39m" /tmp/bz-info.txt | tail -40
fi
ads=$(count 'advertising as "gattd-bz"' $BZLOG)
$BZCTL advertise on && wait_more 'advertising as "gattd-bz"' $BZLOG "$ads" 100 || bad "bluez: the primary set did not come back"
# An app's L2CAP channel beside bluetoothd: gattd listens on a kernel LE socket (bluetoothd
# has no app's PSM), hci1's l2test echoes through `gattctl l2cap serve echo`.
# 4.x controllers only: on 5.2 ones the guest kernel BUGs (list corruption in hci_chan_del, from
# l2cap_sock_release) as the link under l2test's channel and bluetoothd's GATT client goes down.
if [ "$BT5" = 0 ]; then
    $BZCTL l2cap serve echo --exec 'echo "env: $GATTD_CENTRAL $GATTD_PSM" >&2; exec cat' >/tmp/bz-echo.log 2>&1 &
    BZE=$!
    wait_for 'listening for L2CAP channel "echo" on PSM 129' $BZLOG 100 && pass "bluez: gattd listens for PSM 129 beside bluetoothd" || bad "bluez: no L2CAP listener"
    bz_links_closed
    l2test_y 129 3 100 /tmp/bz-l2.out
    cat /tmp/bz-echo.log
    [ "$(count 'Received 100 bytes' /tmp/bz-l2.out)" = 3 ] && pass "bluez: gattctl l2cap echo beside bluetoothd (3 SDUs of 100 bytes back)" || bad "bluez: l2cap echo"
    grep -q "env: $HCI1_ADDR 129" /tmp/bz-echo.log && pass "bluez: the channel's central is hci1 (its Device1)" || bad "bluez: the channel's central"
    kill $BZE 2>/dev/null; wait $BZE 2>/dev/null
    # bluetoothd on hci1 put its own GATT client's ATT channel on l2test's link, which keeps it up
    # (and a central's ATT connect on it busy): hci1 drops the link.
    btmgmt -i hci1 disconnect -t 1 "$HCI0_ADDR" >/dev/null 2>&1
    bz_links_closed
else
    echo "INFO: bluez: L2CAP channels beside bluetoothd: checked on the 4.x controllers only"
fi
# A control characteristic answered by a program on the control socket (gattctl serve):
# reads get its output, a refused write gets its ATT error through bluetoothd.
$BZCTL serve --utf8 --exec '[ "$GATTD_OP" = read ] && printf "answered by gattctl" || { echo write_not_permitted; exit 1; }' >/tmp/bz-serve.log 2>&1 &
BZS=$!
wait_for "a responder answers control characteristics now" $BZLOG 50
gatt --char-read --uuid=ffb4
expect_out "61 6e 73 77 65 72 65 64 20 62 79 20 67 61 74 74 63 74 6c" "bluez: a control characteristic read answered by gattctl serve through bluetoothd"
gatt --char-write-req -a "$(printf '0x%04x' $(( KEPT + 5 )))" -n 01
expect_out "Attribute can't be written" "bluez: the program's write_not_permitted reached the central as Write Not Permitted"
kill $BZS 2>/dev/null; wait $BZS 2>/dev/null
# A service added at run time: bluetoothd takes the application again. (After hci1's idle
# link closed: the 6.1 guest kernel has hit a list corruption BUG in hci_chan_del when
# bluetoothd closed its ATT socket for a link going down while it swapped the application.)
bz_links_closed
cat >/tmp/bz-added.json <<'JSON'
{ "id": "added", "uuid": "FFC0", "characteristics": [ { "uuid": "FFC1", "properties": ["read"], "value": { "utf8": "added" } } ] }
JSON
$BZCTL add-service /tmp/bz-added.json; echo "gattctl add-service rc=$?"
wait_for "GATT application registered again with bluetoothd" $BZLOG 50
gatt --char-read --uuid=ffc1
expect_out "61 64 64 65 64" "bluez: a service added at run time is served through bluetoothd"
# bluetoothd restarts: gattd says so, waits, and registers everything again without restarting.
before=$(count "GATT application registered with bluetoothd" $BZLOG)
kill -TERM $BZ_PID; wait $BZ_PID 2>/dev/null
# (bluetoothd powers its adapters off as it exits: gattd may hear that first.)
wait_for "bluetoothd left the system bus\|hci0 was powered off" $BZLOG 50 && pass "bluez: gattd noticed bluetoothd leaving" || bad "bluez: bluetoothd's exit not noticed"
bluetoothd -n -d >>/tmp/bluetoothd.log 2>&1 &
BZ_PID=$!
i=0; while ! bluetoothctl list 2>/dev/null | grep -q "$HCI1_ADDR" && [ $i -lt 100 ]; do sleep 0.2; i=$((i+1)); done
btmgmt -i hci1 power on >/dev/null 2>&1
wait_more "GATT application registered with bluetoothd" $BZLOG "$before" 300 \
    && pass "bluez: gattd registered again after bluetoothd restarted (no gattd restart)" || { bad "bluez: not registered again"; tail -20 $BZLOG; }
gatt --char-read -a "$KEPT"
expect_out "Characteristic value/descriptor: 2a" "bluez: the same handles and values after bluetoothd restarted"
# Pairing through gattd's agent: bluetoothd enforces encrypt-read, hci1 pairs (Just Works,
# which gattd's default agent accepts as its other transports do), then reads. Last: on -l2
# controllers the 6.1 guest kernel has hit a BUG (list corruption in hci_chan_del, from
# bluetoothd's l2cap_sock_release) when a link went down after this pairing, so nothing
# after it waits on a link closing or on bluetoothd.
wait_for "gattd is bluetoothd's default pairing agent (NoInputNoOutput)" $BZLOG 50 \
    && pass "bluez: gattd is bluetoothd's default pairing agent" || { bad "bluez: no agent"; grep -i agent $BZLOG; }
# Pairing with gattd serving the primary set only (restarted without the beacon): while the
# kernel also advertised the non-connectable beacon from a random address, pairing through the
# connectable set failed (Authentication Failed) in about one run in two, both sides having
# confirmed; the kernel takes the responder's address type from the last set it configured
# (hci_event.c le_conn_update_addr: hdev->adv_addr_type), and turning the beacon off was not
# enough on 5.2 controllers.
kill -TERM $BZG; wait $BZG
sed '/"advertising_sets"/,/^  \],$/d' /share/gattd-bluez.json >/tmp/gattd-bz-one-set.json
BZ_CONFIG=/tmp/gattd-bz-one-set.json
agents=$(count "gattd is bluetoothd's default pairing agent" $BZLOG)
start_bz
wait_more "gattd is bluetoothd's default pairing agent" $BZLOG "$agents" 200
gatt --sec-level=medium --char-read --uuid=ffb5
# On 5.2 controllers bluetoothd has once answered the read before it saw the link encrypted,
# the pairing (through gattd's agent) completing just after: then the read is made again on
# the encrypted link, once the bond is reported (with no bond, it fails as before).
if grep -q "Encryption required" /tmp/gatt.out && wait_for "$HCI1_ADDR: paired and bonded" $BZLOG 50; then
    echo "INFO: bluez: the read raced its own pairing (Encryption required, then bonded): reading again"
    gatt --sec-level=medium --char-read --uuid=ffb5
fi
expect_out "73 65 61 6c 65 64" "bluez: an encrypted characteristic read after pairing through gattd's agent"
grep -q "73 65 61 6c 65 64" /tmp/gatt.out || { grep -iE "agent|pair|bond" $BZLOG | tail -20; grep -iE "agent|pair|bond|auth|smp|confirm" /tmp/bluetoothd.log | tail -30; }
# bluetoothd's bond (Device1.Bonded) is gattd's bond event and in `gattctl bonds`.
wait_for "$HCI1_ADDR: paired and bonded as $HCI1_ADDR" $BZLOG 50 && pass "bluez: bluetoothd's bond reported as gattd's (Device1.Bonded)" || bad "bluez: no bond reported"
$BZCTL bonds >/tmp/bz-bonds.out 2>&1; cat /tmp/bz-bonds.out
grep -q "$HCI1_ADDR" /tmp/bz-bonds.out && pass "bluez: gattctl bonds lists hci1" || bad "bluez: gattctl bonds"
if [ "$BT5" = 0 ]; then
    # gattctl unbond: bluetoothd forgets the device (Adapter1.RemoveDevice). (4.x only: on
    # -l2 the link teardown after this pairing has hit the guest kernel's BUG.)
    $BZCTL unbond "$HCI1_ADDR"; echo "gattctl unbond rc=$?"
    wait_for "bluetoothd removed the device and its bond" $BZLOG 50 \
        && pass "bluez: gattctl unbond removed hci1's bond from bluetoothd" || bad "bluez: unbond"
fi
kill -TERM $BZG; wait $BZG; rc=$?
[ $rc = 0 ] && pass "bluez: gattd exited 0" || bad "bluez: gattd exit status $rc"
grep -E "warning|error|bluez|bluetoothd" $BZLOG | head -30
kill $BZ_PID 2>/dev/null   # not waited for (see the pairing check)

echo "$P passed, $F failed"
[ $F = 0 ]
