"""Errors: gattd's error replies, ATT errors for responders, connection problems."""

from __future__ import annotations

import enum
from typing import Any, Dict, Mapping, Optional, Type, Union


class ErrorCode(str, enum.Enum):
    """The error codes of the control protocol (`{"ok":false,"error":CODE,...}`)."""

    BAD_JSON = "bad_json"
    UNKNOWN_OP = "unknown_op"
    MISSING_FIELD = "missing_field"
    UNKNOWN_CHARACTERISTIC = "unknown_characteristic"
    INVALID_VALUE = "invalid_value"
    VALUE_TOO_LONG = "value_too_long"
    NOT_NOTIFIABLE = "not_notifiable"
    BUSY = "busy"
    UNKNOWN_REQUEST = "unknown_request"
    UNKNOWN_CENTRAL = "unknown_central"
    NO_PAIRING_PROMPT = "no_pairing_prompt"
    UNKNOWN_BOND = "unknown_bond"
    UNKNOWN_SERVICE = "unknown_service"
    PERSIST_FAILED = "persist_failed"
    TOO_MANY_CLIENTS = "too_many_clients"
    UNKNOWN_CHANNEL = "unknown_channel"
    REFUSED = "refused"
    TIMEOUT = "timeout"

    def __str__(self) -> str:
        return self.value


class GattdError(Exception):
    """gattd answered a request with an error.

    `code` is an `ErrorCode` (a `str`), or the plain string for a code this client does not
    know yet; `message` is gattd's explanation; `reply` the whole reply object.
    Each known code has its own subclass (`UnknownCharacteristicError`, ...).
    """

    def __init__(self, code: Union[ErrorCode, str], message: str, reply: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code: Union[ErrorCode, str] = code
        self.message = message
        self.reply: Mapping[str, Any] = reply if reply is not None else {}


class BadJSONError(GattdError):
    """`bad_json`: gattd could not parse the request (a client bug)."""


class UnknownOpError(GattdError):
    """`unknown_op`: this gattd does not know the operation (older gattd?)."""


class MissingFieldError(GattdError):
    """`missing_field`."""


class UnknownCharacteristicError(GattdError):
    """`unknown_characteristic`: no characteristic with that config id (or unique UUID)."""


class InvalidValueError(GattdError):
    """`invalid_value`."""


class ValueTooLongError(GattdError):
    """`value_too_long`: longer than the characteristic's `max_length`."""


class NotNotifiableError(GattdError):
    """`not_notifiable`: the characteristic has neither notify nor indicate."""


class BusyError(GattdError):
    """`busy`: a subscriber's transmit queue is full. `notify()` handles this itself
    (waits for `ready` and resends); you only see it from `request()`."""


class UnknownRequestError(GattdError):
    """`unknown_request`: the forwarded request was already answered, timed out, or its central left."""


class UnknownCentralError(GattdError):
    """`unknown_central`: no such central is connected (or not an address)."""


class NoPairingPromptError(GattdError):
    """`no_pairing_prompt`: no pairing prompt waits for that central, or the answer is of the
    wrong kind (a passkey for a numeric comparison...)."""


class UnknownBondError(GattdError):
    """`unknown_bond`: `unbond` of an address gattd has no bond with."""


class UnknownServiceError(GattdError):
    """`unknown_service`: `remove_service` of an id gattd does not serve (or cannot remove)."""


class PersistFailedError(GattdError):
    """`persist_failed`: a value could not be made durable; nothing was changed."""


class TooManyClientsError(GattdError):
    """`too_many_clients`: gattd has `--max-control-clients` clients already."""


class UnknownChannelError(GattdError):
    """`unknown_channel`: no app L2CAP channel with that id (or it cannot be unpublished)."""


class RefusedError(GattdError):
    """`refused`: the central, the controller or the transport refused a link request."""


class RequestTimeoutError(GattdError):
    """`timeout`: a link request got no answer in time."""


_ERROR_CLASSES: Dict[str, Type[GattdError]] = {
    ErrorCode.BAD_JSON.value: BadJSONError,
    ErrorCode.UNKNOWN_OP.value: UnknownOpError,
    ErrorCode.MISSING_FIELD.value: MissingFieldError,
    ErrorCode.UNKNOWN_CHARACTERISTIC.value: UnknownCharacteristicError,
    ErrorCode.INVALID_VALUE.value: InvalidValueError,
    ErrorCode.VALUE_TOO_LONG.value: ValueTooLongError,
    ErrorCode.NOT_NOTIFIABLE.value: NotNotifiableError,
    ErrorCode.BUSY.value: BusyError,
    ErrorCode.UNKNOWN_REQUEST.value: UnknownRequestError,
    ErrorCode.UNKNOWN_CENTRAL.value: UnknownCentralError,
    ErrorCode.NO_PAIRING_PROMPT.value: NoPairingPromptError,
    ErrorCode.UNKNOWN_BOND.value: UnknownBondError,
    ErrorCode.UNKNOWN_SERVICE.value: UnknownServiceError,
    ErrorCode.PERSIST_FAILED.value: PersistFailedError,
    ErrorCode.TOO_MANY_CLIENTS.value: TooManyClientsError,
    ErrorCode.UNKNOWN_CHANNEL.value: UnknownChannelError,
    ErrorCode.REFUSED.value: RefusedError,
    ErrorCode.TIMEOUT.value: RequestTimeoutError,
}


def error_from_reply(reply: Mapping[str, Any]) -> GattdError:
    """The exception for an `{"ok":false,...}` reply (a generic `GattdError` for unknown codes)."""
    raw_code = reply.get("error")
    code_text = raw_code if isinstance(raw_code, str) else "unknown"
    message = reply.get("message")
    message_text = message if isinstance(message, str) else ""
    cls = _ERROR_CLASSES.get(code_text, GattdError)
    code: Union[ErrorCode, str] = ErrorCode(code_text) if code_text in _ERROR_CLASSES else code_text
    return cls(code, message_text, reply)


class GattdConnectionError(ConnectionError):
    """The control socket could not be opened, or the connection to gattd was lost or closed."""


class GattdTimeoutError(TimeoutError):
    """gattd did not answer a request within the client's `request_timeout`."""


# ATT error names (the control protocol's `status` values) and their codes.
ATT_ERRORS: Dict[str, int] = {
    "invalid_handle": 0x01,
    "read_not_permitted": 0x02,
    "write_not_permitted": 0x03,
    "invalid_pdu": 0x04,
    "insufficient_authentication": 0x05,
    "request_not_supported": 0x06,
    "invalid_offset": 0x07,
    "insufficient_authorization": 0x08,
    "prepare_queue_full": 0x09,
    "attribute_not_found": 0x0A,
    "attribute_not_long": 0x0B,
    "encryption_key_size_too_short": 0x0C,
    "invalid_attribute_value_length": 0x0D,
    "unlikely_error": 0x0E,
    "insufficient_encryption": 0x0F,
    "unsupported_group_type": 0x10,
    "insufficient_resources": 0x11,
    "database_out_of_sync": 0x12,
    "value_not_allowed": 0x13,
    "write_request_rejected": 0xFC,
    "cccd_improperly_configured": 0xFD,
    "procedure_already_in_progress": 0xFE,
    "out_of_range": 0xFF,
}
_ATT_NAMES = {code: name for name, code in ATT_ERRORS.items()}


class AttError(Exception):
    """Raise from an `on_read`/`on_write` handler to answer the central with an ATT error.

    `AttError("value_not_allowed")` and `AttError(0x13)` are the
    same. Names are those of `ATT_ERRORS` (the Core Specification's, in snake_case).
    """

    def __init__(self, error: Union[str, int], message: str = "") -> None:
        if isinstance(error, int):
            if error not in _ATT_NAMES:
                raise ValueError(f"0x{error:02X} is not an ATT error code gattd knows")
            name = _ATT_NAMES[error]
        else:
            if error not in ATT_ERRORS:
                raise ValueError(f"{error!r} is not an ATT error name; expected one of {', '.join(ATT_ERRORS)}")
            name = error
        super().__init__(f"{name} (0x{ATT_ERRORS[name]:02X})" + (f": {message}" if message else ""))
        self.name = name
        self.code = ATT_ERRORS[name]
        self.message = message
