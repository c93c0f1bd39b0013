/// A measured `Duration` in seconds, the unit every figure of the benchmark is reported in.
extension Duration {
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
