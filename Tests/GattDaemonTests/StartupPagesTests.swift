import Testing
@testable import GattDaemon

/// `StartupPages` reads which mappings to advise from `/proc/self/maps`.
@Suite struct StartupPagesTests {
    static let maps = """
        5620745f0000-562074638000 r--p 00000000 fd:01 1318  /usr/bin/gattd
        562074638000-562075b4e000 r-xp 00048000 fd:01 1318  /usr/bin/gattd
        562075be0000-562075e82000 rw-p 015f0000 fd:01 1318  /usr/bin/gattd
        562075e82000-562075f3f000 rw-p 00000000 00:00 0
        5620a06d2000-5620a070f000 rw-p 00000000 00:00 0     [heap]
        7ff679644000-7ff67979a000 r-xp 00026000 fd:01 2211  /usr/lib/x86_64-linux-gnu/libc.so.6
        7ff679800000-7ff679801000 r--s 00000000 fd:01 4242  /dev/shm/shared
        7ff679900000-7ff679901000 ---p 00000000 fd:01 2211  /usr/lib/x86_64-linux-gnu/libc.so.6
        7ffd1e5f0000-7ffd1e5f2000 r-xp 00000000 00:00 0     [vdso]
        garbage line
        """

    @Test func privateReadableFileMappingsOnly() {
        let found = StartupPages.fileMappings(Array(Self.maps.utf8))
        #expect(found.map(\.range) == [
            0x5620745f0000..<0x562074638000, 0x562074638000..<0x562075b4e000,
            0x562075be0000..<0x562075e82000, 0x7ff679644000..<0x7ff67979a000,
        ])
        #expect(found.map(\.executable) == [false, true, false, true])
    }
}
