import Foundation

/// Progress of a long job on standard error: a bar with the rate and the time left on a terminal,
/// redrawn in place at most ten times a second; otherwise a plain line at most once a second.
final class ProgressReporter {
    private let unit: String
    private let isTerminal = Terminal.standardErrorIsTerminal
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastReport: ContinuousClock.Instant
    private var drewBar = false

    init(unit: String) {
        self.unit = unit
        start = clock.now
        lastReport = start
    }

    /// Reports `count` items done, `fraction` (0...1) of the whole.
    func update(count: Int, fraction: Double) {
        let now = clock.now
        let interval: Duration = isTerminal ? .milliseconds(100) : .seconds(1)
        guard now - lastReport >= interval else { return }
        lastReport = now
        let elapsed = seconds(now - start)
        let rate = elapsed > 0 ? Double(count) / elapsed : 0
        let remaining = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0
        let percent = Int((fraction * 100).rounded(.down))
        if isTerminal {
            let width = 24
            let filled = min(width, Int(fraction * Double(width)))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            Terminal.writeError("\r\(bar) \(percent)%  \(count) \(unit)  \(Int(rate)) \(unit)/s  ETA \(Self.time(remaining))\u{1B}[K")
            drewBar = true
        } else {
            Terminal.writeError("\(count) \(unit) (\(percent)%, \(Int(rate)) \(unit)/s)\n")
        }
    }

    /// Clears the bar; the caller prints the summary.
    func finish() {
        if drewBar { Terminal.writeError("\r\u{1B}[K") }
    }

    var elapsed: Duration { clock.now - start }

    private func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// `42s`, `3m05s`, `1h02m`.
    static func time(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.up))
        if total < 60 { return "\(total)s" }
        if total < 3600 { return String(format: "%dm%02ds", total / 60, total % 60) }
        return String(format: "%dh%02dm", total / 3600, total % 3600 / 60)
    }
}
