"""Typed events (`{"event": NAME, ...}` lines after `watch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, Mapping, Optional

from ._values import decode_value


class Event:
    """Base of every event. `name` is the protocol's event name ("connected", ...)."""

    NAME: ClassVar[str] = ""

    @property
    def name(self) -> str:
        return self.NAME


@dataclass(frozen=True)
class Connected(Event):
    """A central connected."""

    NAME: ClassVar[str] = "connected"
    central: str
    identity: Optional[str] = None
    """The bonded central's identity address when `central` is a private address its IRK resolves."""


@dataclass(frozen=True)
class Disconnected(Event):
    """A central disconnected; `reason` is the HCI reason in snake_case
    ("remote_user_terminated_connection")."""

    NAME: ClassVar[str] = "disconnected"
    central: str
    reason: str


@dataclass(frozen=True)
class MtuChanged(Event):
    """A central exchanged the ATT MTU."""

    NAME: ClassVar[str] = "mtu"
    central: str
    mtu: int


@dataclass(frozen=True)
class Subscribed(Event):
    """A central enabled notifications and/or indications."""

    NAME: ClassVar[str] = "subscribed"
    central: str
    characteristic: str
    notify: bool
    indicate: bool


@dataclass(frozen=True)
class Unsubscribed(Event):
    """A central disabled both notifications and indications."""

    NAME: ClassVar[str] = "unsubscribed"
    central: str
    characteristic: str


@dataclass(frozen=True)
class Written(Event):
    """A central wrote a stored value (or a Write Command to a control characteristic)."""

    NAME: ClassVar[str] = "written"
    central: str
    characteristic: str
    value: bytes


@dataclass(frozen=True)
class ReadRequest(Event):
    """A central reads a `"handler": "control"` characteristic: answer with `respond()`
    (or let an `on_read` handler do it). `offset` is non-zero for Read Blob."""

    NAME: ClassVar[str] = "read_request"
    central: str
    request: int
    characteristic: str
    offset: int


@dataclass(frozen=True)
class WriteRequest(Event):
    """A central writes a `"handler": "control"` characteristic (long and reliable writes
    arrive whole): answer with `respond()` (or let an `on_write` handler do it)."""

    NAME: ClassVar[str] = "write_request"
    central: str
    request: int
    characteristic: str
    offset: int
    value: bytes


@dataclass(frozen=True)
class Ready(Event):
    """Every transmit queue that made a `notify` answer busy has room again."""

    NAME: ClassVar[str] = "ready"


@dataclass(frozen=True)
class Confirmed(Event):
    """A central confirmed an indication."""

    NAME: ClassVar[str] = "confirmed"
    central: str
    characteristic: str


@dataclass(frozen=True)
class Unconfirmed(Event):
    """An indication will never be confirmed (no `Confirmed` follows): `reason` is
    `bearer_closed` (its Enhanced ATT bearer closed) or `timeout` (30 s without one)."""

    NAME: ClassVar[str] = "unconfirmed"
    central: str
    characteristic: str
    reason: str


@dataclass(frozen=True)
class PersistFailed(Event):
    """A persisted value could not be made durable (`central`: who wrote it, if a central)."""

    NAME: ClassVar[str] = "persist_failed"
    central: Optional[str]
    characteristic: str
    message: str


@dataclass(frozen=True)
class PairingRequest(Event):
    """A central asks to pair: answer with `pairing_respond(central, accept=...)`."""

    NAME: ClassVar[str] = "pairing_request"
    central: str
    method: str
    io_capability: str


@dataclass(frozen=True)
class PasskeyDisplay(Event):
    """Show this passkey (six digits) to the person at the central; nothing to answer."""

    NAME: ClassVar[str] = "passkey_display"
    central: str
    passkey: str


@dataclass(frozen=True)
class NumericComparison(Event):
    """Answer `pairing_respond(central, confirm=True)` when the central shows the same six digits."""

    NAME: ClassVar[str] = "numeric_comparison"
    central: str
    value: str


@dataclass(frozen=True)
class PasskeyRequest(Event):
    """Answer `pairing_respond(central, passkey=N)` with the passkey the central displays."""

    NAME: ClassVar[str] = "passkey_request"
    central: str


@dataclass(frozen=True)
class Paired(Event):
    """Pairing finished (after the bond, if any, is durable)."""

    NAME: ClassVar[str] = "paired"
    central: str
    identity: str
    bonded: bool
    authenticated: bool
    secure_connections: bool
    key_size: int


@dataclass(frozen=True)
class PairingFailed(Event):
    """Pairing failed with `reason` (snake_case SMP reason), sent by the central or by gattd."""

    NAME: ClassVar[str] = "pairing_failed"
    central: str
    reason: str
    by_central: bool


@dataclass(frozen=True)
class PairingTimeout(Event):
    """The 30 s SMP timer expired; a new pairing needs a new connection."""

    NAME: ClassVar[str] = "pairing_timeout"
    central: str


@dataclass(frozen=True)
class StateChanged(Event):
    """The controller became usable or stopped being usable (Core Bluetooth's
    `peripheralManagerDidUpdateState`): `state` is one of "unknown", "powered_on",
    "powered_off", "resetting", "unauthorized", "unsupported"; `reason` says why when it is
    not "powered_on"."""

    NAME: ClassVar[str] = "state"
    state: str
    reason: Optional[str] = None


@dataclass(frozen=True)
class AdvertisingChanged(Event):
    """An advertising set ("primary": the config's `advertising`) "started", "stopped" or
    "failed" to start (`reason`: the controller's or the kernel's answer)."""

    NAME: ClassVar[str] = "advertising"
    set: str
    state: str
    reason: Optional[str] = None


@dataclass(frozen=True)
class LinkChanged(Event):
    """A central's link parameters, PHYs or data length changed (None: the transport cannot know)."""

    NAME: ClassVar[str] = "link"
    central: str
    interval_ms: Optional[float] = None
    latency: Optional[int] = None
    timeout_ms: Optional[int] = None
    tx_phy: Optional[str] = None
    rx_phy: Optional[str] = None
    tx_octets: Optional[int] = None
    rx_octets: Optional[int] = None


def _link(o: Mapping[str, Any]) -> Event:
    def number(key: str, kind: type) -> Any:
        v = o.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(key)
        return kind(v)

    def phy(key: str) -> Optional[str]:
        v = o.get(key)
        if v is not None and not isinstance(v, str):
            raise TypeError(key)
        return v

    return LinkChanged(central=_str(o, "central"), interval_ms=number("interval_ms", float), latency=number("latency", int),
                       timeout_ms=number("timeout_ms", int), tx_phy=phy("tx_phy"), rx_phy=phy("rx_phy"),
                       tx_octets=number("tx_octets", int), rx_octets=number("rx_octets", int))


@dataclass(frozen=True)
class UnknownEvent(Event):
    """An event this client does not know (a newer gattd): `event` is its name,
    `fields` the whole object."""

    event: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.event


def _connected(o: Mapping[str, Any]) -> Event:
    identity = o.get("identity")
    return Connected(central=_str(o, "central"), identity=identity if isinstance(identity, str) else None)


def _disconnected(o: Mapping[str, Any]) -> Event:
    return Disconnected(central=_str(o, "central"), reason=_str(o, "reason"))


def _mtu(o: Mapping[str, Any]) -> Event:
    return MtuChanged(central=_str(o, "central"), mtu=_int(o, "mtu"))


def _subscribed(o: Mapping[str, Any]) -> Event:
    return Subscribed(central=_str(o, "central"), characteristic=_str(o, "characteristic"),
                      notify=_bool(o, "notify"), indicate=_bool(o, "indicate"))


def _unsubscribed(o: Mapping[str, Any]) -> Event:
    return Unsubscribed(central=_str(o, "central"), characteristic=_str(o, "characteristic"))


def _written(o: Mapping[str, Any]) -> Event:
    return Written(central=_str(o, "central"), characteristic=_str(o, "characteristic"),
                   value=decode_value(o.get("value")))


def _read_request(o: Mapping[str, Any]) -> Event:
    return ReadRequest(central=_str(o, "central"), request=_int(o, "request"),
                       characteristic=_str(o, "characteristic"), offset=_int(o, "offset", 0))


def _write_request(o: Mapping[str, Any]) -> Event:
    return WriteRequest(central=_str(o, "central"), request=_int(o, "request"),
                        characteristic=_str(o, "characteristic"), offset=_int(o, "offset", 0),
                        value=decode_value(o.get("value")))


def _optional_str(o: Mapping[str, Any], key: str) -> Optional[str]:
    v = o.get(key)
    if v is not None and not isinstance(v, str):
        raise TypeError(key)
    return v


def _state(o: Mapping[str, Any]) -> Event:
    return StateChanged(state=_str(o, "state"), reason=_optional_str(o, "reason"))


def _advertising(o: Mapping[str, Any]) -> Event:
    return AdvertisingChanged(set=_str(o, "set"), state=_str(o, "state"), reason=_optional_str(o, "reason"))


def _ready(o: Mapping[str, Any]) -> Event:
    return Ready()


def _confirmed(o: Mapping[str, Any]) -> Event:
    return Confirmed(central=_str(o, "central"), characteristic=_str(o, "characteristic"))


def _unconfirmed(o: Mapping[str, Any]) -> Event:
    return Unconfirmed(central=_str(o, "central"), characteristic=_str(o, "characteristic"), reason=_str(o, "reason"))


def _persist_failed(o: Mapping[str, Any]) -> Event:
    central = o.get("central")
    if central is not None and not isinstance(central, str):
        raise TypeError("central")
    return PersistFailed(central=central, characteristic=_str(o, "characteristic"), message=_str(o, "message"))


def _pairing_request(o: Mapping[str, Any]) -> Event:
    return PairingRequest(central=_str(o, "central"), method=_str(o, "method"), io_capability=_str(o, "io_capability"))


def _passkey_display(o: Mapping[str, Any]) -> Event:
    return PasskeyDisplay(central=_str(o, "central"), passkey=_str(o, "passkey"))


def _numeric_comparison(o: Mapping[str, Any]) -> Event:
    return NumericComparison(central=_str(o, "central"), value=_str(o, "value"))


def _passkey_request(o: Mapping[str, Any]) -> Event:
    return PasskeyRequest(central=_str(o, "central"))


def _paired(o: Mapping[str, Any]) -> Event:
    return Paired(central=_str(o, "central"), identity=_str(o, "identity"), bonded=_bool(o, "bonded"),
                  authenticated=_bool(o, "authenticated"), secure_connections=_bool(o, "secure_connections"),
                  key_size=_int(o, "key_size"))


def _pairing_failed(o: Mapping[str, Any]) -> Event:
    return PairingFailed(central=_str(o, "central"), reason=_str(o, "reason"), by_central=_bool(o, "by_central"))


def _pairing_timeout(o: Mapping[str, Any]) -> Event:
    return PairingTimeout(central=_str(o, "central"))


_PARSERS: Dict[str, Callable[[Mapping[str, Any]], Event]] = {
    "connected": _connected,
    "disconnected": _disconnected,
    "mtu": _mtu,
    "link": _link,
    "subscribed": _subscribed,
    "unsubscribed": _unsubscribed,
    "written": _written,
    "read_request": _read_request,
    "write_request": _write_request,
    "ready": _ready,
    "confirmed": _confirmed,
    "unconfirmed": _unconfirmed,
    "persist_failed": _persist_failed,
    "pairing_request": _pairing_request,
    "passkey_display": _passkey_display,
    "numeric_comparison": _numeric_comparison,
    "passkey_request": _passkey_request,
    "paired": _paired,
    "pairing_failed": _pairing_failed,
    "pairing_timeout": _pairing_timeout,
    "state": _state,
    "advertising": _advertising,
}


def parse_event(obj: Mapping[str, Any]) -> Event:
    """The typed event for an `{"event": ...}` object. Never raises: unknown events, and
    known ones whose fields do not parse, become `UnknownEvent`."""
    name = obj.get("event")
    name_text = name if isinstance(name, str) else str(name)
    parser = _PARSERS.get(name_text)
    if parser is not None:
        try:
            return parser(obj)
        except (KeyError, TypeError, ValueError):
            pass
    return UnknownEvent(event=name_text, fields=dict(obj))


def _str(o: Mapping[str, Any], key: str) -> str:
    v = o[key]
    if not isinstance(v, str):
        raise TypeError(key)
    return v


def _int(o: Mapping[str, Any], key: str, default: int | None = None) -> int:
    if key not in o and default is not None:
        return default
    v = o[key]
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(key)
    return v


def _bool(o: Mapping[str, Any], key: str) -> bool:
    v = o[key]
    if not isinstance(v, bool):
        raise TypeError(key)
    return v
