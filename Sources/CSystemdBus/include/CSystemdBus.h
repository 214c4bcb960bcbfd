// CSystemdBus: sd-bus, libsystemd's D-Bus library (libsystemd-dev), for the BlueZ back end.
// Swift imports its functions as they are; only the variadic ones (append, read) are left
// unused: the typed *_basic and container calls do the same one value at a time.
#ifndef CSYSTEMDBUS_H
#define CSYSTEMDBUS_H

#include <systemd/sd-bus.h>

/// The NULL error value (SD_BUS_ERROR_NULL is a macro Swift cannot import).
static inline sd_bus_error csdbus_error_null(void) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    return e;
}

#endif
