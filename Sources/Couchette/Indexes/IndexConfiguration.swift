/// Describes an index to create with ``Collection/createIndex(withName:config:)``:
/// ``ValueIndexConfiguration``, ``ArrayIndexConfiguration`` or ``FullTextIndexConfiguration``.
public protocol IndexConfiguration: Sendable {}
