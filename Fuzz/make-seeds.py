#!/usr/bin/env python3
"""Writes the binary seed corpora in Fuzz/corpus/att and Fuzz/corpus/host
(formats: Fuzz/Sources/FuzzATT and FuzzHost). Rerun after changing a format."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    with open(os.path.join(HERE, "corpus", target, name), "wb") as f:
        f.write(bytes(data))


# --- ATT: 3 setup bytes (config, control mask, MTU/2), then operations ---------
def pdu(b, conn=0):  # op 0..8: a PDU with a length byte
    return [conn << 4, len(b)] + list(b)


def u16(v):
    return list(struct.pack("<H", v))


GATT_FULL, FULL_EXAMPLE, HEART_RATE = 3, 1, 0
discovery = (
    pdu([0x02] + u16(247))  # Exchange MTU
    + pdu([0x10] + u16(1) + u16(0xFFFF) + u16(0x2800))  # primary services
    + pdu([0x10] + u16(1) + u16(0xFFFF) + u16(0x2801))  # secondary services
    + pdu([0x08] + u16(1) + u16(0xFFFF) + u16(0x2803))  # characteristics
    + pdu([0x08] + u16(1) + u16(0xFFFF) + u16(0x2802))  # includes
    + pdu([0x04] + u16(1) + u16(0xFFFF))  # descriptors
    + pdu([0x06] + u16(1) + u16(0xFFFF) + u16(0x2800) + u16(0x180F))
    + pdu([0x0A] + u16(3)) + pdu([0x0C] + u16(3) + u16(1))
    + pdu([0x0E] + u16(3) + u16(5)) + pdu([0x20] + u16(3) + u16(5))
)
writes = (
    pdu([0x12] + u16(0x13) + [1, 0])  # a CCCD, maybe
    + pdu([0x52] + u16(0x10) + [7])  # Write Command
    + pdu([0x16] + u16(0x19) + u16(0) + [1, 2, 3]) + pdu([0x16] + u16(0x19) + u16(3) + [4])
    + pdu([0x18, 0x01]) + pdu([0x18, 0x00])
    + [0x0B, 5, 2, 0xAA, 0xBB]  # notify characteristic 5
    + [0x0C]  # confirm
    + [0x0D, 50]  # 5 s later
)
write("att", "discovery-gatt-full", [GATT_FULL, 0x00, 0xFF] + discovery)
write("att", "discovery-mtu23", [HEART_RATE, 0x00, 0x00] + discovery)
write("att", "writes-gatt-full", [GATT_FULL, 0x00, 0x20] + writes)
write("att", "control-full-example", [FULL_EXAMPLE, 0xFF, 0x40] + discovery[:30] + writes
      + [0x0A, 2, 9, 9] + [0x2A, 0x0E] + pdu([0x0A] + u16(0x10), 1) + [0x0D, 100])
write("att", "two-connections", [GATT_FULL, 0x81, 0x10] + pdu([0x02] + u16(100), 1) + writes
      + [0x0F] + [0x1E] + pdu([0x0A] + u16(3), 1) + [0x1C])

# Enhanced ATT bearers (bits 6-7 of an operation name one; op 14 on one opens, reconfigures or
# closes it): requests on each, Exchange MTU refused on one, updates that may take any bearer,
# a Multiple Handle Value Notification (op 11 with bit 5), a bearer closed under a deferred read.
def bpdu(b, slot, conn=0):
    return [slot << 6 | conn << 4, len(b)] + list(b)


bearers = (
    [0x4E, 20, 0] + [0x8E, 120, 0]  # open bearers 1 (MTU 104) and 2 (MTU 304) on connection 1
    + bpdu([0x0A] + u16(3), 1) + bpdu([0x0A] + u16(3), 2) + bpdu([0x02] + u16(100), 1)
    + pdu([0x12] + u16(0x13) + [1, 0]) + bpdu([0x12] + u16(0x16) + [2, 0], 2)  # CCCDs, maybe
    + pdu([0x52] + u16(0x11) + [0x06])  # Client Supported Features, maybe
    + [0x0B, 5, 2, 0xAA, 0xBB] + [0x2B, 1, 5, 1, 0xCC, 2, 2, 0xDD, 0xEE]  # notify, notify several
    + [0x8C] + [0x4E, 200, 1]  # a confirmation on bearer 2; bearer 1 reconfigured to MTU 464
    + bpdu([0x0A] + u16(0x1F), 2) + [0x8E, 0, 2]  # a read on bearer 2, then it closes
    + [0x0D, 50]
)
write("att", "eatt-bearers", [GATT_FULL, 0xFF, 0x40] + bearers)

# Per-characteristic order across bearers (issue #30), heart-rate config: bearers 1 and 2 open,
# Heart Rate Measurement (characteristic 6, CCCD 0x0014) subscribed; the fixed bearer stalled
# (op 14 on it, 4) while four values are pushed, then released; bearer 1 held (op 14 on it, 3)
# while two more are pushed; Service Changed (2, CCCD 0x0009) indicated three times; bearer 2
# closed with updates queued.
order = (
    [0x4E, 20, 0] + [0x8E, 20, 0]
    + pdu([0x12] + u16(0x14) + [1, 0]) + pdu([0x12] + u16(0x09) + [2, 0])
    + [0x0E, 4] + [0x0B, 6, 1, 1] + [0x0B, 6, 1, 2] + [0x0B, 6, 1, 3] + [0x0B, 6, 1, 4] + [0x0E, 4]
    + [0x4E, 0, 3] + [0x0B, 6, 1, 5] + [0x0B, 6, 1, 6] + [0x4E, 0, 3]
    + [0x0B, 2, 4, 1, 0, 1, 0] + [0x0B, 2, 4, 2, 0, 2, 0] + [0x0B, 2, 4, 3, 0, 3, 0] + [0x0C] + [0x4C] + [0x8C]
    + [0x8E, 0, 4] + [0x0B, 6, 1, 7] + [0x0B, 6, 1, 8] + [0x8E, 0, 2] + [0x8E, 0, 4]
    + [0x0D, 50]
)
write("att", "eatt-order", [HEART_RATE, 0x00, 0x40] + order)


# --- Host: flags byte, then an H4 stream -----------------------------------------
def event(code, params):
    return [0x04, code, len(params)] + list(params)


def acl(handle, payload, cid=0x0004, pb=0x2):
    l2cap = u16(len(payload)) + u16(cid) + list(payload)
    return [0x02] + u16(handle | pb << 12) + u16(len(l2cap)) + l2cap


H = 0x0040
connect = event(0x3E, [0x01, 0x00] + u16(H) + [0x01, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
                + u16(0x18) + u16(0) + u16(0x48) + [0x00])
nocp = event(0x13, [0x01] + u16(H) + u16(1))
session = (
    connect
    + acl(H, [0x02] + u16(185)) + nocp
    + acl(H, [0x10] + u16(1) + u16(0xFFFF) + u16(0x2800)) + nocp
    + acl(H, [0x0A] + u16(3)) + nocp
    + acl(H, [0x12] + u16(0x13) + [1, 0]) + nocp
    + acl(H, [0x01, 0x02, 0x00] + u16(4) + [0x01] + u16(8)) + nocp  # Pairing Request on SMP
    + acl(H, [0x12, 0x01] + u16(8) + u16(6) + u16(12) + u16(0) + u16(200), cid=0x0005)  # Conn Param Update Request
    + event(0x05, [0x00] + u16(H) + [0x13])
)
write("host", "session-heart-rate", [0x00] + session)
write("host", "session-gatt-full", [0x03] + session)
# A long write split over two ACL fragments.
fragmented = connect + [0x02] + u16(H | 0x2 << 12) + u16(10) + u16(30) + u16(4) + [0x12] + u16(3) + [0] * 3 \
    + [0x02] + u16(H | 0x1 << 12) + u16(24) + [0] * 24 + nocp
write("host", "fragmented-write", [0x03] + fragmented)
# Flags bit 6: a Bluetooth 5 controller (extended advertising). The central connects to
# advertising set 0: LE Enhanced Connection Complete [v1], then LE Advertising Set Terminated.
enhanced = event(0x3E, [0x0A, 0x00] + u16(H) + [0x01, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11] + [0] * 12
                 + u16(0x18) + u16(0) + u16(0x48) + [0x00])
terminated = event(0x3E, [0x12, 0x00, 0x00] + u16(H) + [0x00])
write("host", "session-extended-advertising", [0x40] + enhanced + terminated + session[len(connect):])
write("host", "session-extended-advertising-smp", [0x63] + enhanced + terminated + session[len(connect):])

# Flags bit 7: credit-based channels (PSM 0x0080 open, 0x0081 encrypted) and Enhanced ATT.
# An app channel (LE Credit Based Connection Request; our CID is 0x0040): an SDU over two
# K-frames, credits, then the central disconnects the channel.
def signal(code, ident, params):
    return acl(H, [code, ident] + u16(len(params)) + list(params), cid=0x0005)


channel = (
    connect
    + signal(0x14, 1, u16(0x0080) + u16(0x0040) + u16(100) + u16(64) + u16(5)) + nocp
    + acl(H, u16(70) + [0xAA] * 60, cid=0x0040) + acl(H, [0xBB] * 10, cid=0x0040) + nocp
    + signal(0x16, 2, u16(0x0040) + u16(3))  # Flow Control Credit Indication
    + signal(0x14, 3, u16(0x0081) + u16(0x0041) + u16(100) + u16(64) + u16(5))  # encrypted: refused
    + signal(0x06, 4, u16(0x0040) + u16(0x0040)) + nocp  # Disconnection Request
)
write("host", "channel", [0x83] + channel)
# With bit 5 (the Security Manager, a bond for C0:00:00:00:00:01): the bonded central connects,
# encrypts with its LTK, opens two Enhanced ATT bearers (Enhanced Credit Based Connection
# Request on PSM 0x0027; our CIDs 0x0040 and 0x0041), reads on both, reconfigures them, and
# closes one.
bonded = event(0x3E, [0x01, 0x00] + u16(H) + [0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC0]
               + u16(0x18) + u16(0) + u16(0x48) + [0x00])
ltk_request = event(0x3E, [0x05] + u16(H) + [0] * 8 + u16(0))
encrypted = event(0x08, [0x00] + u16(H) + [0x01])
eatt = (
    bonded + ltk_request + encrypted
    + signal(0x17, 1, u16(0x0027) + u16(64) + u16(64) + u16(5) + u16(0x0040) + u16(0x0041)) + nocp
    + acl(H, u16(3) + [0x0A] + u16(0x0003), cid=0x0040) + nocp  # Read Request on bearer 1
    + acl(H, u16(7) + [0x08] + u16(0x0001) + u16(0xFFFF) + u16(0x2803), cid=0x0041) + nocp  # Read By Type on bearer 2
    + acl(H, u16(3) + [0x02] + u16(100), cid=0x0041) + nocp  # Exchange MTU: not on an Enhanced bearer
    + signal(0x19, 2, u16(100) + u16(64) + u16(0x0040) + u16(0x0041)) + nocp  # Credit Based Reconfigure Request
    + signal(0x06, 3, u16(0x0041) + u16(0x0041)) + nocp  # Disconnection Request for bearer 2
    + acl(H, u16(3) + [0x0A] + u16(0x0003), cid=0x0040) + nocp
    + event(0x05, [0x00] + u16(H) + [0x13])
)
write("host", "eatt", [0xA3] + eatt)

# --- BlueZ: config byte, handle-offset byte, then operations (Fuzz/Sources/FuzzBlueZ) ---
TRUE, FALSE = 0x84, 0x00  # value kinds: a boolean (kind % 12 == 0, bit 7 its value)
os.makedirs(os.path.join(HERE, "corpus", "bluez"), exist_ok=True)
# hci0's device connects (Connected), the agent is asked a numeric comparison, it bonds
# (Bonded), then its object goes.
write("bluez", "device-bonds", [0, 0,
      0x02, 0, 1, 0, TRUE,
      0x04, 0, 2, 0x40, 0xE2,
      0x02, 0, 1, 1, TRUE,
      0x03, 0])
# ReadValue (options: offset 0) and WriteValue (2 bytes, options: type) on the 4th object.
write("bluez", "application-calls", [1, 1,
      0x00, 3, 0, 0, 1, 9, 1, 0, 1, 0, 0,
      0x00, 3, 0, 1, 2, 6, 2, 0xAA, 0xBB, 9, 1, 3, 4, 7] + list(b"request"))
# RequestConfirmation of hci0's device, confirmed.
write("bluez", "agent-confirmation", [0, 0,
      0x05, 0, 2, 5, 0, 2, 0x01, 0, 0x40, 0xE2,
      0, 0, 0, 2])
