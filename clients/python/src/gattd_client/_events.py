"""Typed events (`{"event": NAME, ...}` lines after `watch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, Mapping

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
class UnknownEvent(Event):
    """An event this client does not know (a newer gattd): `event` is its name,
    `fields` the whole object."""

    event: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.event


def _connected(o: Mapping[str, Any]) -> Event:
    return Connected(central=_str(o, "central"))


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


def _ready(o: Mapping[str, Any]) -> Event:
    return Ready()


def _confirmed(o: Mapping[str, Any]) -> Event:
    return Confirmed(central=_str(o, "central"), characteristic=_str(o, "characteristic"))


_PARSERS: Dict[str, Callable[[Mapping[str, Any]], Event]] = {
    "connected": _connected,
    "disconnected": _disconnected,
    "mtu": _mtu,
    "subscribed": _subscribed,
    "unsubscribed": _unsubscribed,
    "written": _written,
    "read_request": _read_request,
    "write_request": _write_request,
    "ready": _ready,
    "confirmed": _confirmed,
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
