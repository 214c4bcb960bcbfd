import Synchronization

/// Decides once, for whoever asks first (the daemon building its database, or the adapter's
/// open), whether the kernel supports Enhanced ATT, and logs why not once.
final class KernelEnhancedATTCheck: Sendable {
    private let decided = Mutex<KernelEnhancedATTSupport?>(nil)
    private let parameterPath: String

    init(parameterPath: String = KernelECREDParameter.path) {
        self.parameterPath = parameterPath
    }

    /// `decided`: runs once, with the answer, when it is first found (to log it).
    func support(decided report: (KernelEnhancedATTSupport) -> Void) -> KernelEnhancedATTSupport {
        decided.withLock { decided in
            if let decided { return decided }
            let support = KernelEnhancedATTSupport.decide(.read(path: parameterPath)) {
                KernelL2CAPListener.probeEnhancedCreditBased(psm: KernelEnhancedATT.psm)
            }
            decided = support
            report(support)
            return support
        }
    }
}
