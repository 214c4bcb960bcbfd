#!/usr/bin/env python3
"""A scripted Bumble central that shows what a phone would see of gattd.

Scans for the advertised name, prints the advertising data, connects, exchanges the MTU,
discovers every service, characteristic and descriptor (with SIG names, properties and
values) of whatever config gattd serves, subscribes to the first characteristic that can
notify or indicate (the Heart Rate Measurement in the default config; none: that step is
skipped) and prints the values that arrive (pushed with `gattctl notify` when --gattctl is
given), then disconnects. It finds gattd by its advertised name (--name) or, for a config
that advertises none (an iBeacon), by its address (--address).

Run by scripts/demo; by hand:
    .venv/bin/python scripts/demo_central.py --transport tcp-client:127.0.0.1:PORT --name HR-Demo
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import subprocess
import sys

from bumble import hci
from bumble.core import UUID, AdvertisingData, PhysicalTransport
from bumble.device import Advertisement, Device, Peer
from bumble.gatt import Characteristic
from bumble.transport import open_transport

SIG_NAMES = {uuid: uuid.name for uuid in UUID.UUIDS if uuid.name}
CCCD = UUID("2902")
HEART_RATE_MEASUREMENT = UUID("2A37")
SERVICE_CHANGED = UUID("2A05")
AD_TYPE_NAMES = {
    0x01: "Flags", 0x02: "Incomplete List of 16-bit Service UUIDs", 0x03: "Complete List of 16-bit Service UUIDs",
    0x06: "Incomplete List of 128-bit Service UUIDs", 0x07: "Complete List of 128-bit Service UUIDs",
    0x08: "Shortened Local Name", 0x09: "Complete Local Name", 0x0A: "TX Power Level", 0x16: "Service Data",
    0x19: "Appearance", 0xFF: "Manufacturer Specific Data",
}


def say(text: str = "") -> None:
    print(text, flush=True)


def uuid_text(uuid: UUID) -> str:
    name = SIG_NAMES.get(uuid)
    return uuid.to_hex_str("-") + (f" ({name})" if name else "")


def value_text(value: bytes) -> str:
    if not value:
        return "(empty)"
    text = value[:32].hex(" ") + (f" ... ({len(value)} bytes)" if len(value) > 32 else "")
    if len(value) >= 3 and all(32 <= b < 127 for b in value):
        text += f'  "{value.decode()}"'
    return text


def describe_ad_structure(ad_type: int, data: bytes) -> str:
    name = AD_TYPE_NAMES.get(ad_type, f"AD type 0x{ad_type:02X}")
    if ad_type == 0x01:
        flags = [text for bit, text in ((0x02, "LE General Discoverable"), (0x04, "BR/EDR Not Supported"))
                 if data and data[0] & bit]
        return f"{name}: 0x{data[0]:02X} ({', '.join(flags)})" if data else name
    if ad_type in (0x02, 0x03):
        uuids = [uuid_text(UUID.from_bytes(data[i:i + 2])) for i in range(0, len(data) - 1, 2)]
        return f"{name}: {', '.join(uuids)}"
    if ad_type in (0x06, 0x07):
        uuids = [uuid_text(UUID.from_bytes(data[i:i + 16])) for i in range(0, len(data) - 15, 16)]
        return f"{name}: {', '.join(uuids)}"
    if ad_type in (0x08, 0x09):
        return f'{name}: "{data.decode(errors="replace")}"'
    if ad_type == 0xFF and len(data) >= 2:
        return f"{name}: company 0x{int.from_bytes(data[:2], 'little'):04X}, {data[2:].hex(' ')}"
    return f"{name}: {data.hex(' ')}"


def ad_structures(data: bytes) -> list[tuple[int, bytes]]:
    result, index = [], 0
    while index < len(data) and data[index]:
        length = data[index]
        result.append((data[index + 1], bytes(data[index + 2:index + 1 + length])))
        index += 1 + length
    return result


async def scan(device: Device, name: str | None, address: str | None,
               timeout: float) -> tuple[Advertisement, bytes, bytes | None]:
    """Active scan until `name` (or, without a name, `address`) is seen. Returns the advertisement, its advertising data and
    its scan response (None when not scannable). Bumble merges a scannable advertisement
    with its scan response: the advertising data is the merged data minus the response."""
    loop = asyncio.get_running_loop()
    found: asyncio.Future[Advertisement] = loop.create_future()

    def on_advertisement(advertisement: Advertisement) -> None:
        # The shortened name (advertising data) or the complete one (scan response).
        names = {advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME),
                 advertisement.data.get(AdvertisingData.SHORTENED_LOCAL_NAME)}
        matches = name in names if name else str(advertisement.address).split("/")[0] == (address or "").upper()
        if matches and not found.done():
            found.set_result(advertisement)

    device.on("advertisement", on_advertisement)
    await device.start_scanning(active=True, filter_duplicates=False)
    try:
        advertisement = await asyncio.wait_for(found, timeout)
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()
    if not advertisement.is_scan_response:
        return advertisement, advertisement.data_bytes, None
    merged = bytes(advertisement.data)
    response = advertisement.data_bytes
    return advertisement, merged[:len(merged) - len(response)], response


async def show_gatt(peer: Peer) -> None:
    await peer.discover_services()
    for service in peer.services:
        await service.discover_characteristics()
        try:
            included = await peer.gatt_client.discover_included_services(service)
        except Exception:  # noqa: BLE001 - Bumble cannot parse an include of a 128-bit service
            included = []
        say(f"  service {uuid_text(service.uuid)}  handles 0x{service.handle:04X}-0x{service.end_group_handle:04X}")
        for include in included:
            say(f"    includes {uuid_text(include.uuid)} (0x{include.handle:04X}-0x{include.end_group_handle:04X})")
        for characteristic in service.characteristics:
            await characteristic.discover_descriptors()
            properties = str(Characteristic.Properties(characteristic.properties)).lower().replace("|", ", ")
            say(f"    characteristic {uuid_text(characteristic.uuid)}  [{properties}]  handle 0x{characteristic.handle:04X}")
            try:
                value = await peer.gatt_client.read_value(characteristic.handle)
                say(f"      value: {value_text(value)}")
            except Exception as error:  # noqa: BLE001 - show what the peripheral answered
                say(f"      value: not readable ({getattr(error, 'error_name', error)})")
            for descriptor in characteristic.descriptors:
                try:
                    value = value_text(await peer.gatt_client.read_value(descriptor.handle))
                except Exception as error:  # noqa: BLE001
                    value = f"not readable ({getattr(error, 'error_name', error)})"
                say(f"      descriptor {uuid_text(descriptor.type)}  handle 0x{descriptor.handle:04X}: {value}")


def notifiable(peer: Peer) -> Characteristic | None:
    """The first characteristic that can notify or indicate (not GATT's Service Changed)."""
    for service in peer.services:
        for characteristic in service.characteristics:
            if characteristic.uuid != SERVICE_CHANGED and characteristic.properties & (
                    Characteristic.Properties.NOTIFY | Characteristic.Properties.INDICATE):
                return characteristic
    return None


async def push_with_gattctl(gattctl: str, socket: str, name: str, values: list[str]) -> None:
    for value in values:
        result = await asyncio.to_thread(
            subprocess.run, [gattctl, "notify", "--socket", socket, name, value],
            capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            say(f"  gattctl notify {name} {value}: {(result.stderr or result.stdout).strip()}")
            return
        await asyncio.sleep(0.2)


async def run(arguments: argparse.Namespace) -> int:
    async with await open_transport(arguments.transport) as (source, sink):
        device = Device.with_hci("demo-central", hci.Address("C0:DE:00:00:00:01"), source, sink)
        await device.power_on()

        say(f"== Scanning for \"{arguments.name}\"" if arguments.name else f"== Scanning for {arguments.address}")
        advertisement, advertising_data, scan_response = await scan(device, arguments.name, arguments.address,
                                                                    arguments.timeout)
        say(f"  address {advertisement.address}, {'connectable' if advertisement.is_connectable else 'not connectable'}")
        say("  advertising data: " + advertising_data.hex(" "))
        for ad_type, data in ad_structures(advertising_data):
            say(f"    {describe_ad_structure(ad_type, data)}")
        if scan_response is not None:
            say("  scan response: " + (scan_response.hex(" ") or "(empty)"))
            for ad_type, data in ad_structures(scan_response):
                say(f"    {describe_ad_structure(ad_type, data)}")

        if not advertisement.is_connectable:
            say("\n  not connectable: a phone sees this advertisement and nothing more (no GATT to show)")
            await device.power_off()
            return 0

        say("\n== Connecting")
        connection = await device.connect(advertisement.address, transport=PhysicalTransport.LE,
                                          timeout=arguments.timeout)
        peer = Peer(connection)
        mtu = await peer.request_mtu(247)
        say(f"  connected, handle {connection.handle}, ATT MTU {mtu}")

        say("\n== GATT database")
        await show_gatt(peer)

        target = notifiable(peer)
        status = 0
        if target is None:
            say("\n== Notifications")
            say("  no characteristic can notify or indicate: nothing to subscribe to")
        else:
            is_heart_rate = target.uuid == HEART_RATE_MEASUREMENT
            say(f"\n== Notifications of {uuid_text(target.uuid)}")
            received: asyncio.Queue[bytes] = asyncio.Queue()
            await target.subscribe(lambda value: received.put_nowait(bytes(value)))
            cccd = target.get_descriptor(CCCD)
            bits = struct.unpack("<H", await peer.gatt_client.read_value(cccd.handle))[0]
            say(f"  subscribed: CCCD 0x{cccd.handle:04X} reads back 0x{bits:04X}"
                f" ({'notifications' if bits & 1 else 'indications' if bits & 2 else 'NOT'} enabled)")
            if bits & 3 == 0:
                status = 1
            if arguments.gattctl:
                # gattctl names a characteristic by its config id or, when unique, its UUID.
                name = "hr_measurement" if is_heart_rate else target.uuid.to_hex_str("-")
                values = ["00 48", "00 4c", "00 50"] if is_heart_rate else ["01", "02", "03"]
                say(f"  pushing {len(values)} values with gattctl notify {name} ...")
                asyncio.get_running_loop().create_task(push_with_gattctl(arguments.gattctl, arguments.socket, name, values))
            count = 0
            try:
                while count < 3:
                    value = await asyncio.wait_for(received.get(), arguments.notification_wait)
                    count += 1
                    if is_heart_rate and len(value) > 1:
                        say(f"  notification {count}: {value.hex(' ')}  (flags 0x{value[0]:02X}, {value[1]} bpm)")
                    else:
                        say(f"  value {count}: {value_text(value)}")
            except asyncio.TimeoutError:
                say(f"  {count} value(s) received" + ("" if arguments.gattctl else
                                                      " (nothing pushes values without --gattctl)"))
            await target.unsubscribe()
            say("  unsubscribed")

        await connection.disconnect()
        say("\n== Disconnected")
        await device.power_off()
        return status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transport", required=True, help="Bumble transport, e.g. tcp-client:127.0.0.1:PORT")
    parser.add_argument("--name", help="advertised local name to look for (default HR-Demo unless --address)")
    parser.add_argument("--address", help="the peripheral's address, for a config that advertises no name")
    parser.add_argument("--timeout", type=float, default=10.0, help="scan/connect timeout (s)")
    parser.add_argument("--gattctl", help="gattctl binary used to push notifications")
    parser.add_argument("--socket", help="gattd's control socket (with --gattctl)")
    parser.add_argument("--notification-wait", type=float, default=3.0,
                        help="how long to wait for each notification (s)")
    arguments = parser.parse_args()
    if not arguments.name and not arguments.address:
        arguments.name = "HR-Demo"
    sys.exit(asyncio.run(run(arguments)))


if __name__ == "__main__":
    main()
