// Transports: H4 over TCP, Unix sockets, UART and the HCI user channel; the Linux kernel transport.
