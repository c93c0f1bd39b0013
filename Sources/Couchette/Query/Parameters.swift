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

    /// One parameter. A struct, not a tuple: an array of tuples is copied and destroyed through
    /// the runtime's generic tuple functions, element by element.
    struct Named: Sendable {
        var name: String
        var entry: Entry
    }

    /// The values in the order their names were first set. A query has a handful of parameters,
    /// and a prepared query is often given a new `Parameters` per execution: a short list searched
    /// by name costs one allocation and no hashing, where a dictionary cost both.
    typealias Entries = [Named]

    /// The values, behind a lock: setters may run on several threads at once.
    private let entries: Locked<Entries>

    /// No parameters yet; chain the setters to add some.
    public init() { entries = Locked([]) }

    init(entries: Entries) { self.entries = Locked(entries) }

    /// A copy with the same values.
    func copy() -> Parameters { Parameters(entries: entries.withLock { $0 }) }

    /// The values as they are now (what ``Query`` keeps when the parameters are assigned).
    var snapshot: Entries { entries.withLock { $0 } }

    /// Sets a parameter (the name without `$`).
    @discardableResult
    public func setValue(_ value: Any?, forName name: String) -> Parameters {
        let entry: Entry
        switch ValueConversion.convert(value) {
        case .value(let converted): entry = .value(converted)
        case .unsupported(let reason): entry = .unsupported(reason)
        }
        entries.withLock { Self.set(entry, forName: name, in: &$0) }
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
        entries.withLock { Self.set(.value(value), forName: name, in: &$0) }
        return self
    }

    private static func set(_ entry: Entry, forName name: String, in entries: inout Entries) {
        if let index = entries.firstIndex(where: { $0.name == name }) {
            entries[index].entry = entry
        } else {
            entries.append(Named(name: name, entry: entry))
        }
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
        guard case .value(let value)? = entries.withLock({ entries in entries.first { $0.name == name }?.entry }) else { return nil }
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
        var identity: [String: Identity] = [:]
        for named in entries.withLock({ $0 }) {
            let name = named.name
            switch named.entry {
            case .value(let value):
                guard let bytes = try? ValueEncoder.encode(value) else { identity[name] = .unsupported("\(value)"); continue }
                identity[name] = .encoded(bytes)
            case .unsupported(let reason): identity[name] = .unsupported(reason)
            }
        }
        return identity
    }

    /// The values for an execution; throws for a value that could not be stored.
    func resolved() throws -> [String: Datum] { try Self.resolve(entries.withLock { $0 }) }

    static func resolve(_ entries: Entries) throws -> [String: Datum] {
        var resolved: [String: Datum] = [:]
        for named in entries {
            switch named.entry {
            case .value(let value): resolved[named.name] = Datum(value)
            case .unsupported(let reason): throw unusable(reason)
            }
        }
        return resolved
    }

    /// Fills `slots` with the values of the parameters `names`, in that order (nil: not set): a
    /// query's values by slot (``QueryPlan/parameterOrder``), found once per assignment; the
    /// storage of `slots` is reused when it is not shared. Throws for any value that could not be
    /// stored, used or not, as ``resolve(_:)`` does.
    static func fill(_ slots: inout [Datum?], from entries: Entries, for names: [String]) throws(CouchetteError) {
        if slots.count == names.count {
            for index in slots.indices { slots[index] = nil }
        } else {
            slots = [Datum?](repeating: nil, count: names.count)
        }
        for named in entries {
            switch named.entry {
            case .value(let value):
                if let slot = names.firstIndex(of: named.name) { slots[slot] = Datum(value) }
            case .unsupported(let reason): throw unusable(reason)
            }
        }
    }

    private static func unusable(_ reason: String) -> CouchetteError {
        CouchetteError(.invalidParameter, "query parameter cannot be used: \(reason)")
    }
}
