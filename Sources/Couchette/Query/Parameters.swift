import Foundation

/// Values for a query's `$name` parameters.
///
/// Setters accept anything a document can store (strings, numbers, booleans, dates as ISO-8601
/// strings, arrays, dictionaries, nil/`NSNull` for null). A value that cannot be stored is
/// reported by the next ``Query/execute()`` with `.invalidParameter` naming the parameter.
///
/// ```swift
/// let query = try db.createQuery("SELECT title FROM tasks WHERE done = $done")
/// query.parameters = Parameters().setBoolean(false, forName: "done")
/// ```
///
/// Thread-safe; ``Query`` keeps its own copy when assigned, so later changes to this object do
/// not affect the query until it is assigned again.
public final class Parameters: Sendable {
    enum Entry: Sendable {
        case value(Value)
        case unsupported(String)
    }

    private let entries: Locked<[String: Entry]>

    /// No parameters yet; chain the setters to add some.
    public init() { entries = Locked([:]) }

    init(entries: [String: Entry]) { self.entries = Locked(entries) }

    /// A copy with the same values.
    func copy() -> Parameters { Parameters(entries: entries.withLock { $0 }) }

    /// A copy with the same values, and those values for an execution (``resolved()``) from the
    /// same read of the entries.
    func copyResolved() -> (copy: Parameters, resolved: Result<[String: Datum], any Error>) {
        let current = entries.withLock { $0 }
        return (Parameters(entries: current), Result { try Self.resolve(current) })
    }

    /// Sets a parameter (the name without `$`).
    @discardableResult
    public func setValue(_ value: Any?, forName name: String) -> Parameters {
        let entry: Entry
        switch ValueConversion.convert(value) {
        case .value(let converted): entry = .value(converted)
        case .unsupported(let reason): entry = .unsupported(reason)
        }
        entries.withLock { $0[name] = entry }
        return self
    }

    // The typed setters store their `Value` directly: the same value `setValue` converts them to,
    // without boxing into `Any` and casting back (most of the cost of binding a parameter).
    /// Sets a string parameter; nil binds JSON null.
    @discardableResult public func setString(_ value: String?, forName name: String) -> Parameters {
        set(value.map(Value.string) ?? .null, forName: name)
    }
    /// Sets an integer parameter.
    @discardableResult public func setInt(_ value: Int, forName name: String) -> Parameters { set(.int(Int64(value)), forName: name) }
    /// Sets a 64-bit integer parameter.
    @discardableResult public func setInt64(_ value: Int64, forName name: String) -> Parameters { set(.int(value), forName: name) }
    /// Sets a double parameter, kept as a double as a document property would be.
    @discardableResult public func setDouble(_ value: Double, forName name: String) -> Parameters { set(.double(value), forName: name) }
    /// Sets a float parameter, widened to a double.
    @discardableResult public func setFloat(_ value: Float, forName name: String) -> Parameters {
        set(.double(Double(value)), forName: name)
    }
    /// Sets a boolean parameter.
    @discardableResult public func setBoolean(_ value: Bool, forName name: String) -> Parameters { set(.bool(value), forName: name) }

    private func set(_ value: Value, forName name: String) -> Parameters {
        entries.withLock { $0[name] = .value(value) }
        return self
    }
    /// Sets a date parameter as its ISO-8601 string, which compares with dates stored by
    /// `setDate(_:forKey:)`; nil binds JSON null.
    @discardableResult public func setDate(_ value: Date?, forName name: String) -> Parameters { setValue(value, forName: name) }
    /// Sets an array parameter (plain Swift values, converted as ``setValue(_:forName:)`` does); nil
    /// binds JSON null.
    @discardableResult public func setArray(_ value: [Any]?, forName name: String) -> Parameters { setValue(value, forName: name) }
    /// Sets a dictionary parameter (plain Swift values, converted as ``setValue(_:forName:)`` does);
    /// nil binds JSON null.
    @discardableResult public func setDictionary(_ value: [String: Any]?, forName name: String) -> Parameters {
        setValue(value, forName: name)
    }
    /// Sets a saved blob, as its blob dictionary (compare it with a blob property:
    /// `WHERE image = $image`). An unsaved blob is reported by the next execution.
    @discardableResult public func setBlob(_ value: Blob?, forName name: String) -> Parameters { setValue(value, forName: name) }

    /// The value set for `name` (plain Swift values: `NSNull` for null), or nil when unset.
    public func value(forName name: String) -> Any? {
        guard case .value(let value)? = entries.withLock({ $0[name] }) else { return nil }
        return ValueConversion.plain(value)
    }

    /// What identifies one value for sharing a live query's evaluation: its binary encoding
    /// (exact: `1` and `1.0` differ, dictionaries compare whatever their key order).
    enum Identity: Hashable, Sendable {
        case encoded([UInt8])
        case unsupported(String)
    }

    /// The parameters as a hashable value: equal identities give equal query results.
    var identity: [String: Identity] {
        entries.withLock { $0 }.mapValues { entry in
            switch entry {
            case .value(let value):
                guard let bytes = try? ValueEncoder.encode(value) else { return .unsupported("\(value)") }
                return .encoded(bytes)
            case .unsupported(let reason): return .unsupported(reason)
            }
        }
    }

    /// The values for an execution; throws for a value that could not be stored.
    func resolved() throws -> [String: Datum] { try Self.resolve(entries.withLock { $0 }) }

    private static func resolve(_ entries: [String: Entry]) throws -> [String: Datum] {
        try entries.mapValues { entry in
            switch entry {
            case .value(let value): return Datum(value)
            case .unsupported(let reason): throw CouchetteError(.invalidParameter, "query parameter cannot be used: \(reason)")
            }
        }
    }
}
