// The keyed and unkeyed containers of ``StreamingModelEncoder``: each entry goes into the
// ``BodyStream`` as it arrives. Which encoder counts as the document's root, and the coding paths
// they report, follow ``ModelKeyedEncodingContainer`` and ``ModelUnkeyedEncodingContainer``
// exactly, so that a model encodes the same whichever encoder runs it.

// MARK: - Keyed

struct StreamingKeyedContainer<Key: CodingKey>: ExplicitNullKeyedContainer {
    let stream: BodyStream
    let position: BodyStream.Position
    let codingPath: [any CodingKey]
    /// As the encoder the buffered container would hold: a `@DocumentID` here is the document's id.
    let isDocumentRoot: Bool

    private func begin(_ key: Key) -> Bool { stream.beginEntry(position, key: key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { if begin(key) { stream.writeNull() } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { if begin(key) { stream.write(value) } }
    mutating func encode(_ value: String, forKey key: Key) throws { if begin(key) { stream.write(value) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { if begin(key) { stream.write(value) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { if begin(key) { stream.write(Double(value)) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { if begin(key) { stream.write(value) } }
    mutating func encode(_ value: Int128, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { if begin(key) { stream.write(Int64(value)) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try encodeInteger(value, key) }

    private func encodeInteger<T: BinaryInteger>(_ value: T, _ key: Key) throws {
        let stored = try stream.context.integer(value, at: codingPath, key: key)
        if begin(key) { stream.write(stored) }
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if T.self == DocumentID.self, isDocumentRoot {
            // The model's own id is the document's id, not a property.
            stream.context.noteDocumentID(same(value, as: DocumentID.self))
            return
        }
        if begin(key) { try stream.encode(value, at: codingPath, key: key) }
    }

    // encodeIfPresent: ExplicitNullKeyedContainer writes nil optionals as explicit nulls.

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = begin(key) ? stream.push(.dictionary) : .dead
        return KeyedEncodingContainer(
            StreamingKeyedContainer<NestedKey>(stream: stream, position: nested, codingPath: codingPath + [key], isDocumentRoot: false))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = begin(key) ? stream.push(.array) : .dead
        return StreamingUnkeyedContainer(stream: stream, position: nested, codingPath: codingPath + [key], isDocumentRoot: false)
    }

    /// An encoder for the superclass, writing under `"super"`. At the model's root it is still the
    /// model's root: a `@DocumentID` declared in the superclass is the document's id.
    mutating func superEncoder() -> any Encoder {
        superEncoder(named: CodingPath.superKey)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key)
    }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let pending = stream.beginEntry(position, key: key.stringValue) ? stream.push(.encoder) : .dead
        return StreamingModelEncoder(stream: stream, position: pending, codingPath: codingPath + [key], isDocumentRoot: isDocumentRoot)
    }
}

// MARK: - Unkeyed

struct StreamingUnkeyedContainer: UnkeyedEncodingContainer {
    let stream: BodyStream
    let position: BodyStream.Position
    let codingPath: [any CodingKey]
    /// As for ``StreamingKeyedContainer``: inherited by keyed containers nested here.
    let isDocumentRoot: Bool

    var count: Int { stream.count(position) }

    private var nextKey: CodingPath.IndexKey { CodingPath.IndexKey(count) }

    private func begin() -> Bool { stream.beginElement(position) }

    mutating func encodeNil() throws { if begin() { stream.writeNull() } }
    mutating func encode(_ value: Bool) throws { if begin() { stream.write(value) } }
    mutating func encode(_ value: String) throws { if begin() { stream.write(value) } }
    mutating func encode(_ value: Double) throws { if begin() { stream.write(value) } }
    mutating func encode(_ value: Float) throws { if begin() { stream.write(Double(value)) } }
    mutating func encode(_ value: Int) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int8) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int16) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int32) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: Int64) throws { if begin() { stream.write(value) } }
    mutating func encode(_ value: Int128) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt8) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: UInt16) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: UInt32) throws { if begin() { stream.write(Int64(value)) } }
    mutating func encode(_ value: UInt64) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt128) throws { try encodeInteger(value) }

    private func encodeInteger<T: BinaryInteger>(_ value: T) throws {
        guard !stream.spoiled else { return }
        let stored = try stream.context.integer(value, at: codingPath, key: nextKey)
        if begin() { stream.write(stored) }
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard !stream.spoiled else { return }
        let key = nextKey
        if begin() { try stream.encode(value, at: codingPath, key: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = nextKey
        let nested = begin() ? stream.push(.dictionary) : .dead
        return KeyedEncodingContainer(
            StreamingKeyedContainer<NestedKey>(
                stream: stream, position: nested, codingPath: codingPath + [key], isDocumentRoot: isDocumentRoot))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = nextKey
        let nested = begin() ? stream.push(.array) : .dead
        return StreamingUnkeyedContainer(stream: stream, position: nested, codingPath: codingPath + [key], isDocumentRoot: isDocumentRoot)
    }

    mutating func superEncoder() -> any Encoder {
        let key = nextKey
        let pending = begin() ? stream.push(.encoder) : .dead
        return StreamingModelEncoder(stream: stream, position: pending, codingPath: codingPath + [key], isDocumentRoot: false)
    }
}
