/// Describes an index to create with ``Collection/createIndex(withName:config:)``:
/// ``ValueIndexConfiguration``, ``ArrayIndexConfiguration`` or ``FullTextIndexConfiguration``.
///
/// ```swift
/// try await tasks.createIndex(withName: "byDue", config: ValueIndexConfiguration(["due"]))
/// ```
public protocol IndexConfiguration: Sendable {}
