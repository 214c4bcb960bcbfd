"""gattd-client: an asyncio client for gattd's control socket.

    from gattd_client import GattdClient

    async with GattdClient.connect() as gattd:
        sent = await gattd.notify("hr_measurement", b"\\x00\\x48")

See README.md for the whole API.
"""

from ._client import DEFAULT_SOCKET, EventStream, GattdClient, ReadHandler, WriteHandler, default_socket_path
from ._errors import (
    ATT_ERRORS,
    AttError,
    BadJSONError,
    BusyError,
    ErrorCode,
    GattdConnectionError,
    GattdError,
    GattdTimeoutError,
    InvalidValueError,
    MissingFieldError,
    NoPairingPromptError,
    NotNotifiableError,
    PersistFailedError,
    TooManyClientsError,
    UnknownBondError,
    UnknownServiceError,
    UnknownCentralError,
    UnknownCharacteristicError,
    UnknownOpError,
    UnknownRequestError,
    ValueTooLongError,
)
from ._events import (
    Confirmed,
    Connected,
    Disconnected,
    Event,
    MtuChanged,
    NumericComparison,
    Paired,
    PairingFailed,
    PairingRequest,
    PairingTimeout,
    PasskeyDisplay,
    PasskeyRequest,
    PersistFailed,
    Ready,
    ReadRequest,
    Subscribed,
    UnknownEvent,
    Unsubscribed,
    WriteRequest,
    Written,
    parse_event,
)
from ._status import Bond, Connection, Service, Status, Subscription
from ._values import Value, decode_value, encode_value

__version__ = "0.1.0"

connect = GattdClient.connect

__all__ = [
    "ATT_ERRORS",
    "AttError",
    "BadJSONError",
    "Bond",
    "BusyError",
    "Confirmed",
    "Connected",
    "Connection",
    "DEFAULT_SOCKET",
    "Disconnected",
    "ErrorCode",
    "Event",
    "EventStream",
    "GattdClient",
    "GattdConnectionError",
    "GattdError",
    "GattdTimeoutError",
    "InvalidValueError",
    "MissingFieldError",
    "MtuChanged",
    "NoPairingPromptError",
    "NotNotifiableError",
    "NumericComparison",
    "Paired",
    "PairingFailed",
    "PairingRequest",
    "PairingTimeout",
    "PasskeyDisplay",
    "PasskeyRequest",
    "PersistFailed",
    "PersistFailedError",
    "ReadHandler",
    "ReadRequest",
    "Ready",
    "Service",
    "Status",
    "Subscribed",
    "Subscription",
    "TooManyClientsError",
    "UnknownBondError",
    "UnknownServiceError",
    "UnknownCentralError",
    "UnknownCharacteristicError",
    "UnknownEvent",
    "UnknownOpError",
    "UnknownRequestError",
    "Unsubscribed",
    "Value",
    "ValueTooLongError",
    "WriteHandler",
    "WriteRequest",
    "Written",
    "connect",
    "decode_value",
    "default_socket_path",
    "encode_value",
    "parse_event",
]
