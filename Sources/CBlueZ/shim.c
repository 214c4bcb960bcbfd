#include "CBlueZ.h"

#include <string.h>
#include <stdlib.h>

int cbluez_ioctl_dev(int fd, unsigned long request, int dev_id)
{
	return ioctl(fd, request, dev_id);
}

int cbluez_get_dev_info(int fd, int dev_id, struct hci_dev_info *di)
{
	memset(di, 0, sizeof(*di));
	di->dev_id = (uint16_t)dev_id;
	return ioctl(fd, HCIGETDEVINFO, (void *)di);
}

int cbluez_get_dev_list(int fd, uint16_t *ids, int max)
{
	if (max <= 0 || max > HCI_MAX_DEV)
		max = HCI_MAX_DEV;
	struct hci_dev_list_req *dl = calloc(1, sizeof(*dl) + HCI_MAX_DEV * sizeof(struct hci_dev_req));
	if (!dl)
		return -1;
	dl->dev_num = HCI_MAX_DEV;
	int r = ioctl(fd, HCIGETDEVLIST, (void *)dl);
	if (r < 0) {
		free(dl);
		return -1;
	}
	int n = dl->dev_num < max ? dl->dev_num : max;
	for (int i = 0; i < n; i++)
		ids[i] = dl->dev_req[i].dev_id;
	free(dl);
	return n;
}

void cbluez_filter_clear(struct hci_filter *f) { hci_filter_clear(f); }
void cbluez_filter_set_ptype(struct hci_filter *f, int packet_type) { hci_filter_set_ptype(packet_type, f); }
void cbluez_filter_set_event(struct hci_filter *f, int event) { hci_filter_set_event(event, f); }
void cbluez_filter_set_opcode(struct hci_filter *f, uint16_t opcode) { hci_filter_set_opcode(htobs(opcode), f); }
int cbluez_filter_test_event(const struct hci_filter *f, int event)
{
	struct hci_filter copy = *f;
	return hci_filter_test_event(event, &copy) != 0;
}

int cbluez_str2ba(const char *str, bdaddr_t *ba)
{
	return str2ba(str, ba) < 0 ? -1 : 0;
}

void cbluez_ba2str(const bdaddr_t *ba, char *out)
{
	ba2str(ba, out);
}
