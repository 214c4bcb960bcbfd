"""Our privacy (Core Spec Vol 6 Part B §1.3.2.2, Vol 3 Part H §3.6.4): with
`own_address_type: "rpa"` gattd advertises with resolvable private addresses made with its
IRK and renews them every `rpa_timeout_s`; a central that bonds gets the IRK and the static
identity address, and resolves every later private address to it.
"""

from __future__ import annotations

import asyncio
import json

from bumble import hci
from bumble.crypto import ah

from gatt_central import central_device, connect_peer
from harness import named, run, scan_for
from test_pairing import ENCRYPTED, config_with, pairing


def rpa_config(timeout_s: int) -> str:
    config = json.loads(config_with())
    config["advertising"]["own_address_type"] = "rpa"
    config["advertising"]["rpa_timeout_s"] = timeout_s
    return json.dumps(config, indent=1)


def resolves(address: hci.Address, irk: bytes) -> bool:
    """Vol 6 Part B §1.3.2.3 with Bumble's own ah (little-endian bytes: hash, then prand)."""
    raw = bytes(address)
    return raw[5] & 0xC0 == 0x40 and ah(irk, raw[3:6]) == raw[0:3]


def test_private_addresses_renewed_and_resolved_by_a_bonded_central(controllers, gattd, tmp_path):
    process = gattd(rpa_config(timeout_s=2))

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            first = await scan_for(device, named("gattd-test"), active=False)
            await device.stop_scanning()
            assert first.address.address_type == hci.Address.RANDOM_DEVICE_ADDRESS
            assert str(first.address).split("/")[0] != controllers[0].address, "not the public address"
            assert bytes(first.address)[5] & 0xC0 == 0x40, f"{first.address} is not a resolvable private address"

            peer = await connect_peer(device, first.address)
            await asyncio.wait_for(peer.connection.pair(), 15)
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            keys = await device.keystore.get(str(peer.connection.peer_address))
            assert keys is not None and keys.irk is not None, "gattd distributed its IRK"
            irk = keys.irk.value
            assert resolves(first.address, irk)
            irk_file = (tmp_path / "state" / "bonds" / "local-irk").read_text().strip()
            assert bytes.fromhex(irk_file) == irk, "the IRK kept in the state directory"
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            # After rpa_timeout_s (2 s) a new private address, resolved by the same IRK: the
            # scan waits for it.
            second = await scan_for(device, lambda a: named("gattd-test")(a) and a.address != first.address,
                                    timeout=15, active=False)
            await device.stop_scanning()
            assert bytes(second.address)[5] & 0xC0 == 0x40
            assert resolves(second.address, irk)
            assert not resolves(second.address, bytes(16))
            # The bonded central reconnects to the new address and encrypts with its bond.
            peer = await connect_peer(device, second.address)
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"

    run(body(), timeout=60)
    assert "advertising as" in process.log()
