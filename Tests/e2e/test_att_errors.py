"""Every ATT error gattd can answer, as the central sees it: ATT_ERROR_RSP with the exact
request opcode, handle and error code (Core Spec Vol 3 Part F §3.4.1.1), mostly through raw
ATT PDUs sent by a Bumble central (config/test/gatt-full.json, ATT_MTU 23).
"""

from __future__ import annotations

import pytest

from bumble import att
from bumble.core import UUID

from gatt_central import (
    FULL_CONFIG,
    att_error,
    central,
    dump_link_logs,  # noqa: F401 (fixture)
    module_link,
    raw_request,
)
from harness import run

link = module_link(FULL_CONFIG)
pytestmark = pytest.mark.usefixtures("dump_link_logs")

# Handles (see test_discovery.py / `gattd --check-config config/test/gatt-full.json`).
SERVICE_CHANGED = 0x0008  # permissions: none
TEST_SERVICE = 0x0010
READONLY_DECLARATION = 0x0013
READONLY = 0x0014  # "hello"
WRITABLE = 0x0016  # max_length 4
LONG = 0x0018
WRITEONLY = 0x001A
ENCRYPTED = 0x001C  # read_encryption_required
NOTIFIER_CCCD = 0x001F  # notify only
INDICATOR_CCCD = 0x0022  # indicate only
LEVEL_CCCD = 0x002D  # read, notify
LAST_HANDLE = 0x0035

# Request opcodes.
FIND_INFORMATION = 0x04
FIND_BY_TYPE_VALUE = 0x06
READ_BY_TYPE = 0x08
READ = 0x0A
READ_BLOB = 0x0C
READ_BY_GROUP_TYPE = 0x10
WRITE = 0x12
PREPARE_WRITE = 0x16
EXECUTE_WRITE = 0x18

# Error codes.
INVALID_HANDLE = 0x01
READ_NOT_PERMITTED = 0x02
WRITE_NOT_PERMITTED = 0x03
INVALID_PDU = 0x04
REQUEST_NOT_SUPPORTED = 0x06
INVALID_OFFSET = 0x07
PREPARE_QUEUE_FULL = 0x09
ATTRIBUTE_NOT_FOUND = 0x0A
INVALID_ATTRIBUTE_VALUE_LENGTH = 0x0D
INSUFFICIENT_ENCRYPTION = 0x0F
UNSUPPORTED_GROUP_TYPE = 0x10
VALUE_NOT_ALLOWED = 0x13
CCCD_IMPROPERLY_CONFIGURED = 0xFD


def u16(value: int) -> bytes:
    return value.to_bytes(2, "little")


def read(handle: int) -> bytes:
    return bytes([READ]) + u16(handle)


def write(handle: int, value: bytes) -> bytes:
    return bytes([WRITE]) + u16(handle) + value


def prepare(handle: int, offset: int, value: bytes) -> bytes:
    return bytes([PREPARE_WRITE]) + u16(handle) + u16(offset) + value


def test_invalid_handle(link):
    async def body():
        async with central(link) as peer:
            att_error(await raw_request(peer, read(0x0000)), READ, 0x0000, INVALID_HANDLE)
            att_error(await raw_request(peer, read(LAST_HANDLE + 1)), READ, LAST_HANDLE + 1, INVALID_HANDLE)
            att_error(await raw_request(peer, write(0xFFFF, b"\x00")), WRITE, 0xFFFF, INVALID_HANDLE)
            att_error(await raw_request(peer, bytes([READ_BLOB]) + u16(0x0100) + u16(0)), READ_BLOB, 0x0100,
                      INVALID_HANDLE)
            att_error(await raw_request(peer, prepare(0x0100, 0, b"\x00")), PREPARE_WRITE, 0x0100, INVALID_HANDLE)
            # Bumble's own API surfaces the code too.
            with pytest.raises(att.ATT_Error) as error:
                await peer.gatt_client.read_value(LAST_HANDLE + 1)
            assert error.value.error_code == INVALID_HANDLE

    run(body())


def test_start_handle_after_end_handle_is_invalid_handle(link):
    async def body():
        async with central(link) as peer:
            for opcode, extra in ((FIND_INFORMATION, b""), (READ_BY_TYPE, u16(0x2803)),
                                  (READ_BY_GROUP_TYPE, u16(0x2800)), (FIND_BY_TYPE_VALUE, u16(0x2800) + u16(0x180F))):
                request = bytes([opcode]) + u16(0x0010) + u16(0x0005) + extra
                att_error(await raw_request(peer, request), opcode, 0x0010, INVALID_HANDLE)
                # Starting handle 0x0000 is invalid too.
                request = bytes([opcode]) + u16(0x0000) + u16(0xFFFF) + extra
                att_error(await raw_request(peer, request), opcode, 0x0000, INVALID_HANDLE)

    run(body())


def test_read_not_permitted(link):
    async def body():
        async with central(link) as peer:
            att_error(await raw_request(peer, read(WRITEONLY)), READ, WRITEONLY, READ_NOT_PERMITTED)
            att_error(await raw_request(peer, bytes([READ_BLOB]) + u16(WRITEONLY) + u16(0)), READ_BLOB, WRITEONLY,
                      READ_NOT_PERMITTED)
            att_error(await raw_request(peer, read(SERVICE_CHANGED)), READ, SERVICE_CHANGED, READ_NOT_PERMITTED)
            # Read By Type naming the write-only characteristic's UUID: the error names its handle.
            request = bytes([READ_BY_TYPE]) + u16(WRITEONLY) + u16(WRITEONLY) + \
                UUID("6E4A0014-B5A3-F393-E0A9-E50E24DCCA9E").to_bytes()
            att_error(await raw_request(peer, request), READ_BY_TYPE, WRITEONLY, READ_NOT_PERMITTED)

    run(body())


def test_write_not_permitted(link):
    async def body():
        async with central(link) as peer:
            att_error(await raw_request(peer, write(READONLY, b"x")), WRITE, READONLY, WRITE_NOT_PERMITTED)
            att_error(await raw_request(peer, write(READONLY_DECLARATION, b"x")), WRITE, READONLY_DECLARATION,
                      WRITE_NOT_PERMITTED)
            att_error(await raw_request(peer, write(TEST_SERVICE, b"x")), WRITE, TEST_SERVICE, WRITE_NOT_PERMITTED)
            att_error(await raw_request(peer, prepare(READONLY, 0, b"x")), PREPARE_WRITE, READONLY,
                      WRITE_NOT_PERMITTED)
            assert await peer.gatt_client.read_value(READONLY) == b"hello"

    run(body())


def test_invalid_pdu(link):
    async def body():
        async with central(link) as peer:
            # Read Request with a 1-byte handle.
            att_error(await raw_request(peer, bytes([READ, 0x12])), READ, 0x0000, INVALID_PDU)
            # Find Information without an end handle.
            att_error(await raw_request(peer, bytes([FIND_INFORMATION]) + u16(1)), FIND_INFORMATION, 0x0000,
                      INVALID_PDU)
            # Read By Type with a 3-byte UUID.
            att_error(await raw_request(peer, bytes([READ_BY_TYPE]) + u16(1) + u16(0xFFFF) + b"\x03\x28\x00"),
                      READ_BY_TYPE, 0x0000, INVALID_PDU)
            # Execute Write with flags 0x02.
            att_error(await raw_request(peer, bytes([EXECUTE_WRITE, 0x02])), EXECUTE_WRITE, 0x0000, INVALID_PDU)
            # A Write Request longer than ATT_MTU (23).
            att_error(await raw_request(peer, write(WRITABLE, bytes(21))), WRITE, 0x0000, INVALID_PDU)
            assert await peer.gatt_client.read_value(READONLY) == b"hello"

    run(body())


def test_request_not_supported(link):
    async def body():
        async with central(link) as peer:
            # 0x22 is no ATT opcode; a request (bit 6 clear) must be answered.
            att_error(await raw_request(peer, bytes([0x22, 0x01, 0x00])), 0x22, 0x0000, REQUEST_NOT_SUPPORTED)
            # A server-only PDU (Read Response) sent by the client.
            att_error(await raw_request(peer, bytes([0x0B, 0x01])), 0x0B, 0x0000, REQUEST_NOT_SUPPORTED)

    run(body())


def test_invalid_offset(link):
    async def body():
        async with central(link) as peer:
            # "hello" is 5 bytes: offset 5 reads nothing, offset 6 is invalid.
            response = await raw_request(peer, bytes([READ_BLOB]) + u16(READONLY) + u16(5))
            assert bytes(response) == bytes([0x0D])
            att_error(await raw_request(peer, bytes([READ_BLOB]) + u16(READONLY) + u16(6)), READ_BLOB, READONLY,
                      INVALID_OFFSET)
            # A prepared write past the end of the value fails at Execute Write.
            await peer.gatt_client.write_value(WRITABLE, b"\x01", with_response=True)
            response = await raw_request(peer, prepare(WRITABLE, 2, b"\x02"))
            assert response.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE
            att_error(await raw_request(peer, bytes([EXECUTE_WRITE, 0x01])), EXECUTE_WRITE, WRITABLE, INVALID_OFFSET)
            assert await peer.gatt_client.read_value(WRITABLE) == b"\x01"

    run(body())


def test_prepare_queue_full(link):
    """The queue holds 64 prepared writes (ATTServerConfiguration.maxPreparedWrites)."""

    async def body():
        async with central(link) as peer:
            for offset in range(64):
                response = await raw_request(peer, prepare(LONG, offset, b"\x00"))
                assert response.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE, f"prepare #{offset}: {response}"
            att_error(await raw_request(peer, prepare(LONG, 64, b"\x00")), PREPARE_WRITE, LONG, PREPARE_QUEUE_FULL)
            response = await raw_request(peer, bytes([EXECUTE_WRITE, 0x00]))
            assert response.op_code == att.Opcode.ATT_EXECUTE_WRITE_RESPONSE
            # After the cancel the queue takes writes again.
            response = await raw_request(peer, prepare(LONG, 0, b"\x00"))
            assert response.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE
            await raw_request(peer, bytes([EXECUTE_WRITE, 0x00]))

    run(body())


def test_prepare_queue_full_by_bytes(link):
    """At most 4096 prepared value bytes (maxPreparedBytes): 8 parts of 512 fit, the 9th not."""

    async def body():
        async with central(link) as peer:
            assert await peer.request_mtu(517) == 517
            for index in range(8):
                response = await raw_request(peer, prepare(LONG, 0, bytes(512)))
                assert response.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE, f"prepare #{index}: {response}"
            att_error(await raw_request(peer, prepare(LONG, 0, b"\x01")), PREPARE_WRITE, LONG, PREPARE_QUEUE_FULL)
            await raw_request(peer, bytes([EXECUTE_WRITE, 0x00]))

    run(body())


def test_attribute_not_found(link):
    async def body():
        async with central(link) as peer:
            att_error(await raw_request(peer, bytes([FIND_INFORMATION]) + u16(LAST_HANDLE + 1) + u16(0xFFFF)),
                      FIND_INFORMATION, LAST_HANDLE + 1, ATTRIBUTE_NOT_FOUND)
            att_error(await raw_request(peer, bytes([READ_BY_TYPE]) + u16(0x0001) + u16(0xFFFF) + u16(0x2A6F)),
                      READ_BY_TYPE, 0x0001, ATTRIBUTE_NOT_FOUND)
            att_error(await raw_request(peer, bytes([READ_BY_GROUP_TYPE]) + u16(0x0032) + u16(0xFFFF) + u16(0x2800)),
                      READ_BY_GROUP_TYPE, 0x0032, ATTRIBUTE_NOT_FOUND)
            att_error(await raw_request(peer, bytes([FIND_BY_TYPE_VALUE]) + u16(0x0001) + u16(0xFFFF) + u16(0x2800)
                                        + u16(0x1812)),
                      FIND_BY_TYPE_VALUE, 0x0001, ATTRIBUTE_NOT_FOUND)

    run(body())


def test_unsupported_group_type(link):
    async def body():
        async with central(link) as peer:
            att_error(await raw_request(peer, bytes([READ_BY_GROUP_TYPE]) + u16(0x0001) + u16(0xFFFF) + u16(0x2803)),
                      READ_BY_GROUP_TYPE, 0x0001, UNSUPPORTED_GROUP_TYPE)

    run(body())


def test_invalid_attribute_value_length(link):
    async def body():
        async with central(link) as peer:
            await peer.gatt_client.write_value(WRITABLE, b"\x07", with_response=True)
            # Longer than max_length (4).
            att_error(await raw_request(peer, write(WRITABLE, b"12345")), WRITE, WRITABLE,
                      INVALID_ATTRIBUTE_VALUE_LENGTH)
            # The same through Prepare/Execute: the length is checked at Execute Write.
            response = await raw_request(peer, prepare(WRITABLE, 0, b"12345"))
            assert response.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE
            att_error(await raw_request(peer, bytes([EXECUTE_WRITE, 0x01])), EXECUTE_WRITE, WRITABLE,
                      INVALID_ATTRIBUTE_VALUE_LENGTH)
            assert await peer.gatt_client.read_value(WRITABLE) == b"\x07"
            # A CCCD is exactly 2 bytes.
            att_error(await raw_request(peer, write(LEVEL_CCCD, b"\x01")), WRITE, LEVEL_CCCD,
                      INVALID_ATTRIBUTE_VALUE_LENGTH)
            att_error(await raw_request(peer, write(LEVEL_CCCD, b"\x01\x00\x00")), WRITE, LEVEL_CCCD,
                      INVALID_ATTRIBUTE_VALUE_LENGTH)
            assert await peer.gatt_client.read_value(LEVEL_CCCD) == b"\x00\x00"

    run(body())


def test_insufficient_encryption(link):
    async def body():
        async with central(link) as peer:
            att_error(await raw_request(peer, read(ENCRYPTED)), READ, ENCRYPTED, INSUFFICIENT_ENCRYPTION)
            att_error(await raw_request(peer, bytes([READ_BLOB]) + u16(ENCRYPTED) + u16(0)), READ_BLOB, ENCRYPTED,
                      INSUFFICIENT_ENCRYPTION)
            with pytest.raises(att.ATT_Error) as error:
                await peer.gatt_client.read_value(ENCRYPTED)
            assert error.value.error_code == INSUFFICIENT_ENCRYPTION

    run(body())


def test_cccd_improperly_configured(link):
    async def body():
        async with central(link) as peer:
            # Indications on a notify-only characteristic, notifications on an indicate-only one.
            att_error(await raw_request(peer, write(NOTIFIER_CCCD, b"\x02\x00")), WRITE, NOTIFIER_CCCD,
                      CCCD_IMPROPERLY_CONFIGURED)
            att_error(await raw_request(peer, write(INDICATOR_CCCD, b"\x01\x00")), WRITE, INDICATOR_CCCD,
                      CCCD_IMPROPERLY_CONFIGURED)
            # Reserved bits: Value Not Allowed.
            att_error(await raw_request(peer, write(NOTIFIER_CCCD, b"\x04\x00")), WRITE, NOTIFIER_CCCD,
                      VALUE_NOT_ALLOWED)
            assert await peer.gatt_client.read_value(NOTIFIER_CCCD) == b"\x00\x00"
            assert await peer.gatt_client.read_value(INDICATOR_CCCD) == b"\x00\x00"

    run(body())
