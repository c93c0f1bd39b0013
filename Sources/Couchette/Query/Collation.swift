import Foundation

/// How strings compare: `COLLATE NOCASE`, `COLLATE (UNICODE NODIAC)`, …
///
/// The default is binary (UTF-8 byte order, case- and accent-sensitive), as in Couchbase Lite.
/// `NOCASE` alone folds ASCII letters; with `UNICODE` it folds case in every script. `UNICODE`
/// compares with the Unicode collation algorithm (ICU, through Foundation), lowercase before
/// uppercase; `NODIAC` ignores accents.
struct Collation: Sendable, Equatable, CustomStringConvertible {
    var unicode = false
    var caseSensitive = true
    var diacriticSensitive = true
    var locale: String?

    static let binary = Collation()

    var isBinary: Bool { !unicode && caseSensitive && diacriticSensitive }

    var description: String {
        var words: [String] = [unicode ? "UNICODE" + (locale.map { ":" + $0 } ?? "") : "BINARY"]
        if !caseSensitive { words.append("NOCASE") }
        if !diacriticSensitive { words.append("NODIAC") }
        return words.joined(separator: " ")
    }

    /// Applies one word of a COLLATE clause; false when the word is not a collation.
    mutating func apply(_ word: String) -> Bool {
        let upper = word.uppercased()
        switch upper {
        case "UNICODE": unicode = true
        case "NOUNICODE", "BINARY": unicode = false
        case "CASE": caseSensitive = true
        case "NOCASE": caseSensitive = false
        case "DIAC": diacriticSensitive = true
        case "NODIAC": diacriticSensitive = false
        default:
            guard upper.hasPrefix("UNICODE:") else { return false }
            unicode = true
            locale = String(word.dropFirst("UNICODE:".count))
        }
        return true
    }

    /// Orders two strings: negative, zero or positive.
    func compare(_ lhs: String, _ rhs: String) -> Int {
        if isBinary { return Collation.binaryCompare(lhs, rhs) }
        if !unicode {
            // NOCASE without UNICODE folds ASCII only; NODIAC strips accents first.
            let left = diacriticSensitive ? lhs : Collation.stripDiacritics(lhs)
            let right = diacriticSensitive ? rhs : Collation.stripDiacritics(rhs)
            return caseSensitive
                ? Collation.binaryCompare(left, right)
                : Collation.binaryCompare(Collation.asciiLowercased(left), Collation.asciiLowercased(right))
        }
        var options: String.CompareOptions = []
        if !caseSensitive { options.insert(.caseInsensitive) }
        if !diacriticSensitive { options.insert(.diacriticInsensitive) }
        let result = lhs.compare(rhs, options: options, range: nil, locale: Locale(identifier: locale ?? "en_US"))
        switch result {
        case .orderedAscending: return -1
        case .orderedDescending: return 1
        case .orderedSame: return 0
        }
    }

    /// Prepares a string for LIKE matching or hashing under this collation.
    func fold(_ text: String) -> String {
        var result = text
        if !diacriticSensitive { result = Collation.stripDiacritics(result) }
        if !caseSensitive { result = unicode ? result.lowercased() : Collation.asciiLowercased(result) }
        return result
    }

    static func binaryCompare(_ lhs: String, _ rhs: String) -> Int {
        // UTF-8 byte order, compared in place (native strings are contiguous UTF-8).
        var left = lhs, right = rhs
        return left.withUTF8 { a in
            right.withUTF8 { b in
                let common = min(a.count, b.count)
                if common > 0, let x = a.baseAddress, let y = b.baseAddress {
                    let order = memcmp(x, y, common)
                    if order != 0 { return order < 0 ? -1 : 1 }
                }
                return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
            }
        }
    }

    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }

    static func stripDiacritics(_ text: String) -> String {
        text.folding(options: .diacriticInsensitive, locale: nil)
    }
}

/// N1QL's total order over values: MISSING < null < false < true < numbers < strings < arrays <
/// objects. Numbers compare numerically whatever their representation; arrays element by element;
/// objects by their sorted keys, then by the values of those keys.
enum ValueOrder {
    static func compare(_ lhs: Datum?, _ rhs: Datum?, _ collation: Collation = .binary) -> Int {
        guard let lhs else { return rhs == nil ? 0 : -1 }
        guard let rhs else { return 1 }
        return compare(lhs, rhs, collation)
    }

    static func compare(_ lhs: Datum, _ rhs: Datum, _ collation: Collation = .binary) -> Int {
        let leftKind = lhs.kind, rightKind = rhs.kind
        if leftKind != rightKind { return leftKind < rightKind ? -1 : 1 }
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case (.bool(let a), .bool(let b)): return a == b ? 0 : (a ? 1 : -1)
        case (.int(let a), .int(let b)): return a == b ? 0 : (a < b ? -1 : 1)
        case (.string(let a), .string(let b)): return collation.compare(a, b)
        case (.int(let a), .double(let b)): return compare(a, b)
        case (.double(let a), .int(let b)): return -compare(b, a)
        // A large integer lies beyond every Int64, on the side of its sign.
        case (.largeInteger(let a), .int): return a.isNegative ? -1 : 1
        case (.int, .largeInteger(let b)): return b.isNegative ? 1 : -1
        case (.largeInteger(let a), .largeInteger(let b)): return a.compare(b)
        case (.largeInteger(let a), .double(let b)): return a.compare(b)
        case (.double(let a), .largeInteger(let b)): return -b.compare(a)
        default: break
        }
        if let a = lhs.number, let b = rhs.number { return a == b ? 0 : (a < b ? -1 : 1) }
        if leftKind == .array, let a = lhs.elements, let b = rhs.elements {
            for (x, y) in zip(a, b) {
                let order = compare(x, y, collation)
                if order != 0 { return order }
            }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        }
        if let a = lhs.entries, let b = rhs.entries {
            let keysA = ValueEncoder.sortedKeys(a.keys), keysB = ValueEncoder.sortedKeys(b.keys)
            for (x, y) in zip(keysA, keysB) {
                let order = Collation.binaryCompare(x, y)
                if order != 0 { return order }
            }
            if keysA.count != keysB.count { return keysA.count < keysB.count ? -1 : 1 }
            for key in keysA {
                let order = compare(a[key]!, b[key]!, collation)
                if order != 0 { return order }
            }
            return 0
        }
        return 0
    }
}

extension ValueOrder {
    /// An integer against a Double, exactly: converting the integer to a Double would make
    /// 2^53 + 1 equal to 2^53 (as a Double) but greater than 2^53 (as an integer), an order that
    /// is not transitive, so sorts and index scans could disagree.
    static func compare(_ a: Int64, _ b: Double) -> Int {
        if b.isNaN { return -1 }
        if b >= 9_223_372_036_854_775_808.0 { return -1 }
        if b < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = b.rounded(.down)
        let floor = Int64(whole)
        if a != floor { return a < floor ? -1 : 1 }
        return whole == b ? 0 : -1
    }
}

/// A hashable form of a value (MISSING included) for DISTINCT, GROUP BY and hash joins: two keys
/// are equal exactly when ``ValueOrder`` says the values are equal (so `1` and `1.0` are equal).
struct HashKey: Hashable, Sendable {
    let value: Value?

    init(_ datum: Datum?) {
        value = datum.map { HashKey.canonical($0.value) }
    }

    private static func canonical(_ value: Value) -> Value {
        switch value {
        case .double(let number):
            if number == number.rounded(), let exact = Int64(exactly: number) { return .int(exact) }
            if let exact = LargeInteger(exactly: number) { return .largeInteger(exact) }
            return value
        case .array(let elements): return .array(elements.map(canonical))
        case .dictionary(let entries): return .dictionary(entries.mapValues(canonical))
        default: return value
        }
    }

    func hash(into hasher: inout Hasher) {
        if let value { HashKey.hash(value, into: &hasher) } else { hasher.combine(-1) }
    }

    private static func hash(_ value: Value, into hasher: inout Hasher) {
        switch value {
        case .null: hasher.combine(0)
        case .bool(let flag): hasher.combine(1); hasher.combine(flag)
        case .int(let number): hasher.combine(2); hasher.combine(number)
        case .double(let number): hasher.combine(3); hasher.combine(number)
        case .largeInteger(let number): hasher.combine(7); hasher.combine(number)
        case .string(let text): hasher.combine(4); hasher.combine(text)
        case .array(let elements):
            hasher.combine(5); hasher.combine(elements.count)
            for element in elements { hash(element, into: &hasher) }
        case .dictionary(let entries):
            hasher.combine(6); hasher.combine(entries.count)
            for key in ValueEncoder.sortedKeys(entries.keys) {
                hasher.combine(key)
                hash(entries[key]!, into: &hasher)
            }
        }
    }
}
