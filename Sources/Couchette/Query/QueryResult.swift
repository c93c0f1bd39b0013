import Foundation

/// One row of a query's results: its columns by index or by name.
///
/// Column names follow Couchbase Lite: the `AS` alias; else a property path's last component;
/// `META().id` gives `id`; `*` and `META()` give the FROM alias or collection name; other
/// expressions the lowest of `$1`, `$2`, … that no earlier column took; a repeated name gets
/// ` #2`, ` #3`, … (a repeated alias is an error).
///
/// A MISSING column (a property the document lacks) reads as nil and is left out of
/// ``toDictionary()`` and ``toJSON()``; JSON null reads as `NSNull()`. Dictionaries and arrays
/// come back as ``DictionaryObject`` and ``ArrayObject``. The typed getters (`string(at:)`,
/// `int(forKey:)`, `contains(key:)`, …) come from ``ArrayProtocol`` and ``DictionaryProtocol``,
/// with Couchbase Lite's coercions.
///
/// ```swift
/// for result in try await query.execute() {
///     print(result.string(forKey: "title") ?? "", result.int(at: 1))
/// }
/// ```
public struct QueryResult: DictionaryProtocol, ArrayProtocol, Sendable {
    let columns: ColumnNames
    /// Columns as the query produced them: containers read from documents stay in their stored
    /// encoding until asked for, so `SELECT *` rows cost no decoding until they are read.
    let values: [Datum?]

    /// Number of columns.
    public var count: Int { columns.names.count }
    /// Column names, in column order (MISSING columns included).
    public var keys: [String] { columns.names }

    /// The value of column `index`: nil for MISSING or out of range.
    public func value(at index: Int) -> Any? {
        guard values.indices.contains(index), let datum = values[index] else { return nil }
        switch datum {
        case .stored(let encoded):
            return ImmutableValues.wrap(encoded)
        case .array, .object:
            let value = datum.value
            guard let bytes = try? ValueEncoder.encode(value) else { return ValueConversion.plain(value) }
            return ImmutableValues.wrap(EncodedValue(bytes: bytes))
        default:
            return ValueConversion.plain(datum.value)
        }
    }

    // Typed getters read the stored values directly (no boxing into `Any`); other types get
    // Couchbase Lite's coercions as everywhere else.
    /// The column at `index` as a `String`, or nil when it is MISSING, not a string or out of range.
    public func string(at index: Int) -> String? {
        guard values.indices.contains(index) else { return nil }
        if case .string(let text)? = values[index] { return text }
        return Coercion.string(value(at: index))
    }

    /// The column at `index` as an `Int`: doubles truncated, 0 when MISSING, not a number or out of
    /// range.
    public func int(at index: Int) -> Int {
        guard values.indices.contains(index) else { return 0 }
        if case .int(let number)? = values[index] { return Int(truncatingIfNeeded: number) }
        return Coercion.int(value(at: index))
    }

    /// The column named `key` as a `String`, or nil when it is MISSING, not a string or not a column.
    public func string(forKey key: String) -> String? { columns.index[key].flatMap { string(at: $0) } }
    /// The column named `key` as an `Int`, 0 when it is MISSING, not a number or not a column.
    public func int(forKey key: String) -> Int { columns.index[key].map { int(at: $0) } ?? 0 }

    /// The value of the column named `key`: nil for MISSING or an unknown name.
    public func value(forKey key: String) -> Any? { columns.index[key].flatMap(value(at:)) }

    /// The column at `index` as an array, or nil when it is not one.
    public func array(at index: Int) -> ArrayObject? { value(at: index) as? ArrayObject }
    /// The column at `index` as a dictionary (such as a `SELECT *` document), or nil when it is not
    /// one.
    public func dictionary(at index: Int) -> DictionaryObject? { value(at: index) as? DictionaryObject }
    /// A fragment for path-style reads into the column at `index`: `result[0]["address"]["city"].string`.
    public subscript(index: Int) -> Fragment { Fragment(value(at: index)) }
    /// The column named `key` as an array, or nil when it is not one.
    public func array(forKey key: String) -> ArrayObject? { value(forKey: key) as? ArrayObject }
    /// The column named `key` as a dictionary, or nil when it is not one.
    public func dictionary(forKey key: String) -> DictionaryObject? { value(forKey: key) as? DictionaryObject }
    /// A fragment for path-style reads into the column named `key`: `result["tasks"]["title"].string`.
    public subscript(key: String) -> Fragment { Fragment(value(forKey: key)) }
    /// The column as a ``Blob`` when it holds a blob dictionary; nil otherwise.
    public func blob(at index: Int) -> Blob? { Coercion.blob(value(at: index)) }
    /// The column named `key` as a ``Blob`` when it holds a blob dictionary; nil otherwise.
    public func blob(forKey key: String) -> Blob? { Coercion.blob(value(forKey: key)) }

    /// Every column as plain Swift values, in column order; MISSING columns as `NSNull()` (an
    /// `[Any]` cannot hold nil).
    public func toArray() -> [Any] { values.map { $0?.plain ?? NSNull() } }

    /// The columns by name as plain Swift values; MISSING columns are left out.
    public func toDictionary() -> [String: Any] {
        // Every column present: map the values of the column index, a finished dictionary from
        // name to column number (the names are unique), so no name is hashed again per row.
        if columns.index.count == values.count, values.allSatisfy({ $0 != nil }) {
            return columns.index.mapValues { values[$0].unsafelyUnwrapped.plain }
        }
        // Sized up front: growing from empty rehashes on the second column (3.5% of iterating).
        var result = [String: Any](minimumCapacity: values.count)
        for (name, value) in zip(columns.names, values) {
            if let value { result[name] = value.plain }
        }
        return result
    }

    /// A compact JSON object with the columns in order, MISSING ones left out: integers without
    /// a decimal point, doubles in shortest round-trip form (a whole double below 10^15 without
    /// a fraction, as Couchbase Lite writes it: `AVG` of 1 and 3 is `2`), `/` not escaped.
    /// Documents' own ``Document/toJSON()`` keeps `2.0` a double, as CouchDB does.
    public func toJSON() -> String {
        var output = "{"
        var first = true
        for (name, value) in zip(columns.names, values) {
            guard let value else { continue }
            if !first { output += "," }
            first = false
            JSON.writeString(name, to: &output)
            output += ":"
            JSON.write(value.value, to: &output, doubles: .couchbaseLite)
        }
        return output + "}"
    }

    /// The row as a `Value` dictionary (MISSING columns left out).
    var dictionaryValue: [String: Value] {
        var result: [String: Value] = [:]
        for (name, value) in zip(columns.names, values) { result[name] = value?.value }
        return result
    }
}

/// Column names shared by every row of a result set, with a by-name index.
final class ColumnNames: Sendable {
    let names: [String]
    let index: [String: Int]

    init(_ names: [String]) {
        self.names = names
        index = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }
}
