/// A type from a layer above Values that knows its own ``Value``: Documents' dictionaries and
/// arrays, so that ``ValueConversion/convert(_:depth:)`` copies them without naming them.
protocol ValueConvertible {
    /// The value this container holds now, or why it cannot be stored.
    func toValue() -> ValueConversion.Converted
}
