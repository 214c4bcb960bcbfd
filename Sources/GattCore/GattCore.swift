// GattCore: the sans-I/O protocol core of gattd. Pure values and state
// machines: bytes in, bytes and events out; no sockets, no clocks.
