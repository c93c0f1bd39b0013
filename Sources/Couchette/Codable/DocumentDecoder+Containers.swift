// The keyed and unkeyed containers of ``ModelDecoder``: they read the encoded body in place.

// MARK: - Keyed

struct ModelKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ModelDecoder
    let dictionary: EncodedValue
    let codingPath: [any CodingKey]

    var allKeys: [Key] { dictionary.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { dictionary.value(forKey: key.stringValue) != nil }

    /// The value under `key`; a missing key throws `keyNotFound`.
    private func value(_ key: Key) throws -> EncodedValue {
        guard let value = dictionary.value(forKey: key.stringValue) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "No value associated with key '\(key.stringValue)'."))
        }
        return value
    }

    /// The value under `key`, or nil when it is missing or null.
    private func present(_ key: Key) -> EncodedValue? {
        guard let value = dictionary.value(forKey: key.stringValue), !value.isNull else { return nil }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).isNull }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.unwrapBool(try value(key), at: codingPath, key: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try decoder.unwrapString(try value(key), at: codingPath, key: key)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try floatingPoint(try value(key), type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try floatingPoint(try value(key), type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(try value(key), type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(try value(key), type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(try value(key), type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(try value(key), type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(try value(key), type, key) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try integer(try value(key), type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(try value(key), type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(try value(key), type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(try value(key), type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(try value(key), type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(try value(key), type, key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try integer(try value(key), type, key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if T.self == DocumentID.self, let document = decoder.document {
            // The model's own id: the document's, whatever the body holds under this key.
            return same(document.makeDocumentID(), as: T.self)
        }
        return try decoder.unwrap(T.self, from: try value(key), at: codingPath, key: key)
    }

    // One look-up per optional property (the protocol's defaults would make three).
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { try decoder.unwrapBool($0, at: codingPath, key: key) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { try decoder.unwrapString($0, at: codingPath, key: key) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { try floatingPoint($0, type, key) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(key).map { try floatingPoint($0, type, key) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(key).map { try integer($0, type, key) } }
    func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try present(key).map { try integer($0, type, key) } }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if T.self == DocumentID.self, let document = decoder.document { return same(document.makeDocumentID(), as: T.self) }
        return try present(key).map { try decoder.unwrap(T.self, from: $0, at: codingPath, key: key) }
    }

    private func integer<T: FixedWidthInteger>(_ value: EncodedValue, _ type: T.Type, _ key: Key) throws -> T {
        try decoder.unwrapInteger(value, as: type, at: codingPath, key: key)
    }

    private func floatingPoint<T: BinaryFloatingPoint>(_ value: EncodedValue, _ type: T.Type, _ key: Key) throws -> T {
        try decoder.unwrapFloatingPoint(value, as: type, at: codingPath, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder.child(try value(key), at: codingPath, key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.child(try value(key), at: codingPath, key: key).unkeyedContainer()
    }

    /// The superclass's decoder, reading the `"super"` key. At the model's root it is still the
    /// root: a `@DocumentID` declared in the superclass is the document's id.
    func superDecoder() throws -> any Decoder {
        superDecoder(named: CodingPath.superKey)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        superDecoder(named: key)
    }

    private func superDecoder(named key: any CodingKey) -> any Decoder {
        let value = dictionary.value(forKey: key.stringValue) ?? EncodedValue(bytes: [ValueTag.null])
        return ModelDecoder(value: value, codingPath: codingPath + [key], document: decoder.document)
    }
}

// MARK: - Unkeyed

struct ModelUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let decoder: ModelDecoder
    let array: EncodedValue
    let codingPath: [any CodingKey]
    private let elementCount: Int
    private(set) var currentIndex = 0

    init(decoder: ModelDecoder, array: EncodedValue, codingPath: [any CodingKey]) {
        self.decoder = decoder
        self.array = array
        self.codingPath = codingPath
        elementCount = array.count
    }

    var count: Int? { elementCount }
    var isAtEnd: Bool { currentIndex >= elementCount }

    /// Decodes the current element with `body` and moves past it only when that succeeds.
    private mutating func next<T>(_ type: T.Type, _ body: (EncodedValue, CodingPath.IndexKey) throws -> T) throws -> T {
        let key = CodingPath.IndexKey(currentIndex)
        guard !isAtEnd, let element = array.element(at: currentIndex) else {
            throw DecodingError.valueNotFound(
                T.self,
                DecodingError.Context(
                    codingPath: codingPath + [key], debugDescription: "Unkeyed container is at end."))
        }
        let result = try body(element, key)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        let isNull = try next(Bool.self) { element, _ in element.isNull }
        if !isNull { currentIndex -= 1 }  // only a null is consumed
        return isNull
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try next(type) { [decoder, codingPath] in try decoder.unwrapBool($0, at: codingPath, key: $1) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        try next(type) { [decoder, codingPath] in try decoder.unwrapString($0, at: codingPath, key: $1) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double { try floatingPoint(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try floatingPoint(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try integer(type) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type) { [decoder, codingPath] in try decoder.unwrap(T.self, from: $0, at: codingPath, key: $1) }
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        try next(type) { [decoder, codingPath] in try decoder.unwrapInteger($0, as: type, at: codingPath, key: $1) }
    }

    private mutating func floatingPoint<T: BinaryFloatingPoint>(_ type: T.Type) throws -> T {
        try next(type) { [decoder, codingPath] in try decoder.unwrapFloatingPoint($0, as: type, at: codingPath, key: $1) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { [decoder, codingPath] in
            try decoder.child($0, at: codingPath, key: $1).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { [decoder, codingPath] in
            try decoder.child($0, at: codingPath, key: $1).unkeyedContainer()
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { [decoder, codingPath] in decoder.child($0, at: codingPath, key: $1) }
    }
}
