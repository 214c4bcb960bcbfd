import Testing

@testable import GattTransport

@Suite("TransportSpec parsing")
struct TransportSpecTests {
    @Test("valid transport strings", arguments: [
        ("tcp:127.0.0.1:9000", TransportSpec.tcp(host: "127.0.0.1", port: 9000)),
        ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
        ("tcp:[::1]:65535", .tcp(host: "::1", port: 65535)),
        ("  TCP:example.org:80 ", .tcp(host: "example.org", port: 80)),
        ("unix:/run/bumble.sock", .unix(path: "/run/bumble.sock")),
        ("serial:/dev/ttyACM0", .serial(device: "/dev/ttyACM0", baudRate: 1_000_000, flowControl: false)),
        ("serial:/dev/ttyUSB0@115200", .serial(device: "/dev/ttyUSB0", baudRate: 115_200, flowControl: false)),
        ("serial:/dev/ttyUSB0@3000000,rtscts", .serial(device: "/dev/ttyUSB0", baudRate: 3_000_000, flowControl: true)),
        ("serial:/dev/ttyS1,rtscts", .serial(device: "/dev/ttyS1", baudRate: 1_000_000, flowControl: true)),
        ("user:hci0", .userChannel(controller: 0)),
        ("user:hci12", .userChannel(controller: 12)),
        ("hci1", .kernel(controller: 1)),
        ("kernel:hci0", .kernel(controller: 0)),
        ("bluez", .bluez(controller: 0)),
        (" BlueZ ", .bluez(controller: 0)),
        ("bluez:hci1", .bluez(controller: 1)),
    ])
    func parses(text: String, expected: TransportSpec) throws {
        #expect(try TransportSpec(parsing: text) == expected)
    }

    @Test("description round-trips", arguments: [
        TransportSpec.tcp(host: "127.0.0.1", port: 9000), .tcp(host: "::1", port: 5),
        .unix(path: "/tmp/x"), .serial(device: "/dev/ttyS0", baudRate: 115_200, flowControl: true),
        .userChannel(controller: 3), .kernel(controller: 0), .bluez(controller: 2),
    ])
    func roundTrips(spec: TransportSpec) throws {
        #expect(try TransportSpec(parsing: spec.description) == spec)
    }

    @Test("canonical descriptions")
    func descriptions() {
        #expect(TransportSpec.tcp(host: "::1", port: 5).description == "tcp:[::1]:5")
        #expect(TransportSpec.serial(device: "/dev/ttyS0", baudRate: 1_000_000, flowControl: false).description
            == "serial:/dev/ttyS0@1000000")
        #expect(TransportSpec.userChannel(controller: 2).description == "user:hci2")
        #expect(TransportSpec.kernel(controller: 0).description == "kernel:hci0")
        #expect(TransportSpec.kernel(controller: 0).isH4 == false)
        #expect(TransportSpec.userChannel(controller: 0).isH4)
        #expect(TransportSpec.bluez(controller: 0).description == "bluez:hci0")
        #expect(TransportSpec.bluez(controller: 0).isH4 == false)
    }

    @Test("errors name the bad part", arguments: [
        ("", "the transport is empty"),
        ("bluetooth", "'bluetooth' is not a transport"),
        ("ftp:host:21", "unknown transport kind 'ftp'"),
        ("tcp:127.0.0.1", "the port is missing"),
        ("tcp:host:0", "'0' is not a TCP port"),
        ("tcp:host:70000", "'70000' is not a TCP port"),
        ("tcp:host:http", "'http' is not a TCP port"),
        ("tcp::9000", "the host is empty"),
        ("tcp:[::1:9000", "no closing ']'"),
        ("tcp:[::1]9000", "the port is missing"),
        ("unix:", "the Unix socket path is empty"),
        ("serial:", "the serial device is empty"),
        ("serial:/dev/ttyS0@fast", "'fast' is not a baud rate"),
        ("serial:/dev/ttyS0@12345", "baud rate 12345 is not supported"),
        ("serial:/dev/ttyS0,xonxoff", "unknown serial option 'xonxoff'"),
        ("user:0", "'0' is not a controller name"),
        ("user:hci", "'hci' is not a controller name"),
        ("user:hciX", "'hciX' is not a controller name"),
        ("hci-1", "'hci-1' is not a controller name"),
        ("kernel:hci65535", "'hci65535' is not a controller name"),
        ("bluez:", "'' is not a controller name"),
        ("bluez:0", "'0' is not a controller name"),
    ])
    func rejects(text: String, fragment: String) {
        #expect {
            _ = try TransportSpec(parsing: text)
        } throws: { error in
            guard let error = error as? TransportSpecError else { return false }
            return error.message.contains(fragment)
        }
    }
}
