/* mgmt_agent: the central's side of pairing in the kernel-vm test. Kernels with the fix for
 * CVE-2024-8805 ask user space to confirm every LE Just Works pairing (mgmt User Confirmation
 * Request) and wait; without bluetoothd nobody answers. This accepts every request for
 * adapter INDEX, like gattd's KernelPairingAgent does on the peripheral's side.
 *
 *   mgmt_agent INDEX        (runs until killed; prints one line per answered request)
 *   mgmt_agent --clear INDEX  (Load Long Term Keys and Load IRKs with empty lists: the kernel
 *                              forgets every key of adapter INDEX; exit 0 when both succeeded)
 * Built by scripts/kernel-vm-test with gcc -static (no libbluetooth needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

struct sockaddr_hci { sa_family_t hci_family; unsigned short hci_dev; unsigned short hci_channel; };

/* Sends mgmt command OPCODE with a 2-octet zero count (an empty key list) and waits for its
 * Command Complete (0x0001) or Command Status (0x0002); returns the status. */
static int empty_list(int fd, int index, int opcode, const char *name)
{
	unsigned char cmd[8] = { opcode & 0xff, opcode >> 8, index & 0xff, index >> 8, 2, 0, 0, 0 };
	unsigned char buf[1024];
	if (write(fd, cmd, sizeof(cmd)) != (ssize_t)sizeof(cmd)) { perror(name); return -1; }
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) { perror("read"); return -1; }
		int event = buf[0] | buf[1] << 8, ix = buf[2] | buf[3] << 8;
		if (n < 9 || ix != index || (event != 1 && event != 2) || (buf[6] | buf[7] << 8) != opcode) continue;
		printf("mgmt_agent: hci%d %s (empty list): status 0x%02x\n", index, name, buf[8]);
		return buf[8];
	}
}

int main(int argc, char **argv)
{
	int clear = argc > 2 && strcmp(argv[1], "--clear") == 0;
	int index = argc > 1 ? atoi(argv[clear ? 2 : 1]) : 0;
	int fd = socket(31 /* AF_BLUETOOTH */, SOCK_RAW | SOCK_CLOEXEC, 1 /* BTPROTO_HCI */);
	struct sockaddr_hci a = { 31, 0xffff /* HCI_DEV_NONE */, 3 /* HCI_CHANNEL_CONTROL */ };
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) { perror("mgmt socket"); return 1; }
	if (clear) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		int ltks = empty_list(fd, index, 0x0013, "Load Long Term Keys");
		int irks = empty_list(fd, index, 0x0030, "Load Identity Resolving Keys");
		return ltks == 0 && irks == 0 ? 0 : 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("mgmt_agent: answering User Confirmation Requests for hci%d\n", index);
	unsigned char buf[1024];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) { perror("read"); return 1; }
		if (n < 18) continue;
		int event = buf[0] | buf[1] << 8, ix = buf[2] | buf[3] << 8;
		if (event != 0x000F || ix != index) continue;   /* User Confirmation Request */
		unsigned char reply[13] = { 0x1C, 0x00, buf[2], buf[3], 7, 0 };   /* User Confirmation Reply */
		memcpy(reply + 6, buf + 6, 7);                   /* address + address type */
		ssize_t w = write(fd, reply, sizeof(reply));
		printf("mgmt_agent: hci%d confirmed pairing with %02X:%02X:%02X:%02X:%02X:%02X (hint %d)%s\n", index,
		       buf[11], buf[10], buf[9], buf[8], buf[7], buf[6], buf[13], w == (ssize_t)sizeof(reply) ? "" : " - write failed");
	}
}
