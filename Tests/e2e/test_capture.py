"""What gattd shows of the traffic: one debug line per ATT PDU each way, and `--btsnoop FILE`
with every HCI packet of the H4 link in the btsnoop format (version 1, datalink 1002 = H4)
that Wireshark and btmon open."""

from __future__ import annotations

import struct

from gatt_central import FULL_CONFIG, Link, central, raw_request
from harness import run

READONLY = 0x0014  # "hello" in config/test/gatt-full.json
BTSNOOP_EPOCH_DELTA = 0x00DCDDB30F2F8000  # microseconds from 0 AD to 1970


def parse_btsnoop(data: bytes) -> list[tuple[int, int, bytes]]:
    """(flags, timestamp, packet) per record; asserts the header and the framing."""
    assert data[:8] == b"btsnoop\0"
    version, datalink = struct.unpack(">II", data[8:16])
    assert (version, datalink) == (1, 1002)
    records = []
    i = 16
    while i < len(data):
        original, included, flags, drops, timestamp = struct.unpack(">IIIIq", data[i:i + 24])
        assert original == included and drops == 0 and flags <= 3
        packet = data[i + 24:i + 24 + included]
        assert len(packet) == included
        records.append((flags, timestamp, packet))
        i += 24 + included
    assert i == len(data)
    return records


def att_payload(packet: bytes) -> bytes | None:
    """The ATT PDU of an H4 ACL packet on the ATT channel (CID 4), else None."""
    if packet[0] != 0x02 or len(packet) < 9:
        return None
    cid = int.from_bytes(packet[7:9], "little")
    return packet[9:] if cid == 0x0004 else None


def test_att_pdus_in_the_debug_log_and_every_hci_packet_in_the_btsnoop_file(controllers, gattd, tmp_path):
    capture = tmp_path / "capture.btsnoop"
    process = gattd(FULL_CONFIG, extra_args=["--btsnoop", str(capture)])
    link = Link(controllers, process)

    async def body():
        async with central(link, 1, "C0:00:00:00:00:01") as peer:
            await raw_request(peer, bytes([0x0A, READONLY, 0x00]))
            await raw_request(peer, bytes([0x12, READONLY, 0x00, 0x78]))
            await process.wait_for_log(r'C0:00:00:00:00:01 ← Error Response to Write Request handle 0x0014: '
                                       r'Write Not Permitted \(0x03\)')
        log = process.log()
        assert "C0:00:00:00:00:01 → Read Request handle 0x0014" in log
        assert 'C0:00:00:00:00:01 ← Read Response "hello" (5 B)' in log
        assert 'C0:00:00:00:00:01 → Write Request handle 0x0014 "x" (1 B)' in log

    run(body())
    assert process.stop() == 0
    records = parse_btsnoop(capture.read_bytes())
    # The first packet is the HCI Reset gattd sends (a command: flags 2), answered by an event (3).
    assert records[0][0] == 2 and records[0][2] == bytes.fromhex("01030c00")
    assert any(flags == 3 and packet[0] == 0x04 for flags, _, packet in records)
    sent = [att_payload(p) for f, _, p in records if f == 0]
    received = [att_payload(p) for f, _, p in records if f == 1]
    assert bytes([0x0A, READONLY, 0x00]) in received
    assert b"\x0bhello" in sent
    timestamps = [t for _, t, _ in records]
    assert timestamps == sorted(timestamps)
    assert timestamps[0] > BTSNOOP_EPOCH_DELTA + 1_600_000_000 * 1_000_000  # after 2020, in µs since 0 AD
