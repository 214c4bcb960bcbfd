#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Testing

@testable import GattTransport

@Suite struct TransportErrorTextTests {
    @Test func errnoErrorsReadAsTheSystemText() {
        #expect(H4PeripheralTransport.describe(IOError(errnoCode: ECONNREFUSED, reason: "connect")) == "Connection refused")
    }
}
