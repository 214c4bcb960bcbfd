"""Insufficient Encryption Key Size (Core Spec Vol 3 Part C §10.3.1, ATT error 0x0C): a
central bonded with a 7-octet key under `min_key_size: 7` reconnects after gattd restarted
with `min_key_size: 16`; its link encrypts with the stored key, and attributes that need
encryption answer 0x0C instead of the value until it pairs again with a full-size key.
"""

from __future__ import annotations

import asyncio

from bumble import smp
from bumble.pairing import PairingConfig, PairingDelegate

from gatt_central import att_error, central_device, connect_peer, raw_request, wait_for_log
from harness import run
from test_pairing import ENCRYPTED, READ, config_with, gattd_address, read_request

ENCRYPTION_KEY_SIZE_TOO_SHORT = 0x0C


class ShorteningSession(smp.Session):
    """Bumble's SMP session with its key shortened to the negotiated size, as Core Spec
    Vol 3 Part H §2.3.4 prescribes (the most significant octets zeroed; Zephyr and gattd do
    it). Bumble (0.0.x) always uses the full 16-octet key, so with a 7-octet key size its
    LTK differs from gattd's and the virtual controller ends the link with MIC Failure."""

    @property
    def ltk(self):
        return self._shortened_ltk

    @ltk.setter
    def ltk(self, key):
        size = min(self.maximum_encryption_key_size or 16, 16)
        self._shortened_ltk = key if key is None else bytes(key[:size]) + bytes(16 - size)


def test_a_bond_with_a_short_key_gets_insufficient_encryption_key_size(controllers, gattd):
    first = gattd(config_with({"min_key_size": 7}))

    async def body():
        async with central_device(controllers[1]) as device:
            device.smp_manager.session_proxy = ShorteningSession
            delegate = PairingDelegate(maximum_encryption_key_size=7)
            device.pairing_config_factory = lambda _c: PairingConfig(
                sc=True, mitm=False, bonding=True, delegate=delegate,
                identity_address_type=PairingConfig.AddressType.RANDOM)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01 \(LE Secure Connections, unauthenticated, key size 7\)")
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42", "7 octets are enough under min_key_size 7"
            keys = await device.keystore.get(str(peer.connection.peer_address))
            assert keys.ltk.value[7:] == bytes(9), "the fix: Bumble's key is shortened to 7 octets too"
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            first.stop()
            second = gattd(config_with({"min_key_size": 16}))
            await wait_for_log(second, r"loaded 1 bond from ")
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert peer.connection.is_encrypted
            att_error(await raw_request(peer, read_request()), READ, ENCRYPTED, ENCRYPTION_KEY_SIZE_TOO_SHORT)

    run(body(), timeout=60)
