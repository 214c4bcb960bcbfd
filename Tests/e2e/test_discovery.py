"""Connection, MTU exchange and GATT discovery, compared with `gattd --check-config`'s table.

One gattd (config/test/gatt-full.json) serves the whole module; each test connects its own
central. The expected handles, UUIDs, properties and values all come from the attribute
table gattd prints for the same file, so the table and the air must agree.
"""

from __future__ import annotations

import re

import pytest

from bumble import att
from bumble.core import UUID
from bumble.gatt_client import ServiceProxy

from gatt_central import (
    FULL_CONFIG,
    central,
    full_table,
    dump_link_logs,  # noqa: F401 (fixture)
    module_link,
    raw_request,
    wait_for_log,
)
from harness import run

link = module_link(FULL_CONFIG)
pytestmark = pytest.mark.usefixtures("dump_link_logs")

SERVICE_KINDS = ("Primary Service", "Secondary Service")


def group_end(row) -> int:
    return int(re.search(r"end=0x([0-9A-F]{4})", row.notes).group(1), 16)


def characteristic_rows():
    """(declaration row, value row, [descriptor rows]) per characteristic, in handle order."""
    result = []
    table = full_table()
    for index, row in enumerate(table):
        if row.kind != "Characteristic":
            continue
        value = table[index + 1]
        assert value.kind == "Characteristic Value"
        descriptors = []
        for following in table[index + 2:]:
            if following.kind in ("Characteristic", "Include") or following.kind in SERVICE_KINDS:
                break
            descriptors.append(following)
        result.append((row, value, descriptors))
    return result


def test_table_is_what_the_suite_expects(link):
    # Guards the other tests: the config has GAP, GATT, 4 services and 53 attributes.
    assert len(full_table()) == 53
    assert [(r.handle, r.uuid) for r in full_table() if r.kind in SERVICE_KINDS] == [
        (0x0001, "1800"), (0x0006, "1801"), (0x0010, "6E4A0001-B5A3-F393-E0A9-E50E24DCCA9E"),
        (0x002A, "180F"), (0x002E, "6E4A0002-B5A3-F393-E0A9-E50E24DCCA9E"), (0x0031, "181A"),
    ]


def test_connect_and_exchange_mtu_517(link):
    async def body():
        log_start = len(link.gattd.log())
        async with central(link) as peer:
            response = await raw_request(peer, att.ATT_Exchange_MTU_Request(client_rx_mtu=517))
            assert response.op_code == att.Opcode.ATT_EXCHANGE_MTU_RESPONSE
            assert response.server_rx_mtu == 517
            await wait_for_log(link.gattd, r"connected: C0:00:00:00:00:01", start=log_start)
            await wait_for_log(link.gattd, r"[0-9A-F:]{17}: MTU 517$", start=log_start)
            # A second exchange is answered the same way but changes nothing: a 300-byte
            # value still comes in one Read Response (MTU 517, not 100).
            response = await raw_request(peer, att.ATT_Exchange_MTU_Request(client_rx_mtu=100))
            assert response.server_rx_mtu == 517
            response = await raw_request(peer, att.ATT_Read_Request(attribute_handle=0x0018))
            assert len(response.attribute_value) == 300
            # One MTU event line (the debug lines of the PDUs say "Exchange MTU ... MTU 517" too).
            assert len(re.findall(r"[0-9A-F:]{17}: MTU 517$", link.gattd.log()[log_start:], re.MULTILINE)) == 1

    run(body())


def test_discover_all_primary_services(link):
    async def body():
        async with central(link) as peer:
            services = await peer.discover_services()
            found = [(s.handle, s.end_group_handle, s.uuid) for s in services]
            expected = [(r.handle, group_end(r), r.bumble_uuid) for r in full_table() if r.kind == "Primary Service"]
            assert found == expected
            assert [str(s.uuid) for s in services][:2] == ["UUID-16:1800 (Generic Access)",
                                                           "UUID-16:1801 (Generic Attribute)"]

    run(body())


def test_discover_primary_service_by_uuid(link):
    async def body():
        async with central(link) as peer:
            battery = await peer.discover_service(UUID("180F"))
            assert [(s.handle, s.end_group_handle) for s in battery] == [(0x002A, 0x002D)]
            test = await peer.discover_service(UUID("6E4A0001-B5A3-F393-E0A9-E50E24DCCA9E"))
            assert [(s.handle, s.end_group_handle) for s in test] == [(0x0010, 0x0029)]
            # A secondary service is not found by primary service discovery.
            assert await peer.discover_service(UUID("6E4A0002-B5A3-F393-E0A9-E50E24DCCA9E")) == []
            assert await peer.discover_service(UUID("1812")) == []

    run(body())


def test_find_included_services(link):
    """Vol 3 Part G §4.5.1: Read By Type «Include» over the service's range; a 128-bit
    included service carries no UUID and its declaration is read for it."""
    includes = [r for r in full_table() if r.kind == "Include"]
    assert len(includes) == 2

    async def body():
        async with central(link) as peer:
            found = []
            start = 0x0010
            while True:
                response = await raw_request(peer, att.ATT_Read_By_Type_Request(
                    starting_handle=start, ending_handle=0x0029, attribute_type=UUID("2802")))
                if response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
                    assert response.error_code == att.ErrorCode.ATTRIBUTE_NOT_FOUND
                    break
                found += [(handle, bytes(value)) for handle, value in response.attributes]
                start = response.attributes[-1][0] + 1
            assert found == [(r.handle, r.value) for r in includes]
            # The 128-bit included service: read its declaration for the UUID.
            start_handle = int.from_bytes(found[1][1][0:2], "little")
            declaration = await peer.gatt_client.read_value(start_handle)
            assert UUID.from_bytes(declaration) == UUID("6E4A0002-B5A3-F393-E0A9-E50E24DCCA9E")

    run(body())


def test_characteristics_and_descriptors_match_table(link):
    async def body():
        async with central(link) as peer:
            services = await peer.discover_services()
            # The secondary service is reachable through its include; discover it too.
            secondary = next(r for r in full_table() if r.kind == "Secondary Service")
            services.append(ServiceProxy(peer.gatt_client, secondary.handle, group_end(secondary),
                                         secondary.bumble_uuid, primary=False))
            found = []
            for service in services:
                for characteristic in await service.discover_characteristics():
                    descriptors = await characteristic.discover_descriptors()
                    found.append((characteristic.handle, characteristic.uuid, int(characteristic.properties),
                                  [(d.handle, d.type) for d in descriptors]))
            found.sort(key=lambda entry: entry[0])
            expected = [(value.handle, value.bumble_uuid, declaration.value[0],
                         [(d.handle, d.bumble_uuid) for d in descriptors])
                        for declaration, value, descriptors in characteristic_rows()]
            assert found == expected
            assert len(found) == 18  # 6 built-in + 12 configured

    run(body())


def test_characteristic_discovery_by_uuid(link):
    async def body():
        async with central(link) as peer:
            (battery,) = await peer.discover_service(UUID("180F"))
            characteristics = await battery.discover_characteristics([UUID("2A19")])
            assert [(c.handle, c.uuid) for c in characteristics] == [(0x002C, UUID("2A19"))]
            (test,) = await peer.discover_service(UUID("6E4A0001-B5A3-F393-E0A9-E50E24DCCA9E"))
            wanted = UUID("6E4A0018-B5A3-F393-E0A9-E50E24DCCA9E")
            characteristics = await test.discover_characteristics([wanted])
            assert [(c.handle, c.uuid, int(c.properties)) for c in characteristics] == [(0x0024, wanted, 0x8A)]

    run(body())


def test_every_attribute_and_readable_value_matches_table(link):
    """Find Information over the whole range gives every handle and type; every attribute
    readable without encryption reads back as the table prints it."""

    async def body():
        async with central(link) as peer:
            await peer.request_mtu(517)
            attributes = await peer.gatt_client.discover_attributes()
            assert [(a.handle, a.type) for a in attributes] == [(r.handle, r.attribute_type) for r in full_table()]
            checked = 0
            for row in full_table():
                if row.permissions != ["readable"] and row.permissions != ["readable", "writeable"]:
                    continue
                value = await peer.gatt_client.read_value(row.handle)
                if row.value_length is None:
                    assert value == row.value, f"handle 0x{row.handle:04X}"
                else:
                    assert len(value) == row.value_length and value.startswith(row.value), f"0x{row.handle:04X}"
                checked += 1
            assert checked == 50  # all but 0x0008, 0x001A (write only) and 0x001C (encrypted)

    run(body())
