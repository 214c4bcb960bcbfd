"""SIGHUP with a config whose only change is the advertising data (the local name).

gattd must re-advertise with the new payload (disable, parameters, data, scan response,
enable — the recorded HCI commands, byte for byte: the legacy ones on a legacy-only controller,
advertising set 0's on a Bluetooth 5 one, removed and rebuilt) and a scanner must see the new name,
while the connected central keeps its connection and gets no Service Changed: the
Database Hash is the same. A SIGHUP with an unchanged file sends nothing to the controller.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from bumble.core import AdvertisingData

from advertising_commands import (
    ADV_IND,
    LEGACY_OFF,
    LEGACY_ON,
    OPCODE_LE_REMOVE_ADVERTISING_SET,
    SET_0_OFF,
    SET_0_ON,
    advertising_commands,
    assert_advertised,
    legacy_data,
    legacy_parameters,
    set_0_data,
    set_0_parameters,
    wait_for_enable,
)
from harness import (
    OPCODE_LE_SET_ADVERTISING_DATA,
    OPCODE_LE_SET_ADVERTISING_ENABLE,
    OPCODE_LE_SET_ADVERTISING_PARAMETERS,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS,
    OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA,
    OPCODE_LE_SET_SCAN_RESPONSE_DATA,
    att_round_trip,
    bumble_device,
    connect,
    from_address,
    read,
    run,
    scan_for,
    subscribe,
)
from gatt_central import wait_for_log

SERVICE_UUID = "7a1d0000-0000-4000-8000-000000000000"
VALUE_UUID = "7a1d0001-0000-4000-8000-000000000000"


def config(local_name: str) -> str:
    return json.dumps({
        "name": "Reload Adv",
        "advertising": {"local_name": local_name, "interval_ms": [20, 30]},
        "services": [{"id": "svc", "uuid": SERVICE_UUID, "characteristics": [
            {"id": "value", "uuid": VALUE_UUID, "properties": ["read"], "value": {"hex": "2a"}}]}],
    }, indent=2) + "\n"


def advertising_data(local_name: str) -> bytes:
    """Flags (LE General Discoverable, BR/EDR not supported), then the Complete Local Name."""
    name = local_name.encode()
    return bytes.fromhex("020106") + bytes([len(name) + 1, 0x09]) + name


def readvertising(local_name: str, legacy_only: bool) -> list[tuple[int, bytes]]:
    """Stop, reconfigure with the new payload, start again. interval_ms [20, 30] = 32 and 48
    units of 0.625 ms; ADV_IND (scannable: an empty scan response), public address, 3 channels."""
    data = advertising_data(local_name)
    if legacy_only:
        return [
            (OPCODE_LE_SET_ADVERTISING_ENABLE, LEGACY_OFF),
            (OPCODE_LE_SET_ADVERTISING_PARAMETERS, legacy_parameters(0x20, 0x30, 0x00)),
            (OPCODE_LE_SET_ADVERTISING_DATA, legacy_data(data)),
            (OPCODE_LE_SET_SCAN_RESPONSE_DATA, legacy_data(b"")),
            (OPCODE_LE_SET_ADVERTISING_ENABLE, LEGACY_ON),
        ]
    # The set is removed first: its old data must not clash with the new parameters (§7.8.53).
    return [
        (OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, SET_0_OFF),
        (OPCODE_LE_REMOVE_ADVERTISING_SET, b"\x00"),
        (OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, set_0_parameters(0x20, 0x30, ADV_IND)),
        (OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA, set_0_data(data)),
        (OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA, set_0_data(b"")),
        (OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, SET_0_ON),
    ]


@pytest.mark.parametrize("controller_count", [3])
@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
def test_sighup_changing_only_the_local_name_readvertises_without_service_changed(controllers, gattd, tmp_path,
                                                                                  legacy_only):
    config_path = tmp_path / "reload-advertising.json"
    config_path.write_text(config("OLD-NAME"))
    process = gattd(config_path)
    gattd_address = from_address(controllers[0].address)

    async def body():
        await wait_for_enable(controllers[0])
        assert_advertised(controllers[0], legacy_only, (0x20, 0x30), ADV_IND, advertising_data("OLD-NAME"), b"")

        async with bumble_device(controllers[1], "central", "C0:00:00:00:00:01") as central, \
                bumble_device(controllers[2], "scanner", "C0:00:00:00:00:02") as scanner:
            advertisement = await scan_for(central, gattd_address)
            assert advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "OLD-NAME"
            connecting_at = time.time()
            peer = await connect(central, advertisement.address)
            service_changed = await subscribe(peer, "2A05", prefer_notify=False)
            hash_before = await read(peer, "2B2A")
            device_name_before = await read(peer, "2A00")
            await wait_for_log(process, r"connected: C0:00:00:00:00:01 ")
            # gattd advertises again for further centrals once the first one is in (before
            # `unchanged_at`, so that this enable is not mistaken for the reload's).
            await wait_for_enable(controllers[0], after=connecting_at)

            # The same file again: nothing changes, nothing is sent to the controller.
            unchanged_at = time.time()
            log_start = len(process.log())
            os.kill(process.process.pid, signal.SIGHUP)
            await wait_for_log(process, r"config reloaded: database unchanged", start=log_start)
            # Nothing so far; that nothing comes later either is checked below: the only
            # commands after `unchanged_at` are the next reload's (gattd handles one at a time).
            assert advertising_commands(controllers[0], unchanged_at) == []
            assert "advertising data changed" not in process.log()[log_start:]

            # Only the local name changes.
            config_path.write_text(config("NEW-NAME"))
            reloaded_at = time.time()
            log_start = len(process.log())
            os.kill(process.process.pid, signal.SIGHUP)
            await wait_for_log(process, r"config reloaded: advertising data changed; advertising restarted",
                               start=log_start)
            # The restart's last command (its first is Enable 0x00: waiting for any Enable
            # raced with the rest of the sequence; the log line comes before the commands).
            await wait_for_enable(controllers[0], after=reloaded_at)
            log = process.log()[log_start:]
            assert "config reloaded: database unchanged" in log
            assert "database changed" not in log
            assert "Service Changed" not in log

            # Stop, reconfigure with the new payload, start again: exact bytes, in order; and
            # nothing else since the unchanged reload.
            assert advertising_commands(controllers[0], unchanged_at) == readvertising("NEW-NAME", legacy_only)

            # A scanner hears the new name (and only the new payload from now on).
            fresh = await scan_for(scanner, gattd_address, active=False)
            assert fresh.data_bytes == advertising_data("NEW-NAME")
            assert fresh.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "NEW-NAME"
            assert fresh.is_connectable

            # The connected central: same connection, same database, no Service Changed
            # (a round trip behind anything the reloads queued for it: see att_round_trip).
            await att_round_trip(peer)
            assert service_changed.empty()
            assert await read(peer, "2B2A") == hash_before
            assert await read(peer, "2A00") == device_name_before == b"Reload Adv"
            assert await read(peer, VALUE_UUID) == b"\x2a"
            assert service_changed.empty()
            assert "disconnected" not in process.log()[log_start:]

    run(body(), timeout=60)
