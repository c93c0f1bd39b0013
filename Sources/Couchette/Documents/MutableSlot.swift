import Foundation

/// One slot of a mutable container: a value, a value still in its stored binary form (untouched
/// since the document was read, so saving copies its bytes as they are), a nested mutable
/// container (shared by reference, so edits through it show up in the document), a ``Blob``
/// (whose content the save stores before the body), or a value that cannot be stored (reported by
/// the next save).
enum MutableSlot {
    case value(Value)
    case encoded(EncodedValue)
    case dictionary(MutableDictionaryObject)
    case array(MutableArrayObject)
    case blob(Blob)
    case invalid(String)
    /// A date set by `setDate`, stored as its ISO-8601 text: formatted straight into the body when
    /// the document is encoded, so a document built to be saved makes no string for it. Only
    /// dates with a four-digit year (the usual ones) are kept so.
    case date(Date)
    /// An array of strings set as a Swift `[String]`, kept as given (a value: later changes to the
    /// caller's variable do not reach it) and written straight into the body: no `[Value]` is
    /// made for it, and saving writes each string where it lies.
    case strings([String])
    /// An array of integers set as a Swift `[Int]`, kept so for the same reasons.
    case integers([Int])

    /// The slot for a caller's value. `owner` is the container receiving it: a container that
    /// holds `owner` (directly or deeper) cannot be stored, since it would contain itself.
    init(_ any: Any?, owner: AnyObject? = nil) {
        // Common plain values skip the class casts below, each of which would bridge a Swift
        // array to a Foundation one to try it.
        if let any {
            if let typed = Self.typedArray(any) {
                self = typed
                return
            }
            if let plain = ValueConversion.exactPlain(any) {
                self = .value(plain)
                return
            }
        }
        switch any {
        case let dictionary as MutableDictionaryObject:
            self = Self.holds(dictionary, owner) ? .invalid("a container cannot contain itself") : .dictionary(dictionary)
        case let array as MutableArrayObject:
            self = Self.holds(array, owner) ? .invalid("a container cannot contain itself") : .array(array)
        case let dictionary as DictionaryObject: self = .encoded(dictionary.encoded)
        case let array as ArrayObject: self = .encoded(array.encoded)
        case let blob as Blob: self = .blob(blob)
        // Plain containers holding blobs become mutable objects, so the blobs keep their slots.
        case let array as [Any] where BlobSearch.containsBlob(array):
            self = .array(MutableArrayObject(data: array))
        case let dictionary as [String: Any] where BlobSearch.containsBlob(dictionary):
            self = .dictionary(MutableDictionaryObject(data: dictionary))
        default:
            switch ValueConversion.convert(any) {
            case .value(let value): self = .value(value)
            case .unsupported(let reason): self = .invalid(reason)
            }
        }
    }

    /// The slot of a `[String]` or `[Int]`, taken from the opened existential: comparing type
    /// metadata costs a few instructions where an `as?` cast from `Any` goes through the runtime's
    /// dynamic cast (~300, a tenth of a document's setters). Nil for any other type.
    private static func typedArray<T>(_ value: T) -> MutableSlot? {
        // The bit casts below are between identical types: `T` was just found to be the target.
        if T.self == [String].self { return .strings(unsafeBitCast(value, to: [String].self)) }
        if T.self == [Int].self { return .integers(unsafeBitCast(value, to: [Int].self)) }
        return nil
    }

    /// True when `container` is `owner` or holds it somewhere inside.
    private static func holds(_ container: AnyObject, _ owner: AnyObject?) -> Bool {
        guard let owner else { return false }
        if container === owner { return true }
        let children: [MutableSlot] =
            switch container {
            case let dictionary as MutableDictionaryObject: dictionary.changedEntries.compactMap(\.slot)
            case let array as MutableArrayObject: array.slots
            default: []
            }
        return children.contains { slot in
            switch slot {
            case .dictionary(let child): holds(child, owner)
            case .array(let child): holds(child, owner)
            default: false
            }
        }
    }

    var converted: ValueConversion.Converted {
        switch self {
        case .value(let value): .value(value)
        case .encoded(let encoded): .value(encoded.decode())
        case .dictionary(let dictionary): dictionary.toValue()
        case .array(let array): array.toValue()
        case .blob(let blob): .value(blob.value)
        case .invalid(let reason): .unsupported(reason)
        case .date(let date): .value(.string(ISO8601.string(from: date)))
        case .strings(let texts): .value(Self.arrayValue(texts))
        case .integers(let numbers): .value(Self.arrayValue(numbers))
        }
    }

    /// A typed array slot's elements as the ``Value`` array they stand for.
    private static func arrayValue(_ texts: [String]) -> Value { .array(texts.map(Value.string)) }
    private static func arrayValue(_ numbers: [Int]) -> Value { .array(numbers.map { .int(Int64($0)) }) }

    /// What a slot holds besides the bytes its encoding writes: an object the caller may still
    /// hold and edit (a nested mutable container, whose later edits belong to the document; a
    /// blob, whose content a save stores first), or a value no encoding can hold.
    enum Held {
        case dictionary(MutableDictionaryObject)
        case array(MutableArrayObject)
        case blob(Blob)
        case unstorable
    }

    /// What this slot holds besides its encoding; nil for a plain value, which its encoding holds
    /// whole (so a body just encoded can stand for it: see
    /// ``MutableDictionaryObject/adopt(encoding:)``).
    var held: Held? {
        switch self {
        case .dictionary(let object): .dictionary(object)
        case .array(let object): .array(object)
        case .blob(let blob): .blob(blob)
        case .invalid: .unstorable
        case .value, .encoded, .date, .strings, .integers: nil
        }
    }

    /// The getter form; nested containers become mutable objects and are kept in `slot` so that
    /// edits made through them stay in the document.
    static func get(_ slot: inout MutableSlot) -> Any? {
        switch slot {
        case .value(.dictionary):
            guard case .value(let value) = slot else { return nil }
            let object = MutableDictionaryObject(value: value)
            slot = .dictionary(object)
            return object
        case .value(.array):
            guard case .value(let value) = slot else { return nil }
            let object = MutableArrayObject(value: value)
            slot = .array(object)
            return object
        case .value(let value): return ValueConversion.plain(value)
        case .encoded(let encoded):
            if encoded.isDictionary {
                let object = MutableDictionaryObject(encoded: encoded)
                slot = .dictionary(object)
                return object
            }
            if encoded.isArray {
                let object = MutableArrayObject(encoded: encoded)
                slot = .array(object)
                return object
            }
            return ValueConversion.plain(encoded)
        case .dictionary(let object): return object
        case .array(let object): return object
        case .blob(let blob): return blob
        case .invalid: return nil
        case .date(let date): return ISO8601.string(from: date)
        case .strings(let texts):
            let object = MutableArrayObject(value: arrayValue(texts))
            slot = .array(object)
            return object
        case .integers(let numbers):
            let object = MutableArrayObject(value: arrayValue(numbers))
            slot = .array(object)
            return object
        }
    }

    /// A copy that shares no mutable container with this slot.
    func copy() -> MutableSlot {
        switch self {
        case .dictionary(let object): .dictionary(object.copy())
        case .array(let object): .array(object.copy())
        case .value, .encoded, .blob, .invalid, .date, .strings, .integers: self
        }
    }

    static func plain(_ slot: MutableSlot) -> Any {
        switch slot {
        case .value(let value): ValueConversion.plain(value)
        case .encoded(let encoded): ValueConversion.plain(encoded)
        case .dictionary(let object): object.toDictionary()
        case .array(let object): object.toArray()
        case .blob(let blob): blob.properties
        case .invalid: NSNull()
        case .date(let date): ISO8601.string(from: date)
        // `[Any]`, as every other array reads back.
        case .strings(let texts): texts.map { $0 as Any }
        case .integers(let numbers): numbers.map { $0 as Any }
        }
    }

    /// Writes this slot's value over `old`, the stored value it replaces, in `body` (a copy of the
    /// buffer `old` lies in), when it encodes to the same number of bytes: a container read from
    /// exactly there writes only its own changes. False when the sizes differ, or for what only a
    /// full encoding writes (blobs, which take the revision's position; unstorable values, which
    /// it reports).
    func patch(over old: EncodedValue, in body: inout [UInt8]) -> Bool {
        switch self {
        case .dictionary(let object) where object.isView(of: old): return object.patch(&body)
        case .array(let object) where object.isView(of: old): return object.patch(&body)
        case .encoded(let encoded) where encoded.isSameValue(as: old): return true
        case .value(.int(let number)): return Self.patch(number, over: old, in: &body)
        case .blob, .invalid: return false
        case .value, .encoded, .dictionary, .array, .date, .strings, .integers:
            guard let size = old.encodedSize, old.offset + size <= body.count else { return false }
            var encoder = ValueEncoder()
            guard (try? encode(into: &encoder)) != nil, encoder.bytes.count == size else { return false }
            body.withUnsafeMutableBufferPointer { target in
                encoder.bytes.withUnsafeBufferPointer { source in
                    (target.baseAddress! + old.offset).update(from: source.baseAddress!, count: size)
                }
            }
            return true
        }
    }

    /// ``patch(over:in:)`` for an integer (a counter incremented, the usual edit of an update):
    /// the bytes ``ValueEncoder/writeInteger(_:)`` writes, built on the stack, with no encoder.
    private static func patch(_ number: Int64, over old: EncodedValue, in body: inout [UInt8]) -> Bool {
        let (tag, size) = ValueEncoder.integerForm(of: number)
        guard old.encodedSize == 1 + size, old.offset >= 0, old.offset + 1 + size <= body.count else { return false }
        body.withUnsafeMutableBytes { target in
            target[old.offset] = tag
            withUnsafeBytes(of: number.littleEndian) { bytes in
                let value = UnsafeMutableRawBufferPointer(rebasing: target[(old.offset + 1)...])
                value.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<size]))
            }
        }
        return true
    }

    /// Writes this slot in the binary format.
    func encode(into encoder: inout ValueEncoder) throws {
        switch self {
        case .value(let value): try encoder.write(value)
        case .encoded(let encoded): encoder.append(encoded)
        case .dictionary(let object): try object.encode(into: &encoder)
        case .array(let object): try object.encode(into: &encoder)
        case .blob(let blob):
            guard blob.digest != nil else {
                try encoder.unstorable("a Blob is stored by saving its document (or Database.saveBlob) first")
                return
            }
            try encoder.write(blob.storedValue(revisionPosition: encoder.blobRevisionPosition))
        case .invalid(let reason): try encoder.unstorable(reason)
        case .date(let date):
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ISO8601.formattedCount) { text in
                guard ISO8601.write(date, into: text) else { return false }
                encoder.appendStringBytes(UnsafeBufferPointer(text))
                return true
            }
            if !written { encoder.writeString(ISO8601.string(from: date)) }
        case .strings(let texts):
            try encoder.writeArray(count: texts.count) { encoder, index in encoder.writeString(texts[index]) }
        case .integers(let numbers):
            try encoder.writeArray(count: numbers.count) { encoder, index in encoder.writeInteger(Int64(numbers[index])) }
        }
    }
}
