import Foundation

/// Bridges between Swift's `Any` world (what `setValue(_:forKey:)` and `toDictionary()` speak) and
/// ``Value``.
enum ValueConversion {
    /// The result of converting a caller's value: a storable value, or the reason it is not.
    enum Converted {
        case value(Value)
        case unsupported(String)
    }

    /// Converts a Swift value. `nil` and `NSNull` become null; `Date` becomes an ISO-8601 string
    /// (years 0000–9999 only); a ``ValueConvertible`` (Couchette's own containers) converts
    /// itself. Unsupported types and arrays or dictionaries nested deeper than
    /// ``ValueEncoder/maximumDepth`` (which could not be stored, and would exhaust the stack
    /// converting) are reported, not trapped.
    static func convert(_ any: Any?, depth: Int = 0) -> Converted {
        guard let any else { return .value(.null) }
        guard depth <= ValueEncoder.maximumDepth else {
            return .unsupported("nested deeper than \(ValueEncoder.maximumDepth) levels")
        }
        // An NSNumber (what JSONSerialization returns) is matched by its class first: the Swift
        // casts below would bridge NSNumber(0) and NSNumber(1) to Bool, and 2.0 to Int.
        if type(of: any) is NSNumber.Type, let number = any as? NSNumber { return .value(convert(number)) }
        if let plain = exactPlain(any) { return .value(plain) }
        switch any {
        case let value as Value: return .value(value)
        case let text as String: return .value(.string(text))
        case let text as Substring: return .value(.string(String(text)))
        case let flag as Bool: return .value(.bool(flag))
        case let number as Int: return .value(.int(Int64(number)))
        case let number as Int64: return .value(.int(number))
        case let number as Int32: return .value(.int(Int64(number)))
        case let number as Int16: return .value(.int(Int64(number)))
        case let number as Int8: return .value(.int(Int64(number)))
        case let number as UInt8: return .value(.int(Int64(number)))
        case let number as UInt16: return .value(.int(Int64(number)))
        case let number as UInt32: return .value(.int(Int64(number)))
        case let number as UInt: return .value(integer(UInt64(number)))
        case let number as UInt64: return .value(integer(number))
        case let number as Double: return .value(.double(number))
        case let number as Float: return .value(.double(Double(number)))
        case let number as Decimal: return .value(self.number(number))
        case let date as Date:
            guard ISO8601.canFormat(date) else {
                return .unsupported("date \(date.timeIntervalSince1970) s after 1970 is outside the years 0000...9999")
            }
            return .value(.string(ISO8601.string(from: date)))
        case is NSNull: return .value(.null)
        case let number as NSNumber: return .value(convert(number))
        case let text as NSString: return .value(.string(text as String))
        case let container as any ValueConvertible: return container.toValue()
        case let array as [Any?]:
            var elements: [Value] = []
            elements.reserveCapacity(array.count)
            for (index, element) in array.enumerated() {
                switch convert(element, depth: depth + 1) {
                case .value(let value): elements.append(value)
                case .unsupported(let reason): return .unsupported("[\(index)]: \(reason)")
                }
            }
            return .value(.array(elements))
        case let dictionary as [String: Any?]:
            var entries: [String: Value] = [:]
            for (key, element) in dictionary {
                switch convert(element, depth: depth + 1) {
                case .value(let value): entries[key] = value
                case .unsupported(let reason): return .unsupported("\(key): \(reason)")
                }
            }
            return .value(.dictionary(entries))
        default:
            return .unsupported("values of type \(type(of: any)) cannot be stored")
        }
    }

    /// The most common plain types, recognized by their exact type before any cast: a failed
    /// `as` cast of a Swift array (the `String` case below, say) bridges it to a Foundation
    /// array to try, which costs more than converting it. Nil for anything else.
    static func exactPlain(_ any: Any) -> Value? {
        let kind = ObjectIdentifier(type(of: any))
        if kind == ObjectIdentifier(String.self), let text = any as? String { return .string(text) }
        if kind == ObjectIdentifier(Int.self), let number = any as? Int { return .int(Int64(number)) }
        if kind == ObjectIdentifier(Bool.self), let flag = any as? Bool { return .bool(flag) }
        if kind == ObjectIdentifier(Double.self), let number = any as? Double { return .double(number) }
        if kind == ObjectIdentifier([String].self), let texts = any as? [String] { return .array(texts.map(Value.string)) }
        if kind == ObjectIdentifier([Int].self), let numbers = any as? [Int] { return .array(numbers.map { .int(Int64($0)) }) }
        return nil
    }

    private static func convert(_ number: NSNumber) -> Value {
        switch String(cString: number.objCType) {
        case "c", "B": return .bool(number.boolValue)
        case "f", "d": return .double(number.doubleValue)
        case "Q", "L", "I", "S": return integer(number.uint64Value)
        default: return .int(number.int64Value)
        }
    }

    private static func integer(_ number: UInt64) -> Value {
        Int64(exactly: number).map(Value.int) ?? LargeInteger(text: String(number)).map(Value.largeInteger) ?? .null
    }

    /// A whole `Decimal` is an integer (large ones exactly); any other is its nearest double (a
    /// NaN is refused later, like any NaN).
    static func number(_ number: Decimal) -> Value {
        let text = number.description
        if let exact = Int64(text) { return .int(exact) }
        if let large = LargeInteger(text: text) { return .largeInteger(large) }
        return .double(NSDecimalNumber(decimal: number).doubleValue)
    }

    /// The plain Swift form of a value: `NSNull` for null, `Int` for integers, `[Any]` and
    /// `[String: Any]` for containers. An integer beyond `Int64` is an exact `Decimal` when it
    /// has at most 38 significant digits, else its nearest `Double`.
    static func plain(_ value: Value) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .int(let number): return Int(number)
        case .double(let number): return number
        case .largeInteger(let number): return plain(number)
        case .string(let text): return text
        case .array(let elements): return elements.map(plain)
        case .dictionary(let entries): return entries.mapValues(plain)
        }
    }

    /// Like ``plain(_:)`` but straight from encoded bytes, with nothing decoded twice.
    static func plain(_ encoded: EncodedValue) -> Any { encoded.withBorrowed(plain) }

    /// The `[String: Any]` form of an encoded dictionary (empty for anything else).
    static func plainDictionary(_ encoded: EncodedValue) -> [String: Any] { encoded.withBorrowed(plainDictionary) }

    /// The `[Any]` form of an encoded array (empty for anything else).
    static func plainArray(_ encoded: EncodedValue) -> [Any] { encoded.withBorrowed(plainArray) }

    /// The plain form of a borrowed value: the whole walk stays over one buffer (no child retains
    /// or re-checks the array it came from).
    static func plain(_ encoded: BorrowedValue) -> Any {
        let caches = Caches()
        return plain(encoded, caches, hint: caches.shapes?.rootHint)
    }

    /// The `[String: Any]` form of a borrowed dictionary (empty for anything else).
    static func plainDictionary(_ encoded: BorrowedValue) -> [String: Any] {
        let caches = Caches()
        return plainDictionary(encoded, caches, hint: caches.shapes?.rootHint)
    }

    /// The `[Any]` form of a borrowed array (empty for anything else).
    static func plainArray(_ encoded: BorrowedValue) -> [Any] {
        let caches = Caches()
        return plainArray(encoded, caches, hint: caches.shapes?.rootHint)
    }

    /// What every step of one conversion shares: this thread's caches, looked up once at the top
    /// (nil when the thread has none: every key is hashed, every string made). The string table
    /// travels beside the shapes so that reading it retains nothing.
    private struct Caches {
        let shapes: DictionaryShapes?
        let strings: ShortStrings?

        init() {
            shapes = DictionaryShapes.current
            strings = shapes?.strings
        }
    }

    /// One step of the walk: `hint` is where the caller keeps the fingerprint of the shape this
    /// value had last time (a dictionary's, or the dictionaries' of an array), updated when it
    /// finds one.
    private static func plain(_ encoded: BorrowedValue, _ caches: Caches, hint: UnsafeMutablePointer<UInt64>?) -> Any {
        switch encoded.tag {
        case ValueTag.array, ValueTag.narrowArray: return plainArray(encoded, caches, hint: hint)
        case ValueTag.dictionary, ValueTag.narrowDictionary: return plainDictionary(encoded, caches, hint: hint)
        case ValueTag.string:
            guard let strings = caches.strings, let range = encoded.lengthPrefixed(at: encoded.offset + 1),
                range.count <= ShortStrings.maximumBytes
            else { return encoded.string ?? NSNull() }
            return strings.string(range, in: encoded.buffer)
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64: return encoded.integer.map { Int($0) } ?? NSNull()
        case ValueTag.double: return encoded.double ?? NSNull()
        case ValueTag.largeInteger: return encoded.largeInteger.map(plain) ?? NSNull()
        case ValueTag.trueValue: return true
        case ValueTag.falseValue: return false
        default: return NSNull()
        }
    }

    /// A dictionary whose key set this thread converted before (``DictionaryShapes``) maps the
    /// values of that finished dictionary: no key is created or hashed again. The shape the hint
    /// names is compared key by key during the walk that collects the entries; only when it is
    /// not this dictionary's is a fingerprint computed to look for another.
    private static func plainDictionary(
        _ encoded: BorrowedValue, _ caches: Caches, hint: UnsafeMutablePointer<UInt64>?
    ) -> [String: Any] {
        guard let layout = encoded.layout, layout.isDictionary, layout.count > 0 else { return [:] }
        guard let shapes = caches.shapes, let hint, layout.count <= DictionaryShapes.maximumKeys,
            encoded.depth < DictionaryShapes.maximumDepth,
            encoded.buffer.count <= Int(Int32.max)
        else { return hashedDictionary(encoded, caches) }
        let buffer = encoded.buffer
        return withUnsafeTemporaryAllocation(of: DictionaryShapes.Entry.self, capacity: layout.count) { table in
            let base = table.baseAddress!
            // The hinted shape's keys compared during the walk; only the values' offsets kept.
            if let hinted = shapes.hinted(hint.pointee), encoded.valueOffsets(matching: hinted, in: layout, into: base) {
                return map(hinted, table, in: buffer, depth: encoded.depth + 1, caches)
            }
            var found = 0
            encoded.forEachEntryRange(in: layout) { key, value in
                (base + found).initialize(
                    to: DictionaryShapes.Entry(
                        keyStart: Int32(truncatingIfNeeded: key.lowerBound), keyCount: Int32(truncatingIfNeeded: key.count),
                        value: Int32(truncatingIfNeeded: value.offset)))
                found += 1
            }
            let entries = UnsafeMutableBufferPointer(rebasing: table[..<found])
            guard let kept = shapes.lookUp(entries, in: buffer, hint: hint) else {
                return hashedDictionary(entries, in: buffer, depth: encoded.depth + 1, caches)
            }
            return map(kept, entries, in: buffer, depth: encoded.depth + 1, caches)
        }
    }

    /// The values at the offsets of `entries` (in the order of `shape`'s keys) under those keys.
    private static func map(
        _ shape: DictionaryShapes.Shape, _ entries: UnsafeMutableBufferPointer<DictionaryShapes.Entry>, in buffer: UnsafeRawBufferPointer,
        depth: Int, _ caches: Caches
    ) -> [String: Any] {
        shape.positions.mapValues { entry in
            plain(BorrowedValue(buffer: buffer, offset: Int(entries[entry].value), depth: depth), caches, hint: shape.childHints + entry)
        }
    }

    /// The conversion that creates and hashes every key.
    private static func hashedDictionary(_ encoded: BorrowedValue, _ caches: Caches) -> [String: Any] {
        // `init(minimumCapacity:)` is specialized here; `reserveCapacity` on an empty dictionary
        // instantiates the generic storage's metadata at run time (5% of a point read).
        var result = [String: Any](minimumCapacity: encoded.count)
        let hint = caches.shapes?.scratchHint
        encoded.forEachEntry { key, value in result[key] = plain(value, caches, hint: hint) }
        return result
    }

    /// ``hashedDictionary(_:_:)`` over entries already collected.
    private static func hashedDictionary(
        _ entries: UnsafeMutableBufferPointer<DictionaryShapes.Entry>, in buffer: UnsafeRawBufferPointer, depth: Int, _ caches: Caches
    ) -> [String: Any] {
        var result = [String: Any](minimumCapacity: entries.count)
        for entry in entries {
            let key = UnsafeRawBufferPointer(rebasing: buffer[Int(entry.keyStart)..<(Int(entry.keyStart) + Int(entry.keyCount))])
            result[BorrowedValue.string(key)] = plain(
                BorrowedValue(buffer: buffer, offset: Int(entry.value), depth: depth), caches, hint: caches.shapes?.scratchHint)
        }
        return result
    }

    private static func plainArray(_ encoded: BorrowedValue, _ caches: Caches, hint: UnsafeMutablePointer<UInt64>?) -> [Any] {
        guard let layout = encoded.layout, !layout.isDictionary else { return [] }
        // Every slot gives one element (a damaged one NSNull). `reserveCapacity` and `append` are
        // specialized here; creating the array uninitialized calls the standard library's generic
        // allocation, which looks the storage type up at run time (a third of the array's cost).
        var elements: [Any] = []
        elements.reserveCapacity(layout.count)
        encoded.forEachElement(in: layout) { element in
            elements.append(element.map { plain($0, caches, hint: hint) } ?? NSNull())
        }
        return elements
    }

    private static func plain(_ number: LargeInteger) -> Any { number.decimal ?? number.double }
}

extension ValueConversion {
    /// Converts a caller's value or throws `.invalidParameter` saying what could not be stored.
    static func strict(_ any: Any?, context: String = "value") throws -> Value {
        switch convert(any) {
        case .value(let value): return value
        case .unsupported(let reason): throw CouchetteError(.invalidParameter, "\(context) cannot be stored: \(reason)")
        }
    }
}
