extension Duration {
    /// The duration in seconds, for a printed figure.
    var figureSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    /// The duration in nanoseconds, for a printed figure.
    var figureNanoseconds: Double { Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9 }
}
