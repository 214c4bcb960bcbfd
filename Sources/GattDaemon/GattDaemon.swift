// The daemon: one event loop that owns the transport and feeds the sans-I/O core.
