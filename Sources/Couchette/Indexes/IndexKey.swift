#if canImport(Glibc)
import Glibc
#endif

/// The order-preserving byte encoding of index keys: `memcmp` order of two encodings agrees with
/// ``ValueOrder`` (binary collation) of the values, so an LMDB range scan finds what a full scan
/// filtered by a comparison would.
///
/// Each value starts with a type byte in N1QL order, so values of different types sort by type:
///
/// | byte   | value   | then                                                                |
/// |--------|---------|---------------------------------------------------------------------|
/// | `0x01` | MISSING |                                                                     |
/// | `0x02` | null    |                                                                     |
/// | `0x03` | false   |                                                                     |
/// | `0x04` | true    |                                                                     |
/// | `0x05` | number  | 8 bytes: the value as a Double, sign-flipped big-endian             |
/// | `0x06` | string  | UTF-8 with `00` written `00 FF`, ended by `00 00`                   |
/// | `0x07` | array   | the elements, then `00`                                             |
/// | `0x08` | object  | the keys (as strings) in sorted order, `00`, then the values        |
///
/// Every encoding is self-delimiting (no encoding is a prefix of another), so a key made of
/// several values in a row sorts like the tuple, and all keys starting with one value's encoding
/// are exactly those whose first value equals it.
///
/// Numbers are encoded as Doubles: integers beyond 2^53 may share an encoding with a neighbour,
/// as they do in ``ValueOrder`` when compared with a Double. The encoding is therefore monotone
/// (a < b implies enc(a) <= enc(b)) but not always strict, so index scans use inclusive bounds
/// and the query's WHERE is always re-applied to the documents found.
enum IndexKey {
    static let missing: UInt8 = 0x01, null: UInt8 = 0x02, falseValue: UInt8 = 0x03, trueValue: UInt8 = 0x04
    static let number: UInt8 = 0x05, string: UInt8 = 0x06, array: UInt8 = 0x07, object: UInt8 = 0x08

    /// Longest encoded tuple stored in an entry key; longer ones are cut (see ``truncated(_:)``).
    static let maximumLength = 500

    static func encode(_ value: Datum?) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return bytes
    }

    static func append(_ value: Datum?, to bytes: inout [UInt8]) {
        guard let value else { bytes.append(missing); return }
        switch value {
        case .null: bytes.append(null)
        case .bool(let flag): bytes.append(flag ? trueValue : falseValue)
        case .int(let integer): appendNumber(Double(integer), to: &bytes)
        case .double(let double): appendNumber(double, to: &bytes)
        case .largeInteger(let large): appendNumber(large.double, to: &bytes)
        case .string(let text): appendString(text, to: &bytes)
        case .stored, .array, .object:
            if let elements = value.elements {
                bytes.append(array)
                for element in elements { append(element, to: &bytes) }
                bytes.append(0)
            } else if let entries = value.entries {
                bytes.append(object)
                let keys = ValueEncoder.sortedKeys(entries.keys)
                for key in keys { appendString(key, to: &bytes) }
                bytes.append(0)
                for key in keys { append(entries[key], to: &bytes) }
            } else {
                bytes.append(null)
            }
        }
    }

    private static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        bytes.append(number)
        let normalized = value == 0 ? 0 : value  // -0.0 equals 0.0
        var bits = normalized.bitPattern
        bits = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        withUnsafeBytes(of: bits.bigEndian) { bytes.append(contentsOf: $0) }
    }

    private static func appendString(_ text: String, to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + text.utf8.count + 3)  // one allocation for a key probed per query
        bytes.append(string)
        appendEscaped(text, to: &bytes)
        bytes.append(0)
        bytes.append(0)
    }

    /// The string's UTF-8 bytes with `00` escaped, without the type byte or terminator: every
    /// string that starts with `text` encodes to `0x06` + this + more.
    static func appendEscaped(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            // Searched as a buffer: `String.UTF8View.contains` goes byte by byte through the view.
            guard utf8.contains(0) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                bytes.append(byte)
                if byte == 0 { bytes.append(0xFF) }
            }
        }
    }

    /// Calls `body` with `prefix` followed by the encoding of the string `text` — the bytes of
    /// `prefix + encode(.string(text))` — built in one buffer on the stack: what a prepared
    /// lookup by a string probes the index with at every execution, which then allocates no key.
    static func withStringKey<R>(
        prefix: [UInt8], _ text: String, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        var text = text
        return try text.withUTF8 { utf8 in
            // At most every byte escaped, plus the type byte and the terminator.
            let capacity = prefix.count + 2 * utf8.count + 3
            return try withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { key in
                var count = prefix.count
                prefix.withUnsafeBytes { key.copyMemory(from: $0) }
                key[count] = string
                count += 1
                if let start = utf8.baseAddress, memchr(start, 0, utf8.count) == nil {
                    UnsafeMutableRawBufferPointer(rebasing: key[count...]).copyMemory(from: UnsafeRawBufferPointer(utf8))
                    count += utf8.count
                } else {
                    for byte in utf8 {
                        key[count] = byte
                        count += 1
                        if byte == 0 {
                            key[count] = 0xFF
                            count += 1
                        }
                    }
                }
                key[count] = 0
                key[count + 1] = 0
                return try body(UnsafeRawBufferPointer(rebasing: key[..<(count + 2)]))
            }
        }
    }

    /// Cuts a key to ``maximumLength``. Cutting every key at one length keeps their order
    /// (non-strictly), so scans over cut keys still find a superset of the matches.
    static func truncated(_ bytes: [UInt8]) -> [UInt8] {
        bytes.count > maximumLength ? Array(bytes[..<maximumLength]) : bytes
    }

    /// True when the first `values` values are all there (not cut) and equal encodings mean
    /// equal values for them: no number beyond 2^53 (where Doubles stand for several integers)
    /// and no array or object (which may hold such numbers).
    static func isExact(_ bytes: [UInt8], values: Int) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            for _ in 0..<values {
                guard offset < buffer.count, let next = end(of: buffer, at: offset) else { return false }
                switch buffer[offset] {
                case number:
                    var bits: UInt64 = 0
                    for index in offset + 1..<next { bits = bits << 8 | UInt64(buffer[index]) }
                    bits = bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits
                    guard abs(Double(bitPattern: bits)) < 9_007_199_254_740_992 else { return false }
                case array, object: return false
                default: break
                }
                offset = next
            }
            return true
        }
    }

    /// The value encoded at `offset` of `bytes`, when the encoding gives back exactly the value
    /// a document read gives (``Datum``): `.some(nil)` for MISSING, null, booleans and strings.
    /// Nil when it cannot: a number (an integer and the equal double share an encoding), an array
    /// or object (which hold numbers), or bytes that end first (a cut key).
    static func exactScalar(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Datum?? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] {
        case missing: return .some(nil)
        case null: return .some(.null)
        case falseValue: return .some(.bool(false))
        case trueValue: return .some(.bool(true))
        case string:
            guard let end = end(of: bytes, at: offset) else { return nil }
            let text = UnsafeRawBufferPointer(rebasing: bytes[(offset + 1)..<(end - 2)])
            // `00` is stored `00 FF`: only such strings need a copy to drop the escapes.
            guard let start = text.baseAddress, memchr(start, 0, text.count) != nil else {
                return .some(.string(String(decoding: text, as: UTF8.self)))
            }
            var utf8: [UInt8] = []
            utf8.reserveCapacity(text.count)
            var position = 0
            while position < text.count {
                utf8.append(text[position])
                position += text[position] == 0 ? 2 : 1
            }
            return .some(.string(String(decoding: utf8, as: UTF8.self)))
        default: return nil
        }
    }

    /// The offset just past the value encoded at `offset`, or nil when the bytes end first (a
    /// truncated key).
    static func end(of bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] {
        case missing, null, falseValue, trueValue: return offset + 1
        case number: return offset + 9 <= bytes.count ? offset + 9 : nil
        case string:
            // The next `00` found by `memchr` (strings are scanned per entry of every index walk):
            // `00 00` ends the string, `00 FF` is an escaped NUL inside it.
            guard let base = bytes.baseAddress else { return nil }
            var position = offset + 1
            while position + 1 < bytes.count {
                guard let found = memchr(base + position, 0, bytes.count - 1 - position) else { return nil }
                position = base.distance(to: UnsafeRawPointer(found))
                if bytes[position + 1] == 0 { return position + 2 }
                position += 2
            }
            return nil
        case array:
            var position = offset + 1
            while position < bytes.count {
                if bytes[position] == 0 { return position + 1 }
                guard let next = end(of: bytes, at: position) else { return nil }
                position = next
            }
            return nil
        case object:
            var position = offset + 1, keys = 0
            while position < bytes.count, bytes[position] != 0 {
                guard let next = end(of: bytes, at: position) else { return nil }
                position = next
                keys += 1
            }
            guard position < bytes.count else { return nil }
            position += 1
            for _ in 0..<keys {
                guard let next = end(of: bytes, at: position) else { return nil }
                position = next
            }
            return position
        default: return nil
        }
    }
}
