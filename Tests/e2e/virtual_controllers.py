#!/usr/bin/env python3
"""N virtual Bluetooth LE controllers on one simulated radio, each served as H4 over TCP.

Built from Bumble's `Controller` and `LocalLink`, with fixes for what the stock
`bumble.apps.controllers` app gets wrong (see README.md in this folder):

* scan responses carry the advertiser's LE Set Scan Response Data (stock: a copy of the
  advertising data), and only active scanners get them;
* advertising report event types follow the advertising type (ADV_IND, ADV_SCAN_IND,
  ADV_NONCONN_IND; legacy bit set in extended reports), and non-connectable advertising
  is sent at all (stock: only ADV_IND goes on air) but cannot be connected to: an initiator
  never connects to it, scanning or not (stock checks nothing), the attempt stays pending;
* LE Create Connection Cancel ends a pending attempt with LE Connection Complete, status
  Unknown Connection Identifier (stock: does nothing, so a host that gives up hangs);
* HCI_Reset resets the controller: advertising and scanning stop, connections drop (the
  peer sees a supervision timeout), addresses, masks and advertising data are cleared;
* advertising intervals are in 0.625 ms units (stock: milliseconds), capped at 100 ms so
  tests are quick;
* Disconnect: the host that disconnects gets reason Connection Terminated By Local Host
  (0x16) in its Disconnection Complete (stock: the reason it sent, which only the peer sees);
* legacy and extended advertising commands never mix (Vol 4 Part E §3.1.1): after one kind
  since the last reset, the other gets Command Disallowed (stock accepts both); LE Extended
  Create Connection and the extended scanning commands are listed as supported (stock
  implements but does not list them, so a Bumble host scanned extended and connected legacy);
* LE Set Data Length and LE Set PHY are answered (stock: listed as supported but not
  implemented; LE Set PHY got no reply at all);
* each TCP connection gets a fresh H4 parser; a new host connection replaces the old one;
* extended advertising as a Bluetooth 5 controller does it: its commands listed as supported,
  never mixed with the legacy ones between resets, LE Enhanced Connection Complete and LE
  Advertising Set Terminated as the LE event mask asks (virtual_extended_advertising.py);
* every HCI command a controller receives is recorded, byte for byte, in
  `<log-dir>/controller-<N>-commands.jsonl` ({"t": seconds, "hex": "01..."} per line).

Usage:
    python virtual_controllers.py --count 2 --ready-file ready.json --log-dir logs [--legacy-only]
                                  [--acl-buffer-size 251] [--batch-completions]

`--acl-buffer-size N` sets the LE ACL data packet length LE Read Buffer Size reports (default
27): hosts fragment longer L2CAP PDUs into packets of at most N bytes (each completed with
Number Of Completed Packets); the peer's host still receives each PDU whole.

`--batch-completions` reports the completions of every ACL packet a host wrote in one go in
one Number Of Completed Packets event (pending completions are sent before any other event,
so the order holds), as a real controller reports several per connection event; without it
each packet gets its own event at once (stock Bumble).

`--legacy-only` clears the extended-advertising feature bits so hosts (gattd, Bumble) use
the legacy LE Set Advertising/Scan Response Data commands and legacy advertising reports.

When every controller listens, the script writes the ready file (JSON, written atomically):
    {"pid": 123, "controllers": [{"index": 0, "port": 40001, "address": "F0:F0:F0:F0:F0:00",
                                  "transport": "tcp:127.0.0.1:40001",
                                  "bumble_transport": "tcp-client:127.0.0.1:40001",
                                  "commands": "logs/controller-0-commands.jsonl"}, ...]}
and prints the same JSON on one line to stdout. It runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import signal
import sys
import time

from bumble import hci, ll
from bumble.controller import AdvertisingSet, Controller, LegacyAdvertiser
from bumble.core import PhysicalTransport
from bumble.link import LocalLink

from virtual_extended_advertising import ExtendedAdvertisingFixes

logger = logging.getLogger("virtual_controllers")

ADV_IND = 0x00
ADV_DIRECT_IND_HIGH = 0x01
ADV_SCAN_IND = 0x02
ADV_NONCONN_IND = 0x03
ADV_DIRECT_IND_LOW = 0x04

# Extended advertising report event type bits (Core Spec Vol 4 Part E §7.7.65.13).
EXT_CONNECTABLE = 0x01
EXT_SCANNABLE = 0x02
EXT_DIRECTED = 0x04
EXT_SCAN_RESPONSE = 0x08
EXT_LEGACY = 0x10

MAX_ADVERTISING_INTERVAL_S = 0.1

# Core Spec Vol 4 Part E §3.1.1: a controller refuses legacy advertising commands once the
# host used an extended one since the last reset, and the other way round. The sets below are
# the advertising, scanning and initiating commands of each kind (as Zephyr's controller
# checks them; rootcanal checks the same minus the reads, Remove/Clear and periodic ones).
LEGACY_ADVERTISING_COMMANDS = frozenset({
    0x2006,  # LE Set Advertising Parameters
    0x2007,  # LE Read Advertising Physical Channel Tx Power
    0x2008,  # LE Set Advertising Data
    0x2009,  # LE Set Scan Response Data
    0x200A,  # LE Set Advertising Enable
    0x200B,  # LE Set Scan Parameters
    0x200C,  # LE Set Scan Enable
    0x200D,  # LE Create Connection
})
EXTENDED_ADVERTISING_COMMANDS = frozenset({
    0x2035,  # LE Set Advertising Set Random Address
    0x2036,  # LE Set Extended Advertising Parameters
    0x2037,  # LE Set Extended Advertising Data
    0x2038,  # LE Set Extended Scan Response Data
    0x2039,  # LE Set Extended Advertising Enable
    0x203A,  # LE Read Maximum Advertising Data Length
    0x203B,  # LE Read Number of Supported Advertising Sets
    0x203C,  # LE Remove Advertising Set
    0x203D,  # LE Clear Advertising Sets
    0x203E,  # LE Set Periodic Advertising Parameters
    0x203F,  # LE Set Periodic Advertising Data
    0x2040,  # LE Set Periodic Advertising Enable
    0x2041,  # LE Set Extended Scan Parameters
    0x2042,  # LE Set Extended Scan Enable
    0x2043,  # LE Extended Create Connection
    0x2044,  # LE Periodic Advertising Create Sync
})


def advertising_interval_seconds(units: int) -> float:
    """Advertising interval in 0.625 ms units → seconds, capped so tests stay quick."""
    return min(max(units * 0.000625, 0.01), MAX_ADVERTISING_INTERVAL_S)


def disallowed_return_parameters(command):
    """The return parameters of a refused command: status 0x0C, the other fields zero, so the
    Command Complete has the length the host expects (Vol 4 Part E §7.7.14)."""
    return_type = getattr(type(command), "return_parameters_class", None)
    if return_type is not None and return_type is not hci.HCI_StatusReturnParameters:
        try:
            fields = {f.name: 0 for f in dataclasses.fields(return_type) if f.name != "status"}
            return return_type(status=hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR, **fields)
        except (TypeError, ValueError):
            pass
    return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)


class VirtualLegacyAdvertiser(LegacyAdvertiser):
    """Legacy advertiser that puts scannable and non-connectable advertising on air too."""

    def _on_timer_fired(self) -> None:
        self.send_advertising_data()
        self.timer_handle = asyncio.get_running_loop().call_later(
            advertising_interval_seconds(self.advertising_interval_min), self._on_timer_fired
        )

    def send_advertising_data(self) -> None:
        if not self.enabled:
            return
        if self.advertising_type in (ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND):
            # AdvInd is the only legacy PDU LocalLink routes; the receiver looks up the type.
            self.controller.send_advertising_pdu(
                ll.AdvInd(advertiser_address=self.address, data=self.advertising_data)
            )

    @property
    def is_connectable(self) -> bool:
        return self.advertising_type == ADV_IND

    @property
    def is_scannable(self) -> bool:
        return self.advertising_type in (ADV_IND, ADV_SCAN_IND)


class VirtualLink(LocalLink):
    """LocalLink whose LE ACL data carries the sender's address *on that connection*.

    Stock LocalLink stamps LE data with the sender controller's random address, so a
    peripheral that advertises (and is connected) with its public address never gets
    its data delivered ("no connection for 00:00:00:00:00:00").
    """

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport == PhysicalTransport.LE:
            connection = sender_controller.le_connections.get(destination_address)
            destination = self.find_le_controller(destination_address)
            if connection is not None and destination is not None:
                source = connection.self_address
                asyncio.get_running_loop().call_soon(
                    lambda: destination.on_link_acl_data(source, transport, data))
                return
        super().send_acl_data(sender_controller, destination_address, transport, data)


class VirtualController(ExtendedAdvertisingFixes, Controller):
    """A Bumble controller with working scan responses, HCI Reset and extended advertising,
    recording commands."""

    def __init__(self, name: str, link: LocalLink, public_address: str, command_log: str | None,
                 legacy_only: bool = False, acl_buffer_size: int = 27, batch_completions: bool = False):
        super().__init__(name, link=link, public_address=public_address)
        # Number Of Completed Packets: one event per ACL packet as it arrives (stock), or the
        # completions of one batch of host packets in one event (`--batch-completions`).
        self.batch_completions = batch_completions
        self.pending_completions: dict[int, int] = {}
        # LE Read Buffer Size: the longest ACL data packet the host may send (fragments above).
        self.le_acl_data_packet_length = acl_buffer_size
        self.acl_data_packet_length = acl_buffer_size
        if legacy_only:
            # Without these features hosts use the legacy advertising and scanning commands.
            self.le_features = self.le_features & ~(
                hci.LeFeatureMask.LE_EXTENDED_ADVERTISING | hci.LeFeatureMask.LE_PERIODIC_ADVERTISING
            )
        else:
            # Stock Bumble implements LE Extended Create Connection and the extended scanning
            # commands but does not list them, so a Bumble host scans with the extended
            # commands and then connects with the legacy LE Create Connection: mixing, which
            # a controller refuses (see LEGACY_ADVERTISING_COMMANDS). List them, as a
            # controller with LE Extended Advertising does.
            self.supported_commands = set(self.supported_commands) | {
                hci.HCI_LE_SET_EXTENDED_SCAN_PARAMETERS_COMMAND,
                hci.HCI_LE_SET_EXTENDED_SCAN_ENABLE_COMMAND,
                hci.HCI_LE_EXTENDED_CREATE_CONNECTION_COMMAND,
            }
        # Stock Bumble lists the Connection Parameters Request procedure but, as peripheral,
        # carries out LE Connection Update by sending LL_CONNECTION_UPDATE_IND itself (which
        # only a central may send), so its central can never refuse. Not listing it makes a
        # peripheral host ask with the L2CAP Connection Parameter Update Request instead,
        # which a Bumble central answers (and can be made to refuse).
        self.le_features = self.le_features & ~hci.LeFeatureMask.CONNECTION_PARAMETERS_REQUEST_PROCEDURE
        self.init_extended_advertising(extended=not legacy_only)
        self.le_legacy_advertiser = VirtualLegacyAdvertiser(self)
        self.command_log_path = command_log
        self.command_log = open(command_log, "a", buffering=1) if command_log else None
        self.active_scanning = False
        self.advertising_commands: str | None = None  # "legacy" or "extended" since the last reset
        self.supported_max_tx_octets = 251
        self.supported_max_rx_octets = 251
        self.supported_max_tx_time = 2120
        self.supported_max_rx_time = 2120

    # ----- host → controller ------------------------------------------------------------
    def on_packet(self, packet: bytes) -> None:
        if packet and packet[0] == hci.HCI_COMMAND_PACKET and self.command_log:
            self.command_log.write(json.dumps({"t": time.time(), "hex": packet.hex()}) + "\n")
        try:
            super().on_packet(packet)
        except Exception:  # a malformed packet must not kill the whole link
            logger.exception("[%s] cannot handle packet %s", self.name, packet.hex())

    def on_hci_command_packet(self, command) -> None:
        """Legacy and extended advertising commands never mix (Vol 4 Part E §3.1.1): the first
        one since the reset chooses, a command of the other kind gets Command Disallowed."""
        kind = ("legacy" if command.op_code in LEGACY_ADVERTISING_COMMANDS
                else "extended" if command.op_code in EXTENDED_ADVERTISING_COMMANDS else None)
        if kind is not None and self.advertising_commands not in (None, kind):
            logger.info("[%s] %s after %s advertising commands: Command Disallowed", self.name,
                        command.name, self.advertising_commands)
            if isinstance(command, hci.HCI_AsyncCommand):
                self._send_hci_command_status(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR, command.op_code)
            else:
                self.send_hci_packet(hci.HCI_Command_Complete_Event(
                    num_hci_command_packets=1, command_opcode=command.op_code,
                    return_parameters=disallowed_return_parameters(command)))
            return
        if kind is not None:
            self.advertising_commands = kind
        super().on_hci_command_packet(command)

    # ----- controller → host -------------------------------------------------------------
    def send_hci_packet(self, packet) -> None:
        if not self.batch_completions:
            super().send_hci_packet(packet)
            return
        if isinstance(packet, hci.HCI_Number_Of_Completed_Packets_Event):
            if not self.pending_completions:
                asyncio.get_running_loop().call_soon(self.flush_completions)
            for handle, completed in zip(packet.connection_handles, packet.num_completed_packets):
                self.pending_completions[handle] = self.pending_completions.get(handle, 0) + completed
            return
        self.flush_completions()  # completions reported so far stay ahead of later events
        super().send_hci_packet(packet)

    def flush_completions(self) -> None:
        """One Number Of Completed Packets event (Core Spec Vol 4 Part E §7.7.19) for every
        completion since the last one, as a controller reports a connection event's worth."""
        if not self.pending_completions:
            return
        handles, counts = list(self.pending_completions), list(self.pending_completions.values())
        self.pending_completions = {}
        super().send_hci_packet(hci.HCI_Number_Of_Completed_Packets_Event(
            connection_handles=handles, num_completed_packets=counts))

    # ----- HCI Reset (Core Spec Vol 4 Part E §7.3.2) -----------------------------------
    def on_hci_reset_command(self, _command):
        for connection in list(self.le_connections.values()):
            # The link drops without a Disconnection Complete here; the peer times out.
            try:
                connection.send_ll_control_pdu(
                    ll.TerminateInd(hci.HCI_ErrorCode.CONNECTION_TIMEOUT_ERROR)
                )
            except Exception:
                logger.exception("[%s] reset: cannot notify peer", self.name)
        self.le_connections.clear()
        self.le_legacy_advertiser.stop()
        self.le_legacy_advertiser = VirtualLegacyAdvertiser(self)
        for advertising_set in self.advertising_sets.values():
            advertising_set.stop()
        self.advertising_sets.clear()
        self.pending_le_connection = None
        self.active_scanning = False
        self.advertising_commands = None
        # Drop instance overrides so the class defaults apply again.
        for attribute in (
            "event_mask", "event_mask_page_2", "le_event_mask", "le_scan_type",
            "le_scan_interval", "le_scan_window", "le_scan_enable", "le_scan_own_address_type",
            "le_scanning_filter_policy", "le_address_resolution", "le_rpa_timeout",
            "filter_duplicates", "suggested_max_tx_octets", "suggested_max_tx_time",
            "_random_address", "sync_flow_control",
        ):
            self.__dict__.pop(attribute, None)
        self.reset_extended_advertising()
        self.default_phy = {"all_phys": 0, "tx_phys": 0, "rx_phys": 0}
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    # ----- scanning ---------------------------------------------------------------------
    def on_hci_le_set_scan_parameters_command(self, command):
        result = super().on_hci_le_set_scan_parameters_command(command)
        if result.status == hci.HCI_ErrorCode.SUCCESS:
            self.active_scanning = command.le_scan_type == 1
        return result

    def on_hci_le_set_extended_scan_parameters_command(self, command):
        self.active_scanning = any(scan_type == 1 for scan_type in command.scan_types)
        return super().on_hci_le_set_extended_scan_parameters_command(command)

    def find_advertiser(self, pdu) -> LegacyAdvertiser | AdvertisingSet | None:
        for controller in self.link.controllers:
            if controller is self:
                continue
            if isinstance(pdu, ll.AdvExtInd):
                for advertising_set in controller.advertising_sets.values():
                    sid = advertising_set.parameters.advertising_sid if advertising_set.parameters else 0
                    if advertising_set.enabled and advertising_set.address == pdu.advertiser_address and sid == pdu.sid:
                        return advertising_set
            else:
                advertiser = controller.le_legacy_advertiser
                if advertiser.enabled and advertiser.address == pdu.advertiser_address:
                    return advertiser
        return None

    @staticmethod
    def advertiser_is_connectable(advertiser: LegacyAdvertiser | AdvertisingSet) -> bool:
        """Whether a CONNECT_IND may answer this advertising (Vol 6 Part B §2.3): ADV_IND only
        for legacy advertising, the connectable property bit for an advertising set."""
        if isinstance(advertiser, AdvertisingSet):
            properties = advertiser.parameters.advertising_event_properties if advertiser.parameters else 0
            return bool(int(properties) & 0x01)
        return advertiser.is_connectable

    def on_advertising_pdu(self, pdu) -> None:
        advertiser = self.find_advertiser(pdu)
        # An initiator (LE Create Connection pending) must not connect to non-connectable
        # advertising, whether or not this controller is also scanning: it keeps waiting.
        connectable = advertiser is None or self.advertiser_is_connectable(advertiser)
        if self.le_scan_enable and advertiser is not None:
            self.send_advertising_reports(pdu, advertiser)
        # Let Bumble do periodic sync and connection creation, but not its reports.
        scan_enable = self.le_scan_enable
        pending = self.pending_le_connection
        self.le_scan_enable = False
        if not connectable:
            self.pending_le_connection = None
        try:
            super().on_advertising_pdu(pdu)
        finally:
            self.le_scan_enable = scan_enable
            if not connectable and self.pending_le_connection is None:
                self.pending_le_connection = pending

    def send_advertising_reports(self, pdu, advertiser) -> bool:
        """Sends the advertising report (and scan response); returns whether it is connectable."""
        if isinstance(advertiser, AdvertisingSet):
            properties = advertiser.parameters.advertising_event_properties if advertiser.parameters else 0
            properties = int(properties)
            connectable = bool(properties & 0x01)
            scannable = bool(properties & 0x02)
            legacy = bool(properties & 0x10)
            scan_response = bytes(advertiser.scan_response_data)
            sid = pdu.sid
        else:
            connectable = advertiser.is_connectable
            scannable = advertiser.is_scannable
            legacy = True
            scan_response = bytes(advertiser.scan_response_data)
            sid = 0xFF
        address = pdu.advertiser_address
        send_response = scannable and self.active_scanning
        use_extended = bool(self.le_features & hci.LeFeatureMask.LE_EXTENDED_ADVERTISING)

        if use_extended:
            event_type = (EXT_CONNECTABLE if connectable else 0) | (EXT_SCANNABLE if scannable else 0)
            if legacy:
                event_type |= EXT_LEGACY
            reports = [(event_type, pdu.data)]
            if send_response:
                reports.append((event_type | EXT_SCAN_RESPONSE, scan_response))
            for report_type, data in reports:
                report = hci.HCI_LE_Extended_Advertising_Report_Event.Report(
                    event_type=report_type,
                    address_type=address.address_type,
                    address=address,
                    primary_phy=hci.Phy.LE_1M,
                    secondary_phy=0 if legacy else hci.Phy.LE_1M,
                    advertising_sid=sid,
                    tx_power=0x7F,
                    rssi=-50,
                    periodic_advertising_interval=0,
                    direct_address_type=0,
                    direct_address=hci.Address.ANY,
                    data=data,
                )
                self.send_hci_packet(hci.HCI_LE_Extended_Advertising_Report_Event([report]))
        else:
            if isinstance(advertiser, AdvertisingSet) and not legacy:
                return connectable  # legacy scanners do not see extended advertising
            legacy_type = ADV_IND if connectable else (ADV_SCAN_IND if scannable else ADV_NONCONN_IND)
            reports = [(legacy_type, pdu.data)]
            if send_response:
                reports.append((hci.HCI_LE_Advertising_Report_Event.EventType.SCAN_RSP, scan_response))
            for report_type, data in reports:
                report = hci.HCI_LE_Advertising_Report_Event.Report(
                    event_type=report_type,
                    address_type=address.address_type,
                    address=address,
                    data=data,
                    rssi=-50,
                )
                self.send_hci_packet(hci.HCI_LE_Advertising_Report_Event([report]))
        return connectable

    # ----- initiating ---------------------------------------------------------------------
    def on_hci_le_create_connection_cancel_command(self, command):
        """LE Create Connection Cancel (Vol 4 Part E §7.8.13): a pending attempt ends with
        LE Connection Complete, status Unknown Connection Identifier, after the Command
        Complete; with none pending the command is disallowed. (Stock: does nothing, so a
        host that cancels a timed-out attempt waits forever.)"""
        pending = self.pending_le_connection
        if pending is None:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None
        asyncio.get_running_loop().call_soon(
            self.send_hci_packet,
            hci.HCI_LE_Connection_Complete_Event(
                status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR,
                connection_handle=0,
                role=hci.Role.CENTRAL,
                peer_address_type=pending.peer_address.address_type,
                peer_address=pending.peer_address,
                connection_interval=0,
                peripheral_latency=0,
                supervision_timeout=0,
                central_clock_accuracy=0,
            ),
        )
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def on_le_connect_ind(self, packet) -> None:
        advertiser = self.le_legacy_advertiser
        if (
            advertiser.enabled
            and advertiser.address == packet.advertiser_address
            and not advertiser.is_connectable
        ):
            return  # not connectable
        super().on_le_connect_ind(packet)

    # ----- disconnection ------------------------------------------------------------------
    def on_hci_disconnect_command(self, command):
        """Disconnect (Vol 4 Part E §7.1.6) of an LE link: the peer hears the host's reason
        (LL_TERMINATE_IND), this host's Disconnection Complete says Connection Terminated By
        Local Host (0x16), as controllers report it (stock: the host's own reason, 0x13)."""
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None or not self.link:
            return super().on_hci_disconnect_command(command)
        self._send_hci_command_status(hci.HCI_COMMAND_STATUS_PENDING, command.op_code)
        connection.send_ll_control_pdu(ll.TerminateInd(command.reason))
        self.on_le_disconnected(connection, hci.HCI_ErrorCode.CONNECTION_TERMINATED_BY_LOCAL_HOST_ERROR)
        return None

    # ----- data length and PHY ----------------------------------------------------------
    def on_hci_le_set_data_length_command(self, command):
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None:
            return hci.HCI_StatusAndConnectionHandleReturnParameters(
                status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR,
                connection_handle=command.connection_handle,
            )
        tx_octets = max(27, min(command.tx_octets, self.supported_max_tx_octets))
        tx_time = max(328, min(command.tx_time, self.supported_max_tx_time))
        asyncio.get_running_loop().call_soon(
            self.send_hci_packet,
            hci.HCI_LE_Data_Length_Change_Event(
                connection_handle=connection.handle,
                max_tx_octets=tx_octets,
                max_tx_time=tx_time,
                max_rx_octets=self.supported_max_rx_octets,
                max_rx_time=self.supported_max_rx_time,
            ),
        )
        return hci.HCI_StatusAndConnectionHandleReturnParameters(
            status=hci.HCI_ErrorCode.SUCCESS, connection_handle=connection.handle
        )

    def on_hci_le_set_phy_command(self, command):
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None:
            self._send_hci_command_status(
                hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, command.op_code
            )
            return None
        self._send_hci_command_status(hci.HCI_ErrorCode.SUCCESS, command.op_code)

        def pick(all_phys_bit: int, phys: int) -> int:
            if command.all_phys & all_phys_bit or phys & 0x02 == 0:
                return hci.Phy.LE_1M
            return hci.Phy.LE_2M

        tx_phy = pick(0x01, command.tx_phys)
        rx_phy = pick(0x02, command.rx_phys)
        event = hci.HCI_LE_PHY_Update_Complete_Event(
            status=hci.HCI_ErrorCode.SUCCESS,
            connection_handle=connection.handle,
            tx_phy=tx_phy,
            rx_phy=rx_phy,
        )
        asyncio.get_running_loop().call_soon(self.send_hci_packet, event)
        # The peer's host hears about the PHY change too.
        peer = self.link.find_le_controller(connection.peer_address)
        if peer is not None and peer is not self:
            peer_connection = peer.le_connections.get(connection.self_address)
            if peer_connection is not None:
                asyncio.get_running_loop().call_soon(
                    peer.send_hci_packet,
                    hci.HCI_LE_PHY_Update_Complete_Event(
                        status=hci.HCI_ErrorCode.SUCCESS,
                        connection_handle=peer_connection.handle,
                        tx_phy=rx_phy,
                        rx_phy=tx_phy,
                    ),
                )
        return None


class H4Parser:
    """Splits a byte stream into whole H4 packets (indicator byte first)."""

    HEADER = {0x01: (3, 2, 1), 0x02: (4, 2, 2), 0x03: (3, 2, 1), 0x04: (2, 1, 1), 0x05: (4, 2, 2)}

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        packets = []
        while self.buffer:
            indicator = self.buffer[0]
            if indicator not in self.HEADER:
                raise ValueError(f"unknown H4 packet indicator 0x{indicator:02X}")
            header_length, length_offset, length_size = self.HEADER[indicator]
            if len(self.buffer) < 1 + header_length:
                break
            start = 1 + length_offset
            length = int.from_bytes(self.buffer[start:start + length_size], "little")
            if indicator == 0x05:
                length &= 0x3FFF
            total = 1 + header_length + length
            if len(self.buffer) < total:
                break
            packets.append(bytes(self.buffer[:total]))
            del self.buffer[:total]
        return packets


class HostConnection(asyncio.Protocol):
    """One host (gattd or a Bumble Device) attached to a controller over TCP."""

    def __init__(self, server: "ControllerServer") -> None:
        self.server = server
        self.parser = H4Parser()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.server.attach(self)

    def connection_lost(self, exc) -> None:
        self.server.detach(self)

    def data_received(self, data: bytes) -> None:
        try:
            packets = self.parser.feed(data)
        except ValueError as error:
            logger.error("[%s] %s; closing the host connection", self.server.controller.name, error)
            if self.transport:
                self.transport.close()
            return
        for packet in packets:
            self.server.controller.on_packet(packet)

    def on_packet(self, packet: bytes) -> None:  # controller → host
        if self.transport and not self.transport.is_closing():
            self.transport.write(packet)


class ControllerServer:
    def __init__(self, controller: VirtualController) -> None:
        self.controller = controller
        self.host: HostConnection | None = None

    def attach(self, host: HostConnection) -> None:
        if self.host is not None and self.host.transport is not None:
            logger.info("[%s] new host connection replaces the old one", self.controller.name)
            self.host.transport.close()
        self.host = host
        self.controller.host = host
        logger.info("[%s] host connected", self.controller.name)

    def detach(self, host: HostConnection) -> None:
        if self.host is host:
            self.host = None
            self.controller.host = None
            logger.info("[%s] host disconnected", self.controller.name)


async def run(count: int, host: str, ready_file: str | None, log_dir: str, legacy_only: bool,
              acl_buffer_size: int = 27, batch_completions: bool = False) -> None:
    os.makedirs(log_dir, exist_ok=True)
    link = VirtualLink()
    loop = asyncio.get_running_loop()
    entries = []
    servers = []
    for index in range(count):
        address = f"F0:F0:F0:F0:F0:{index:02X}"
        command_log = os.path.join(log_dir, f"controller-{index}-commands.jsonl")
        controller = VirtualController(f"C{index}", link, address, command_log, legacy_only, acl_buffer_size,
                                       batch_completions)
        controller_server = ControllerServer(controller)
        server = await loop.create_server(lambda cs=controller_server: HostConnection(cs), host, 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        entries.append({
            "index": index,
            "port": port,
            "address": address,
            "transport": f"tcp:{host}:{port}",
            "bumble_transport": f"tcp-client:{host}:{port}",
            "commands": command_log,
        })
    ready = json.dumps({"pid": os.getpid(), "controllers": entries})
    if ready_file:
        temporary = ready_file + ".tmp"
        with open(temporary, "w") as handle:
            handle.write(ready)
        os.replace(temporary, ready_file)
    print(ready, flush=True)

    stop = loop.create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
    await stop
    for server in servers:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2, help="number of controllers (default 2)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--ready-file", help="write the controller list (JSON) here when listening")
    parser.add_argument("--log-dir", default=".", help="where the command logs go")
    parser.add_argument("--legacy-only", action="store_true",
                        help="controllers without extended advertising (hosts use the legacy commands)")
    parser.add_argument("--acl-buffer-size", type=int, default=27,
                        help="LE ACL data packet length the controllers report (27..251, default 27)")
    parser.add_argument("--batch-completions", action="store_true",
                        help="report the completions of one batch of host ACL packets in one Number Of "
                             "Completed Packets event (default: one event per packet, as stock Bumble)")
    parser.add_argument("--verbose", action="store_true", help="log every HCI packet (Bumble debug logs)")
    arguments = parser.parse_args()
    logging.basicConfig(
        level=logging.DEBUG if arguments.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    asyncio.run(run(arguments.count, arguments.host, arguments.ready_file, arguments.log_dir,
                    arguments.legacy_only, arguments.acl_buffer_size, arguments.batch_completions))


if __name__ == "__main__":
    main()
