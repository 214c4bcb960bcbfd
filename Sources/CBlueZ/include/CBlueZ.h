// CBlueZ: the kernel's Bluetooth socket types and constants (from libbluetooth-dev),
// plus small functions wrapping the C macros and inline helpers Swift cannot import.
#ifndef CBLUEZ_H
#define CBLUEZ_H

#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

#endif
