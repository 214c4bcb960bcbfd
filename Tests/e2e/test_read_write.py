"""Reads and writes from a Bumble central: read, long read (Read Blob), Write Request, Write
Command, long write (Prepare/Execute) and reliable write, against config/test/gatt-full.json.

The central keeps the default ATT_MTU (23) unless a test says otherwise, so a 300-byte value
takes one Read and 13 Read Blobs, and any write longer than 20 bytes is a long write.
"""

from __future__ import annotations

import pytest

from bumble import att

from gatt_central import (
    FULL_CONFIG,
    att_error,
    central,
    dump_link_logs,  # noqa: F401 (fixture)
    module_link,
    raw_request,
    wait_for_log,
    write_raw_command,
)
from harness import run

link = module_link(FULL_CONFIG)
pytestmark = pytest.mark.usefixtures("dump_link_logs")

# Value handles (see `gattd --check-config config/test/gatt-full.json`; test_discovery checks them).
READONLY = 0x0014
WRITABLE = 0x0016  # read, write, write_without_response; max_length 4
LONG = 0x0018  # read, write; 300 bytes
RELIABLE_A = 0x0024
RELIABLE_B = 0x0027
RELIABLE_B_EXTENDED_PROPERTIES = 0x0028
RELIABLE_B_DESCRIPTION = 0x0029  # writable (writable_auxiliaries)
LEVEL = 0x002C  # Battery Level

LONG_VALUE = bytes((i * 7 + 3) & 0xFF for i in range(300))

OP_PREPARE_WRITE_REQUEST = 0x16
OP_EXECUTE_WRITE_REQUEST = 0x18


def test_read(link):
    async def body():
        async with central(link) as peer:
            assert await peer.gatt_client.read_value(READONLY) == b"hello"
            assert await peer.gatt_client.read_value(LEVEL) == b"\x64"

    run(body())


def test_read_long_value_with_read_blob(link):
    async def body():
        async with central(link) as peer:
            assert peer.gatt_client.mtu == 23
            first = await raw_request(peer, att.ATT_Read_Request(attribute_handle=LONG))
            assert first.op_code == att.Opcode.ATT_READ_RESPONSE
            assert bytes(first.attribute_value) == LONG_VALUE[:22]
            blob = await raw_request(peer, att.ATT_Read_Blob_Request(attribute_handle=LONG, value_offset=286))
            assert blob.op_code == att.Opcode.ATT_READ_BLOB_RESPONSE
            assert bytes(blob.part_attribute_value) == LONG_VALUE[286:]  # the last 14 bytes
            at_end = await raw_request(peer, att.ATT_Read_Blob_Request(attribute_handle=LONG, value_offset=300))
            assert bytes(at_end.part_attribute_value) == b""
            # Bumble's read: Read, then Read Blob until a part shorter than MTU-1.
            assert await peer.gatt_client.read_value(LONG) == LONG_VALUE

    run(body())


def test_read_long_value_with_mtu_517_is_one_read(link):
    async def body():
        async with central(link) as peer:
            assert await peer.request_mtu(517) == 517
            response = await raw_request(peer, att.ATT_Read_Request(attribute_handle=LONG))
            assert bytes(response.attribute_value) == LONG_VALUE

    run(body())


def test_write_request(link):
    async def body():
        log_start = len(link.gattd.log())
        async with central(link) as peer:
            response = await raw_request(peer, att.ATT_Write_Request(attribute_handle=WRITABLE,
                                                                      attribute_value=b"\x01\x02\x03"))
            assert response.op_code == att.Opcode.ATT_WRITE_RESPONSE
            assert await peer.gatt_client.read_value(WRITABLE) == b"\x01\x02\x03"
            await wait_for_log(link.gattd, r"[0-9A-F:]{17}: wrote 3 bytes to writable$", start=log_start)
            # The maximum length (4) is accepted.
            await peer.gatt_client.write_value(WRITABLE, b"\xA0\xA1\xA2\xA3", with_response=True)
            assert await peer.gatt_client.read_value(WRITABLE) == b"\xA0\xA1\xA2\xA3"

    run(body())


def test_write_command(link):
    async def body():
        async with central(link) as peer:
            await peer.gatt_client.write_value(WRITABLE, b"\x09\x08", with_response=False)
            # The next request on the bearer is handled after the command.
            assert await peer.gatt_client.read_value(WRITABLE) == b"\x09\x08"
            # Commands that fail are dropped without an answer: not permitted, too long.
            await write_raw_command(peer, bytes([0x52]) + READONLY.to_bytes(2, "little") + b"xx")
            await write_raw_command(peer, bytes([0x52]) + WRITABLE.to_bytes(2, "little") + b"12345")
            # The next response is the read's own (no stray error response in between).
            response = await raw_request(peer, att.ATT_Read_Request(attribute_handle=WRITABLE))
            assert response.op_code == att.Opcode.ATT_READ_RESPONSE
            assert bytes(response.attribute_value) == b"\x09\x08"
            assert await peer.gatt_client.read_value(READONLY) == b"hello"

    run(body())


def test_long_write_with_prepare_and_execute(link):
    """Bumble's write_value with a value longer than MTU-3 uses Prepare Write (MTU-5 = 18
    bytes each) and Execute Write."""
    new_value = bytes(range(100, 200))  # 100 bytes: 6 Prepare Writes at MTU 23

    async def body():
        log_start = len(link.gattd.log())
        async with central(link) as peer:
            try:
                assert peer.gatt_client.mtu == 23
                await peer.gatt_client.write_value(LONG, new_value, with_response=True)
                assert await peer.gatt_client.read_value(LONG) == new_value
                await wait_for_log(link.gattd, r"[0-9A-F:]{17}: wrote 100 bytes to long$", start=log_start)
                # Raw: the Prepare Write Response echoes handle, offset and part.
                response = await raw_request(peer, att.ATT_Prepare_Write_Request(
                    attribute_handle=LONG, value_offset=98, part_attribute_value=b"\xEE\xFF\x11"))
                assert bytes(response) == bytes([0x17]) + LONG.to_bytes(2, "little") + (98).to_bytes(2, "little") \
                    + b"\xEE\xFF\x11"
                # Nothing is written before Execute Write.
                assert await peer.gatt_client.read_value(LONG) == new_value
                response = await raw_request(peer, att.ATT_Execute_Write_Request(flags=0x01))
                assert response.op_code == att.Opcode.ATT_EXECUTE_WRITE_RESPONSE
                # A write at an offset replaces the value from the offset to its end.
                assert await peer.gatt_client.read_value(LONG) == new_value[:98] + b"\xEE\xFF\x11"
            finally:
                await peer.gatt_client.write_value(LONG, LONG_VALUE, with_response=True)
            assert await peer.gatt_client.read_value(LONG) == LONG_VALUE

    run(body())


def test_execute_write_cancel_discards_the_queue(link):
    async def body():
        async with central(link) as peer:
            await peer.gatt_client.write_value(WRITABLE, b"\x01", with_response=True)
            response = await raw_request(peer, att.ATT_Prepare_Write_Request(
                attribute_handle=WRITABLE, value_offset=0, part_attribute_value=b"\x55\x66"))
            assert response.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE
            response = await raw_request(peer, att.ATT_Execute_Write_Request(flags=0x00))
            assert response.op_code == att.Opcode.ATT_EXECUTE_WRITE_RESPONSE
            assert await peer.gatt_client.read_value(WRITABLE) == b"\x01"
            # The queue is empty: executing it now writes nothing.
            response = await raw_request(peer, att.ATT_Execute_Write_Request(flags=0x01))
            assert response.op_code == att.Opcode.ATT_EXECUTE_WRITE_RESPONSE
            assert await peer.gatt_client.read_value(WRITABLE) == b"\x01"

    run(body())


def test_reliable_write_of_two_characteristics(link):
    """Vol 3 Part G §4.9.5: prepare both values, check the echoes, execute: both or neither."""

    async def body():
        async with central(link) as peer:
            for handle, part in ((RELIABLE_A, b"\x01\x02"), (RELIABLE_B, b"\x03\x04\x05")):
                response = await raw_request(peer, att.ATT_Prepare_Write_Request(
                    attribute_handle=handle, value_offset=0, part_attribute_value=part))
                assert (response.attribute_handle, response.value_offset, bytes(response.part_attribute_value)) \
                    == (handle, 0, part)
            assert await peer.gatt_client.read_value(RELIABLE_A) == b"\xAA"
            response = await raw_request(peer, att.ATT_Execute_Write_Request(flags=0x01))
            assert response.op_code == att.Opcode.ATT_EXECUTE_WRITE_RESPONSE
            assert await peer.gatt_client.read_value(RELIABLE_A) == b"\x01\x02"
            assert await peer.gatt_client.read_value(RELIABLE_B) == b"\x03\x04\x05"

            # All or nothing: one bad part (offset past the end of B) leaves both unchanged.
            for handle, offset, part in ((RELIABLE_A, 0, b"\x10"), (RELIABLE_B, 9, b"\x11")):
                await raw_request(peer, att.ATT_Prepare_Write_Request(
                    attribute_handle=handle, value_offset=offset, part_attribute_value=part))
            response = await raw_request(peer, att.ATT_Execute_Write_Request(flags=0x01))
            att_error(response, OP_EXECUTE_WRITE_REQUEST, RELIABLE_B, 0x07)
            assert await peer.gatt_client.read_value(RELIABLE_A) == b"\x01\x02"
            assert await peer.gatt_client.read_value(RELIABLE_B) == b"\x03\x04\x05"

            # Restore for the other tests.
            await peer.gatt_client.write_value(RELIABLE_A, b"\xAA", with_response=True)
            await peer.gatt_client.write_value(RELIABLE_B, b"\xBB", with_response=True)

    run(body())


def test_prepare_write_of_a_second_handle_needs_reliable_write(link):
    async def body():
        async with central(link) as peer:
            await raw_request(peer, att.ATT_Prepare_Write_Request(
                attribute_handle=RELIABLE_A, value_offset=0, part_attribute_value=b"\x01"))
            response = await raw_request(peer, att.ATT_Prepare_Write_Request(
                attribute_handle=WRITABLE, value_offset=0, part_attribute_value=b"\x02"))
            att_error(response, OP_PREPARE_WRITE_REQUEST, WRITABLE, 0x03)
            await raw_request(peer, att.ATT_Execute_Write_Request(flags=0x00))

    run(body())


def test_read_multiple_and_read_multiple_variable(link):
    async def body():
        async with central(link) as peer:
            handles = READONLY.to_bytes(2, "little") + LEVEL.to_bytes(2, "little")
            response = await raw_request(peer, bytes([0x0E]) + handles)
            assert bytes(response) == bytes([0x0F]) + b"hello" + b"\x64"
            response = await raw_request(peer, bytes([0x20]) + handles)
            assert bytes(response) == bytes([0x21]) + b"\x05\x00hello" + b"\x01\x00\x64"
            # Read Using Characteristic UUID (Read By Type on the value's UUID).
            values = await peer.gatt_client.read_characteristics_by_uuid(att.UUID("2A19"), None)
            assert values == [b"\x64"]

    run(body())


def test_write_user_description_with_writable_auxiliaries(link):
    async def body():
        async with central(link) as peer:
            assert await peer.gatt_client.read_value(RELIABLE_B_DESCRIPTION) == b"Reliable B"
            try:
                await peer.gatt_client.write_value(RELIABLE_B_DESCRIPTION, b"Renamed", with_response=True)
                assert await peer.gatt_client.read_value(RELIABLE_B_DESCRIPTION) == b"Renamed"
            finally:
                await peer.gatt_client.write_value(RELIABLE_B_DESCRIPTION, b"Reliable B", with_response=True)
            # The Extended Properties descriptor is read-only.
            response = await raw_request(peer, att.ATT_Write_Request(attribute_handle=RELIABLE_B_EXTENDED_PROPERTIES,
                                                                      attribute_value=b"\x00\x00"))
            att_error(response, 0x12, RELIABLE_B_EXTENDED_PROPERTIES, 0x03)
            assert await peer.gatt_client.read_value(RELIABLE_B_EXTENDED_PROPERTIES) == b"\x03\x00"

    run(body())
