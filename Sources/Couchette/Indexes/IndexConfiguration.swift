/// Describes an index to create with ``Collection/createIndex(withName:config:)``:
/// ``ValueIndexConfiguration`` or ``ArrayIndexConfiguration``.
public protocol IndexConfiguration: Sendable {}
