import GattCore

extension AdvertisingPayloads {
    /// LE Set Advertising Parameters, LE Set Advertising Data, LE Set Scan Response
    /// Data — to send while advertising is disabled, before `enableCommand`. Legacy
    /// advertising commands: for a set with legacy PDUs on a controller driven with them.
    public var configurationCommands: [HCICommand] {
        [.leSetAdvertisingParameters(parameters), .leSetAdvertisingData(advertisingData), .leSetScanResponseData(scanResponseData)]
    }

    public static let enableCommand = HCICommand.leSetAdvertisingEnable(true)
    public static let disableCommand = HCICommand.leSetAdvertisingEnable(false)
}
