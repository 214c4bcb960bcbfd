"""Bumble's Enhanced ATT client (bumble 0.0.236) with its gaps fixed, for the EATT tests.

Bumble opens Enhanced ATT bearers (Core Spec Vol 3 Part F §3.2.11: ATT over L2CAP Enhanced
Credit Based Flow Control channels on PSM 0x0027) with `gatt_client.Client.connect_eatt`,
but as shipped it

1. **forces each bearer's ATT_MTU to 23** once connected (`channel.att_mtu =
   ATT_DEFAULT_MTU`). On an Enhanced ATT bearer ATT_MTU is the smaller of the two L2CAP MTUs
   (Vol 3 Part G §5.3.1) and there is no Exchange MTU: at 23 the client splits every write
   longer than 20 octets into Prepare/Execute Writes and long-reads every 22-octet value.
   Fixed in `open_bearers`: min(our MTU, the server's).
2. **drops ATT_MULTIPLE_HANDLE_VALUE_NTF** (opcode 0x23, Vol 3 Part F §3.4.7.4): Bumble's
   Opcode enum lacks it, `ATT_PDU.from_bytes` names it "Opcode[35]", no handler matches and
   `Client.on_gatt_pdu` logs "Ignoring GATT Response". Fixed in `Client.on_gatt_pdu`: each
   Handle Length Value tuple goes to `on_att_handle_value_notification` (subscribers, the
   value cache and `harness.record_updates` see it as a notification). A server may send it
   on any bearer: `open_bearers` also gives the connection's fixed bearer this client.
3. **answers L2CAP_CREDIT_BASED_RECONFIGURE_REQ with Command Reject** (Vol 3 Part A §4.27;
   `ChannelManager` has no handler for it, nor for the response). Fixed per device by
   `install(device)`: the request is checked and answered as §4.28 says (new MTU below the
   current one: 0x0001; MPS reduced on more than one channel: 0x0002; a CID that is not one
   of ours: 0x0003; MTU or MPS below 64: 0x0004), the channels take the new MTU and MPS, and
   an EATT bearer's ATT_MTU follows (it only grows). `reconfigure(...)` sends the request
   from our side (Bumble has no way to).
4. **merges queued writes into one SDU** while a channel waits for credits
   (`LeCreditBasedChannel.process_output` is a byte stream): two ATT PDUs queued behind an
   exhausted credit count reach the server as one SDU, one malformed PDU (an EATT SDU is one
   ATT PDU). Fixed on our bearers: one SDU per write.

Each fix has a self-test in test_eatt_client.py (a Bumble peripheral as the server) that
fails without it. Nothing in site-packages is edited: `Client` is a subclass, the channel and
channel manager fixes are bound to the instances we use.

Every notification and indication a `Client` receives, and each value of a Multiple Handle
Value Notification, is also recorded in an `Updates` log shared by the connection's bearers,
with the bearer it came on, so a test can say which bearer carried what.
"""

from __future__ import annotations

import asyncio
import functools
import struct
import types
from dataclasses import dataclass, field

from bumble import att, gatt_client, l2cap
from bumble.device import Connection, Device

EATT_PSM = att.EATT_PSM  # 0x0027
MULTIPLE_HANDLE_VALUE_NTF = 0x23  # Vol 3 Part F §3.4.7.4
FIXED = "fixed"  # the label of the fixed (unenhanced) ATT bearer in `Updates`
ECRED_MIN_MTU = ECRED_MIN_MPS = 64  # Vol 3 Part A §4.25, §4.27

Result = l2cap.L2CAP_Credit_Based_Reconfigure_Response.Result


@dataclass
class Update:
    """One notification or indication PDU as received: the bearer it came on (`FIXED` or our
    channel's CID), its ATT opcode (0x1B, 0x1D or 0x23) and its (handle, value) pairs (several
    only for 0x23)."""

    bearer: str | int
    opcode: int
    values: list[tuple[int, bytes]]


@dataclass
class Updates:
    """The updates received on every bearer of one connection, in order of arrival."""

    pdus: list[Update] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, update: Update) -> None:
        self.pdus.append(update)
        self.changed.set()

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[Update]:
        """The first `count` PDUs, once that many arrived."""
        async def enough() -> None:
            while len(self.pdus) < count:
                self.changed.clear()
                await self.changed.wait()
        try:
            await asyncio.wait_for(enough(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"{len(self.pdus)} of {count} updates after {timeout} s: {self.pdus}") from None
        return self.pdus[:count]


def parse_multiple_handle_value_notification(payload: bytes) -> list[tuple[int, bytes]]:
    """The Handle Length Value Tuple List of ATT_MULTIPLE_HANDLE_VALUE_NTF (after the
    opcode): handle (2), length (2), value (length), at least two tuples. Raises ValueError
    on anything else."""
    tuples, offset = [], 0
    while offset < len(payload):
        if offset + 4 > len(payload):
            raise ValueError(f"truncated tuple header at {offset}: {payload.hex()}")
        handle, length = struct.unpack_from("<HH", payload, offset)
        if offset + 4 + length > len(payload):
            raise ValueError(f"value of handle 0x{handle:04X} ({length} octets) truncated: {payload.hex()}")
        tuples.append((handle, bytes(payload[offset + 4:offset + 4 + length])))
        offset += 4 + length
    if len(tuples) < 2:
        raise ValueError(f"{len(tuples)} tuple(s), at least 2 expected: {payload.hex()}")
    return tuples


class Client(gatt_client.Client):
    """Bumble's GATT client on one bearer, taking Multiple Handle Value Notifications (fix
    2) and recording updates in `updates` (when set). With `hold_confirmations` set it
    confirms no indication until `release_confirmations()` (a phone slow to confirm)."""

    updates: Updates | None = None
    hold_confirmations: bool = False

    def __init__(self, bearer: att.Bearer) -> None:
        super().__init__(bearer)
        self.held_confirmations: list[att.ATT_Handle_Value_Confirmation] = []

    def send_confirmation(self, confirmation: att.ATT_Handle_Value_Confirmation) -> None:
        if self.hold_confirmations:
            self.held_confirmations.append(confirmation)
        else:
            super().send_confirmation(confirmation)

    def release_confirmations(self) -> None:
        """Sends the confirmations held back, and holds no more."""
        self.hold_confirmations = False
        held, self.held_confirmations = self.held_confirmations, []
        for confirmation in held:
            super().send_confirmation(confirmation)

    @property
    def label(self) -> str | int:
        return self.bearer.source_cid if att.is_enhanced_bearer(self.bearer) else FIXED

    def on_gatt_pdu(self, att_pdu: att.ATT_PDU) -> None:
        opcode = int(att_pdu.op_code)
        if opcode == MULTIPLE_HANDLE_VALUE_NTF:
            try:
                values = parse_multiple_handle_value_notification(bytes(att_pdu.payload))
            except ValueError as error:
                # Recorded as it came, so a test comparing updates shows it.
                values = [(-1, bytes(att_pdu.payload))]
                gatt_client.logger.warning(f"malformed ATT_MULTIPLE_HANDLE_VALUE_NTF: {error}")
                self._record(opcode, values)
                return
            self._record(opcode, values)
            for handle, value in values:
                # Through the instance (harness.record_updates replaces it there).
                self.on_att_handle_value_notification(
                    att.ATT_Handle_Value_Notification(attribute_handle=handle, attribute_value=value))
            return
        if opcode in (att.Opcode.ATT_HANDLE_VALUE_NOTIFICATION, att.Opcode.ATT_HANDLE_VALUE_INDICATION):
            self._record(opcode, [(att_pdu.attribute_handle, bytes(att_pdu.attribute_value))])
        super().on_gatt_pdu(att_pdu)

    def _record(self, opcode: int, values: list[tuple[int, bytes]]) -> None:
        if self.updates is not None:
            self.updates.add(Update(self.label, opcode, values))


def fixed_bearer_client(connection: Connection, updates: Updates | None = None) -> Client:
    """Replaces the connection's fixed-bearer client (`connection.gatt_client`, used by
    `Peer(connection)` and for every PDU on CID 0x0004) with ours. Call it before creating a
    Peer; services it discovered are not carried over."""
    if not isinstance(connection.gatt_client, Client):
        connection.gatt_client = Client(connection)
    connection.gatt_client.updates = updates
    return connection.gatt_client


# ----------------------------------------------------------------------------------------
# Fix 4: one SDU per ATT PDU
# ----------------------------------------------------------------------------------------
def _send_one_sdu_per_write(channel: l2cap.LeCreditBasedChannel) -> None:
    """Binds to `channel` a process_output that makes each queued write its own SDU
    (K-frames of at most the peer's MPS), instead of Bumble's, which packs the queue into
    SDUs of up to the peer's MTU."""

    def process_output() -> None:
        while channel.credits > 0:
            if channel.out_sdu is None:
                if not channel.out_queue:
                    break
                pdu = bytes(channel.out_queue.popleft())
                if len(pdu) > channel.peer_mtu:
                    raise ValueError(f"{len(pdu)}-octet PDU above the peer's MTU {channel.peer_mtu}")
                channel.out_sdu = struct.pack("<H", len(pdu)) + pdu
            packet = channel.out_sdu[:channel.peer_mps]
            channel.send_pdu(packet)
            channel.credits -= 1
            channel.out_sdu = channel.out_sdu[len(packet):] or None
        if channel.out_sdu is None and not channel.out_queue:
            channel.drained.set()

    channel.process_output = process_output


# ----------------------------------------------------------------------------------------
# Fix 1 (and 2, 4): opening bearers
# ----------------------------------------------------------------------------------------
async def open_bearers(connection: Connection, count: int, mtu: int = 517, mps: int = 247,
                       credits: int = 16, updates: Updates | None = None,
                       psm: int = EATT_PSM) -> list[Client]:
    """Opens `count` Enhanced ATT bearers in one L2CAP_CREDIT_BASED_CONNECTION_REQ and
    returns a `Client` on each, its ATT_MTU min(`mtu`, the server's MTU) (fix 1), its channel
    sending one SDU per PDU (fix 4). The connection's fixed bearer gets our `Client` too
    (fix 2). Raises `l2cap.L2capError` (`.error_code` the result) when refused."""
    install(connection.device)
    fixed_bearer_client(connection, updates)
    channels = await connection.device.l2cap_channel_manager.create_enhanced_credit_based_channels(
        connection, l2cap.LeCreditBasedChannelSpec(psm=psm, mtu=mtu, mps=mps, max_credits=credits), count)
    clients = []
    for channel in channels:
        client = Client(channel)
        client.updates = updates
        channel.sink = lambda pdu, client=client: client.on_gatt_pdu(att.ATT_PDU.from_bytes(pdu))
        channel.att_mtu = min(channel.mtu, channel.peer_mtu)
        _send_one_sdu_per_write(channel)
        clients.append(client)
    return clients


# ----------------------------------------------------------------------------------------
# Fix 3: L2CAP Credit Based Reconfigure
# ----------------------------------------------------------------------------------------
def _our_channels(manager: l2cap.ChannelManager, connection: Connection) -> list[l2cap.LeCreditBasedChannel]:
    return [channel for channel in manager.channels.get(connection.handle, {}).values()
            if isinstance(channel, l2cap.LeCreditBasedChannel)]


def _reconfigure_result(channels: list[l2cap.LeCreditBasedChannel | None], mtu: int, mps: int) -> Result:
    """§4.28's result for a request naming `channels` (None: a CID that is not ours)."""
    if any(channel is None for channel in channels) or not channels:
        return Result.RECONFIGURATION_FAILED_ONE_OR_MORE_DESTINATION_CIDS_INVALID
    if mtu < ECRED_MIN_MTU or mps < ECRED_MIN_MPS:
        return Result.RECONFIGURATION_FAILED_OTHER_UNACCEPTABLE_PARAMETERS
    if any(mtu < channel.peer_mtu for channel in channels):
        return Result.RECONFIGURATION_FAILED_REDUCTION_IN_SIZE_OF_MTU_NOT_ALLOWED
    if len(channels) > 1 and any(mps < channel.peer_mps for channel in channels):
        return Result.RECONFIGURATION_FAILED_REDUCTION_IN_SIZE_OF_MPS_NOT_ALLOWED_FOR_MORE_THAN_ONE_CHANNEL_AT_A_TIME
    return Result.RECONFIGURATION_SUCCESSFUL


def _set_att_mtu(channel: l2cap.LeCreditBasedChannel) -> None:
    if channel.psm == EATT_PSM:
        channel.on_att_mtu_update(min(channel.mtu, channel.peer_mtu))


def _on_reconfigure_request(manager: l2cap.ChannelManager, connection: Connection, cid: int,
                            request: l2cap.L2CAP_Credit_Based_Reconfigure_Request) -> None:
    # The request names the sender's CIDs: our channels' destination CIDs.
    ours = {channel.destination_cid: channel for channel in _our_channels(manager, connection)}
    channels = [ours.get(destination) for destination in request.destination_cid]
    result = _reconfigure_result(channels, request.mtu, request.mps)
    if result == Result.RECONFIGURATION_SUCCESSFUL:
        for channel in channels:
            channel.peer_mtu, channel.peer_mps = request.mtu, request.mps
            _set_att_mtu(channel)
    manager.reconfigure_requests_answered.append((list(request.destination_cid), request.mtu, request.mps, result))
    manager.send_control_frame(connection, cid, l2cap.L2CAP_Credit_Based_Reconfigure_Response(
        identifier=request.identifier, result=result))


def _on_reconfigure_response(manager: l2cap.ChannelManager, connection: Connection, _cid: int,
                             response: l2cap.L2CAP_Credit_Based_Reconfigure_Response) -> None:
    pending = manager.pending_reconfigurations.pop((connection.handle, response.identifier), None)
    if pending is not None and not pending.done():
        pending.set_result(Result(response.result))


def _on_command_reject(manager: l2cap.ChannelManager, connection: Connection, cid: int,
                       packet: l2cap.L2CAP_Command_Reject, stock=None) -> None:
    pending = manager.pending_reconfigurations.pop((connection.handle, packet.identifier), None)
    if pending is not None and not pending.done():
        pending.set_exception(l2cap.L2capError(packet.reason, "L2CAP_COMMAND_REJECT_RSP"))
    stock(connection, cid, packet)


def install(device: Device) -> None:
    """Fix 3 on `device`'s L2CAP channel manager (idempotent): it answers Credit Based
    Reconfigure Requests (and records each answer in `reconfigure_requests_answered`) and
    takes the responses to ours."""
    manager = device.l2cap_channel_manager
    if getattr(manager, "reconfigure_requests_answered", None) is not None:
        return
    manager.reconfigure_requests_answered = []
    manager.pending_reconfigurations = {}
    manager.on_l2cap_credit_based_reconfigure_request = types.MethodType(_on_reconfigure_request, manager)
    manager.on_l2cap_credit_based_reconfigure_response = types.MethodType(_on_reconfigure_response, manager)
    manager.on_l2cap_command_reject = functools.partial(_on_command_reject, manager, stock=manager.on_l2cap_command_reject)


async def reconfigure(channels: list[l2cap.LeCreditBasedChannel], mtu: int, mps: int,
                      timeout: float = 10.0) -> Result:
    """Sends L2CAP_CREDIT_BASED_RECONFIGURE_REQ (§4.27) for our `channels` (one connection)
    with our new receive MTU and MPS, and returns the peer's result; on success the channels
    take them and EATT bearers' ATT_MTU follows. A peer that does not know the request
    answers Command Reject: `l2cap.L2capError` (`.error_code` its reason)."""
    connection = channels[0].connection
    manager = connection.device.l2cap_channel_manager
    install(connection.device)
    identifier = manager.next_identifier(connection)
    answer = asyncio.get_running_loop().create_future()
    manager.pending_reconfigurations[(connection.handle, identifier)] = answer
    manager.send_control_frame(connection, l2cap.L2CAP_LE_SIGNALING_CID, l2cap.L2CAP_Credit_Based_Reconfigure_Request(
        identifier=identifier, mtu=mtu, mps=mps, destination_cid=[channel.source_cid for channel in channels]))
    try:
        result = await asyncio.wait_for(answer, timeout)
    finally:
        manager.pending_reconfigurations.pop((connection.handle, identifier), None)
    if result == Result.RECONFIGURATION_SUCCESSFUL:
        for channel in channels:
            channel.mtu, channel.mps = mtu, mps
            _set_att_mtu(channel)
    return result
