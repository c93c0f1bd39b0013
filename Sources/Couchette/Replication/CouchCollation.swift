import Foundation

/// CouchDB's order of JSON values (its view collation, which Mango selectors compare with):
/// null < false < true < numbers < strings < arrays < objects.
///
/// Numbers compare by value whatever their kind (`1` equals `1.0`; integers beyond `Int64`
/// exactly); strings by the Unicode collation algorithm (ICU, as CouchDB), not by bytes; arrays
/// element by element, a shorter prefix first; objects key by key then value by value, in key
/// order, fewer keys first. See https://docs.couchdb.org/en/stable/ddocs/views/collation.html.
enum CouchCollation {
    private static let strings = Collation(unicode: true)

    /// Negative, zero or positive.
    static func compare(_ lhs: Value, _ rhs: Value) -> Int {
        let leftRank = rank(lhs), rightRank = rank(rhs)
        if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)):
            return strings.compare(a, b)
        case (.array(let a), .array(let b)):
            for (x, y) in zip(a, b) {
                let order = compare(x, y)
                if order != 0 { return order }
            }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        case (.dictionary(let a), .dictionary(let b)):
            let keysA = ValueEncoder.sortedKeys(a.keys), keysB = ValueEncoder.sortedKeys(b.keys)
            for (x, y) in zip(keysA, keysB) {
                let keyOrder = strings.compare(x, y)
                if keyOrder != 0 { return keyOrder }
                let order = compare(a[x]!, b[y]!)
                if order != 0 { return order }
            }
            return keysA.count == keysB.count ? 0 : (keysA.count < keysB.count ? -1 : 1)
        default:
            // null, booleans and numbers: the query layer's order is CouchDB's for these.
            return ValueOrder.compare(Datum(lhs), Datum(rhs))
        }
    }

    private static func rank(_ value: Value) -> Int {
        switch value {
        case .null: 0
        case .bool(let flag): flag ? 2 : 1
        case .int, .double, .largeInteger: 3
        case .string: 4
        case .array: 5
        case .dictionary: 6
        }
    }
}
