"""Values on the wire: `{"hex": ...}` out, any of hex/utf8/base64 in."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Dict, Union

#: What the client accepts as a value: bytes-like, or text sent as UTF-8.
Value = Union[bytes, bytearray, memoryview, str]


def encode_value(value: Value) -> Dict[str, str]:
    """`{"hex": ...}` for bytes-like values, UTF-8 bytes for `str`."""
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError(f"a value must be bytes or str, not {type(value).__name__}")
    return {"hex": data.hex()}


def decode_value(obj: Any) -> bytes:
    """The bytes of a `{"hex"}`, `{"utf8"}` or `{"base64"}` object (gattd sends hex)."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise ValueError(f"not a value object: {obj!r}")
    ((encoding, text),) = obj.items()
    if not isinstance(text, str):
        raise ValueError(f"not a value object: {obj!r}")
    try:
        if encoding == "hex":
            return bytes.fromhex(text.replace(":", "").replace("-", ""))
        if encoding == "utf8":
            return text.encode("utf-8")
        if encoding == "base64":
            return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as error:
        raise ValueError(f"bad {encoding} value {text!r}: {error}") from None
    raise ValueError(f"unknown value encoding {encoding!r}")
