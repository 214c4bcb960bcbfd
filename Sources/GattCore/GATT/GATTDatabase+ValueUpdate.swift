extension GATTDatabase {
    /// Why characteristic `index` cannot take `value` from the server side (`ATTServer.setValue`,
    /// `notify`; `notifying`: also sent to subscribers), or nil when it can. The one place these
    /// rules live: the control socket asks it before making a value durable, then maps the
    /// server's own answer.
    public func valueUpdateRefusal(characteristic index: CharacteristicIndex, value: [UInt8], notifying: Bool) -> NotifyResult? {
        guard contains(index) else { return .unknownCharacteristic }
        let c = self[index]
        if notifying, !c.properties.canNotify, !c.properties.canIndicate { return .notNotifiable }
        guard value.count <= c.maxLength else { return .valueTooLong }
        return nil
    }
}
