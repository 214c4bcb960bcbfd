// CBlueZ: the kernel's Bluetooth socket types and constants (from libbluetooth-dev),
// plus small functions wrapping the C macros and inline helpers Swift cannot import.
// Nothing else in the package includes C headers: everything above this is Swift.
#ifndef CBLUEZ_H
#define CBLUEZ_H

#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

// ---- socket families, protocols, channels, levels (plain ints for Swift)
static const int CBLUEZ_AF_BLUETOOTH = AF_BLUETOOTH;
static const int CBLUEZ_BTPROTO_HCI = BTPROTO_HCI;
static const int CBLUEZ_BTPROTO_L2CAP = BTPROTO_L2CAP;
static const unsigned short CBLUEZ_HCI_CHANNEL_RAW = HCI_CHANNEL_RAW;
static const unsigned short CBLUEZ_HCI_CHANNEL_USER = HCI_CHANNEL_USER;
static const unsigned short CBLUEZ_HCI_CHANNEL_MONITOR = HCI_CHANNEL_MONITOR;
static const unsigned short CBLUEZ_HCI_CHANNEL_CONTROL = HCI_CHANNEL_CONTROL;
static const unsigned short CBLUEZ_HCI_DEV_NONE = HCI_DEV_NONE;
static const int CBLUEZ_SOL_BLUETOOTH = SOL_BLUETOOTH;
static const int CBLUEZ_SOL_HCI = SOL_HCI;
static const int CBLUEZ_SOL_L2CAP = SOL_L2CAP;
static const int CBLUEZ_HCI_FILTER = HCI_FILTER;
static const int CBLUEZ_L2CAP_OPTIONS = L2CAP_OPTIONS;
static const int CBLUEZ_BT_SECURITY = BT_SECURITY;
static const int CBLUEZ_BT_SECURITY_LOW = BT_SECURITY_LOW;
static const int CBLUEZ_BT_SECURITY_MEDIUM = BT_SECURITY_MEDIUM;
static const int CBLUEZ_BT_SECURITY_HIGH = BT_SECURITY_HIGH;
static const int CBLUEZ_BT_SECURITY_FIPS = BT_SECURITY_FIPS;
static const uint8_t CBLUEZ_BDADDR_BREDR = BDADDR_BREDR;
static const uint8_t CBLUEZ_BDADDR_LE_PUBLIC = BDADDR_LE_PUBLIC;
static const uint8_t CBLUEZ_BDADDR_LE_RANDOM = BDADDR_LE_RANDOM;
/// The ATT fixed channel (Core Spec Vol 3 Part A §2.1).
static const unsigned short CBLUEZ_L2CAP_CID_ATT = 4;
static const int CBLUEZ_HCI_MAX_DEV = HCI_MAX_DEV;
/// Bit numbers in hci_dev_info.flags (enum in hci.h).
static const int CBLUEZ_HCI_UP = HCI_UP;
static const int CBLUEZ_HCI_RUNNING = HCI_RUNNING;
static const int CBLUEZ_HCI_RAW = HCI_RAW;

// ---- ioctl numbers (built with _IOW/_IOR, which Swift cannot import)
static const unsigned long CBLUEZ_HCIDEVUP = HCIDEVUP;
static const unsigned long CBLUEZ_HCIDEVDOWN = HCIDEVDOWN;
static const unsigned long CBLUEZ_HCIDEVRESET = HCIDEVRESET;
static const unsigned long CBLUEZ_HCIGETDEVLIST = HCIGETDEVLIST;
static const unsigned long CBLUEZ_HCIGETDEVINFO = HCIGETDEVINFO;

// ---- ioctl wrappers (variadic ioctl() is not callable from Swift)
/// ioctl(fd, HCIDEVUP/HCIDEVDOWN/HCIDEVRESET, dev_id); returns ioctl's result (errno set).
int cbluez_ioctl_dev(int fd, unsigned long request, int dev_id);
/// ioctl(fd, HCIGETDEVINFO, di) with di->dev_id = dev_id.
int cbluez_get_dev_info(int fd, int dev_id, struct hci_dev_info *di);
/// ioctl(fd, HCIGETDEVLIST): fills ids[0..<max] with the registered device ids, returns the count or -1.
int cbluez_get_dev_list(int fd, uint16_t *ids, int max);

// ---- hci_filter helpers (static inlines in hci_lib.h)
void cbluez_filter_clear(struct hci_filter *f);
void cbluez_filter_set_ptype(struct hci_filter *f, int packet_type);
void cbluez_filter_set_event(struct hci_filter *f, int event);
/// Only Command Complete/Status events for this opcode pass (0 = any).
void cbluez_filter_set_opcode(struct hci_filter *f, uint16_t opcode);
int cbluez_filter_test_event(const struct hci_filter *f, int event);

// ---- bdaddr_t helpers
/// Parses "AA:BB:CC:DD:EE:FF" into ba (byte order as the kernel stores it: b[0] = last octet). 0 on success.
int cbluez_str2ba(const char *str, bdaddr_t *ba);
/// Formats ba into out (at least 18 bytes) as "AA:BB:CC:DD:EE:FF".
void cbluez_ba2str(const bdaddr_t *ba, char *out);

#endif
