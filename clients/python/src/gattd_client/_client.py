"""The client: one Unix stream connection to gattd's control socket."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import os
import time
import weakref
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    List,
    Mapping,
    Optional,
    Set,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from ._l2cap import L2CAPChannel, L2CAPListener
from ._errors import AttError, GattdConnectionError, GattdError, GattdTimeoutError, error_from_reply
from ._events import Event, ReadRequest, Ready, WriteRequest, parse_event
from ._status import Bond, Service, Status
from ._values import Value, decode_value, encode_value

logger = logging.getLogger("gattd_client")

DEFAULT_SOCKET = "/run/gattd/control.sock"

ReadHandler = Callable[[ReadRequest], Union[Optional[Value], Awaitable[Optional[Value]]]]
WriteHandler = Callable[[WriteRequest], Union[None, Awaitable[None]]]
R = TypeVar("R", bound=ReadHandler)
W = TypeVar("W", bound=WriteHandler)
E = TypeVar("E", bound=Event)

_LINE_LIMIT = 16 * 1024 * 1024


def default_socket_path() -> str:
    """`$GATTD_SOCKET`, else `/run/gattd/control.sock` (as gattctl)."""
    return os.environ.get("GATTD_SOCKET") or DEFAULT_SOCKET


class _End:
    """Marks the end of an event stream closed by the user."""


_END = _End()


class EventStream:
    """Events from the moment `events()` was called, as typed objects.

    Iterate with `async for`; use it as `async with gattd.events() as events:` to be sure
    gattd is already sending events when the block starts, and to stop collecting at its end.
    The iteration ends when the stream or the client is closed, and raises
    `GattdConnectionError` when the connection to gattd is lost.
    """

    def __init__(self, client: "GattdClient", watch: "asyncio.Future[Dict[str, Any]]") -> None:
        self._client = client
        self._watch = watch
        self._queue: "asyncio.Queue[Union[Event, BaseException, _End]]" = asyncio.Queue()
        self._closed = False

    async def started(self) -> None:
        """Returns once gattd has accepted `watch` (raises its error otherwise)."""
        await self._watch

    def close(self) -> None:
        """Stops collecting events; a pending or later `__anext__` ends the iteration."""
        if not self._closed:
            self._closed = True
            self._client._streams.discard(self)
            self._queue.put_nowait(_END)

    def _put(self, item: Union[Event, BaseException, _End]) -> None:
        if not self._closed:
            self._queue.put_nowait(item)

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        await self._watch
        item = await self._queue.get()
        if isinstance(item, _End):
            self._queue.put_nowait(item)  # stays ended
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.put_nowait(item)
            raise item
        return item

    async def next(self, timeout: Optional[float] = None) -> Event:
        """The next event; `asyncio.TimeoutError` after `timeout` seconds (None: no limit)."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except StopAsyncIteration:
            raise GattdConnectionError("the event stream is closed") from None

    async def wait_for(self, kind: Type[E], timeout: Optional[float] = None,
                       where: Optional[Callable[[E], bool]] = None) -> E:
        """The next event of type `kind` (and matching `where`), skipping others;
        `asyncio.TimeoutError` after `timeout` seconds (None: no limit)."""

        async def find() -> E:
            async for event in self:
                if isinstance(event, kind) and (where is None or where(event)):
                    return event
            raise GattdConnectionError("the event stream is closed")

        return await asyncio.wait_for(find(), timeout)

    async def __aenter__(self) -> "EventStream":
        await self._watch
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class _Connect:
    """What `GattdClient.connect()` returns: await it, or use it with `async with`."""

    def __init__(self, opener: Callable[[], Awaitable["GattdClient"]]) -> None:
        self._opener = opener
        self._client: Optional[GattdClient] = None

    def __await__(self) -> Generator[Any, None, "GattdClient"]:
        return self._opener().__await__()

    async def __aenter__(self) -> "GattdClient":
        self._client = await self._opener()
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()


class GattdClient:
    """One connection to gattd's control socket.

    Requests carry ids and may be issued concurrently from several tasks (they are pipelined on
    the one socket, and each reply is matched by id even with events in between). `notify()`
    calls are delivered in the order they were made: each waits for the previous one, and on
    `busy` for gattd's `ready` event, then resends.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 request_timeout: Optional[float] = 30.0, ready_timeout: float = 5.0) -> None:
        self._reader = reader
        self._writer = writer
        self.request_timeout = request_timeout
        """Seconds to wait for any reply (`GattdTimeoutError` after); None waits forever."""
        self.ready_timeout = ready_timeout
        """After `busy`, seconds to wait for `ready` before resending anyway."""
        self._ids = itertools.count(1)
        self._pending: Dict[int, "asyncio.Future[Tuple[Dict[str, Any], int]]"] = {}
        self._ready_count = 0
        self._ready_changed = asyncio.Event()
        self._notify_lock = asyncio.Lock()
        self._drain_lock = asyncio.Lock()
        self._streams: "weakref.WeakSet[EventStream]" = weakref.WeakSet()
        self._watch: Optional["asyncio.Future[Dict[str, Any]]"] = None
        self._read_handlers: Dict[str, ReadHandler] = {}
        self._write_handlers: Dict[str, WriteHandler] = {}
        self._serving = False
        self._unhandled: Optional[str] = None
        self._handler_tasks: Set["asyncio.Task[None]"] = set()
        self._closed_error: Optional[GattdConnectionError] = None
        self._closed_by_user = False
        self._closed = asyncio.Event()
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        self._socket_path: str = default_socket_path()

    # ------------------------------------------------------------------ connecting

    @classmethod
    def connect(cls, path: Optional[Union[str, "os.PathLike[str]"]] = None, *, wait: float = 0.0,
                request_timeout: Optional[float] = 30.0, ready_timeout: float = 5.0) -> _Connect:
        """Connects to gattd: `gattd = await GattdClient.connect()` or
        `async with GattdClient.connect() as gattd:` (closed at the end).

        `path`: the socket (default `$GATTD_SOCKET`, else `/run/gattd/control.sock`).
        `wait`: keep retrying this many seconds while the socket is missing or refuses
        (gattd starting). Raises `GattdConnectionError` (gattd not running, permission denied).
        """
        socket_path = os.fspath(path) if path is not None else default_socket_path()

        async def open_client() -> GattdClient:
            deadline = time.monotonic() + wait
            while True:
                try:
                    reader, writer = await asyncio.open_unix_connection(socket_path, limit=_LINE_LIMIT)
                    break
                except (FileNotFoundError, ConnectionRefusedError) as error:
                    if time.monotonic() >= deadline:
                        raise GattdConnectionError(
                            f"gattd is not running (no one listens on {socket_path}: {error.strerror})") from error
                    await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
                except PermissionError as error:
                    raise GattdConnectionError(
                        f"permission denied on {socket_path}: join the socket's group (usually gattd)") from error
                except OSError as error:
                    raise GattdConnectionError(f"cannot connect to {socket_path}: {error}") from error
            client = cls(reader, writer, request_timeout=request_timeout, ready_timeout=ready_timeout)
            client._socket_path = socket_path
            return client

        return _Connect(open_client)

    async def __aenter__(self) -> "GattdClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True once closed by `close()` or by gattd."""
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        """Returns when the connection is closed (by `close()` or by gattd)."""
        await self._closed.wait()

    async def close(self) -> None:
        """Closes the connection: pending requests fail, event streams end."""
        if not self._closed.is_set():
            self._closed_by_user = True
            self._shutdown(GattdConnectionError("the client was closed"))
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        if self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
            try:
                await self._reader_task
            except asyncio.CancelledError:
                pass

    # ------------------------------------------------------------------ requests

    async def request(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """Sends any request object (its `id` is set by the client) and returns the reply;
        raises the `GattdError` subclass for `{"ok": false}` replies."""
        reply, _ = await self._exchange(request)
        if reply.get("ok") is not True:
            raise error_from_reply(reply)
        return reply

    async def notify(self, characteristic: str, value: Value, central: Optional[str] = None) -> int:
        """Sets the value and notifies (or indicates) subscribed centrals, or only `central`.
        Returns how many centrals it was sent to (0: nobody subscribed).

        When gattd answers `busy` (a transmit queue is full; nothing changed), waits for its
        `ready` event (at most `ready_timeout`) and resends, so values are never dropped and
        arrive in call order."""
        request: Dict[str, Any] = {"op": "notify", "characteristic": characteristic, "value": encode_value(value)}
        return await self._notify(request, characteristic, central)

    async def notify_many(self, values: Mapping[str, Value], central: Optional[str] = None) -> int:
        """Sets several values and notifies them together: a central that supports it gets
        them in one Multiple Handle Value Notification, others one notification per value.
        All or nothing. Returns how many centrals it was sent to; `busy` is waited out as
        for `notify`."""
        if not values:
            raise ValueError("notify_many needs at least one value")
        request: Dict[str, Any] = {
            "op": "notify",
            "values": [{"characteristic": c, "value": encode_value(v)} for c, v in values.items()],
        }
        return await self._notify(request, ", ".join(values), central)

    async def _notify(self, request: Dict[str, Any], what: str, central: Optional[str]) -> int:
        if central is not None:
            request["central"] = central
        async with self._notify_lock:
            while True:
                reply, ready_seen = await self._exchange(request)
                if reply.get("ok") is True:
                    sent = reply.get("sent", 0)
                    return sent if isinstance(sent, int) else 0
                if reply.get("error") != "busy":
                    raise error_from_reply(reply)
                logger.debug("notify %s: busy, waiting for ready", what)
                await self._wait_for_ready(ready_seen)

    async def set(self, characteristic: str, value: Value) -> None:
        """Sets the value without notifying."""
        await self.request({"op": "set", "characteristic": characteristic, "value": encode_value(value)})

    async def get(self, characteristic: str) -> bytes:
        """The characteristic's current value."""
        reply = await self.request({"op": "get", "characteristic": characteristic})
        return decode_value(reply.get("value"))

    async def status(self) -> Status:
        """Advertising, the controller's address, and each connected central."""
        return Status.from_reply(await self.request({"op": "status"}))

    async def advertise(self, enable: bool, set: Optional[str] = None) -> None:
        """Turns advertising on or off: the primary set, or the advertising set with this id."""
        request: Dict[str, Any] = {"op": "advertise", "enable": bool(enable)}
        if set is not None:
            request["set"] = set
        await self.request(request)

    async def set_advertising_data(
        self,
        set: Optional[str] = None,
        *,
        manufacturer_data: Optional[Union[Mapping[int, Value], List[Tuple[int, Value]]]] = None,
        service_data: Optional[Union[Mapping[str, Value], List[Tuple[str, Value]]]] = None,
    ) -> None:
        """Replaces an advertising set's manufacturer or service data while gattd runs (the
        primary set, or the set with this id): ``manufacturer_data`` maps company ids to data,
        ``service_data`` service UUIDs (``"FEAA"``) to data (a mapping, or a list of pairs to
        repeat a key). A field left as ``None`` stays; an empty one removes it. Raises
        ``ValueTooLongError`` when the data does not fit (the set is left as it was)."""
        if manufacturer_data is None and service_data is None:
            raise ValueError("set_advertising_data needs manufacturer_data, service_data or both")
        request: Dict[str, Any] = {"op": "advertising_data"}
        if set is not None:
            request["set"] = set
        if manufacturer_data is not None:
            pairs = manufacturer_data.items() if isinstance(manufacturer_data, Mapping) else manufacturer_data
            request["manufacturer_data"] = [{"company_id": int(c), "data": encode_value(d)} for c, d in pairs]
        if service_data is not None:
            pairs = service_data.items() if isinstance(service_data, Mapping) else service_data
            request["service_data"] = [{"uuid": str(u), "data": encode_value(d)} for u, d in pairs]
        await self.request(request)

    async def disconnect(self, central: str) -> None:
        """Disconnects a central (by address)."""
        await self.request({"op": "disconnect", "central": central})

    async def connection_parameters(self, central: Optional[str] = None, *, preset: Optional[str] = None,
                                    interval_ms: Optional[Tuple[float, float]] = None, latency: Optional[int] = None,
                                    timeout_ms: Optional[int] = None) -> None:
        """Asks a central (by address; None: every connected central) for new connection
        parameters: a `preset` (``"low_latency"``, ``"balanced"``, ``"low_power"``) or all of
        `interval_ms` (min, max), `latency` and `timeout_ms`, which gattd checks against the rules
        of the config's ``connection.preferred`` (Apple's too: `InvalidValueError` names the
        broken rule, and nothing is sent). Returns once every central took them; raises
        `RefusedError` when one refused (the message says why), `RequestTimeoutError` when one did not
        answer, `UnknownCentralError` when one is not (or no longer) connected, `BusyError` when
        a request for it is still waiting. The new values arrive as ``link`` events and in
        `status()`."""
        request: Dict[str, Any] = {"op": "connection_parameters"}
        if central is not None:
            request["central"] = central
        if preset is not None:
            request["preset"] = preset
        if interval_ms is not None:
            request["interval_ms"] = [interval_ms[0], interval_ms[1]]
        if latency is not None:
            request["latency"] = latency
        if timeout_ms is not None:
            request["timeout_ms"] = timeout_ms
        await self.request(request)

    async def phy(self, central: str, phy: Optional[str] = None, *, tx: Optional[str] = None, rx: Optional[str] = None) -> None:
        """Asks a central for other PHYs (LE Set PHY): ``"1m"``, ``"2m"``, ``"coded"``,
        ``"coded_s2"`` or ``"coded_s8"``, both ways (`phy`) or `tx`/`rx` apart. Returns once the
        controller reported the PHY update (the PHYs in use arrive as a ``link`` event: the
        central may pick others); `RefusedError` says why when the controller lacks the PHY
        or the update failed."""
        request: Dict[str, Any] = {"op": "phy", "central": central}
        if phy is not None:
            request["phy"] = phy
        if tx is not None:
            request["tx"] = tx
        if rx is not None:
            request["rx"] = rx
        await self.request(request)

    async def data_length(self, central: str, tx_octets: int) -> None:
        """Asks the controller to send LL Data PDUs of up to `tx_octets` (27-251) to `central`
        (LE Set Data Length); what each side then uses arrives as a ``link`` event.
        `RefusedError` when the controller lacks LE Data Packet Length Extension."""
        await self.request({"op": "data_length", "central": central, "tx_octets": tx_octets})

    async def pairing_respond(self, central: Optional[str] = None, *, accept: Optional[bool] = None,
                              passkey: Optional[int] = None, confirm: Optional[bool] = None) -> None:
        """Answers a pairing prompt (`PairingRequest`: `accept`; `NumericComparison`: `confirm`;
        `PasskeyRequest`: `passkey`; `accept=False` refuses any). Without `central`, the only
        prompt waiting. Raises `NoPairingPromptError` when none waits or the answer does not fit."""
        request: Dict[str, Any] = {"op": "pairing_respond"}
        if central is not None:
            request["central"] = central
        if accept is not None:
            request["accept"] = bool(accept)
        if passkey is not None:
            request["passkey"] = int(passkey)
        if confirm is not None:
            request["confirm"] = bool(confirm)
        await self.request(request)

    async def bonds(self) -> List[Bond]:
        """The bonded centrals, oldest first."""
        reply = await self.request({"op": "bonds"})
        return [Bond.from_json(b) for b in reply.get("bonds", [])]

    async def unbond(self, central: str) -> None:
        """Forgets a bond (by identity address); the central is disconnected and must pair
        again. Raises `UnknownBondError` when there is no such bond."""
        await self.request({"op": "unbond", "central": central})

    async def add_service(self, service: Mapping[str, Any]) -> Service:
        """Adds a service at runtime (a service object as in the config's `services`); connected
        centrals get Service Changed. Not kept across a gattd restart or reload."""
        reply = await self.request({"op": "add_service", "service": dict(service)})
        return Service.from_json(reply["services"][0])

    async def remove_service(self, service_id: str) -> None:
        """Removes a service by its id. Raises `UnknownServiceError` when there is none."""
        await self.request({"op": "remove_service", "service": service_id})

    async def list_services(self) -> List[Service]:
        """The services served after GAP and GATT, with their handle ranges."""
        reply = await self.request({"op": "list_services"})
        return [Service.from_json(s) for s in reply.get("services", [])]

    async def list_l2cap_channels(self) -> List[Dict[str, Any]]:
        """The app L2CAP channels: `{"id","psm","security","mtu","listeners","runtime"?}` each."""
        return list((await self.request({"op": "list_l2cap_channels"}))["channels"])

    async def publish_l2cap_channel(self, channel_id: str, *, psm: Optional[int] = None, security: str = "none",
                                    mtu: int = 2048) -> int:
        """Publishes an app L2CAP channel while gattd runs (Core Bluetooth's
        `publishL2CAPChannel`); returns its PSM (picked by gattd unless given)."""
        channel: Dict[str, Any] = {"id": channel_id, "security": security, "mtu": mtu}
        if psm is not None:
            channel["psm"] = psm
        return int((await self.request({"op": "publish_l2cap_channel", "channel": channel}))["channel"]["psm"])

    async def unpublish_l2cap_channel(self, channel_id: str) -> None:
        await self.request({"op": "unpublish_l2cap_channel", "channel": channel_id})

    def l2cap_listen(self, channel_id: str) -> "L2CAPListener":
        """Listens for the app L2CAP channel `channel_id`: `async with gattd.l2cap_listen("stream")
        as channels: async for channel in channels: ...` yields an `L2CAPChannel` (SDUs in and out)
        for each channel a central opens. Listening uses its own connection to gattd (the
        channels' sockets are passed on it)."""
        return L2CAPListener(self._socket_path, channel_id)

    async def respond(self, request: Union[int, ReadRequest, WriteRequest], value: Optional[Value] = None, *,
                      status: str = "success") -> None:
        """Answers a forwarded read or write of a `"handler": "control"` characteristic:
        `status` is "success" or an ATT error name; `value` is what a read returns (from the
        request's offset: send `value[offset:]`). Raises `UnknownRequestError` when too late."""
        number = request if isinstance(request, int) else request.request
        message: Dict[str, Any] = {"op": "respond", "request": number, "status": status}
        if value is not None:
            message["value"] = encode_value(value)
        await self.request(message)

    # ------------------------------------------------------------------ events

    def events(self) -> EventStream:
        """A stream of the events from now on (`async for event in gattd.events():`).
        The first call sends `watch` on this connection."""
        if self._closed_error is not None:
            closed: "asyncio.Future[Dict[str, Any]]" = asyncio.get_running_loop().create_future()
            closed.set_result({})
            stream = EventStream(self, closed)
            stream._put(_END if self._closed_by_user else self._closed_error)
            return stream
        stream = EventStream(self, self._ensure_watching())
        self._streams.add(stream)
        return stream

    def _ensure_watching(self) -> "asyncio.Future[Dict[str, Any]]":
        if self._watch is None:
            self._watch = self._start_request({"op": "watch"})
        return self._watch

    # ------------------------------------------------------------------ responder

    def on_read(self, characteristic: str) -> Callable[[R], R]:
        """Decorator: `handler(request: ReadRequest)` (sync or async) answers reads of a
        `"handler": "control"` characteristic (named as gattd names it: its config id, or its
        UUID). It returns the whole value (bytes or str; the client sends the part from
        `request.offset`) or raises `AttError`. Active while `serve()` runs."""

        def register(handler: R) -> R:
            self._read_handlers[characteristic] = handler
            return handler

        return register

    def on_write(self, characteristic: str) -> Callable[[W], W]:
        """Decorator: `handler(request: WriteRequest)` (sync or async) accepts a write
        (`request.value`) by returning, or refuses it by raising `AttError`."""

        def register(handler: W) -> W:
            self._write_handlers[characteristic] = handler
            return handler

        return register

    async def start_serving(self, *, unhandled: Optional[str] = None) -> None:
        """Makes this connection gattd's responder for control characteristics and starts
        answering requests with the `on_read`/`on_write` handlers in the background.

        `unhandled`: an ATT error name to answer requests for characteristics without a
        handler; None (default) leaves them to another responder (or gattd's timeout)."""
        if unhandled is not None:
            AttError(unhandled)  # validates the name
        self._unhandled = unhandled
        # Serving before the reply: a request may follow it in the same read.
        self._serving = True
        try:
            # Asking for requests explicitly; a gattd for which every watcher is a
            # responder ignores the extra member.
            if self._watch is None:
                self._watch = self._start_request({"op": "watch", "requests": True})
                await self._watch
            else:
                await self._watch
                await self.request({"op": "watch", "requests": True})
        except BaseException:
            self._serving = False
            raise

    async def serve(self, *, unhandled: Optional[str] = None) -> None:
        """`start_serving()`, then answers requests until the client is closed (returns) or
        the connection to gattd is lost (raises `GattdConnectionError`)."""
        await self.start_serving(unhandled=unhandled)
        await self._closed.wait()
        if not self._closed_by_user and self._closed_error is not None:
            raise self._closed_error

    async def _answer(self, request: Union[ReadRequest, WriteRequest]) -> None:
        handler: Optional[Callable[[Any], Any]]
        if isinstance(request, ReadRequest):
            handler = self._read_handlers.get(request.characteristic)
        else:
            handler = self._write_handlers.get(request.characteristic)
        argument: Any = request
        value: Optional[bytes] = None
        status = "success"
        try:
            if handler is None:
                if self._unhandled is None:
                    return
                raise AttError(self._unhandled)
            result = handler(argument)
            if inspect.isawaitable(result):
                result = await result
            if isinstance(request, ReadRequest):
                whole = bytes.fromhex(encode_value(result)["hex"]) if result is not None else b""
                if request.offset > len(whole):
                    raise AttError("invalid_offset")
                value = whole[request.offset:]
        except AttError as error:
            status, value = error.name, None
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s handler for %r failed; answering unlikely_error", request.name,
                             request.characteristic)
            status, value = "unlikely_error", None
        try:
            await self.respond(request.request, value, status=status)
        except GattdError as error:
            logger.warning("answer to %s %d (%s) refused: %s", request.name, request.request,
                           request.characteristic, error)
        except (GattdConnectionError, GattdTimeoutError):
            pass

    # ------------------------------------------------------------------ internals

    def _start_request(self, request: Mapping[str, Any]) -> "asyncio.Future[Dict[str, Any]]":
        """Writes the request now (so it keeps its place on the socket); the returned future
        resolves with the successful reply or fails with its error."""
        pending = self._write_request(request)
        result: "asyncio.Future[Dict[str, Any]]" = asyncio.get_running_loop().create_future()

        async def finish() -> None:
            try:
                reply, _ = await self._finish(*pending)
                if reply.get("ok") is not True:
                    raise error_from_reply(reply)
                if not result.done():
                    result.set_result(reply)
            except BaseException as error:  # handed to whoever awaits the future
                if not result.done():
                    result.set_exception(error)

        asyncio.get_running_loop().create_task(finish())
        # Nobody may await it (a stream never iterated): do not warn about its exception.
        result.add_done_callback(lambda f: f.cancelled() or f.exception())
        return result

    async def _exchange(self, request: Mapping[str, Any]) -> Tuple[Dict[str, Any], int]:
        return await self._finish(*self._write_request(request))

    def _write_request(self, request: Mapping[str, Any]) -> Tuple[int, "asyncio.Future[Tuple[Dict[str, Any], int]]"]:
        if self._closed_error is not None:
            raise self._closed_error
        number = next(self._ids)
        message = dict(request)
        message["id"] = number
        future: "asyncio.Future[Tuple[Dict[str, Any], int]]" = asyncio.get_running_loop().create_future()
        self._pending[number] = future
        self._writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        return number, future

    async def _finish(self, number: int, future: "asyncio.Future[Tuple[Dict[str, Any], int]]") -> Tuple[Dict[str, Any], int]:
        try:
            try:
                async with self._drain_lock:
                    await self._writer.drain()
            except (ConnectionError, OSError) as error:
                self._shutdown(GattdConnectionError(f"connection to gattd lost: {error}"))
            try:
                return await asyncio.wait_for(future, self.request_timeout)
            except asyncio.TimeoutError:
                raise GattdTimeoutError(f"gattd did not answer within {self.request_timeout} s") from None
        finally:
            self._pending.pop(number, None)

    async def _wait_for_ready(self, seen: int) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while self._ready_count <= seen and self._closed_error is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                logger.debug("no ready event within %s s after busy; resending", self.ready_timeout)
                return
            changed = self._ready_changed
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def _read_loop(self) -> None:
        error = GattdConnectionError("gattd closed the connection")
        try:
            while True:
                line = await self._reader.readline()
                if not line.endswith(b"\n"):
                    break
                self._received(line)
        except (ConnectionError, OSError) as e:
            error = GattdConnectionError(f"connection to gattd lost: {e}")
        except ValueError as e:  # a line over the limit
            error = GattdConnectionError(f"gattd sent a line this client cannot read: {e}")
        except asyncio.CancelledError:
            error = GattdConnectionError("the client was closed")
            raise
        finally:
            self._shutdown(error)

    def _received(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            logger.warning("gattd sent a line that is not JSON: %r", line[:200])
            return
        if not isinstance(obj, dict):
            logger.warning("gattd sent a line that is not an object: %r", line[:200])
            return
        if "event" in obj:
            self._event(parse_event(obj))
        elif "ok" in obj:
            number = obj.get("id")
            future = self._pending.pop(number, None) if isinstance(number, int) else None
            if future is None and "id" not in obj and self._pending:
                # Replies come in request order; one without an id (a line gattd could not
                # read) belongs to the oldest request still waiting.
                future = self._pending.pop(next(iter(self._pending)))
            if future is None:
                logger.debug("reply to no pending request: %r", obj)
            elif not future.done():
                future.set_result((obj, self._ready_count))
        else:
            logger.warning("gattd sent neither a reply nor an event: %r", obj)

    def _event(self, event: Event) -> None:
        if isinstance(event, Ready):
            self._ready_count += 1
            changed, self._ready_changed = self._ready_changed, asyncio.Event()
            changed.set()
        if self._serving and isinstance(event, (ReadRequest, WriteRequest)):
            task = asyncio.get_running_loop().create_task(self._answer(event))
            self._handler_tasks.add(task)
            task.add_done_callback(self._handler_tasks.discard)
        for stream in list(self._streams):
            stream._put(event)

    def _shutdown(self, error: GattdConnectionError) -> None:
        if self._closed_error is not None:
            return
        self._closed_error = error
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        for stream in list(self._streams):
            stream._put(_END if self._closed_by_user else error)
        self._streams.clear()
        for task in list(self._handler_tasks):
            task.cancel()
        self._serving = False
        self._ready_changed.set()
        self._closed.set()
