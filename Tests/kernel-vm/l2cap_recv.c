/* l2cap_recv: opens an LE credit-based channel from hciN to the peer's PSM and writes every
 * SDU it receives to stdout until the peer closes the channel, for the kernel-vm test's
 * "nothing lost at the end" checks (gattctl l2cap cat / serve --exec sending a file):
 *
 *   l2cap_recv -i hci1 -b 00:AA:01:00:00:00 -P 129 >/tmp/received.bin
 *     (stderr) connected; received 307200 bytes in 1234 SDUs; closed by the peer (end)
 * Exits 0 when the peer closed the channel, 1 on a failure (connect, read error other than the
 * peer's disconnection). Built by scripts/kernel-vm-test with gcc -static (headers only). */
#include <errno.h>
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

int main(int argc, char **argv)
{
	int dev_id = -1, opt, psm = 0;
	bdaddr_t peer;
	int have_peer = 0;
	while ((opt = getopt(argc, argv, "i:b:P:")) != -1) {
		if (opt == 'i') dev_id = atoi(optarg + (strncmp(optarg, "hci", 3) ? 0 : 3));
		else if (opt == 'b') have_peer = parse_address(optarg, &peer) == 0;
		else if (opt == 'P') psm = atoi(optarg);
		else return 2;
	}
	if (dev_id < 0 || !have_peer || psm <= 0) {
		fprintf(stderr, "usage: %s -i hciN -b ADDR -P PSM >FILE\n", argv[0]);
		return 2;
	}
	struct hci_dev_info info = { .dev_id = (uint16_t)dev_id };
	int ctl = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
	if (ctl < 0 || ioctl(ctl, HCIGETDEVINFO, &info) < 0) { perror("HCIGETDEVINFO"); return 1; }
	close(ctl);

	int s = socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP);
	struct sockaddr_l2 a = { 0 };
	a.l2_family = AF_BLUETOOTH;
	a.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	bacpy(&a.l2_bdaddr, &info.bdaddr);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) { perror("bind"); return 1; }
	uint16_t imtu = 1024;
	setsockopt(s, SOL_BLUETOOTH, BT_RCVMTU, &imtu, sizeof(imtu));
	struct sockaddr_l2 d = { 0 };
	d.l2_family = AF_BLUETOOTH;
	d.l2_psm = htobs((uint16_t)psm);
	d.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	bacpy(&d.l2_bdaddr, &peer);
	if (connect(s, (struct sockaddr *)&d, sizeof(d)) < 0) { fprintf(stderr, "connect failed: %s\n", strerror(errno)); return 1; }
	fprintf(stderr, "connected\n");

	long total = 0, sdus = 0;
	unsigned char buf[65536];
	for (;;) {
		ssize_t n = read(s, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) {
			int end = n == 0 || errno == ECONNRESET || errno == ENOTCONN;
			fprintf(stderr, "received %ld bytes in %ld SDUs; %s (%s)\n", total, sdus,
				end ? "closed by the peer" : "read failed", n == 0 ? "end" : strerror(errno));
			return end ? 0 : 1;
		}
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) { perror("stdout"); return 1; }
		total += n;
		sdus++;
	}
}
