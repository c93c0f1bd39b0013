import Foundation

/// An integer outside `Int64`'s range, kept exactly as its decimal digits.
///
/// CouchDB (Erlang) keeps integers of any size, so a replicated `123456789012345678901234567890`
/// must come back with all its digits. The text is canonical — an optional `-`, then digits
/// without leading zeros — so equal integers have equal text (the binary format and revision
/// digests rely on it), and a value that fits `Int64` is never a `LargeInteger`.
struct LargeInteger: Sendable, Hashable, CustomStringConvertible {
    /// The canonical decimal text, for example `-98765432109876543210`.
    let text: String

    /// Accepts only canonical text of an integer that does not fit `Int64`.
    init?(text: String) {
        guard LargeInteger.isCanonical(text), Int64(text) == nil else { return nil }
        self.text = text
    }

    /// The exact integer value of a whole `Double` outside `Int64`'s range (every finite Double of
    /// magnitude 2^63 or more is whole); nil for anything else.
    init?(exactly number: Double) {
        guard number.isFinite, number == number.rounded(), Int64(exactly: number) == nil else { return nil }
        // |number| = significand × 2^exponent with a 53-bit integer significand: double it in decimal.
        let magnitude = number.magnitude
        let exponent = Int(magnitude.exponent) - Double.significandBitCount
        var digits = LargeInteger.decimalDigits(of: UInt64(magnitude.significandBitPattern | (1 << UInt64(Double.significandBitCount))))
        for _ in 0..<max(0, exponent) { LargeInteger.double(&digits) }
        let body = String(decoding: digits.reversed().map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
        self.text = number < 0 ? "-" + body : body
    }

    var isNegative: Bool { text.utf8.first == UInt8(ascii: "-") }

    /// The nearest `Double` (what arithmetic and the typed getters use).
    var double: Double { Double(text) ?? (isNegative ? -.greatestFiniteMagnitude : .greatestFiniteMagnitude) }

    /// `Int64.min` or `Int64.max`, whichever is on this integer's side (Couchbase Lite clamps).
    var clamped: Int64 { isNegative ? .min : .max }

    var description: String { text }

    /// `-self`, exactly: an `Int64` for `9223372036854775808` (whose negation is `Int64.min`).
    var negated: Value {
        let text = isNegative ? String(self.text.dropFirst()) : "-" + self.text
        return Int64(text).map(Value.int) ?? LargeInteger(text: text).map(Value.largeInteger) ?? .double(-double)
    }

    /// Exact order: negative, zero or positive.
    func compare(_ other: LargeInteger) -> Int {
        if isNegative != other.isNegative { return isNegative ? -1 : 1 }
        let left = Array(text.utf8), right = Array(other.text.utf8)
        var order =
            left.count == right.count
            ? (left == right ? 0 : (left.lexicographicallyPrecedes(right) ? -1 : 1))
            : (left.count < right.count ? -1 : 1)
        if isNegative { order = -order }
        return order
    }

    /// Exact order against a `Double`: rounding to the nearest Double is monotonic, so only
    /// integers that round to `number` itself need the exact comparison.
    func compare(_ number: Double) -> Int {
        let near = double
        if near != number { return near < number ? -1 : 1 }
        guard let exact = LargeInteger(exactly: number) else { return 0 }
        return compare(exact)
    }

    /// The exact value as a Foundation `Decimal`, when it has at most 38 significant digits.
    var decimal: Decimal? {
        guard let value = Decimal(string: text), value.description == text else { return nil }
        return value
    }

    // MARK: - Digits

    /// `-`? then `0` or a non-zero digit followed by digits.
    static func isCanonical(_ text: String) -> Bool {
        var digits = Substring(text).utf8
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        guard let first = digits.first, first != UInt8(ascii: "0") || digits.count == 1 else { return false }
        return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Little-endian decimal digits (0...9) of `value`.
    private static func decimalDigits(of value: UInt64) -> [UInt8] {
        var digits: [UInt8] = []
        var rest = value
        repeat {
            digits.append(UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        return digits
    }

    private static func double(_ digits: inout [UInt8]) {
        var carry: UInt8 = 0
        for index in digits.indices {
            let doubled = digits[index] * 2 + carry
            digits[index] = doubled % 10
            carry = doubled / 10
        }
        if carry > 0 { digits.append(carry) }
    }
}
