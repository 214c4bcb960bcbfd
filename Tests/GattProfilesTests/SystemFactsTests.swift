import Glibc
import Testing

@testable import GattProfiles

/// Device Information's defaults from a fake root: a Raspberry Pi's device tree, a PC's DMI
/// with the placeholders vendors leave, os-release and the kernel release.
@Suite struct SystemFactsTests {
    func tree(_ files: [String: String]) throws -> String {
        var template = Array("/tmp/gattd-facts-XXXXXX".utf8CString)
        let root = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        for (path, text) in files {
            var dir = ""
            for part in (root + path).split(separator: "/").dropLast() {
                dir += "/" + part
                mkdir(dir, 0o755)
            }
            let fd = open(root + path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
        }
        return root
    }

    @Test func aRaspberryPi() throws {
        let root = try tree([
            "/proc/device-tree/model": "Raspberry Pi 4 Model B Rev 1.4\0",
            "/etc/os-release": "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
            "/proc/sys/kernel/osrelease": "6.6.51+rpt-rpi-v8\n",
        ])
        #expect(
            SystemFacts.read(root: root)
                == SystemFacts(model: "Raspberry Pi 4 Model B Rev 1.4", firmwareRevision: "6.6.51+rpt-rpi-v8", softwareRevision: "Debian GNU/Linux 12 (bookworm)"))
    }

    @Test func aPCWithPlaceholders() throws {
        let root = try tree([
            "/sys/class/dmi/id/sys_vendor": "LENOVO\n",
            "/sys/class/dmi/id/product_name": "20XW0055GE\n",
            "/sys/class/dmi/id/product_version": "To Be Filled By O.E.M.\n",
            "/usr/lib/os-release": "PRETTY_NAME='Ubuntu 24.04.1 LTS'\n",
        ])
        let f = SystemFacts.read(root: root)
        #expect(f == SystemFacts(manufacturer: "LENOVO", model: "20XW0055GE", softwareRevision: "Ubuntu 24.04.1 LTS"))
    }

    @Test func nothingKnown() throws {
        #expect(SystemFacts.read(root: try tree([:])) == SystemFacts())
    }
}
