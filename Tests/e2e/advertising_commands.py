"""The advertising commands gattd gives a virtual controller: the legacy ones (LE Set
Advertising Parameters/Data/Scan Response Data/Enable, Core Spec Vol 4 Part E §7.8.5–§7.8.9)
on a legacy-only controller, advertising set 0 with legacy PDUs (LE Set Extended Advertising
Parameters/Data/Scan Response Data/Enable, §7.8.53–§7.8.56) on a Bluetooth 5 one; never both
(§3.1.1)."""

from __future__ import annotations

import asyncio
import time

from harness import (
    OPCODE_LE_SET_ADVERTISING_DATA,
    OPCODE_LE_SET_ADVERTISING_ENABLE,
    OPCODE_LE_SET_ADVERTISING_PARAMETERS,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS,
    OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA,
    OPCODE_LE_SET_SCAN_RESPONSE_DATA,
    HCICommand,
    VirtualController,
)

OPCODE_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS = 0x2035
OPCODE_LE_REMOVE_ADVERTISING_SET = 0x203C
LEGACY_OPCODES = (OPCODE_LE_SET_ADVERTISING_PARAMETERS, OPCODE_LE_SET_ADVERTISING_DATA,
                  OPCODE_LE_SET_SCAN_RESPONSE_DATA, OPCODE_LE_SET_ADVERTISING_ENABLE)
EXTENDED_OPCODES = (OPCODE_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS, OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS,
                    OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA, OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA,
                    OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, OPCODE_LE_REMOVE_ADVERTISING_SET)

# LE Set Advertising Enable; LE Set Extended Advertising Enable for set 0 (no duration, no maximum).
LEGACY_ON, LEGACY_OFF = b"\x01", b"\x00"
SET_0_ON, SET_0_OFF = bytes([0x01, 0x01, 0x00, 0x00, 0x00, 0x00]), bytes([0x00, 0x01, 0x00, 0x00, 0x00, 0x00])

# Advertising_Event_Properties of the legacy PDUs (Table 7.2).
ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND = 0x0013, 0x0012, 0x0010


def legacy_data(payload: bytes) -> bytes:
    """LE Set Advertising / Scan Response Data parameters: length, data zero-padded to 31."""
    return bytes([len(payload)]) + payload.ljust(31, b"\x00")


def set_0_data(payload: bytes) -> bytes:
    """LE Set Extended Advertising / Scan Response Data for set 0: Operation 0x03 (complete
    data), Fragment_Preference 0x01 (minimize fragmentation), length, data."""
    return bytes([0x00, 0x03, 0x01, len(payload)]) + payload


def legacy_parameters(interval_min: int, interval_max: int, advertising_type: int) -> bytes:
    """LE Set Advertising Parameters: public own address, no peer, all three channels, no filter."""
    return (interval_min.to_bytes(2, "little") + interval_max.to_bytes(2, "little")
            + bytes([advertising_type, 0x00, 0x00]) + bytes(6) + bytes([0x07, 0x00]))


def set_0_parameters(interval_min: int, interval_max: int, properties: int) -> bytes:
    """LE Set Extended Advertising Parameters [v1] for set 0: 24-bit intervals, all three
    channels, public own address, no peer, no filter, no TX power preference (0x7F), LE 1M
    primary and secondary PHY, SID 0, no scan request notifications."""
    return (bytes([0x00]) + properties.to_bytes(2, "little") + interval_min.to_bytes(3, "little")
            + interval_max.to_bytes(3, "little") + bytes([0x07, 0x00, 0x00]) + bytes(6)
            + bytes([0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00]))


def advertising_commands(controller: VirtualController, after: float = 0.0) -> list[tuple[int, bytes]]:
    """The advertising commands (either kind) the controller received at or after `after`."""
    return [(c.opcode, c.parameters) for c in controller.commands()
            if c.time >= after and c.opcode in LEGACY_OPCODES + EXTENDED_OPCODES]


def enables(controller: VirtualController, after: float = 0.0, on: bool = True) -> list[HCICommand]:
    """The commands turning advertising (set 0) on, or off, received at or after `after`."""
    wanted = {(OPCODE_LE_SET_ADVERTISING_ENABLE, LEGACY_ON if on else LEGACY_OFF),
              (OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, SET_0_ON if on else SET_0_OFF)}
    return [c for c in controller.commands() if c.time >= after and (c.opcode, c.parameters) in wanted]


async def wait_for_enable(controller: VirtualController, on: bool = True, after: float = 0.0,
                          timeout: float = 10.0) -> HCICommand:
    """The latest command turning advertising on (or off) at or after `after` (a `time.time()`
    taken before the action); waits up to `timeout` seconds for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = enables(controller, after, on)
        if found:
            return found[-1]
        await asyncio.sleep(0.05)
    raise TimeoutError(f"controller {controller.index} received no advertising {'enable' if on else 'disable'} "
                       f"in {timeout} s")


def assert_one_kind(controller: VirtualController, legacy_only: bool) -> None:
    """Legacy advertising commands on a legacy-only controller, extended ones otherwise, never
    the other kind."""
    opcodes = {opcode for opcode, _ in advertising_commands(controller)}
    assert opcodes, "no advertising command at all"
    assert opcodes <= set(LEGACY_OPCODES if legacy_only else EXTENDED_OPCODES), \
        f"{'extended' if legacy_only else 'legacy'} advertising commands: {sorted(hex(o) for o in opcodes)}"


def assert_advertised(controller: VirtualController, legacy_only: bool, interval: tuple[int, int], properties: int,
                      data: bytes, scan_response: bytes | None) -> None:
    """The last advertising configuration, exact: legacy commands or set 0's. `properties`:
    the legacy PDU as Advertising_Event_Properties; `scan_response` None: not scannable (the
    set gets no scan response data; the legacy command is sent empty)."""
    assert_one_kind(controller, legacy_only)
    if legacy_only:
        advertising_type = {ADV_IND: 0x00, ADV_SCAN_IND: 0x02, ADV_NONCONN_IND: 0x03}[properties]
        assert controller.last_command(OPCODE_LE_SET_ADVERTISING_PARAMETERS).parameters == \
            legacy_parameters(*interval, advertising_type)
        assert controller.last_command(OPCODE_LE_SET_ADVERTISING_DATA).parameters == legacy_data(data)
        assert controller.last_command(OPCODE_LE_SET_SCAN_RESPONSE_DATA).parameters == legacy_data(scan_response or b"")
        return
    assert controller.last_command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS).parameters == \
        set_0_parameters(*interval, properties)
    assert controller.last_command(OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA).parameters == set_0_data(data)
    response = controller.last_command(OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA)
    if scan_response is None:
        assert response is None
    else:
        assert response is not None and response.parameters == set_0_data(scan_response)
