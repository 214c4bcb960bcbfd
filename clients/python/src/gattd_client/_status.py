"""The `status` reply as dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple

_STATUS_KEYS = {"ok", "id", "advertising", "address", "connections", "state", "sets", "controller"}


@dataclass(frozen=True)
class Subscription:
    """One characteristic a central subscribed to."""

    characteristic: str
    notify: bool
    indicate: bool


@dataclass(frozen=True)
class Connection:
    """One connected central."""

    central: str
    """Its address ("C0:00:00:00:00:01")."""
    address_type: str
    """"public" or "random"."""
    mtu: int
    security: str
    """The link's security level as gattd names it ("low", ...)."""
    subscriptions: Tuple[Subscription, ...]
    queue: int
    """Notifications/indications queued for it and not yet sent."""
    identity: Optional[str] = None
    """The bonded central's identity address when `central` is a private address its IRK resolves."""
    interval_ms: Optional[float] = None
    """The connection interval (None where the transport cannot know it; so for the rest)."""
    latency: Optional[int] = None
    """The peripheral latency, in connection events."""
    timeout_ms: Optional[int] = None
    """The supervision timeout."""
    tx_phy: Optional[str] = None
    """"1m", "2m" or "coded"."""
    rx_phy: Optional[str] = None
    tx_octets: Optional[int] = None
    """The data length each way (27-251 octets)."""
    rx_octets: Optional[int] = None


def _optional(v: Any, kind: type) -> Any:
    return kind(v) if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class Status:
    """What `status()` answers."""

    advertising: bool
    address: str
    """The controller's (identity) address."""
    connections: Tuple[Connection, ...]
    state: str = "unknown"
    """Whether the controller can be used ("powered_on", "powered_off", ...: the `state` event's values)."""
    sets: Tuple[Mapping[str, Any], ...] = ()
    """Every advertising set, the primary first: `id`, `advertising`, `pdus` ("legacy" or
    "extended", with `primary_phy`/`secondary_phy`), `connectable`, `scannable`,
    `advertising_data` and `scan_response` (values as `{"hex": ...}`)."""
    controller: Optional[Mapping[str, Any]] = None
    """What the controller is and can do, once one was ready (as `gattd --probe` shows it):
    `address`, `core_version`, `hci_version`, `lmp_version`, `manufacturer`, `company_id`,
    `le_features` (names), `acl_buffers` (`length`, `count`), `advertising_commands`
    ("legacy"/"extended"), `advertised_by` ("host"/"kernel"), `max_sets` (absent: no limit),
    `max_data_length`, `extended_pdus`, `sets_take_turns`, `advertising` (in words)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Members of the reply this client does not know (newer gattd versions)."""

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "Status":
        connections = tuple(
            Connection(
                central=str(c["central"]),
                address_type=str(c.get("address_type", "")),
                mtu=int(c.get("mtu", 23)),
                security=str(c.get("security", "")),
                subscriptions=tuple(
                    Subscription(characteristic=str(s["characteristic"]), notify=bool(s.get("notify")),
                                 indicate=bool(s.get("indicate")))
                    for s in c.get("subscriptions", [])
                ),
                queue=int(c.get("queue", 0)),
                identity=str(c["identity"]) if isinstance(c.get("identity"), str) else None,
                interval_ms=_optional(c.get("interval_ms"), float), latency=_optional(c.get("latency"), int),
                timeout_ms=_optional(c.get("timeout_ms"), int), tx_phy=_optional(c.get("tx_phy"), str),
                rx_phy=_optional(c.get("rx_phy"), str), tx_octets=_optional(c.get("tx_octets"), int),
                rx_octets=_optional(c.get("rx_octets"), int),
            )
            for c in reply.get("connections", [])
        )
        extra = {k: v for k, v in reply.items() if k not in _STATUS_KEYS}
        return cls(advertising=bool(reply.get("advertising")), address=str(reply.get("address", "")),
                   connections=connections, state=str(reply.get("state", "unknown")),
                   sets=tuple(s for s in reply.get("sets", []) if isinstance(s, dict)),
                   controller=reply["controller"] if isinstance(reply.get("controller"), dict) else None, extra=extra)


@dataclass(frozen=True)
class Bond:
    """One bonded central, as `bonds()` lists it."""

    central: str
    """Its identity address."""
    address_type: str
    authenticated: bool
    secure_connections: bool
    key_size: int
    irk: bool
    """Whether it distributed its IRK (its private addresses are recognised)."""
    created: int
    """When it paired, in seconds since the Unix epoch."""

    @classmethod
    def from_json(cls, o: Mapping[str, Any]) -> "Bond":
        return cls(central=str(o["central"]), address_type=str(o.get("address_type", "")),
                   authenticated=bool(o.get("authenticated")), secure_connections=bool(o.get("secure_connections")),
                   key_size=int(o.get("key_size", 0)), irk=bool(o.get("irk")), created=int(o.get("created", 0)))


@dataclass(frozen=True)
class Service:
    """One service, as `list_services()` / `add_service()` answer."""

    id: Optional[str]
    uuid: str
    start: int
    """Its first handle."""
    end: int
    """Its last handle."""
    runtime: bool
    """Added with `add_service` (not from the config)."""
    restored: bool = False
    """A runtime service put back from the state directory at start (state restoration)."""

    @classmethod
    def from_json(cls, o: Mapping[str, Any]) -> "Service":
        sid = o.get("id")
        return cls(id=sid if isinstance(sid, str) else None, uuid=str(o["uuid"]), start=int(o["start"]),
                   end=int(o["end"]), runtime=bool(o.get("runtime")), restored=bool(o.get("restored")))
