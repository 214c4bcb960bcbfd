import GattctlCommand

// A development build's `.build/debug/gattctl` (the e2e tests and scripts run it). The
// installed gattctl is a link to gattd, which runs the same command (Sources/gattd/main.swift).
Gattctl.main()
