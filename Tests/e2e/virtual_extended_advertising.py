"""What Bumble 0.0.236's controller gets wrong about extended advertising, fixed for the
virtual controllers (a mixin of `VirtualController`; self-tests in test_harness.py):

* a controller with LE Extended Advertising lists its commands in Read Local Supported
  Commands (Core Spec Vol 4 Part E §6.27, octet 36 bits 1–7, octet 37 bits 0–1); stock
  lists none of them, so a host that checks them (gattd does) never uses them;
* legacy and extended advertising commands do not mix between resets (§3.1.1): once a host
  used one kind, the other gets Command Disallowed (stock takes both). Only the advertising
  commands are checked: Bumble's own central host scans with the extended commands and
  connects with the legacy LE Create Connection, which a real controller would refuse too;
* LE Enhanced Connection Complete [v1] (or [v2]) replaces LE Connection Complete when the
  host unmasked it (§7.7.65.10), LE Advertising Set Terminated only reaches a host that
  unmasked it (§7.7.65.18; stock sends the legacy event and Terminated to every host);
* LE Set Extended Advertising Parameters and LE Set Advertising Set Random Address are
  refused with Command Disallowed while the set advertises (§7.8.53, §7.8.52), and a
  non-connectable set takes no CONNECT_IND (stock connects to any enabled set); of several
  sets with one address the connectable one takes it and ends (stock: the first enabled).
"""

from __future__ import annotations

import logging

from bumble import hci
from bumble.controller import AdvertisingSet

logger = logging.getLogger("virtual_controllers")

LEGACY_ADVERTISING_COMMANDS = frozenset(range(0x2006, 0x200B))  # LE Set Advertising Parameters … Enable
EXTENDED_ADVERTISING_COMMANDS = frozenset(range(0x2035, 0x203E))  # LE Set Advertising Set Random Address … Clear

# LE Set Event Mask bits (Vol 4 Part E §7.8.1): bit n is LE subevent n + 1.
LE_ENHANCED_CONNECTION_COMPLETE = 1 << 9
LE_ADVERTISING_SET_TERMINATED = 1 << 17
LE_ENHANCED_CONNECTION_COMPLETE_V2 = 1 << 40
LE_EVENT_MASK_DEFAULT = 0x1F  # after Reset


class ExtendedAdvertisingFixes:
    """Mixin for a bumble.controller.Controller subclass."""

    def init_extended_advertising(self, extended: bool) -> None:
        if extended:
            self.supported_commands = set(self.supported_commands) | EXTENDED_ADVERTISING_COMMANDS
        self.reset_extended_advertising()

    def reset_extended_advertising(self) -> None:
        """After HCI Reset: either kind of advertising command again, the default LE event mask."""
        self.advertising_commands_used: str | None = None
        self.le_event_mask = LE_EVENT_MASK_DEFAULT
        self.connecting_set: int | None = None

    # ----- §3.1.1: no mixing ------------------------------------------------------------
    def on_hci_command_packet(self, command) -> None:
        kind = ("legacy" if command.op_code in LEGACY_ADVERTISING_COMMANDS
                else "extended" if command.op_code in EXTENDED_ADVERTISING_COMMANDS else None)
        if kind is not None:
            if self.advertising_commands_used not in (None, kind):
                logger.info("[%s] %s refused: %s advertising commands were used since the last reset",
                            self.name, command.name, self.advertising_commands_used)
                self.send_hci_packet(hci.HCI_Command_Complete_Event(
                    num_hci_command_packets=1, command_opcode=command.op_code,
                    return_parameters=hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)))
                return
            self.advertising_commands_used = kind
        super().on_hci_command_packet(command)

    # ----- §7.8.52, §7.8.53: not while the set advertises -----------------------------------
    def set_is_enabled(self, handle: int) -> bool:
        advertising_set = self.advertising_sets.get(handle)
        return advertising_set is not None and advertising_set.enabled

    def on_hci_le_set_extended_advertising_parameters_command(self, command):
        if self.set_is_enabled(command.advertising_handle):
            return hci.HCI_LE_Set_Extended_Advertising_Parameters_ReturnParameters(
                status=hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR, selected_tx_power=0)
        return super().on_hci_le_set_extended_advertising_parameters_command(command)

    def on_hci_le_set_advertising_set_random_address_command(self, command):
        advertising_set = self.advertising_sets.get(command.advertising_handle)
        if self.set_is_enabled(command.advertising_handle) and set_is_connectable(advertising_set):
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        return super().on_hci_le_set_advertising_set_random_address_command(command)

    # ----- connections from a set -------------------------------------------------------------
    def on_le_connect_ind(self, packet) -> None:
        # Several sets may advertise with one address: the connection comes from a connectable
        # one (stock takes the first enabled set with the address, a beacon as well).
        enabled = [s for s in self.advertising_sets.values() if s.enabled and s.address == packet.advertiser_address]
        advertising_set = next((s for s in enabled if set_is_connectable(s)), enabled[0] if enabled else None)
        if advertising_set is not None and not set_is_connectable(advertising_set):
            return  # not connectable: the initiator keeps waiting
        self.connecting_set = advertising_set.handle if advertising_set is not None else None
        # Stock ends the first enabled set with the address: hide the others from it.
        others = [s for s in enabled if s is not advertising_set]
        for s in others:
            s.enabled = False
        try:
            super().on_le_connect_ind(packet)
        finally:
            self.connecting_set = None
            for s in others:
                s.enabled = True

    # ----- §7.7.65.10, §7.7.65.18: what the LE event mask lets through ------------------------
    def send_hci_packet(self, packet) -> None:
        mask = self.le_event_mask
        if isinstance(packet, hci.HCI_LE_Advertising_Set_Terminated_Event) and not mask & LE_ADVERTISING_SET_TERMINATED:
            return
        if type(packet) is hci.HCI_LE_Connection_Complete_Event and mask & (LE_ENHANCED_CONNECTION_COMPLETE | LE_ENHANCED_CONNECTION_COMPLETE_V2):
            packet = enhanced(packet, v2=bool(mask & LE_ENHANCED_CONNECTION_COMPLETE_V2),
                              advertising_handle=0xFF if self.connecting_set is None else self.connecting_set)
        super().send_hci_packet(packet)


def set_is_connectable(advertising_set: AdvertisingSet | None) -> bool:
    parameters = advertising_set.parameters if advertising_set is not None else None
    return parameters is not None and bool(int(parameters.advertising_event_properties) & 0x01)


def enhanced(event: hci.HCI_LE_Connection_Complete_Event, v2: bool, advertising_handle: int):
    """LE Enhanced Connection Complete [v1]/[v2] with the fields of `event`; no resolvable
    private addresses (the virtual controllers resolve none)."""
    fields = dict(
        status=event.status, connection_handle=event.connection_handle, role=event.role,
        peer_address_type=event.peer_address_type, peer_address=event.peer_address,
        local_resolvable_private_address=hci.Address.ANY_RANDOM, peer_resolvable_private_address=hci.Address.ANY_RANDOM,
        connection_interval=event.connection_interval, peripheral_latency=event.peripheral_latency,
        supervision_timeout=event.supervision_timeout, central_clock_accuracy=event.central_clock_accuracy,
    )
    if v2:
        return hci.HCI_LE_Enhanced_Connection_Complete_V2_Event(**fields, advertising_handle=advertising_handle, sync_handle=0xFFFF)
    return hci.HCI_LE_Enhanced_Connection_Complete_Event(**fields)
