/* att_listen: a bonded central that only listens, for the kernel-vm test's per-bond GATT state
 * checks. gatttool cannot connect without an operation (`--listen` alone prints its usage), and
 * every operation sends a request, which would also tell gattd's kernel transport the link is
 * encrypted. This connects hciN to the peer on the ATT channel (CID 4) at BT_SECURITY medium
 * (the kernel encrypts with the bond before the socket is connected), sends nothing except a
 * Handle Value Confirmation for each indication, and prints every PDU it receives:
 *
 *   att_listen -i hci1 -b 00:AA:01:00:00:00 SECONDS
 *     connected (security N)
 *     notification handle 0x0014 value c0ffee
 *     indication handle 0x0008 value 1a001c00
 *     confirmed 0x0008
 *     other 0a... (PDUs it does not answer: none are expected)
 *
 * With -L it connects at BT_SECURITY low (no pairing); each -w HANDLE:HEX (up to 8) is sent as a
 * Write Request once connected, one after another's response (the profiles' checks: subscribe,
 * type into the console).
 * Exits 0 after SECONDS, 1 when the connection fails or ends. Built by scripts/kernel-vm-test
 * with gcc -static (BlueZ's headers only, no libbluetooth). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/l2cap.h>

static int parse_address(const char *s, bdaddr_t *out)
{
	unsigned int b[6];
	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x", &b[5], &b[4], &b[3], &b[2], &b[1], &b[0]) != 6) return -1;
	for (int i = 0; i < 6; i++) out->b[i] = (uint8_t)b[i];
	return 0;
}

static void print_value(const char *what, const unsigned char *p, int n)
{
	printf("%s handle 0x%04x value ", what, p[1] | p[2] << 8);
	for (int i = 3; i < n; i++) printf("%02x", p[i]);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int dev_id = -1, opt, level = BT_SECURITY_MEDIUM;
	bdaddr_t peer;
	int have_peer = 0;
	unsigned char writes[8][64];
	int write_lengths[8], write_count = 0, next_write = 0;
	while ((opt = getopt(argc, argv, "i:b:Lw:")) != -1) {
		if (opt == 'i') dev_id = atoi(optarg + (strncmp(optarg, "hci", 3) ? 0 : 3));
		else if (opt == 'b') have_peer = parse_address(optarg, &peer) == 0;
		else if (opt == 'L') level = BT_SECURITY_LOW;
		else if (opt == 'w' && write_count < 8) {
			unsigned int handle;
			int used;
			if (sscanf(optarg, "%x:%n", &handle, &used) != 1) return 2;
			unsigned char *w = writes[write_count];
			w[0] = 0x12, w[1] = handle & 0xFF, w[2] = handle >> 8;
			int n = 3;
			for (const char *h = optarg + used; h[0] && h[1] && n < 64; h += 2) {
				unsigned int byte;
				if (sscanf(h, "%2x", &byte) != 1) return 2;
				w[n++] = (unsigned char)byte;
			}
			write_lengths[write_count++] = n;
		} else return 2;
	}
	if (dev_id < 0 || !have_peer || optind + 1 != argc) {
		fprintf(stderr, "usage: %s -i hciN -b ADDR SECONDS\n", argv[0]);
		return 2;
	}
	int seconds = atoi(argv[optind]);

	struct hci_dev_info info = { .dev_id = (uint16_t)dev_id };
	int ctl = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
	if (ctl < 0 || ioctl(ctl, HCIGETDEVINFO, &info) < 0) { perror("HCIGETDEVINFO"); return 1; }
	close(ctl);

	int s = socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP);
	struct sockaddr_l2 a = { 0 };
	a.l2_family = AF_BLUETOOTH;
	a.l2_cid = htobs(4);
	a.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	bacpy(&a.l2_bdaddr, &info.bdaddr);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) { perror("bind"); return 1; }
	struct bt_security sec = { .level = (uint8_t)level };
	if (setsockopt(s, SOL_BLUETOOTH, BT_SECURITY, &sec, sizeof(sec)) < 0) { perror("BT_SECURITY"); return 1; }
	struct sockaddr_l2 d = { 0 };
	d.l2_family = AF_BLUETOOTH;
	d.l2_cid = htobs(4);
	d.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	bacpy(&d.l2_bdaddr, &peer);
	if (connect(s, (struct sockaddr *)&d, sizeof(d)) < 0) { perror("connect"); return 1; }
	socklen_t len = sizeof(sec);
	memset(&sec, 0, sizeof(sec));
	getsockopt(s, SOL_BLUETOOTH, BT_SECURITY, &sec, &len);
	printf("connected (security %d)\n", sec.level);
	fflush(stdout);
	if (next_write < write_count) {
		if (write(s, writes[next_write], write_lengths[next_write]) < 0) { perror("write request"); return 1; }
		next_write++;
	}

	time_t end = time(NULL) + seconds;
	for (;;) {
		int left = (int)(end - time(NULL));
		if (left <= 0) return 0;
		struct pollfd p = { .fd = s, .events = POLLIN };
		int ready = poll(&p, 1, left * 1000);
		if (ready < 0 && errno == EINTR) continue;
		if (ready <= 0) return ready == 0 ? 0 : 1;
		unsigned char pdu[600];
		ssize_t n = read(s, pdu, sizeof(pdu));
		if (n <= 0) { printf("disconnected (%s)\n", n < 0 ? strerror(errno) : "end"); return 1; }
		if (pdu[0] == 0x1B && n >= 3) {
			print_value("notification", pdu, (int)n);
		} else if (pdu[0] == 0x1D && n >= 3) {
			print_value("indication", pdu, (int)n);
			unsigned char confirmation = 0x1E;
			if (write(s, &confirmation, 1) != 1) { perror("confirmation"); return 1; }
			printf("confirmed 0x%04x\n", pdu[1] | pdu[2] << 8);
			fflush(stdout);
		} else if ((pdu[0] == 0x13 || pdu[0] == 0x01) && next_write < write_count) {
			printf("response %02x\n", pdu[0]);
			if (write(s, writes[next_write], write_lengths[next_write]) < 0) { perror("write request"); return 1; }
			next_write++;
		} else {
			printf("other");
			for (ssize_t i = 0; i < n && i < 32; i++) printf(" %02x", pdu[i]);
			printf("\n");
			fflush(stdout);
		}
	}
}
