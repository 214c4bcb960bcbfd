#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The UART baud rates the serial transport can set, mapped to termios speed constants.
enum SerialBaudRate {
    #if os(Linux)
    static let speeds: [(rate: Int, speed: speed_t)] = [
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)),
        (57600, speed_t(B57600)), (115_200, speed_t(B115200)), (230_400, speed_t(B230400)),
        (460_800, speed_t(B460800)), (500_000, speed_t(B500000)), (576_000, speed_t(B576000)),
        (921_600, speed_t(B921600)), (1_000_000, speed_t(B1000000)), (1_152_000, speed_t(B1152000)),
        (1_500_000, speed_t(B1500000)), (2_000_000, speed_t(B2000000)), (2_500_000, speed_t(B2500000)),
        (3_000_000, speed_t(B3000000)), (3_500_000, speed_t(B3500000)), (4_000_000, speed_t(B4000000)),
    ]
    #else
    static let speeds: [(rate: Int, speed: speed_t)] = [
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)),
        (57600, speed_t(B57600)), (115_200, speed_t(B115200)), (230_400, speed_t(B230400)),
    ]
    #endif

    static func speed(for rate: Int) -> speed_t? {
        speeds.first(where: { $0.rate == rate })?.speed
    }

    static func isSupported(_ rate: Int) -> Bool { speed(for: rate) != nil }

    static var supportedList: String { speeds.map { String($0.rate) }.joined(separator: ", ") }
}
