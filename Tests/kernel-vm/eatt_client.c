/* eatt_client: an Enhanced ATT client for the kernel-vm test. Opens an L2CAP Enhanced Credit
 * Based channel (BT_MODE_EXT_FLOWCTL: the kernel's enable_ecred must be on) from hciN to the
 * peer's PSM 0x0027 (EATT, Core Vol 3 Part F §3.2.11), sends each PDU given in hex, prints the
 * PDU that comes back, and closes the channel:
 *
 *   eatt_client -i hci1 -b 00:AA:01:00:00:00 [-s medium] [-m 517] 0a0300 0a1000
 *     connected cid 0x0040 imtu 517 omtu 517 security 2
 *     rsp 0b67617474642d766d
 *     rsp 0b01
 *     closed
 * -w SECONDS: then keep the channel open until the peer or the link closes it ("closed by
 * the peer") or SECONDS pass ("still open").
 * -r MTU: once connected, reconfigure the channel to this larger MTU (setsockopt BT_RCVMTU on
 * the connected socket: the kernel sends an L2CAP Credit Based Reconfigure Request, Core Vol 3
 * Part A §4.27) before the PDUs ("reconfigured imtu MTU").
 * -s: BT_SECURITY before connect (default low: a peer that wants encryption refuses the channel
 * on an unencrypted link; medium: the kernel pairs or encrypts first). Exits 0 when every PDU
 * got an answer within 10 s, 1 when the channel cannot be opened or an answer is missing.
 * Built by scripts/kernel-vm-test with gcc -static (BlueZ's headers only, no libbluetooth). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int parse_hex(const char *s, unsigned char *out, int max)
{
	int n = 0;
	size_t len = strlen(s);
	if (len % 2) return -1;
	for (size_t i = 0; i < len && n < max; i += 2) {
		unsigned int byte;
		if (sscanf(s + i, "%2x", &byte) != 1) return -1;
		out[n++] = (unsigned char)byte;
	}
	return n;
}

int main(int argc, char **argv)
{
	int dev_id = -1, opt, level = BT_SECURITY_LOW, mtu = 517;
	bdaddr_t peer;
	int have_peer = 0;
	int hold = 0, reconfigure = 0;
	while ((opt = getopt(argc, argv, "i:b:s:m:w:r:")) != -1) {
		if (opt == 'i') dev_id = atoi(optarg + (strncmp(optarg, "hci", 3) ? 0 : 3));
		else if (opt == 'b') have_peer = parse_address(optarg, &peer) == 0;
		else if (opt == 's') level = strcmp(optarg, "medium") == 0 ? BT_SECURITY_MEDIUM : strcmp(optarg, "high") == 0 ? BT_SECURITY_HIGH : BT_SECURITY_LOW;
		else if (opt == 'm') mtu = atoi(optarg);
		else if (opt == 'w') hold = atoi(optarg);
		else if (opt == 'r') reconfigure = atoi(optarg);
		else return 2;
	}
	if (dev_id < 0 || !have_peer) {
		fprintf(stderr, "usage: %s -i hciN -b ADDR [-s low|medium|high] [-m MTU] [-r MTU] [-w SECONDS] HEXPDU...\n", argv[0]);
		return 2;
	}

	struct hci_dev_info info = { .dev_id = (uint16_t)dev_id };
	int ctl = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
	if (ctl < 0 || ioctl(ctl, HCIGETDEVINFO, &info) < 0) { perror("HCIGETDEVINFO"); return 1; }
	close(ctl);

	int s = socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP);
	if (s < 0) { perror("socket"); return 1; }
	struct sockaddr_l2 a = { 0 };
	a.l2_family = AF_BLUETOOTH;
	a.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	bacpy(&a.l2_bdaddr, &info.bdaddr);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) { perror("bind"); return 1; }
	uint8_t mode = BT_MODE_EXT_FLOWCTL;
	if (setsockopt(s, SOL_BLUETOOTH, BT_MODE, &mode, sizeof(mode)) < 0) { perror("BT_MODE EXT_FLOWCTL"); return 1; }
	uint16_t imtu = (uint16_t)mtu;
	if (setsockopt(s, SOL_BLUETOOTH, BT_RCVMTU, &imtu, sizeof(imtu)) < 0) { perror("BT_RCVMTU"); return 1; }
	struct bt_security sec = { .level = (uint8_t)level };
	if (setsockopt(s, SOL_BLUETOOTH, BT_SECURITY, &sec, sizeof(sec)) < 0) { perror("BT_SECURITY"); return 1; }
	struct sockaddr_l2 d = { 0 };
	d.l2_family = AF_BLUETOOTH;
	d.l2_psm = htobs(0x0027);
	d.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	bacpy(&d.l2_bdaddr, &peer);
	if (connect(s, (struct sockaddr *)&d, sizeof(d)) < 0) { printf("connect failed: %s\n", strerror(errno)); return 1; }

	struct sockaddr_l2 local = { 0 };
	socklen_t len = sizeof(local);
	getsockname(s, (struct sockaddr *)&local, &len);
	uint16_t omtu = 0;
	len = sizeof(omtu);
	getsockopt(s, SOL_BLUETOOTH, BT_SNDMTU, &omtu, &len);
	len = sizeof(imtu);
	getsockopt(s, SOL_BLUETOOTH, BT_RCVMTU, &imtu, &len);
	memset(&sec, 0, sizeof(sec));
	len = sizeof(sec);
	getsockopt(s, SOL_BLUETOOTH, BT_SECURITY, &sec, &len);
	printf("connected cid 0x%04x imtu %u omtu %u security %d\n", btohs(local.l2_cid), imtu, omtu, sec.level);
	fflush(stdout);
	if (reconfigure > 0) {
		uint16_t larger = (uint16_t)reconfigure;
		if (setsockopt(s, SOL_BLUETOOTH, BT_RCVMTU, &larger, sizeof(larger)) < 0) { printf("reconfigure failed: %s\n", strerror(errno)); return 1; }
		printf("reconfigured imtu %u\n", larger);
		fflush(stdout);
	}

	int status = 0;
	for (int i = optind; i < argc; i++) {
		unsigned char pdu[600];
		int n = parse_hex(argv[i], pdu, sizeof(pdu));
		if (n <= 0) { fprintf(stderr, "bad PDU %s\n", argv[i]); return 2; }
		if (write(s, pdu, (size_t)n) != n) { printf("send failed: %s\n", strerror(errno)); return 1; }
		struct pollfd p = { .fd = s, .events = POLLIN };
		int ready;
		do ready = poll(&p, 1, 10000); while (ready < 0 && errno == EINTR);
		if (ready <= 0) { printf("no answer to %s\n", argv[i]); status = 1; continue; }
		ssize_t got = read(s, pdu, sizeof(pdu));
		if (got <= 0) { printf("channel closed (%s)\n", got < 0 ? strerror(errno) : "end"); return 1; }
		printf("rsp ");
		for (ssize_t j = 0; j < got; j++) printf("%02x", pdu[j]);
		printf("\n");
		fflush(stdout);
	}
	if (hold > 0) {
		/* Keep the channel open until the peer (or the link) closes it. */
		struct pollfd p = { .fd = s, .events = POLLIN };
		int ready;
		do ready = poll(&p, 1, hold * 1000); while (ready < 0 && errno == EINTR);
		unsigned char pdu[600];
		ssize_t got = ready > 0 ? read(s, pdu, sizeof(pdu)) : 1;
		if (got <= 0) {
			printf("closed by the peer (%s)\n", got < 0 ? strerror(errno) : "end");
			return status;
		}
		printf("still open after %d s\n", hold);
	}
	close(s);
	printf("closed\n");
	return status;
}
